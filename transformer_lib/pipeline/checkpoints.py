"""Checkpoint files: save, load, check, and rebuild a model and its tokenizer from one.

Files load with ``torch.load(weights_only=True)`` and carry the model config and the
tokenizer, so one file is enough to translate. Used by the trainer (chapter 9) and by
:func:`~transformer_lib.pipeline.pretrained.load_pretrained`.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch import nn
from torch.optim.lr_scheduler import LambdaLR

from ..components.decoder_only import build_model, model_config_dict
from ..components.model import count_parameters

__all__ = [
    "average_checkpoints",
    "CHECKPOINT_FORMAT",
    "restore_hint",
    "CheckpointError",
    "MissingCheckpointError",
    "load_checkpoint",
    "load_model",
    "save_checkpoint",
    "tokenizer_from_checkpoint",
    "tokenizer_record",
]


# ======================================================================================
# Checkpoints
# ======================================================================================

CHECKPOINT_FORMAT = "transformer_lib.checkpoint"
CHECKPOINT_VERSION = 1


class CheckpointError(ValueError):
    """A checkpoint file cannot be used: corrupt, truncated, or not written by this library.

    The message names the file and says how to get a good one.
    """


class MissingCheckpointError(CheckpointError, FileNotFoundError):
    """There is no checkpoint file where one was expected."""


def restore_hint(name: str) -> str:
    """How to get back a file that ships with the book (``data/NAME``), for this install.

    A git checkout restores it with ``git checkout``; a pip install has no repository to
    restore from, so it is reinstalled.
    """
    from .corpus import REPO_ROOT, shipped_data_dir

    if (REPO_ROOT / ".git").exists() and shipped_data_dir() == REPO_ROOT / "data":
        return f"restore it with `git checkout -- data/{name}`"
    return (
        f"reinstall the package to get it back (`pip install --force-reinstall --no-deps` "
        f"with the source you installed it from puts it in {shipped_data_dir()})"
    )


def _fix_hint(path: str | os.PathLike) -> str:
    """What to do about a bad checkpoint file: restore it if it ships with the book,
    otherwise train one (or use the shipped model)."""
    from .corpus import shipped_data_dir

    path = Path(path)
    try:
        shipped = path.resolve().parent == shipped_data_dir().resolve()
    except OSError:
        shipped = False
    if shipped:
        return f"It ships with the book: {restore_hint(path.name)}."
    return (
        "Point at a checkpoint written by `python -m transformer_lib train --out runs/NAME` "
        "(runs/NAME/model.pt or checkpoint.pt), or leave the option out to use the shipped "
        "model."
    )


def _sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def tokenizer_record(tokenizer: Any, path: str | os.PathLike | None = None) -> dict[str, str]:
    """What a checkpoint stores about its tokenizer: name, sha256 and the full JSON text.

    Embedding the JSON (≈270 KB) makes a checkpoint self-contained: the weights only make
    sense with the exact vocabulary they were trained with.
    """
    text = tokenizer.backend.to_str(pretty=False)
    name = Path(path).name if path is not None else "tokenizer.json"
    return {"name": name, "sha256": _sha256_text(text), "json": text}


def save_checkpoint(
    path: str | os.PathLike,
    model: nn.Module,
    *,
    tokenizer: Any | None = None,
    tokenizer_path: str | os.PathLike | None = None,
    optimizer: torch.optim.Optimizer | None = None,
    scheduler: LambdaLR | None = None,
    state: dict[str, Any] | None = None,
    weights_only: bool = False,
) -> Path:
    """Write a checkpoint (atomically: a temporary file, then a rename).

    Only tensors, dicts, lists, numbers and strings are stored, so the file loads with
    ``torch.load(path, weights_only=True)``.

    Args:
        path: Destination file, conventionally ``*.pt``.
        model: The model; its config is stored as a dict.
        tokenizer: The :class:`~transformer_lib.tokenizer.Tokenizer` it was trained with
            (stored as name + sha256 + JSON text).
        tokenizer_path: Where the tokenizer came from (only its file name is recorded).
        optimizer, scheduler: Stored unless ``weights_only`` (needed to resume training).
        state: Training progress (step, epoch, elapsed time, RNG state, the training
            config, ...): any JSON-like dict.
        weights_only: Store fp32 weights, config, tokenizer and ``state`` only — the small
            file that ships with the book.

    Returns:
        The path written.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    weights = {k: v.detach().to("cpu", torch.float32) for k, v in model.state_dict().items()}
    ckpt: dict[str, Any] = {
        "format": CHECKPOINT_FORMAT,
        "version": CHECKPOINT_VERSION,
        "config": model_config_dict(model),
        "model": weights,
        "n_parameters": count_parameters(model),
        "torch_version": str(torch.__version__),
        "state": dict(state or {}),
    }
    if tokenizer is not None:
        ckpt["tokenizer"] = tokenizer_record(tokenizer, tokenizer_path)
    if not weights_only:
        if optimizer is not None:
            ckpt["optimizer"] = optimizer.state_dict()
        if scheduler is not None:
            ckpt["scheduler"] = scheduler.state_dict()
    elif "rng" in ckpt["state"]:
        del ckpt["state"]["rng"]
    _save_atomic(ckpt, path)
    return path


def average_checkpoints(
    paths: list[str | os.PathLike], out: str | os.PathLike | None = None
) -> dict[str, Any]:
    """Average the weights of several checkpoints of one run (§6.1 of the paper).

    The paper's base models average the last 5 checkpoints, written 10 minutes apart.
    All checkpoints must share one model config and tokenizer. The result keeps the
    newest checkpoint's config, tokenizer and training state (without optimiser state),
    records ``state["averaged_from"]`` and, if ``out`` is given, is written there.

    Checkpoints of *different runs* (their recorded seeds, training settings or corpora
    differ) are averaged too, with a ``UserWarning``: the weights of two independently
    trained models do not line up, and their average translates nothing (BLEU near 0).

    Returns:
        The averaged checkpoint dict (loadable with :func:`load_model` once saved).

    Raises:
        ValueError: No paths, or checkpoints of different models or tokenizers.
    """
    if not paths:
        raise ValueError("average_checkpoints needs at least one checkpoint file.")
    ckpts = [load_checkpoint(p) for p in paths]
    first = ckpts[0]
    for path, ck in zip(paths, ckpts):
        if ck["config"] != first["config"] or set(ck["model"]) != set(first["model"]):
            raise ValueError(f"{path} is a different model from {paths[0]}; average one run.")
        if ck.get("tokenizer", {}).get("sha256") != first.get("tokenizer", {}).get("sha256"):
            raise ValueError(f"{path} uses a different tokenizer from {paths[0]}.")
    _warn_if_different_runs(paths, ckpts)
    newest = ckpts[-1]
    weights: dict[str, torch.Tensor] = {}
    shared: dict[tuple[int, int], torch.Tensor] = {}  # tied weights stay one tensor
    for name, tensor in first["model"].items():
        key = (tensor.untyped_storage().data_ptr(), tensor.storage_offset())
        if key not in shared:
            shared[key] = sum(ck["model"][name].double() for ck in ckpts).div(len(ckpts)).float()
        weights[name] = shared[key]
    state = {k: v for k, v in newest.get("state", {}).items() if k != "rng"}
    state["averaged_from"] = [
        {"file": Path(p).name, "step": ck.get("state", {}).get("step")}
        for p, ck in zip(paths, ckpts)
    ]
    averaged = {
        k: v for k, v in newest.items() if k not in ("optimizer", "scheduler", "model", "state")
    }
    averaged.update(model=weights, state=state)
    if out is not None:
        _save_atomic(averaged, Path(out))
    return averaged


#: Training settings that may differ between checkpoints of one run (a resumed run may
#: change its budget; the device and progress bar are not part of the recipe).
_SETTINGS_THAT_MAY_DIFFER = ("max_steps", "minutes", "cpu_minutes", "device", "progress")


def _run_identity(ckpt: dict) -> dict[str, Any]:
    """What a checkpoint records about the run it belongs to: its seed, its other fixed
    training settings and the sha256 of its corpus (those it records)."""
    state = ckpt.get("state", {})
    config = state.get("training_config", {})
    identity = {k: v for k, v in config.items() if k not in _SETTINGS_THAT_MAY_DIFFER}
    corpus = state.get("run", {}).get("corpus")
    if isinstance(corpus, dict) and corpus.get("sha256"):
        identity["corpus"] = corpus.get("given") or corpus["sha256"][:12]
        identity["corpus_sha256"] = corpus["sha256"]
    return identity


def _warn_if_different_runs(paths: list, ckpts: list[dict]) -> None:
    """Warn when the checkpoints come from different training runs (different seeds,
    settings or corpora): the average of independently trained models is a broken model."""
    first = _run_identity(ckpts[0])
    for path, ckpt in zip(paths[1:], ckpts[1:]):
        other = _run_identity(ckpt)
        differ = [k for k in first if k in other and first[k] != other[k]]
        if not differ:
            continue
        shown = [k for k in differ if k != "corpus_sha256"] or ["corpus_sha256"]
        what = ", ".join(f"{k} {first[k]!r} vs {other[k]!r}" for k in shown[:3])
        warnings.warn(
            f"AVERAGING CHECKPOINTS OF DIFFERENT RUNS: {paths[0]} and {path} were trained "
            f"differently ({what}). Independently trained "
            f"models do not line up weight by weight, so their average is a broken model "
            f"(BLEU near 0); §6.1 averages the last checkpoints of one run.",
            UserWarning,
            stacklevel=3,
        )
        return


def write_atomically(path: Path, write: Callable[[Path], Any]) -> None:
    """Run ``write(tmp)`` on a temporary file beside ``path``, then rename it into place.

    A reader (or a run killed half-way) sees the old file or the new one, never half of
    one; the temporary ``.NAME.tmp-PID`` is removed even when ``write`` fails.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        write(tmp)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def _save_atomic(obj: dict[str, Any], path: Path) -> None:
    write_atomically(path, lambda tmp: torch.save(obj, tmp))


def _why_unreadable(path: Path, exc: Exception) -> str:
    """What is wrong with a file ``torch.load(weights_only=True)`` refused, in our words.

    torch's own message for a refused pickle advises loading with ``weights_only=False``,
    which would run whatever code the file holds: it is never repeated here.
    """
    try:
        with path.open("rb") as f:
            head = f.read(4)
    except OSError as err:
        return f"it cannot be read ({err.strerror})"
    if not head:
        return "the file is empty (0 bytes)"
    refused = isinstance(exc, pickle.UnpicklingError) or "weights only" in str(exc).lower()
    if head == b"PK\x03\x04":  # the zip archive torch.save writes
        if refused:
            return (
                "it holds Python objects other than tensors, numbers, strings, lists and "
                "dicts (a whole pickled model, or code that would run on loading), which "
                "this library never loads; it was not written by transformer_lib"
            )
        return (
            "the archive is truncated or damaged (an interrupted copy or download, or a "
            "file written while its run was killed)"
        )
    if head[:1] == b"\x80":  # a pickle stream (or torch's legacy format)
        return (
            "it is a plain pickle, not a checkpoint archive, and may hold code that would "
            "run on loading; this library never loads such files"
        )
    return "it is not a PyTorch file at all (it starts as neither a zip archive nor a pickle)"


def load_checkpoint(path: str | os.PathLike, map_location: str | torch.device = "cpu") -> dict:
    """Read and validate a checkpoint written by :func:`save_checkpoint`.

    Loads with ``torch.load(weights_only=True)``: nothing in the file can run code.

    Raises:
        MissingCheckpointError: There is no file at ``path``.
        CheckpointError: The file is truncated/corrupt, is not a torch file, or is a torch
            file of something else (e.g. a bare state dict). The message names the file.
    """
    path = Path(path)
    if not path.is_file():
        raise MissingCheckpointError(f"No checkpoint file at {path}. {_fix_hint(path)}")
    try:
        with warnings.catch_warnings():  # e.g. torch's note on a foreign pickle protocol
            warnings.simplefilter("ignore")
            ckpt = torch.load(path, map_location=map_location, weights_only=True)
    except Exception as exc:  # zip errors, unpickling errors, EOF: all mean "bad file"
        raise CheckpointError(
            f"{path} is not a readable PyTorch checkpoint: {_why_unreadable(path, exc)}. "
            f"{_fix_hint(path)}"
        ) from exc
    if not isinstance(ckpt, dict) or ckpt.get("format") != CHECKPOINT_FORMAT:
        what = (
            f"a dict with keys {sorted(map(str, ckpt))[:6]}"
            if isinstance(ckpt, dict)
            else type(ckpt).__name__
        )
        raise CheckpointError(
            f"{path} is a PyTorch file but not a transformer_lib checkpoint (it holds {what}; "
            f"expected format={CHECKPOINT_FORMAT!r}). {_fix_hint(path)}"
        )
    if ckpt.get("version") != CHECKPOINT_VERSION:
        raise CheckpointError(
            f"{path} has checkpoint version {ckpt.get('version')!r}; this transformer_lib "
            f"reads version {CHECKPOINT_VERSION}. Retrain, or use the matching library version."
        )
    missing = [k for k in ("config", "model") if not isinstance(ckpt.get(k), dict)]
    if missing:
        raise CheckpointError(f"{path} lacks {missing}; it is incomplete. {_fix_hint(path)}")
    return ckpt


def load_model(
    path: str | os.PathLike, device: str | torch.device = "cpu"
) -> tuple[nn.Module, dict]:
    """Build a fresh model from a checkpoint's config and load its weights strictly.

    Nothing is half-loaded: a new :class:`Transformer` is built and filled with
    ``load_state_dict(strict=True)``; only if that succeeds is it returned.

    Returns:
        ``(model in eval mode on device, checkpoint dict)``.

    Raises:
        MissingCheckpointError, CheckpointError: see :func:`load_checkpoint`; also when
            the config or weights do not fit together.
    """
    ckpt = load_checkpoint(path)
    try:
        model = build_model(ckpt["config"])
        model.load_state_dict(ckpt["model"], strict=True)
    except (ValueError, TypeError, KeyError, RuntimeError) as exc:
        raise CheckpointError(
            f"{path} holds weights that do not fit its model config ({exc}). {_fix_hint(path)}"
        ) from exc
    return model.to(device).eval(), ckpt


def tokenizer_from_checkpoint(ckpt: dict, path: str | os.PathLike = "checkpoint"):
    """The :class:`~transformer_lib.tokenizer.Tokenizer` embedded in a checkpoint."""
    import tokenizers

    from .tokenizer import Tokenizer

    rec = ckpt.get("tokenizer")
    if not isinstance(rec, dict) or "json" not in rec:
        raise CheckpointError(
            f"{path} has no embedded tokenizer; load data/tokenizer.json with Tokenizer.load()."
        )
    if _sha256_text(rec["json"]) != rec.get("sha256"):
        raise CheckpointError(
            f"{path}: the embedded tokenizer fails its sha256 check. {_fix_hint(path)}"
        )
    tokenizer = Tokenizer(tokenizers.Tokenizer.from_str(rec["json"]))
    vocab = ckpt.get("config", {}).get("vocab_size")
    if vocab is not None and tokenizer.vocab_size != vocab:
        raise CheckpointError(
            f"{path}: its tokenizer has {tokenizer.vocab_size} tokens but the model's "
            f"embedding has {vocab} rows, so token ids would not match the weights (the file "
            f"pairs a model with another tokenizer). {_fix_hint(path)}"
        )
    return tokenizer


# ======================================================================================
# The training loop
# ======================================================================================
