"""Training the Transformer (§5): the loop.

Taught in chapter 9, after the objective and schedule (:mod:`.objectives`):

* :class:`TrainingConfig` and :class:`Trainer` (or the one-call :func:`train`) — the loop:
  token-budget batches, teacher forcing, gradient clipping, a time budget, a log a chapter
  can plot, periodic validation, checkpoints that resume exactly.

Shapes: B batch, S source length, T target length, V vocabulary size, N = B·T tokens.
"""

from __future__ import annotations

import json
import os
import random
import signal
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

import torch
from torch import nn

from ..components.decoder_only import build_model, model_config_dict
from ..components.model import Transformer
from .batching import batch_indices
from .checkpoints import CheckpointError, load_checkpoint, save_checkpoint, write_atomically
from .distributed import (
    agree,
    autocast,
    distributed_rank_and_size,
    process_group_backend,
    sum_over_ranks,
    wrap_distributed,
)
from .objectives import LabelSmoothingLoss, LinearDecaySchedule, make_optimizer, make_schedule
from .run_folder import failed_writes, training_session
from .tasks import evaluate_loss, task_for

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

    # batch budget: padded tokens per batch, B · max(S, T); §5.1 counts about 25k source
    # plus 25k target tokens per batch instead
    max_tokens: int = 2048
    lr_factor: float = 1.0  # scale of the Noam schedule (§5.3 uses 1)
    warmup: int = 400  # warm-up steps (§5.3: 4000 for 100k steps; far fewer here)
    # "noam" (§5.3: rate ∝ step^-0.5 after the warm-up) or "linear" (the same warm-up and
    # peak, then a straight line to zero at the end of the budget: better for short runs)
    schedule: str = "noam"
    label_smoothing: float = 0.1  # ε_ls (§5.4)
    clip_norm: float | None = 1.0  # gradient-norm clipping (not in the paper; cheap insurance)
    max_steps: int | None = None  # stop after this many optimiser steps in total
    minutes: float | None = None  # stop after this much wall-clock time in this call
    cpu_minutes: float | None = None  # stop once the run has used this much CPU time in all
    eval_every: int = 500  # validation loss every this many steps (0 = only at the end)
    log_every: int = 25  # one training-log entry per this many steps
    checkpoint_every: int | None = None  # save a resumable checkpoint this often (None: evals)
    checkpoint_minutes: float = 1.0  # ... and at least this often in wall-clock time (0 = off)
    keep_checkpoints: int = 0  # keep the last K step checkpoints (weights) for averaging (§6.1)
    snapshot_at: tuple[int, ...] = ()  # steps at which to record attention snapshots
    amp: bool = False  # bf16 autocast on CUDA (ignored on the CPU)
    seed: int = 0  # model init, dropout and batch order
    device: str = "auto"  # "auto" (CUDA → MPS → CPU), "cpu", "cuda", "mps"
    progress: bool = True  # show a tqdm progress bar

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TrainingConfig:
        names = {f.name for f in fields(cls)}
        kw = {k: v for k, v in data.items() if k in names}
        if "snapshot_at" in kw:
            kw["snapshot_at"] = tuple(kw["snapshot_at"])
        return cls(**kw)


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
    """Train a model (:class:`Transformer`, or the decoder-only one) on sentence pairs.

    Each step: a batch of similar-length pairs under the token budget, teacher forcing
    (decoder input ``tgt[:, :-1]``, prediction target ``tgt[:, 1:]``), the label-smoothed
    loss, backpropagation, gradient clipping, an Adam step and a schedule step.

    A run survives interruption: a resumable ``checkpoint.pt`` is written at least every
    ``checkpoint_minutes`` (atomically: a killed run leaves the previous file intact and
    no temporary file), and SIGINT (Ctrl-C) or SIGTERM ends the loop after the current
    step with a checkpoint saved (:attr:`interrupted` says which signal).

    Under ``torchrun`` (``torch.distributed`` initialised) the model is wrapped in
    ``DistributedDataParallel``: every step each rank takes a different batch of the same
    shuffled epoch, gradients are averaged, and rank 0 alone writes logs and checkpoints.

    Args:
        model: The model (moved to the selected device).
        train_set: Training pairs as a ``TranslationDataset``.
        valid_set: Optional validation pairs (loss logged every ``eval_every`` steps).
        config: A :class:`TrainingConfig`.
        tokenizer: Stored inside every checkpoint so that it is self-contained.
        out_dir: If given, ``checkpoint.pt`` (resumable), ``model.pt`` (weights only),
            ``training_log.json`` and, if asked for, ``step-NNNNNN.pt`` (the last
            ``keep_checkpoints`` step checkpoints) and ``attention_snapshots.json`` are
            written there.
        on_log: Optional callback receiving every log entry (e.g. a live plot).
        run: How the run was started (preset, architecture, ...): stored in checkpoints so
            that a resumed run can refuse contradicting settings.

    Attributes:
        log: A list of dicts. Training entries have ``step, epoch, loss, lr,
            tokens_per_s, grad_norm, elapsed_s, cpu_s``; validation entries have ``step,
            val_loss, val_nll, val_ppl, elapsed_s``.
        snapshots: Attention snapshots recorded so far (see :mod:`.snapshots`).

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
        run: dict[str, Any] | None = None,
    ):
        self.config = cfg = config or TrainingConfig()
        self.run = dict(run or {})  # how the run was started (preset, arch, ...), for resume
        if len(train_set) == 0:
            raise ValueError("The training set is empty; nothing to train on.")
        self.device = select_device(cfg.device)
        self.model = model.to(self.device)
        self.rank, self.world = distributed_rank_and_size()
        self.train_set, self.valid_set = train_set, valid_set
        self.tokenizer, self.tokenizer_path = tokenizer, tokenizer_path
        self.out_dir = Path(out_dir) if out_dir is not None and self.rank == 0 else None
        self.on_log = on_log
        self.task = task_for(model, self.run)
        self.criterion = LabelSmoothingLoss(
            model.config.vocab_size, cfg.label_smoothing, model.config.pad_id
        )
        self.optimizer = make_optimizer(model)
        self.scheduler = make_schedule(
            self.optimizer, cfg.schedule, model.config.d_model, cfg.warmup, cfg.lr_factor
        )
        self.step = 0  # optimiser steps taken so far (over all sessions)
        self.epoch = 0  # current pass over the training data
        self.batch_in_epoch = 0  # batches of this epoch already used (by all ranks)
        self.tokens_seen = 0  # non-pad source + target tokens trained on (this rank)
        self.elapsed_s = 0.0  # training wall-clock time over all sessions
        self.cpu_s = 0.0  # CPU time of the process (all threads) over all sessions
        self.log: list[dict[str, Any]] = []
        self.snapshots: list[dict[str, Any]] = []
        self.interrupted: str | None = None  # "SIGINT"/"SIGTERM" if a signal ended fit()
        self._signal: int | None = None
        self.checkpoint_step: int | None = None  # step of the last checkpoint.pt written here
        self._bar = None  # the progress bar of the running fit(), if any

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
            "snapshots": self.snapshots,
            "device": str(self.device),
            "torch_threads": torch.get_num_threads(),
            "world_size": self.world,
            "run": self.run,
        }

    def save(self, path: str | os.PathLike, weights_only: bool = False) -> Path:
        """Save a checkpoint; ``weights_only=True`` leaves out the optimiser and schedule."""
        state = self.state()
        if weights_only:
            state.pop("snapshots")  # they have their own file; keep model files small
        return save_checkpoint(
            path,
            self.model,
            tokenizer=self.tokenizer,
            tokenizer_path=self.tokenizer_path,
            optimizer=self.optimizer,
            scheduler=self.scheduler,
            state=state,
            weights_only=weights_only,
        )

    def resume(self, path: str | os.PathLike) -> None:
        """Continue from a checkpoint written by :meth:`save` (model, optimiser, schedule,
        step, position in the data, log, snapshots and RNG state).

        The model must have the checkpoint's config. The loop's hyper-parameters are those
        of this Trainer: build it with ``TrainingConfig.from_dict(ckpt["state"]
        ["training_config"])`` to continue exactly (the command line does), changing only
        ``max_steps`` or ``minutes`` to train for longer.
        """
        ckpt = load_checkpoint(path)
        if ckpt["config"] != model_config_dict(self.model):
            raise CheckpointError(
                f"{path} was trained with a different model; build it with "
                f"build_model(checkpoint['config'])."
            )
        if "optimizer" not in ckpt or "scheduler" not in ckpt:
            raise CheckpointError(
                f"{path} holds weights only (no optimiser/schedule state), so training cannot "
                f"resume from it exactly. Resume from the run's checkpoint.pt instead."
            )
        fresh = build_model(ckpt["config"])
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
        self.snapshots = list(st.get("snapshots", []))
        own = None if self.out_dir is None else self.out_dir / "checkpoint.pt"
        if own is not None and own.is_file() and own.samefile(path):
            self.checkpoint_step = self.step  # the run folder's own checkpoint: still good
        if "rng" in st:
            _set_rng_state(st["rng"])
        if self.rank:  # ranks > 0 keep their own dropout stream
            torch.manual_seed(self.config.seed * 1000 + self.rank + self.step)

    def _write_outputs(self) -> None:
        if self.out_dir is None:
            return
        with failed_writes(self, self.out_dir / "checkpoint.pt"):
            self.out_dir.mkdir(parents=True, exist_ok=True)
            self.save(self.out_dir / "checkpoint.pt")
        self.checkpoint_step = self.step
        with failed_writes(self, self.out_dir / "model.pt"):
            self.save(self.out_dir / "model.pt", weights_only=True)
        self._write_log()

    def _write_log(self) -> None:
        if self.out_dir is not None:
            with failed_writes(self, self.out_dir / "training_log.json"):
                self.out_dir.mkdir(parents=True, exist_ok=True)
                _write_text_atomic(
                    self.out_dir / "training_log.json", json.dumps(self.log, indent=1) + "\n"
                )

    def _keep_step_checkpoint(self) -> None:
        """Write ``step-NNNNNN.pt`` (weights only) and delete all but the newest K."""
        if self.out_dir is None or self.config.keep_checkpoints <= 0:
            return
        path = self.out_dir / f"step-{self.step:06d}.pt"
        with failed_writes(self, path):
            self.save(path, weights_only=True)
            for old in step_checkpoints(self.out_dir)[: -self.config.keep_checkpoints]:
                old.unlink(missing_ok=True)

    def _take_snapshot(self) -> None:
        if self.rank or self.tokenizer is None or self.step not in self.config.snapshot_at:
            return
        if self.snapshots and self.snapshots[-1]["step"] == self.step:
            return
        snap = self.task.snapshot(self._module, self.tokenizer, self.step)
        if snap is None:  # the architecture records none (decoder-only)
            return
        self.snapshots.append(snap)
        if self.out_dir is not None:
            with failed_writes(self, self.out_dir / "attention_snapshots.json"):
                _write_text_atomic(
                    self.out_dir / "attention_snapshots.json",
                    json.dumps(self.snapshots, ensure_ascii=False, separators=(",", ":")) + "\n",
                )

    # ---- the loop ------------------------------------------------------------------
    @property
    def _module(self) -> nn.Module:
        """The model itself (not its DistributedDataParallel wrapper)."""
        return self.model

    def _epoch_batches(self) -> list[list[int]]:
        # A different, reproducible order every epoch (the same on every rank).
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
        if self.rank or self.valid_set is None or len(self.valid_set) == 0:
            return None
        result = self.task.evaluate_loss(
            self._module, self.valid_set, 2 * self.config.max_tokens, self.config.label_smoothing
        )
        entry = {"step": self.step, **result, "elapsed_s": round(self.elapsed_s, 2)}
        self._record(entry)
        return result

    def _on_signal(self, signum, frame) -> None:  # noqa: ARG002 - signal handler signature
        self._signal = signum

    def _progress(self, step: int, budget_s: float | None, start: float) -> float:
        """How much of the budget is used (0 → 1): the nearest of steps, CPU and wall time."""
        cfg, parts = self.config, []
        if cfg.max_steps:
            parts.append(step / cfg.max_steps)
        if cfg.cpu_minutes:
            parts.append(self.cpu_s / (cfg.cpu_minutes * 60.0))
        if budget_s:
            parts.append((time.perf_counter() - start) / budget_s)
        return max(parts, default=0.0)

    def fit(self) -> list[dict[str, Any]]:
        """Train until ``max_steps`` (total), ``minutes`` (this call) or ``cpu_minutes``
        (total) is reached, or a
        SIGINT/SIGTERM arrives (then :attr:`interrupted` is set and a checkpoint saved).

        Returns:
            The log (also in :attr:`log`, and in ``out_dir/training_log.json``).
        """
        cfg = self.config
        if cfg.max_steps is None and cfg.minutes is None and cfg.cpu_minutes is None:
            raise ValueError(
                "Give max_steps, minutes or cpu_minutes (or several), or training never stops."
            )
        if self.step == 0:
            torch.manual_seed(cfg.seed + 1000 * self.rank)  # dropout; init seeded by caller
        with training_session(self.out_dir, self._on_signal):  # the folder's lock, signals
            try:
                return self._fit()
            finally:  # also when a write failed mid-loop: no half-drawn progress bar
                if self._bar is not None:
                    self._bar.close()

    def _fit(self) -> list[dict[str, Any]]:
        cfg = self.config
        module = self.model
        # Under torchrun even one process goes through DistributedDataParallel (and NCCL).
        ddp = wrap_distributed(module, self.device) if process_group_backend() else module
        budget_s = None if cfg.minutes is None else cfg.minutes * 60.0
        ckpt_every = cfg.checkpoint_every or cfg.eval_every
        ckpt_period = cfg.checkpoint_minutes * 60.0 if cfg.checkpoint_minutes else None
        self._take_snapshot()
        bar = self._bar = _progress_bar(cfg, self.step, self.rank)
        start = last = last_ckpt = time.perf_counter()
        start_elapsed, start_cpu, cpu0 = self.elapsed_s, self.cpu_s, time.process_time()
        window = {"loss": 0.0, "tokens": 0, "steps": 0, "targets": 0, "grad": 0.0}
        module.train()
        done = False
        while not done:
            batches = self._epoch_batches()
            while self.batch_in_epoch + self.world <= len(batches):
                now = time.perf_counter()
                stop = (
                    (cfg.max_steps is not None and self.step >= cfg.max_steps)
                    or (budget_s is not None and now - start >= budget_s)
                    or (cfg.cpu_minutes is not None and self.cpu_s >= cfg.cpu_minutes * 60.0)
                    or self._signal is not None
                )
                if agree(stop, self.world):
                    done = True
                    break
                idx = batches[self.batch_in_epoch + self.rank]
                with autocast(self.device, cfg.amp):
                    loss, n_tgt, n_tok = self.task.batch_loss(
                        ddp, [self.train_set[i] for i in idx], self.criterion, self.device
                    )
                self.optimizer.zero_grad(set_to_none=True)
                loss.backward()
                if cfg.clip_norm:
                    grad = nn.utils.clip_grad_norm_(module.parameters(), cfg.clip_norm)
                else:
                    grad = torch.zeros(())
                self.optimizer.step()
                if isinstance(self.scheduler, LinearDecaySchedule):
                    self.scheduler.progress = self._progress(self.step + 1, budget_s, start)
                self.scheduler.step()
                self.step += 1
                self.batch_in_epoch += self.world
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
                    bar.update()
                if self.step % cfg.log_every == 0:
                    totals = sum_over_ranks(
                        [window["loss"], window["targets"], window["tokens"]], self.world
                    )
                    entry = {
                        "step": self.step,
                        "epoch": self.epoch,
                        "loss": round(totals[0] / max(totals[1], 1), 5),
                        "lr": self.scheduler.get_last_lr()[0],
                        "tokens_per_s": round(totals[2] / max(now - last, 1e-9), 1),
                        "grad_norm": round(window["grad"] / window["steps"], 4),
                        "elapsed_s": round(self.elapsed_s, 2),
                        "cpu_s": round(self.cpu_s, 2),
                    }
                    if self.rank == 0:
                        self._record(entry)
                    if bar is not None:
                        bar.set_postfix(loss=f"{entry['loss']:.3f}", tok_s=entry["tokens_per_s"])
                    window = {"loss": 0.0, "tokens": 0, "steps": 0, "targets": 0, "grad": 0.0}
                    last = time.perf_counter()
                if cfg.eval_every and self.step % cfg.eval_every == 0:
                    paused = time.perf_counter()
                    self.validate()
                    if bar is not None and self.log and "val_loss" in self.log[-1]:
                        bar.write(
                            f"step {self.step}: val_loss {self.log[-1]['val_loss']:.3f} "
                            f"val_ppl {self.log[-1]['val_ppl']:.2f}"
                        )
                    last += time.perf_counter() - paused  # validation is not training time
                if self.step in cfg.snapshot_at:
                    paused = time.perf_counter()
                    self._take_snapshot()
                    last += time.perf_counter() - paused
                paused = time.perf_counter()
                if ckpt_every and self.step % ckpt_every == 0:
                    self._write_outputs()
                    self._keep_step_checkpoint()
                    last_ckpt = time.perf_counter()
                elif ckpt_period is not None and paused - last_ckpt >= ckpt_period:
                    self._write_outputs()
                    last_ckpt = time.perf_counter()
                last += time.perf_counter() - paused  # writing files is not training time
            else:
                self.epoch += 1
                self.batch_in_epoch = 0
        if bar is not None:
            bar.close()
        if self._signal is not None:
            self.interrupted = signal.Signals(self._signal).name
            self._write_outputs()  # resumable exactly where it stopped
            return self.log
        if not (self.log and self.log[-1].get("step") == self.step and "val_loss" in self.log[-1]):
            self.validate()
        self._write_outputs()
        if not (ckpt_every and self.step % ckpt_every == 0):
            self._keep_step_checkpoint()
        return self.log


def step_checkpoints(run_dir: str | os.PathLike) -> list[Path]:
    """The ``step-NNNNNN.pt`` files of a run folder, oldest first."""
    return sorted(Path(run_dir).glob("step-[0-9]*.pt"))


def _write_text_atomic(path: Path, text: str) -> None:
    write_atomically(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))


class _Progress:
    """A tqdm bar over steps (``max_steps`` given) or over seconds (only ``minutes``), so
    that it always has a total and an ETA."""

    def __init__(self, cfg: TrainingConfig, initial_step: int):
        from tqdm.auto import tqdm

        self.by_time = cfg.max_steps is None
        self.clock = time.perf_counter if cfg.minutes is not None else time.process_time
        if self.by_time:
            budget = cfg.minutes if cfg.minutes is not None else cfg.cpu_minutes
            kind = "time" if cfg.minutes is not None else "CPU time"
            self.bar = tqdm(
                total=round(budget * 60), unit="s", desc=f"training ({kind} budget)",
                bar_format="{desc}: {percentage:3.0f}%|{bar}| {n:.0f}/{total:.0f} s "
                "[{elapsed}<{remaining}{postfix}]",
            )  # fmt: skip
            self.start = self.clock()
        else:
            self.bar = tqdm(total=cfg.max_steps, initial=initial_step, unit="step", desc="training")

    def update(self) -> None:
        if self.by_time:
            self.bar.n = min(self.clock() - self.start, self.bar.total)
            self.bar.refresh()
        else:
            self.bar.update(1)

    def set_postfix(self, **kwargs: Any) -> None:
        self.bar.set_postfix(**kwargs)

    def write(self, text: str) -> None:
        self.bar.write(text)

    def close(self) -> None:
        self.bar.close()


def _progress_bar(cfg: TrainingConfig, initial: int, rank: int = 0) -> _Progress | None:
    return _Progress(cfg, initial) if cfg.progress and rank == 0 else None


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
