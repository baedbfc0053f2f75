"""What a check returns, and the report of a whole run: text, an HTML table, JSON.

A :class:`CheckResult` says which check ran, whether it passed, failed or was skipped, what
it measured (numbers), the tolerance it held them to, and — when it failed — the kinds of
bug that typically cause that failure, in plain words (:class:`Cause`). A
:class:`CheckReport` collects the results of :func:`~.runner.run_checks`: ``print(report)``
gives a readable text report, a notebook shows it as a table (``_repr_html_``, no pandas),
and ``report.to_dict()`` is plain JSON-able data.
"""

from __future__ import annotations

import html
import json
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

__all__ = ["PASSED", "FAILED", "SKIPPED", "Cause", "CheckReport", "CheckResult"]

PASSED, FAILED, SKIPPED = "passed", "failed", "skipped"
_LABEL = {PASSED: "PASS", FAILED: "FAIL", SKIPPED: "SKIP"}
_CELL = "vertical-align:top;padding:2px 8px;overflow-wrap:anywhere"
_COLOUR = {PASSED: "#1a7f37", FAILED: "#cf222e", SKIPPED: "#6e7781"}


class Cause(NamedTuple):
    """A kind of bug that makes a check fail: a stable ``key`` and a plain-words ``text``."""

    key: str
    text: str


def format_number(value: Any) -> str:
    """A short, readable form of a measured value (4 significant digits for floats)."""
    if isinstance(value, bool) or not isinstance(value, float):
        if isinstance(value, (list, tuple)):
            return "(" + ", ".join(format_number(v) for v in value) + ")"
        return str(value)
    if math.isnan(value) or math.isinf(value):
        return str(value)
    if value == 0:
        return "0"
    if 1e-3 <= abs(value) < 1e5:
        return f"{value:.4g}"
    return f"{value:.3g}"


@dataclass
class CheckResult:
    """The outcome of one check.

    Attributes:
        name: the check's id (e.g. ``"causality"``).
        title: what it checks, in one line, with the paper's section where there is one.
        status: ``"passed"``, ``"failed"`` or ``"skipped"``.
        measured: what was measured, name → number (or short text).
        tolerance: the bound the measurements were held to, in words.
        finding: one line on what was found (why it failed, or why it was skipped).
        causes: when failed, the kinds of bug that typically cause it, most likely first.
    """

    name: str
    title: str
    status: str
    measured: dict[str, Any] = field(default_factory=dict)
    tolerance: str = ""
    finding: str = ""
    causes: tuple[Cause, ...] = ()

    @property
    def passed(self) -> bool:
        return self.status == PASSED

    @property
    def failed(self) -> bool:
        return self.status == FAILED

    @property
    def skipped(self) -> bool:
        return self.status == SKIPPED

    @property
    def cause_keys(self) -> tuple[str, ...]:
        return tuple(c.key for c in self.causes)

    def measured_text(self) -> str:
        return ", ".join(f"{k} {format_number(v)}" for k, v in self.measured.items())

    def to_dict(self) -> dict[str, Any]:
        """Plain data (str, float, int, bool, lists): ``json.dumps`` accepts it."""
        return {
            "name": self.name,
            "title": self.title,
            "status": self.status,
            "measured": {k: _jsonable(v) for k, v in self.measured.items()},
            "tolerance": self.tolerance,
            "finding": self.finding,
            "causes": [{"key": c.key, "text": c.text} for c in self.causes],
        }

    def __str__(self) -> str:
        lines = [f"{_LABEL[self.status]} {self.name}: {self.title}"]
        if self.finding:
            lines.append(f"  {self.finding}")
        if self.measured:
            lines.append(f"  measured: {self.measured_text()}")
        if self.tolerance and not self.skipped:
            lines.append(f"  tolerance: {self.tolerance}")
        if self.causes:
            lines.append("  typical causes:")
            lines += [f"    - {c.text}" for c in self.causes]
        return "\n".join(lines)


def _jsonable(value: Any) -> Any:
    if isinstance(value, float) and (math.isnan(value) or math.isinf(value)):
        return str(value)
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return str(value)


class CheckReport(Sequence):
    """The results of every check run on one model, in order.

    ``report.passed`` is True when no check failed (skipped checks are not failures, and
    are not passes either: the text says which part of the adapter each one needs).
    ``report.failures`` lists the failed results; ``report["causality"]`` is one result.
    """

    def __init__(self, model: str, results: Sequence[CheckResult], seconds: float = 0.0):
        self.model = model
        self.results: list[CheckResult] = list(results)
        self.seconds = seconds

    # ---- access ------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.results)

    def __iter__(self) -> Iterator[CheckResult]:
        return iter(self.results)

    def __getitem__(self, key):  # type: ignore[override]
        if isinstance(key, str):
            for r in self.results:
                if r.name == key:
                    return r
            raise KeyError(f"no check named {key!r}; the report has {[r.name for r in self]}")
        return self.results[key]

    @property
    def passed(self) -> bool:
        return not self.failures

    @property
    def failures(self) -> list[CheckResult]:
        return [r for r in self.results if r.failed]

    @property
    def skipped(self) -> list[CheckResult]:
        return [r for r in self.results if r.skipped]

    def counts(self) -> dict[str, int]:
        return {s: sum(r.status == s for r in self.results) for s in (PASSED, FAILED, SKIPPED)}

    def summary(self) -> str:
        c = self.counts()
        return (
            f"{len(self)} checks: {c[PASSED]} passed, {c[FAILED]} failed, {c[SKIPPED]} skipped"
            + (f" ({self.seconds:.1f} s)" if self.seconds else "")
        )

    # ---- the three forms ---------------------------------------------------------------
    def __str__(self) -> str:
        width = max((len(r.name) for r in self.results), default=10)
        lines = [f"Check kit report: {self.model}", ""]
        for r in self.results:
            detail = r.finding if (r.skipped or r.failed) else r.measured_text()
            lines.append(f"  {_LABEL[r.status]}  {r.name:<{width}}  {detail}")
        lines += ["", self.summary()]
        for r in self.failures:
            lines += ["", str(r)]
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"<CheckReport {self.model}: {self.summary()}>"

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "passed": self.passed,
            "counts": self.counts(),
            "seconds": round(self.seconds, 3),
            "results": [r.to_dict() for r in self.results],
        }

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, ensure_ascii=False)

    def _repr_html_(self) -> str:
        esc = html.escape
        head = "".join(
            f'<th style="text-align:left;padding:2px 8px">{h}</th>'
            for h in ("", "check: what it checks", "measured (tolerance)", "finding")
        )
        rows = []
        for r in self.results:
            badge = (
                f'<span style="color:#fff;background:{_COLOUR[r.status]};padding:0 6px;'
                f'border-radius:3px;font-weight:600;white-space:nowrap">{_LABEL[r.status]}</span>'
            )
            finding = esc(r.finding)
            if r.causes:
                items = "".join(f"<li>{esc(c.text)}</li>" for c in r.causes)
                finding += f'<ul style="margin:2px 0 0 1em;padding:0">{items}</ul>'
            measured = esc(r.measured_text())
            if r.tolerance and not r.skipped:
                measured += f"<br><small>({esc(r.tolerance)})</small>"
            cells = [
                badge,
                f'<code style="white-space:nowrap">{esc(r.name)}</code><br>'
                f"<small>{esc(r.title)}</small>",
                measured,
                finding,
            ]
            rows.append("<tr>" + "".join(f'<td style="{_CELL}">{c}</td>' for c in cells) + "</tr>")
        return (
            f'<div class="check-kit-report"><p><b>Check kit report: {esc(self.model)}</b> '
            f"— {esc(self.summary())}</p>"
            f'<table style="border-collapse:collapse;font-size:0.9em;width:100%">'
            f"<thead><tr>{head}</tr>"
            f"</thead><tbody>{''.join(rows)}</tbody></table></div>"
        )


def result(
    name: str,
    title: str,
    ok: bool,
    measured: Mapping[str, Any],
    tolerance: str,
    finding: str = "",
    causes: Sequence[Cause] = (),
) -> CheckResult:
    """A passed or failed :class:`CheckResult` (causes are kept only when it failed)."""
    return CheckResult(
        name,
        title,
        PASSED if ok else FAILED,
        dict(measured),
        tolerance,
        finding,
        () if ok else tuple(causes),
    )
