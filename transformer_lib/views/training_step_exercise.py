"""The check of chapter 9's exercise "write the training step".

The reader writes ``training_step(model, src, tgt, criterion, optimizer, scheduler,
clip_norm)``: one step of the trainer (``Trainer._fit``) on one batch. The check runs it
for three steps on a tiny model, and the library's own step on an identical copy, then
compares the returned losses, the parameters and the learning rate. When they differ it
also replays the library's step with each common mistake (no shift, no ``zero_grad``, no
clipping, no optimiser or schedule step) and names the mistake whose result the reader's
step reproduces.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor, nn

from ..components.config import TransformerConfig
from ..components.model import Transformer
from ..pipeline.objectives import LabelSmoothingLoss, NoamSchedule, make_optimizer
from ..pipeline.tasks import EncoderDecoderTask
from ..pipeline.training import TrainingConfig
from .notebook import exercise

#: Steps the check runs: enough for Adam's moments, the schedule and accumulated
#: gradients to show.
N_STEPS = 3

#: The library's step with one thing left out, and what the reader is told about it.
MISTAKES: dict[str, str] = {
    "no_zero_grad": (
        "the gradients accumulate from step to step: call optimizer.zero_grad() "
        "(the library passes set_to_none=True) before loss.backward()"
    ),
    "no_clip": (
        "the gradient is not clipped: call "
        "torch.nn.utils.clip_grad_norm_(model.parameters(), clip_norm) after "
        "loss.backward() and before optimizer.step()"
    ),
    "no_scheduler_step": (
        "the learning rate never changes: call scheduler.step() once per step, "
        "after optimizer.step()"
    ),
    "no_optimizer_step": (
        "the parameters never change: call optimizer.step() after loss.backward() "
        "(and after clipping)"
    ),
}


def tiny_setup(seed: int = 0) -> dict[str, Any]:
    """The check's model, optimiser, schedule, loss and batch.

    A tiny Transformer (vocabulary 40, ``d_model`` 32, 2 heads, ``d_ff`` 64, one encoder
    and one decoder layer, no dropout, so that two copies compute the same), the paper's
    Adam (:func:`make_optimizer`), ``NoamSchedule(optimizer, 32, 4)``, label smoothing 0.1
    and a fixed batch of four sentence pairs of different lengths. ``items`` are the
    ``(src, tgt)`` examples; ``src`` ``(B, S)`` and ``tgt`` ``(B, T)`` (``<bos>`` …
    ``<eos>``) their padded batch.
    """
    from ..pipeline.batching import collate

    g = torch.Generator().manual_seed(seed)
    config = TransformerConfig(
        vocab_size=40,
        d_model=32,
        n_heads=2,
        d_ff=64,
        n_encoder_layers=1,
        n_decoder_layers=1,
        dropout=0.0,
        max_len=32,
    )
    torch.manual_seed(seed)
    model = Transformer(config)
    model.train()
    optimizer = make_optimizer(model)
    items = []
    for s_len, t_len in [(7, 6), (5, 8), (9, 4), (3, 5)]:
        src = torch.randint(4, 40, (s_len,), generator=g)
        words = torch.randint(4, 40, (t_len,), generator=g)
        tgt = torch.cat([torch.tensor([config.bos_id]), words, torch.tensor([config.eos_id])])
        items.append((src, tgt))
    src, tgt = collate(items, config.pad_id)
    return {
        "model": model,
        "optimizer": optimizer,
        "scheduler": NoamSchedule(optimizer, 32, 4),
        "criterion": LabelSmoothingLoss(40, 0.1, pad_id=config.pad_id),
        "items": items,
        "src": src,  # (B, S)
        "tgt": tgt,  # (B, T)
        "clip_norm": TrainingConfig().clip_norm,
    }


def library_step(setup: dict[str, Any], leave_out: str | None = None) -> float:
    """One step of ``Trainer._fit`` on ``setup``'s batch; returns the loss as a float.

    ``leave_out`` names one of :data:`MISTAKES` (or ``"no_shift"``) to replay that mistake.
    """
    model, optimizer = setup["model"], setup["optimizer"]
    if leave_out == "no_shift":  # the decoder reads and predicts the whole target
        logits = model(setup["src"], setup["tgt"])  # (B, T, V)
        loss = setup["criterion"](logits, setup["tgt"])
    else:
        loss, _, _ = EncoderDecoderTask.batch_loss(model, setup["items"], setup["criterion"], "cpu")
    if leave_out != "no_zero_grad":
        optimizer.zero_grad(set_to_none=True)
    loss.backward()
    if leave_out != "no_clip":
        nn.utils.clip_grad_norm_(model.parameters(), setup["clip_norm"])
    if leave_out != "no_optimizer_step":
        optimizer.step()
    if leave_out != "no_scheduler_step":
        setup["scheduler"].step()
    return loss.item()


def _run(step: Callable[[dict[str, Any]], Any], seed: int) -> tuple[dict[str, Any], list]:
    setup = tiny_setup(seed)
    with warnings.catch_warnings():
        # a step that forgets optimizer.step() makes the schedule warn; the check says it
        warnings.simplefilter("ignore")
        returned = [step(setup) for _ in range(N_STEPS)]
    return setup, returned


def _reader_step(fn: Callable) -> Callable[[dict[str, Any]], Any]:
    def step(s: dict[str, Any]) -> Any:
        return fn(
            s["model"],
            s["src"].clone(),
            s["tgt"].clone(),
            s["criterion"],
            s["optimizer"],
            s["scheduler"],
            s["clip_norm"],
        )

    return step


def _params(setup: dict[str, Any]) -> list[Tensor]:
    return [p.detach() for p in setup["model"].parameters()]


def _lr(setup: dict[str, Any]) -> float:
    return setup["optimizer"].param_groups[0]["lr"]


def _same(a: list[Tensor], b: list[Tensor]) -> bool:
    return all(torch.allclose(x, y, rtol=1e-4, atol=1e-6) for x, y in zip(a, b))


@exercise
def check_training_step(fn: Callable, seed: int = 0) -> None:
    """Check a reader's ``training_step(model, src, tgt, criterion, optimizer, scheduler,
    clip_norm)`` against the library's step; print "Correct!" or raise an
    ``AssertionError`` that names the mistake.

    ``src`` is ``(B, S)``, ``tgt`` ``(B, T)`` with ``<bos>`` first; the step must return
    the batch's loss as a Python ``float``. An unattempted stub (``raise
    NotImplementedError``) prints that it is not attempted yet (:func:`exercise`).
    """
    theirs, returned = _run(_reader_step(fn), seed)
    ours, want_losses = _run(library_step, seed)

    first = returned[0]
    if isinstance(first, Tensor):
        raise AssertionError(
            f"training_step returned a tensor ({first!r}). Return a Python float: "
            "loss.item(). (Keeping the tensor would also keep its whole autograd graph "
            "alive in a training log.)"
        )
    if not isinstance(first, float):
        raise AssertionError(
            f"training_step returned {first!r} ({type(first).__name__}); return the "
            "batch's loss as a Python float: loss.item()"
        )
    if not abs(first - want_losses[0]) <= 1e-4 * max(1.0, abs(want_losses[0])):  # NaN too
        unshifted, _ = _run(lambda s: library_step(s, "no_shift"), seed)
        shift_hint = (
            "The decoder must read tgt[:, :-1] (from <bos>) and predict tgt[:, 1:] (up "
            "to <eos>): the target is shifted by one position (teacher forcing)."
        )
        if _same(_params(theirs), _params(unshifted)):
            raise AssertionError(
                f"The target is not shifted: the first loss is {first:.4f}, expected "
                f"{want_losses[0]:.4f}. {shift_hint}"
            )
        raise AssertionError(
            f"The first loss is {first:.4f}, expected {want_losses[0]:.4f}: compute it "
            f"as criterion(model(src, tgt[:, :-1]), tgt[:, 1:]). {shift_hint}"
        )

    if _same(_params(theirs), _params(ours)) and abs(_lr(theirs) - _lr(ours)) <= 1e-9:
        print(f"Correct! {N_STEPS} steps give the library's parameters and learning rate.")
        return

    for mistake, message in MISTAKES.items():
        replay, _ = _run(lambda s, m=mistake: library_step(s, m), seed)
        if _same(_params(theirs), _params(replay)) and abs(_lr(theirs) - _lr(replay)) <= 1e-9:
            raise AssertionError(f"After {N_STEPS} steps, {message}.")

    lr_note = ""
    if abs(_lr(theirs) - _lr(ours)) > 1e-9:
        lr_note = (
            f" The learning rate is {_lr(theirs):.4g}, expected {_lr(ours):.4g}: call "
            "scheduler.step() exactly once per step, after optimizer.step()."
        )
    raise AssertionError(
        f"The first loss is right, but after {N_STEPS} steps the parameters differ from the "
        "library's step." + lr_note + " The order is: zero_grad, backward, "
        "clip_grad_norm_, optimizer.step(), scheduler.step()."
    )
