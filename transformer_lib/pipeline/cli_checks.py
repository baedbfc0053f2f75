"""Checks the command line runs before any work starts.

Every argument is validated before the corpus is read or a model is built, so that a
typo costs a second, not a run. A failed check raises :class:`UsageError`, which the
command line prints as one line (naming the flag and the fix) with exit status 2.
"""

from __future__ import annotations

import argparse
import math
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import torch

__all__ = [
    "UsageError",
    "clear_run",
    "device",
    "nothing_left_to_do",
    "out_folder",
    "resume_corpus",
    "run_files",
    "text_input",
    "train_out_dir",
    "writable_file",
]

#: Files a training run writes into its folder.
RUN_FILES = ("checkpoint.pt", "model.pt", "training_log.json", "summary.json")


class UsageError(ValueError):
    """A command-line argument is wrong; the message says which and how to fix it."""


def device(name: str) -> torch.device:
    """Parse ``--device`` and check the device exists here."""
    from .training import select_device

    try:
        dev = select_device(name)
    except RuntimeError:
        raise UsageError(
            f"--device: unknown device {name!r}; use auto, cpu, cuda, cuda:N or mps"
        ) from None
    if dev.type not in ("cpu", "cuda", "mps"):
        raise UsageError(f"--device: unsupported device {name!r}; use auto, cpu, cuda or mps")
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            raise UsageError("--device: CUDA was requested but no GPU is visible; use --device cpu")
        if dev.index is not None and dev.index >= torch.cuda.device_count():
            raise UsageError(
                f"--device: there is no {dev} (this machine has "
                f"{torch.cuda.device_count()} GPU(s)); use cuda:0"
            )
    if dev.type == "mps" and not torch.backends.mps.is_available():
        raise UsageError("--device: MPS was requested but is not available; use --device cpu")
    return dev


def _check(cond: bool, flag: str, rule: str, value: Any) -> None:
    if not cond:
        raise UsageError(f"--{flag.replace('_', '-')} must be {rule}, got {value}")


def finite(args: argparse.Namespace, *names: str) -> None:
    """Each named float argument, if given, is a finite number (not inf or nan)."""
    for name in names:
        value = getattr(args, name, None)
        if isinstance(value, float) and not math.isfinite(value):
            raise UsageError(f"--{name.replace('_', '-')} must be a finite number, got {value}")


def text_input(text: str, what: str) -> str:
    """``text`` (a command-line argument or a line read) is valid UTF-8, else a
    :class:`UsageError` naming ``what`` and the first bad byte."""
    from .tokenizer import not_utf8

    problem = not_utf8(text)
    if problem is not None:
        raise UsageError(f"{what} {problem}")
    return text


def stdin_lines(stream) -> list[str]:
    """The non-blank lines of a binary stream (standard input), each checked as UTF-8."""
    lines = []
    for number, raw in enumerate(stream, start=1):
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise UsageError(
                f"line {number} of standard input is not valid UTF-8 (byte "
                f"0x{raw[exc.start]:02x} at byte {exc.start}): it was probably written in "
                f"another encoding such as Latin-1; convert it to UTF-8 (e.g. with iconv -f "
                f"latin1 -t utf-8)"
            ) from None
        line = line.rstrip("\r\n").lstrip("\ufeff" if number == 1 else "")
        if line.strip():
            lines.append(line)
    return lines


def positive(args: argparse.Namespace, *names: str) -> None:
    """Each named integer argument, if given, is at least 1."""
    for name in names:
        value = getattr(args, name)
        if value is not None:
            _check(value >= 1, name, ">= 1", value)


def decoding(args: argparse.Namespace) -> None:
    """The ``translate`` / ``evaluate`` flags (``--device`` too: before any data is read)."""
    device(args.device)
    _check(args.beam >= 1, "beam", ">= 1 (1 = greedy)", args.beam)
    finite(args, "alpha")
    _check(args.alpha >= 0, "alpha", ">= 0", args.alpha)
    if args.checkpoint is not None and not Path(args.checkpoint).is_file():
        raise UsageError(f"--checkpoint: no file at {args.checkpoint}")


def sampling(args: argparse.Namespace) -> None:
    """The ``generate`` flags."""
    _check(args.max_new_tokens >= 1, "max_new_tokens", ">= 1", args.max_new_tokens)
    _check(args.samples >= 1, "samples", ">= 1", args.samples)
    finite(args, "temperature", "top_p")
    if not args.greedy:
        _check(
            args.temperature > 0, "temperature", "> 0 (use --greedy for argmax)", args.temperature
        )
    if args.top_k is not None:
        _check(args.top_k >= 1, "top_k", ">= 1", args.top_k)
    if args.top_p is not None:
        _check(0 < args.top_p <= 1, "top_p", "in (0, 1]", args.top_p)


def train_numbers(args: argparse.Namespace) -> None:
    """Ranges of the numeric ``train`` flags (only those given)."""
    budgets = (args.minutes, args.max_steps, args.cpu_minutes)
    if all(b is None for b in budgets) and args.resume is None:
        raise UsageError(
            "give --minutes, --max-steps or --cpu-minutes (or several), or training never stops"
        )
    finite(args, *(k for k, v in vars(args).items() if isinstance(v, float)))
    given = {k: v for k, v in vars(args).items() if v is not None}
    rules = {
        "minutes": (lambda v: v > 0, "> 0"),
        "cpu_minutes": (lambda v: v > 0, "> 0"),
        "max_steps": (lambda v: v >= 1, ">= 1"),
        "max_tokens": (lambda v: v >= 8, ">= 8"),
        "lr_factor": (lambda v: v > 0, "> 0"),
        "warmup": (lambda v: v >= 1, ">= 1"),
        "label_smoothing": (lambda v: 0 <= v < 1, "in [0, 1)"),
        "clip_norm": (lambda v: v >= 0, ">= 0 (0 = off)"),
        "dropout": (lambda v: 0 <= v < 1, "in [0, 1)"),
        "d_ff": (lambda v: v >= 1, ">= 1"),
        "threads": (lambda v: v >= 1, ">= 1"),
        "layers": (lambda v: v >= 1, ">= 1"),
        "eval_every": (lambda v: v >= 0, ">= 0 (0 = only at the end)"),
        "log_every": (lambda v: v >= 1, ">= 1"),
        "checkpoint_every": (lambda v: v >= 1, ">= 1"),
        "checkpoint_minutes": (lambda v: v >= 0, ">= 0 (0 = off)"),
        "keep_checkpoints": (lambda v: v >= 0, ">= 0"),
        "average": (lambda v: v >= 0, ">= 0 (0 = no averaging)"),
    }
    for name, (ok, rule) in rules.items():
        if name in given:
            _check(ok(given[name]), name, rule, given[name])
    if given.get("average") and given.get("keep_checkpoints") is not None:
        if given["keep_checkpoints"] < given["average"]:
            raise UsageError(
                f"--average {given['average']} averages the last {given['average']} step "
                f"checkpoints, but --keep-checkpoints {given['keep_checkpoints']} keeps fewer: "
                f"drop --keep-checkpoints or raise it to {given['average']}"
            )
    for flag in ("prefix_lm", "layers"):
        if getattr(args, flag) and (args.arch or "encoder-decoder") != "decoder-only":
            raise UsageError(f"--{flag.replace('_', '-')} applies to --arch decoder-only only")
    if args.tokenizer is not None and not Path(args.tokenizer).is_file():
        raise UsageError(
            f"--tokenizer: no file at {args.tokenizer}; leave the flag out to use the shipped "
            f"data/tokenizer.json, or create one with `python -m "
            f"transformer_lib.pipeline.tokenizer --out {args.tokenizer}`"
        )
    if args.corpus not in (None, "download") and not Path(args.corpus).expanduser().exists():
        raise UsageError(
            f"--corpus: no file at {args.corpus}; give an English<TAB>German file (plain or "
            f".gz), 'download' for the larger current release, or leave the flag out for "
            f"the shipped corpus"
        )


def step_list(text: str) -> tuple[int, ...]:
    """``--snapshot-at 0,100,500`` → ``(0, 100, 500)``."""
    try:
        steps = tuple(sorted({int(part) for part in text.split(",") if part.strip()}))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected steps separated by commas, e.g. 0,100,500, got {text!r}"
        ) from None
    if not steps or steps[0] < 0:
        raise argparse.ArgumentTypeError(f"expected steps >= 0, got {text!r}")
    return steps


def _probe_dir(folder: Path, flag: str) -> None:
    """Create and delete a file in ``folder`` (the only sure test of writability)."""
    try:
        fd, name = tempfile.mkstemp(prefix=".write-test-", dir=folder)
        os.close(fd)
        os.unlink(name)
    except OSError as exc:
        raise UsageError(f"{flag}: cannot write in {folder} ({exc.strerror})") from None


def _nearest_existing(path: Path) -> Path:
    path = path.absolute()
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def writable_file(path: str | os.PathLike, flag: str, create_folders: bool = True) -> None:
    """``path`` can be created or overwritten as a file (with ``create_folders=False``
    its folder must exist already: the command will not create it)."""
    path = Path(path)
    if path.is_dir():
        raise UsageError(f"{flag}: {path} is a directory; give a file name, e.g. {path}/out.json")
    parent = _nearest_existing(path.parent)
    if not parent.is_dir():
        raise UsageError(f"{flag}: {parent} is a file, so {path} cannot be created")
    if not create_folders and parent != path.parent.absolute():
        raise UsageError(
            f"{flag}: the folder {path.parent} does not exist; create it first (mkdir -p "
            f"{path.parent}) or choose a file in an existing folder"
        )
    _probe_dir(parent, flag)


def run_files(out: Path) -> list[Path]:
    """The files of an earlier run in ``out`` (empty if there is none)."""
    if not out.is_dir():
        return []
    found = [out / name for name in RUN_FILES if (out / name).exists()]
    return found + sorted(out.glob("step-[0-9]*.pt"))


def out_folder(out: Path) -> None:
    """``--out`` is (or can become) a folder this process can write in."""
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out: {out} is a file, not a folder; choose a folder name")
    _probe_dir(_nearest_existing(out), "--out")


def train_out_dir(out: Path, resume: str | None, force: bool) -> Path | None:
    """Check ``--out`` (and ``--resume``); return the checkpoint to resume from, if any.

    A folder that already holds a run is never overwritten silently: ``--resume``
    continues it, ``--force`` starts again from scratch, otherwise this refuses.
    """
    out_folder(out)
    if resume is not None and force:
        raise UsageError("--resume and --force contradict each other; give one of them")
    if resume is not None:
        path = Path(resume) if resume else out / "checkpoint.pt"
        if not path.is_file():
            raise UsageError(f"--resume: no checkpoint at {path}; start a new run without --resume")
        return path
    existing = run_files(out)
    if existing and not force:
        raise UsageError(
            f"--out: {out} already holds a training run ({existing[0].name}); continue it "
            f"with --resume, choose another --out, or pass --force to start it over"
        )
    return None


def clear_run(out: Path) -> None:
    """Delete the files of an earlier run in ``out`` (``--force``)."""
    for path in [*run_files(out), out / "attention_snapshots.json"]:
        path.unlink(missing_ok=True)


def _shown(name: str, value: Any) -> str:
    """A setting as a reader would type it: ``--amp``, ``no --amp``, ``0,100``, ``none``."""
    flag = f"--{name.replace('_', '-')}"
    if isinstance(value, bool):
        return flag if value else f"no {flag}"
    if value is None:
        return "none (the default)"
    if isinstance(value, (tuple, list)):
        return ",".join(map(str, value)) or "none"
    return str(value)


def _same(name: str, before: Any, value: Any) -> bool:
    if name == "clip_norm":  # 0 and None both mean "no clipping"
        before, value = before or None, value or None
    if name == "snapshot_at":
        before, value = tuple(before or ()), tuple(value or ())
    return before == value


#: The model-config flags of ``train``, with what a checkpoint that lacks one used.
ARCHITECTURE_FLAGS = {
    "dropout": None,
    "d_ff": None,
    "norm_first": False,
    "activation": "relu",
    "norm": "layer",
    "positional": "sinusoidal",
}
#: Flags spelled otherwise than their setting (``train --position`` sets ``positional``).
FLAG_NAMES = {"positional": "--position"}


def variant_note(config: Any) -> str:
    """``", pre-LN, swiglu FFN, RMSNorm, rope positions"``: where a model config leaves the
    paper's architecture (post-LN, ReLU, LayerNorm, sinusoids); empty for the paper's."""
    parts = ["pre-LN"] if config.norm_first else []
    if config.activation != ARCHITECTURE_FLAGS["activation"]:
        parts.append(f"{config.activation} FFN")
    if config.norm != ARCHITECTURE_FLAGS["norm"]:
        parts.append("RMSNorm")
    if config.positional != ARCHITECTURE_FLAGS["positional"]:
        parts.append(f"{config.positional} positions")
    return "".join(f", {p}" for p in parts)


def resume_conflicts(
    args: argparse.Namespace,
    explicit: Iterable[str],
    run: dict[str, Any],
    saved: dict[str, Any],
    may_change: Iterable[str],
    path: Path,
    config: dict[str, Any] | None = None,
    tokenizer_sha256: str | None = None,
) -> None:
    """Refuse flags that contradict the run being resumed (its settings are restored).

    A flag that repeats the run's own value is accepted. The message names the flag,
    the value given and the value the run used.

    Args:
        args, explicit: The parsed arguments and the names of those typed.
        run, saved: The checkpoint's ``state["run"]`` and ``state["training_config"]``.
        may_change: Settings a resumed run may change (its budget).
        path: The checkpoint resumed from.
        config: The checkpoint's model config (for ``--dropout``, ``--d-ff``, ``--norm-first``,
            ``--activation``, ``--norm``, ``--position`` and ``--layers``).
        tokenizer_sha256: The sha256 of its embedded tokenizer (for ``--tokenizer``).
    """
    config = config or {}
    fixed = {"preset", "arch", "prefix_lm", "layers", "tokenizer", "amp", *ARCHITECTURE_FLAGS}
    fixed |= set(saved) - {"device", "progress"}
    for name in sorted(set(explicit) & fixed - set(may_change)):
        value = getattr(args, name)
        if name == "tokenizer":
            _resume_tokenizer(value, tokenizer_sha256, path)
            continue
        if name in ARCHITECTURE_FLAGS:  # a config written before a field existed: the paper's
            before = config.get(name, ARCHITECTURE_FLAGS[name])
            known = before is not None
        elif name == "layers":
            before = run.get("layers", config.get("n_decoder_layers"))
            known = before is not None
        elif name == "prefix_lm":
            before, known = bool(run.get("prefix_lm", False)), True
        else:
            known = name in run or name in saved
            before = run.get(name, saved.get(name))
        if known and _same(name, before, value):
            continue
        flag = FLAG_NAMES.get(name, f"--{name.replace('_', '-')}")
        given = flag + ("" if isinstance(value, bool) else f" {value}")
        used = f"used {_shown(name, before)}" if known else "does not record this setting"
        raise UsageError(
            f"{given} conflicts with the run being resumed from {path}, which {used}: a "
            f"resumed run keeps all its settings; only --minutes, --max-steps and "
            f"--cpu-minutes may change. Drop the flag, or start a new run."
        )


def _resume_tokenizer(given: str, sha256: str | None, path: Path) -> None:
    """``--tokenizer`` on resume: accepted if it is the run's own tokenizer."""
    from .checkpoints import tokenizer_record
    from .tokenizer import Tokenizer, TokenizerFileError

    try:
        same = sha256 is not None and tokenizer_record(Tokenizer.load(given))["sha256"] == sha256
    except (OSError, TokenizerFileError) as exc:
        raise UsageError(f"--tokenizer: {exc}") from None
    if not same:
        raise UsageError(
            f"--tokenizer {given} conflicts with the run being resumed from {path}, which "
            f"uses another tokenizer (the one embedded in its checkpoint, sha256 "
            f"{(sha256 or 'unknown')[:12]}): a resumed run keeps its tokenizer. Drop the flag."
        )


def nothing_left_to_do(
    settings: dict[str, Any], state: dict[str, Any], explicit: Iterable[str], out: Path
) -> None:
    """Refuse a resume whose budget is already used up (it would stop at once)."""
    step, cpu_s = int(state.get("step", 0)), float(state.get("cpu_s", 0.0))
    max_steps, cpu_minutes = settings.get("max_steps"), settings.get("cpu_minutes")
    note = (
        " (--minutes limits this session only; the run's other budgets still apply)"
        if "minutes" in set(explicit)
        else ""
    )
    if max_steps is not None and step >= max_steps:
        raise UsageError(
            f"--resume: the run in {out} is at step {step} and its --max-steps is "
            f"{max_steps}, so there is nothing left to do{note}; give a larger --max-steps "
            f"to train on, e.g. --max-steps {2 * max_steps}"
        )
    if cpu_minutes is not None and cpu_s >= cpu_minutes * 60:
        raise UsageError(
            f"--resume: the run in {out} has used {cpu_s / 60:.1f} CPU-minutes and its "
            f"--cpu-minutes is {cpu_minutes:g}, so there is nothing left to do{note}; give a "
            f"larger --cpu-minutes to train on, e.g. --cpu-minutes {2 * cpu_minutes:g}"
        )


def corpus_record(given: str | None, path: Path) -> dict[str, str]:
    """What a run records about its corpus: the ``--corpus`` value as typed (or
    ``"shipped"``), the resolved path and the sha256 of its content."""
    from .corpus import CORPUS_ENV_VAR, SHIPPED_CORPUS, corpus_sha256

    if given is None:
        shipped = path.absolute() == SHIPPED_CORPUS.absolute()
        given = "shipped" if shipped else f"${CORPUS_ENV_VAR}"
    return {"given": given, "path": str(path.absolute()), "sha256": corpus_sha256(path)}


def resume_corpus(
    given: str | None, run: dict[str, Any], checkpoint: Path, out: Path
) -> tuple[Path, dict[str, str], str | None]:
    """The corpus a resumed run trains on: the one it recorded, checked by its sha256.

    ``--corpus`` on resume is accepted when its content is the run's own. A run whose
    checkpoint records no corpus (written before runs recorded it) resumes on the given
    or the shipped corpus, with a note.

    Returns:
        ``(path, record for the new checkpoints, note to print or None)``.

    Raises:
        UsageError: The given corpus differs from the run's, or the run's corpus is
            missing or has changed.
    """
    from .corpus import SHIPPED_CORPUS, corpus_sha256, find_corpus

    recorded = run.get("corpus")
    if not isinstance(recorded, dict) or "sha256" not in recorded:
        path = find_corpus(download=True) if given == "download" else find_corpus(given)
        what = f"--corpus {given} as given" if given else f"the shipped corpus {path}"
        note = (
            f"note: {checkpoint} does not record which corpus it was trained on (it was "
            f"written before runs recorded it); resuming on {what}"
        )
        return path, corpus_record(given, path), note
    sha, name = recorded["sha256"], recorded.get("given") or recorded.get("path")
    if recorded.get("path") and str(Path(str(name)).absolute()) != recorded["path"]:
        name = f"{name} ({recorded['path']})"
    if given is not None:
        path = find_corpus(download=True) if given == "download" else find_corpus(given)
        if corpus_sha256(path) != sha:
            raise UsageError(
                f"--corpus {given} conflicts with the run being resumed from {checkpoint}, "
                f"which trained on {name} (sha256 {sha[:12]}); "
                f"{given} holds other pairs. Drop --corpus to continue on the run's own "
                f"data, or start a new run to train on this one."
            )
        return path, {**recorded, "given": given, "path": str(path.absolute())}, None
    path = SHIPPED_CORPUS if recorded.get("given") == "shipped" else Path(recorded["path"])
    if not path.is_file():
        raise UsageError(
            f"--resume: the run in {out} trained on {name}, and {path} is missing; put the "
            f"file back, or pass --corpus PATH to a copy with the same content (sha256 "
            f"{sha[:12]})"
        )
    now = corpus_sha256(path)
    if now != sha:
        raise UsageError(
            f"--resume: the run in {out} trained on {name}, and {path} has changed since "
            f"(sha256 {sha[:12]} then, {now[:12]} now); a resumed run must see the data it "
            f"started with: restore the file or pass --corpus PATH to an unchanged copy, or "
            f"start a new run on the new data"
        )
    return path, {**recorded, "path": str(path.absolute())}, None
