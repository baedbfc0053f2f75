"""Run the checks on a model: :func:`run_checks` → :class:`~.results.CheckReport`."""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

import torch

from . import checks_decoding, checks_model, checks_training  # noqa: F401  (they register)
from .adapter import OPTIONAL_PARTS, ModelAdapter
from .causes import NON_FINITE
from .library import adapt
from .registry import CHECKS, Check, Kit, NonFiniteLogits
from .results import FAILED, SKIPPED, Cause, CheckReport, CheckResult

__all__ = ["check_names", "run_check", "run_checks"]

RAISED = Cause(
    "raised",
    "the model raised an error on the check's small inputs (see the message): a shape, "
    "a mask or a cache that only works for some lengths or batch sizes",
)


#: The report's order: the forward pass, then decoding, then training.
_SECTIONS = [checks_model.__name__, checks_decoding.__name__, checks_training.__name__]


def check_names() -> list[str]:
    """The names of every check, in report order."""
    section = {name: i for i, name in enumerate(_SECTIONS)}
    ordered = sorted(CHECKS.values(), key=lambda c: section.get(c.run.__module__, len(section)))
    return [c.name for c in ordered]


def _skip_reason(check: Check, adapter: ModelAdapter) -> str | None:
    if adapter.arch not in check.archs:
        return "needs " + " or ".join("an " + a if a[0] == "e" else "a " + a for a in check.archs)
    missing = [p for p in check.needs if getattr(adapter, p) is None]
    if not missing:
        return None
    what = "; ".join(
        f"{OPTIONAL_PARTS[p]} ({p}"
        + (f": {adapter.unavailable[p]}" if p in adapter.unavailable else "")
        + ")"
        for p in dict.fromkeys(missing)
    )
    return f"needs {what}"


def run_check(check: Check, kit: Kit) -> CheckResult:
    """One check; a missing part gives *skipped*, an exception (or NaN logits) *failed*."""
    reason = _skip_reason(check, kit.adapter)
    if reason is not None:
        return CheckResult(check.name, check.title, SKIPPED, finding=reason)
    try:
        with torch.no_grad():
            return check.run(kit)
    except NonFiniteLogits as exc:
        return CheckResult(check.name, check.title, FAILED, finding=str(exc), causes=(NON_FINITE,))
    except Exception as exc:  # the model under test may raise anything: report it
        message = str(exc).splitlines()[0] if str(exc) else ""
        finding = f"raised {type(exc).__name__}: {message}"[:300]
        return CheckResult(check.name, check.title, FAILED, finding=finding, causes=(RAISED,))


def run_checks(
    model: Any,
    only: Iterable[str] | None = None,
    skip: Iterable[str] = (),
    seed: int = 0,
) -> CheckReport:
    """Run the check kit on a model and return its report.

    Args:
        model: a :class:`~.adapter.ModelAdapter`, or a model :func:`~.library.adapt` knows
            (the library's ``Transformer`` and ``DecoderOnlyTransformer``, or
            :class:`~.torch_model.TorchTransformerModel`).
        only: run just these checks (names from :func:`check_names`).
        skip: leave these checks out.
        seed: seed of the random inputs. The caller's random state is left as it was, and
            the model's train/eval mode is restored.

    Returns:
        A :class:`~.results.CheckReport`: ``print(report)``, ``report.passed``,
        ``report.failures``, ``report.to_dict()``; a notebook shows it as a table.

    Example:
        >>> from transformer_lib.pipeline.check_kit import run_checks, tiny_model
        >>> report = run_checks(tiny_model("encoder-decoder"))
        >>> report.passed
        True
    """
    adapter = adapt(model)
    names = check_names() if only is None else list(only)
    unknown = [n for n in [*names, *skip] if n not in CHECKS]
    if unknown:
        raise ValueError(f"unknown check names {unknown}; the checks are {list(CHECKS)}")
    module = adapter.module
    was_training = module.training if module is not None else None
    start = time.perf_counter()
    results = []
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        try:
            if module is not None:
                module.eval()
            kit = Kit(adapter, seed)
            for name in names:
                if name not in skip:
                    results.append(run_check(CHECKS[name], kit))
        finally:
            if module is not None:
                module.train(was_training)
    return CheckReport(adapter.describe(), results, time.perf_counter() - start)
