"""Training the Transformer (§5): the loop.

Taught in chapter 9, after the objective and schedule (:mod:`.objectives`):

* :class:`TrainingConfig` and :class:`Trainer` (or the one-call :func:`train`) — the loop:
  token-budget batches, teacher forcing, gradient clipping, a time budget, a log a chapter
  can plot, periodic validation, checkpoints that resume exactly.

Shapes: B batch, S source length, T target length, V vocabulary size, N = B·T tokens.
"""

from __future__ import annotations

import json
import math
import os
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from ..components.model import Transformer
from .batching import batch_indices, collate
from .checkpoints import CheckpointError, load_checkpoint, save_checkpoint
from .objectives import LabelSmoothingLoss, NoamSchedule, make_optimizer

__all__ = [
    "Trainer",
    "TrainingConfig",
    "evaluate_loss",
    "read_log",
    "seed_everything",
    "select_device",
    "split_log",
    "train",
]


def select_device(device: str | torch.device | None = "auto") -> torch.device:
    """``"auto"`` → CUDA if available, else Apple's MPS, else CPU; anything else as given."""
    if device is None or str(device) == "auto":
        if torch.cuda.is_available():
            return torch.device("cuda")
        mps = getattr(torch.backends, "mps", None)
        if mps is not None and mps.is_available():
            return torch.device("mps")
        return torch.device("cpu")
    return torch.device(device)


@dataclass
class TrainingConfig:
    """Hyper-parameters of the loop (the model's own are in :class:`TransformerConfig`)."""

    max_tokens: int = 2048  # batch budget: padded tokens per batch, B · max(S, T) (§5.1: 25k)
    lr_factor: float = 1.0  # scale of the Noam schedule (§5.3 uses 1)
    warmup: int = 400  # warm-up steps (§5.3: 4000 for 100k steps; far fewer here)
    label_smoothing: float = 0.1  # ε_ls (§5.4)
    clip_norm: float | None = 1.0  # gradient-norm clipping (not in the paper; cheap insurance)
    max_steps: int | None = None  # stop after this many optimiser steps in total
    minutes: float | None = None  # stop after this much wall-clock time in this call
    eval_every: int = 500  # validation loss every this many steps (0 = only at the end)
    log_every: int = 25  # one training-log entry per this many steps
    checkpoint_every: int | None = None  # save a resumable checkpoint this often (None: evals)
    seed: int = 0  # model init, dropout and batch order
    device: str = "auto"  # "auto" (CUDA → MPS → CPU), "cpu", "cuda", "mps"
    progress: bool = True  # show a tqdm progress bar

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TrainingConfig:
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})


@torch.no_grad()
def evaluate_loss(
    model: Transformer,
    dataset,
    max_tokens: int = 4096,
    smoothing: float = 0.1,
    device: torch.device | str | None = None,
) -> dict[str, float]:
    """Validation loss over a :class:`~transformer_lib.data.TranslationDataset`.

    Returns:
        ``{"val_loss": label-smoothed KL (the training objective), "val_nll": plain
        cross-entropy per token (nats), "val_ppl": exp(val_nll)}``.
    """
    device = next(model.parameters()).device if device is None else torch.device(device)
    was_training = model.training
    model.eval()
    pad = model.config.pad_id
    criterion = LabelSmoothingLoss(model.config.vocab_size, smoothing, pad)
    kl_sum = nll_sum = 0.0
    n_tokens = 0
    for idx in batch_indices(dataset.lengths, max_tokens, shuffle=False):
        src, tgt = collate([dataset[i] for i in idx], dataset.pad_id)
        src, tgt = src.to(device), tgt.to(device)
        logits = model(src, tgt[:, :-1])  # (B, T-1, V)
        gold = tgt[:, 1:]
        n = int((gold != pad).sum())
        kl_sum += float(criterion(logits, gold)) * n
        nll_sum += (
            float(F.cross_entropy(logits.flatten(0, 1).float(), gold.flatten(), ignore_index=pad))
            * n
        )
        n_tokens += n
    model.train(was_training)
    nll = nll_sum / max(n_tokens, 1)
    return {"val_loss": kl_sum / max(n_tokens, 1), "val_nll": nll, "val_ppl": math.exp(nll)}


def _rng_state() -> dict[str, Any]:
    state: dict[str, Any] = {"torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def _set_rng_state(state: dict[str, Any]) -> None:
    if "torch" in state:
        torch.set_rng_state(state["torch"].cpu())
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all([s.cpu() for s in state["cuda"]])


class Trainer:
    """Train a :class:`Transformer` on a :class:`~transformer_lib.data.TranslationDataset`.

    Each step: a batch of similar-length pairs under the token budget, teacher forcing
    (decoder input ``tgt[:, :-1]``, prediction target ``tgt[:, 1:]``), the label-smoothed
    loss, backpropagation, gradient clipping, an Adam step and a schedule step.

    Args:
        model: The model (moved to the selected device).
        train_set: Training pairs as a ``TranslationDataset``.
        valid_set: Optional validation pairs (loss logged every ``eval_every`` steps).
        config: A :class:`TrainingConfig`.
        tokenizer: Stored inside every checkpoint so that it is self-contained.
        out_dir: If given, ``checkpoint.pt`` (resumable), ``model.pt`` (weights only) and
            ``training_log.json`` are written there.
        on_log: Optional callback receiving every log entry (e.g. a live plot).

    Attributes:
        log: A list of dicts. Training entries have ``step, epoch, loss, lr,
            tokens_per_s, grad_norm, elapsed_s, cpu_s``; validation entries have ``step,
            val_loss, val_nll, val_ppl, elapsed_s``.

    Example:
        >>> trainer = Trainer(model, train_ds, valid_ds, TrainingConfig(max_steps=200))
        >>> log = trainer.fit()  # doctest: +SKIP
    """

    def __init__(
        self,
        model: Transformer,
        train_set,
        valid_set=None,
        config: TrainingConfig | None = None,
        *,
        tokenizer: Any | None = None,
        tokenizer_path: str | os.PathLike | None = None,
        out_dir: str | os.PathLike | None = None,
        on_log: Callable[[dict], None] | None = None,
    ):
        self.config = cfg = config or TrainingConfig()
        if len(train_set) == 0:
            raise ValueError("The training set is empty; nothing to train on.")
        self.device = select_device(cfg.device)
        self.model = model.to(self.device)
        self.train_set, self.valid_set = train_set, valid_set
        self.tokenizer, self.tokenizer_path = tokenizer, tokenizer_path
        self.out_dir = Path(out_dir) if out_dir is not None else None
        self.on_log = on_log
        self.criterion = LabelSmoothingLoss(
            model.config.vocab_size, cfg.label_smoothing, model.config.pad_id
        )
        self.optimizer = make_optimizer(model)
        self.scheduler = NoamSchedule(
            self.optimizer, model.config.d_model, cfg.warmup, cfg.lr_factor
        )
        self.step = 0  # optimiser steps taken so far (over all sessions)
        self.epoch = 0  # current pass over the training data
        self.batch_in_epoch = 0  # batches of this epoch already used
        self.tokens_seen = 0  # non-pad source + target tokens trained on
        self.elapsed_s = 0.0  # training wall-clock time over all sessions
        self.cpu_s = 0.0  # CPU time of the process (all threads) over all sessions
        self.log: list[dict[str, Any]] = []

    # ---- checkpoints ---------------------------------------------------------------
    def state(self) -> dict[str, Any]:
        return {
            "step": self.step,
            "epoch": self.epoch,
            "batch_in_epoch": self.batch_in_epoch,
            "tokens_seen": self.tokens_seen,
            "elapsed_s": self.elapsed_s,
            "cpu_s": self.cpu_s,
            "training_config": self.config.to_dict(),
            "rng": _rng_state(),
            "log": self.log,
            "device": str(self.device),
            "torch_threads": torch.get_num_threads(),
        }

    def save(self, path: str | os.PathLike, weights_only: bool = False) -> Path:
        """Save a checkpoint; ``weights_only=True`` leaves out the optimiser and schedule."""
        return save_checkpoint(
            path,
            self.model,
            tokenizer=self.tokenizer,
            tokenizer_path=self.tokenizer_path,
            optimizer=self.optimizer,
            scheduler=self.scheduler,
            state=self.state(),
            weights_only=weights_only,
        )

    def resume(self, path: str | os.PathLike) -> None:
        """Continue from a checkpoint written by :meth:`save` (model, optimiser, schedule,
        step, position in the data and RNG state).

        The model must have the checkpoint's config. The loop's hyper-parameters are those
        of this Trainer (so ``max_steps`` or ``minutes`` can be raised for the new session).
        """
        ckpt = load_checkpoint(path)
        if ckpt["config"] != self.model.config.to_dict():
            raise CheckpointError(
                f"{path} was trained with a different model config; build the model with "
                f"TransformerConfig.from_dict(checkpoint['config'])."
            )
        if "optimizer" not in ckpt or "scheduler" not in ckpt:
            raise CheckpointError(
                f"{path} holds weights only (no optimiser/schedule state), so training cannot "
                f"resume from it exactly. Resume from the run's checkpoint.pt instead."
            )
        fresh = Transformer(self.model.config)
        try:  # strict load into a fresh model first: nothing is half-loaded on failure
            fresh.load_state_dict(ckpt["model"], strict=True)
        except RuntimeError as exc:
            raise CheckpointError(f"{path}: weights do not fit the model ({exc}).") from exc
        self.model.load_state_dict(fresh.state_dict())
        self.optimizer.load_state_dict(ckpt["optimizer"])
        self.scheduler.load_state_dict(ckpt["scheduler"])
        st = ckpt.get("state", {})
        self.step = int(st.get("step", 0))
        self.epoch = int(st.get("epoch", 0))
        self.batch_in_epoch = int(st.get("batch_in_epoch", 0))
        self.tokens_seen = int(st.get("tokens_seen", 0))
        self.elapsed_s = float(st.get("elapsed_s", 0.0))
        self.cpu_s = float(st.get("cpu_s", 0.0))
        self.log = list(st.get("log", []))
        if "rng" in st:
            _set_rng_state(st["rng"])

    def _write_outputs(self) -> None:
        if self.out_dir is None:
            return
        self.out_dir.mkdir(parents=True, exist_ok=True)
        self.save(self.out_dir / "checkpoint.pt")
        self.save(self.out_dir / "model.pt", weights_only=True)
        self._write_log()

    def _write_log(self) -> None:
        if self.out_dir is not None:
            self.out_dir.mkdir(parents=True, exist_ok=True)
            (self.out_dir / "training_log.json").write_text(json.dumps(self.log, indent=1) + "\n")

    # ---- the loop ------------------------------------------------------------------
    def _epoch_batches(self) -> list[list[int]]:
        # A different, reproducible order every epoch.
        return batch_indices(
            self.train_set.lengths, self.config.max_tokens, shuffle=True,
            seed=self.config.seed * 100_003 + self.epoch,
        )  # fmt: skip

    def _record(self, entry: dict[str, Any]) -> None:
        self.log.append(entry)
        self._write_log()  # small; lets a long run be watched from outside
        if self.on_log is not None:
            self.on_log(entry)

    def validate(self) -> dict[str, float] | None:
        if self.valid_set is None or len(self.valid_set) == 0:
            return None
        result = evaluate_loss(
            self.model, self.valid_set, 2 * self.config.max_tokens, self.config.label_smoothing
        )
        entry = {"step": self.step, **result, "elapsed_s": round(self.elapsed_s, 2)}
        self._record(entry)
        return result

    def fit(self) -> list[dict[str, Any]]:
        """Train until ``max_steps`` (total) or ``minutes`` (this call) is reached.

        Returns:
            The log (also in :attr:`log`, and in ``out_dir/training_log.json``).
        """
        cfg = self.config
        if cfg.max_steps is None and cfg.minutes is None:
            raise ValueError("Give max_steps or minutes (or both), or training never stops.")
        if self.step == 0:
            torch.manual_seed(cfg.seed)  # dropout; model init is seeded by the caller
        model, pad = self.model, self.model.config.pad_id
        budget_s = None if cfg.minutes is None else cfg.minutes * 60.0
        ckpt_every = cfg.checkpoint_every or cfg.eval_every
        bar = _progress_bar(cfg, self.step)
        start = last = time.perf_counter()
        start_elapsed, start_cpu, cpu0 = self.elapsed_s, self.cpu_s, time.process_time()
        window = {"loss": 0.0, "tokens": 0, "steps": 0, "targets": 0, "grad": 0.0}
        model.train()
        done = False
        while not done:
            batches = self._epoch_batches()
            while self.batch_in_epoch < len(batches):
                if cfg.max_steps is not None and self.step >= cfg.max_steps:
                    done = True
                    break
                if budget_s is not None and time.perf_counter() - start >= budget_s:
                    done = True
                    break
                idx = batches[self.batch_in_epoch]
                src, tgt = collate([self.train_set[i] for i in idx], self.train_set.pad_id)
                src, tgt = src.to(self.device), tgt.to(self.device)
                gold = tgt[:, 1:]  # (B, T-1): the next token at every position
                logits = model(src, tgt[:, :-1])  # (B, T-1, V), teacher forcing
                loss = self.criterion(logits, gold)
                self.optimizer.zero_grad(set_to_none=True)
                loss.backward()
                if cfg.clip_norm:
                    grad = nn.utils.clip_grad_norm_(model.parameters(), cfg.clip_norm)
                else:
                    grad = torch.zeros(())
                self.optimizer.step()
                self.scheduler.step()
                self.step += 1
                self.batch_in_epoch += 1
                n_tgt = int((gold != pad).sum())
                n_tok = n_tgt + int((src != pad).sum())
                self.tokens_seen += n_tok
                window["loss"] += loss.item() * n_tgt
                window["targets"] += n_tgt
                window["tokens"] += n_tok
                window["steps"] += 1
                window["grad"] += float(grad)
                now = time.perf_counter()
                self.elapsed_s = start_elapsed + (now - start)
                self.cpu_s = start_cpu + (time.process_time() - cpu0)
                if bar is not None:
                    bar.update(1)
                if self.step % cfg.log_every == 0:
                    entry = {
                        "step": self.step,
                        "epoch": self.epoch,
                        "loss": round(window["loss"] / max(window["targets"], 1), 5),
                        "lr": self.scheduler.get_last_lr()[0],
                        "tokens_per_s": round(window["tokens"] / max(now - last, 1e-9), 1),
                        "grad_norm": round(window["grad"] / window["steps"], 4),
                        "elapsed_s": round(self.elapsed_s, 2),
                        "cpu_s": round(self.cpu_s, 2),
                    }
                    self._record(entry)
                    if bar is not None:
                        bar.set_postfix(loss=f"{entry['loss']:.3f}", tok_s=entry["tokens_per_s"])
                    window = {"loss": 0.0, "tokens": 0, "steps": 0, "targets": 0, "grad": 0.0}
                    last = time.perf_counter()
                if cfg.eval_every and self.step % cfg.eval_every == 0:
                    self.validate()
                    if bar is not None and self.log and "val_loss" in self.log[-1]:
                        bar.write(
                            f"step {self.step}: val_loss {self.log[-1]['val_loss']:.3f} "
                            f"val_ppl {self.log[-1]['val_ppl']:.2f}"
                        )
                    last = time.perf_counter()  # validation time is not training throughput
                if ckpt_every and self.step % ckpt_every == 0:
                    self._write_outputs()
            else:
                self.epoch += 1
                self.batch_in_epoch = 0
        if bar is not None:
            bar.close()
        if not (self.log and self.log[-1].get("step") == self.step and "val_loss" in self.log[-1]):
            self.validate()
        self._write_outputs()
        return self.log


def _progress_bar(cfg: TrainingConfig, initial: int):
    if not cfg.progress:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=cfg.max_steps, initial=initial, unit="step", desc="training")


def train(
    model: Transformer,
    train_set,
    valid_set=None,
    config: TrainingConfig | None = None,
    **kwargs: Any,
) -> list[dict[str, Any]]:
    """One call: build a :class:`Trainer` and run :meth:`Trainer.fit`; returns the log.

    Keyword arguments go to :class:`Trainer` (``tokenizer``, ``out_dir``, ``on_log``).
    """
    return Trainer(model, train_set, valid_set, config, **kwargs).fit()


def seed_everything(seed: int) -> None:
    """Seed Python's, and torch's (CPU and CUDA) random generators."""
    random.seed(seed)
    torch.manual_seed(seed)


def read_log(path: str | os.PathLike) -> list[dict[str, Any]]:
    """Read a ``training_log.json`` written by the trainer."""
    return json.loads(Path(path).read_text())


def split_log(log: Sequence[dict[str, Any]]) -> tuple[list[dict], list[dict]]:
    """``(training entries, validation entries)`` of a log, for plotting."""
    return [e for e in log if "loss" in e], [e for e in log if "val_loss" in e]
