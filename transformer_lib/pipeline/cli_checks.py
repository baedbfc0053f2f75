"""Checks the command line runs before any work starts.

Every argument is validated before the corpus is read or a model is built, so that a
typo costs a second, not a run. A failed check raises :class:`UsageError`, which the
command line prints as one line (naming the flag and the fix) with exit status 2.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import torch

__all__ = ["UsageError", "clear_run", "device", "run_files", "train_out_dir", "writable_file"]

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
    _check(args.alpha >= 0, "alpha", ">= 0", args.alpha)
    if args.checkpoint is not None and not Path(args.checkpoint).is_file():
        raise UsageError(f"--checkpoint: no file at {args.checkpoint}")


def sampling(args: argparse.Namespace) -> None:
    """The ``generate`` flags."""
    _check(args.max_new_tokens >= 1, "max_new_tokens", ">= 1", args.max_new_tokens)
    _check(args.samples >= 1, "samples", ">= 1", args.samples)
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
        "threads": (lambda v: v >= 1, ">= 1"),
        "layers": (lambda v: v >= 1, ">= 1"),
        "eval_every": (lambda v: v >= 0, ">= 0 (0 = only at the end)"),
        "log_every": (lambda v: v >= 1, ">= 1"),
        "checkpoint_every": (lambda v: v >= 1, ">= 1"),
        "checkpoint_minutes": (lambda v: v >= 0, ">= 0 (0 = off)"),
        "keep_checkpoints": (lambda v: v >= 0, ">= 0"),
    }
    for name, (ok, rule) in rules.items():
        if name in given:
            _check(ok(given[name]), name, rule, given[name])
    for flag in ("prefix_lm", "layers"):
        if getattr(args, flag) and (args.arch or "encoder-decoder") != "decoder-only":
            raise UsageError(f"--{flag.replace('_', '-')} applies to --arch decoder-only only")


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


def writable_file(path: str | os.PathLike, flag: str) -> None:
    """``path`` can be created or overwritten as a file."""
    path = Path(path)
    if path.is_dir():
        raise UsageError(f"{flag}: {path} is a directory; give a file name, e.g. {path}/out.json")
    parent = _nearest_existing(path.parent)
    if not parent.is_dir():
        raise UsageError(f"{flag}: {parent} is a file, so {path} cannot be created")
    _probe_dir(parent, flag)


def run_files(out: Path) -> list[Path]:
    """The files of an earlier run in ``out`` (empty if there is none)."""
    if not out.is_dir():
        return []
    found = [out / name for name in RUN_FILES if (out / name).exists()]
    return found + sorted(out.glob("step-[0-9]*.pt"))


def train_out_dir(out: Path, resume: str | None, force: bool) -> Path | None:
    """Check ``--out`` (and ``--resume``); return the checkpoint to resume from, if any.

    A folder that already holds a run is never overwritten silently: ``--resume``
    continues it, ``--force`` starts again from scratch, otherwise this refuses.
    """
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out: {out} is a file, not a folder; choose a folder name")
    _probe_dir(_nearest_existing(out), "--out")
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


def resume_conflicts(
    args: argparse.Namespace,
    explicit: Iterable[str],
    run: dict[str, Any],
    saved: dict[str, Any],
    may_change: Iterable[str],
    path: Path,
) -> None:
    """Refuse flags that contradict the run being resumed (its settings are restored)."""
    fixed = {"preset", "arch", "prefix_lm", "layers", "dropout", "tokenizer", "amp"}
    fixed |= set(saved) - {"device", "progress"}
    for name in sorted(set(explicit) & fixed - set(may_change)):
        value = getattr(args, name)
        before = run.get(name, saved.get(name))
        if name in ("tokenizer", "dropout") or before is None or before != value:
            shown = "" if before is None else f" (the run used {before})"
            raise UsageError(
                f"--{name.replace('_', '-')} {value} conflicts with the run being resumed "
                f"from {path}{shown}: a resumed run keeps all its settings; only --minutes, "
                f"--max-steps and --cpu-minutes may change. Drop the flag, or start a new run."
            )
