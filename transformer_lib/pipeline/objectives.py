"""The training objective and optimiser of §5: label smoothing, Adam, the warm-up schedule.

Taught in chapter 9:

* :class:`LabelSmoothingLoss` and :func:`smoothed_targets` — the regulariser of §5.4
  (label smoothing with ε_ls = 0.1).
* :func:`noam_lr` and :class:`NoamSchedule` — the learning-rate formula of §5.3 (Eq. 3),
  used with Adam(β1 = 0.9, β2 = 0.98, ε = 1e-9), see :func:`make_optimizer`.

Shapes: B batch, T target length, V vocabulary size, N = B·T tokens.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.optim.lr_scheduler import LambdaLR

__all__ = [
    "SCHEDULES",
    "LabelSmoothingLoss",
    "LinearDecaySchedule",
    "NoamSchedule",
    "linear_decay_lr",
    "make_optimizer",
    "make_schedule",
    "noam_lr",
    "smoothed_targets",
]


# ======================================================================================
# Label smoothing (§5.4)
# ======================================================================================


def smoothed_targets(
    target: Tensor, vocab_size: int, smoothing: float = 0.1, pad_id: int | None = 0
) -> Tensor:
    """The label-smoothed target distribution q for each target token (§5.4).

    Every token of the vocabulary gets ``ε / V``; the true token gets ``1 − ε`` on top, so
    it ends at ``1 − ε + ε / V``. This is exactly the distribution that
    ``F.cross_entropy(..., label_smoothing=ε)`` uses. The padding token is treated like any
    other column (it gets ``ε / V`` as well); rows whose *target* is padding are not
    predictions at all, so their distribution is all zeros and they add nothing to the loss.

    (The Annotated Transformer instead gives the pad column 0 and spreads ε over the
    other ``V − 2`` wrong tokens. The difference is a per-token constant of order
    ``ε / V`` in the target distribution and does not matter for training.)

    Args:
        target: Token ids, any shape ``(...)``.
        vocab_size: V.
        smoothing: ε, the probability mass taken from the true token.
        pad_id: Rows with this target get an all-zero distribution; ``None`` = no padding.

    Returns:
        ``(..., V)`` float tensor; each non-padding row sums to 1.

    Example:
        >>> smoothed_targets(torch.tensor([2]), vocab_size=4, smoothing=0.4)
        tensor([[0.1000, 0.1000, 0.7000, 0.1000]])
    """
    if not 0.0 <= smoothing < 1.0:
        raise ValueError(f"smoothing must be in [0, 1), got {smoothing}")
    q = torch.full((*target.shape, vocab_size), smoothing / vocab_size)  # (..., V)
    q = q.to(target.device)
    q.scatter_(-1, target.unsqueeze(-1), 1.0 - smoothing + smoothing / vocab_size)
    if pad_id is not None:
        q.masked_fill_((target == pad_id).unsqueeze(-1), 0.0)
    return q


def _target_entropy(vocab_size: int, smoothing: float) -> float:
    """H(q) of the smoothed distribution: the constant gap between cross-entropy and KL."""
    hi, lo = 1.0 - smoothing + smoothing / vocab_size, smoothing / vocab_size
    return -(hi * math.log(hi)) - ((vocab_size - 1) * lo * math.log(lo) if lo > 0 else 0.0)


class LabelSmoothingLoss(nn.Module):
    """KL divergence between the smoothed targets and the model's distribution (§5.4).

    ``loss = mean over non-pad target tokens of KL(q ‖ p)``, with q from
    :func:`smoothed_targets` and ``p = softmax(logits)``. KL is 0 exactly when the model
    predicts q, so a model that has learned everything reaches 0; the cross-entropy
    ``H(q, p) = KL(q ‖ p) + H(q)`` instead bottoms out at the entropy ``H(q)`` of the
    target (≈ 1.154 nats for ε = 0.1 and V = 4000). The two differ by that constant only,
    so their gradients are identical:

        LabelSmoothingLoss(V, 0.1, pad)(logits, y)
            == F.cross_entropy(logits, y, label_smoothing=0.1, ignore_index=pad) - H(q)

    Args:
        vocab_size: V.
        smoothing: ε (the paper: 0.1). ``0`` gives the ordinary negative log-likelihood.
        pad_id: Target id ignored by the loss (not a prediction); ``None`` = no padding.
        fast: Compute the same number through ``F.cross_entropy`` (no ``(N, V)`` target
            tensor is built; what training uses). ``False`` builds q and calls ``F.kl_div``,
            the readable version the chapter shows.

    Shape:
        ``logits (..., V)``, ``target (...)`` → scalar (mean over non-pad targets).
    """

    def __init__(
        self, vocab_size: int, smoothing: float = 0.1, pad_id: int | None = 0, fast: bool = True
    ):
        super().__init__()
        if not 0.0 <= smoothing < 1.0:
            raise ValueError(f"smoothing must be in [0, 1), got {smoothing}")
        self.vocab_size, self.smoothing, self.pad_id, self.fast = (
            vocab_size,
            smoothing,
            pad_id,
            fast,
        )
        self.target_entropy = _target_entropy(vocab_size, smoothing)

    def forward(self, logits: Tensor, target: Tensor) -> Tensor:
        if logits.shape[:-1] != target.shape or logits.size(-1) != self.vocab_size:
            raise ValueError(
                f"logits {tuple(logits.shape)} must be target {tuple(target.shape)} plus a "
                f"last dimension of vocab_size={self.vocab_size}"
            )
        logits = logits.reshape(-1, self.vocab_size)  # (N, V)
        target = target.reshape(-1)  # (N,)
        if self.fast:
            ce = F.cross_entropy(
                logits.float(),
                target,
                label_smoothing=self.smoothing,
                ignore_index=-100 if self.pad_id is None else self.pad_id,
            )
            return ce - self.target_entropy
        q = smoothed_targets(target, self.vocab_size, self.smoothing, self.pad_id)  # (N, V)
        log_p = F.log_softmax(logits.float(), dim=-1)  # (N, V)
        kl = F.kl_div(log_p, q, reduction="none").sum(-1)  # (N,); 0·log 0 counts as 0
        n = target.numel() if self.pad_id is None else (target != self.pad_id).sum()
        return kl.sum() / n


# ======================================================================================
# Optimiser and learning-rate schedule (§5.3)
# ======================================================================================


def noam_lr(step: int, d_model: int, warmup: int, factor: float = 1.0) -> float:
    """The learning rate of §5.3, Eq. 3, for optimiser step ``step`` (counted from 1).

        lrate = factor · d_model^−0.5 · min(step^−0.5, step · warmup^−1.5)

    It rises linearly for ``warmup`` steps, peaks at ``factor · (d_model · warmup)^−0.5``
    when ``step == warmup``, then decays as ``step^−0.5``. The paper uses ``factor = 1``,
    ``warmup = 4000``. ``step < 1`` is treated as 1.
    """
    if warmup < 1:
        raise ValueError(f"warmup must be >= 1, got {warmup}")
    step = max(int(step), 1)
    return factor * d_model**-0.5 * min(step**-0.5, step * warmup**-1.5)


class NoamSchedule(LambdaLR):
    """:func:`noam_lr` as a ``torch.optim.lr_scheduler.LambdaLR``.

    Give the optimiser ``lr=1.0`` (as :func:`make_optimizer` does): LambdaLR multiplies the
    base rate by ``noam_lr(n, ...)``, so the ``n``-th call of ``optimizer.step()`` (counted
    from 1) uses exactly ``noam_lr(n, d_model, warmup, factor)``. Call ``schedule.step()``
    after each ``optimizer.step()``.
    """

    def __init__(self, optimizer, d_model: int, warmup: int, factor: float = 1.0):
        self.d_model, self.warmup, self.factor = d_model, warmup, factor
        super().__init__(optimizer, lambda i: noam_lr(i + 1, d_model, warmup, factor))


def linear_decay_lr(
    step: int, progress: float, d_model: int, warmup: int, factor: float = 1.0
) -> float:
    """A schedule for a known budget: §5.3's warm-up, then a straight line down to zero.

        lrate = factor · (d_model · warmup)^−0.5 · min(1, step / warmup) · (1 − progress)

    ``progress`` is the fraction of the run's budget used so far (steps, CPU time or wall
    time, whichever is nearest its end), so the rate reaches zero just as the budget runs
    out, however fast the machine is. The scale is the peak Noam's schedule reaches at
    ``step == warmup`` (:func:`noam_lr`), so ``warmup`` and ``factor`` mean the same in
    both; as the ramp is multiplied by ``1 − progress`` from the first step, the rate tops
    out a little below that scale, at the end of the warm-up. Not in the paper, whose runs
    had a fixed 100k steps: for short runs a rate that ends at zero beats ``step^−0.5``,
    which is still high when the budget ends.
    """
    if warmup < 1:
        raise ValueError(f"warmup must be >= 1, got {warmup}")
    step = max(int(step), 1)
    left = min(max(1.0 - float(progress), 0.0), 1.0)
    return factor * (d_model * warmup) ** -0.5 * min(1.0, step / warmup) * left


class LinearDecaySchedule(LambdaLR):
    """:func:`linear_decay_lr` as a ``LambdaLR``; the trainer sets :attr:`progress`
    (0 → 1) before every ``step()``. Give the optimiser ``lr=1.0`` (:func:`make_optimizer`).

    ``progress`` is saved with the schedule's state, so a resumed run continues the line.
    """

    def __init__(self, optimizer, d_model: int, warmup: int, factor: float = 1.0):
        self.d_model, self.warmup, self.factor = d_model, warmup, factor
        self.progress = 0.0
        super().__init__(
            optimizer, lambda i: linear_decay_lr(i + 1, self.progress, d_model, warmup, factor)
        )

    def state_dict(self) -> dict:
        return {**super().state_dict(), "progress": self.progress}

    def load_state_dict(self, state_dict: dict) -> None:
        state = dict(state_dict)
        self.progress = float(state.pop("progress", 0.0))
        super().load_state_dict(state)


#: Learning-rate schedules by name (``TrainingConfig.schedule``, ``train --schedule``).
SCHEDULES = {"noam": NoamSchedule, "linear": LinearDecaySchedule}


def make_schedule(
    optimizer, name: str, d_model: int, warmup: int, factor: float = 1.0
) -> NoamSchedule | LinearDecaySchedule:
    """The schedule called ``name`` (``"noam"``, §5.3; or ``"linear"``) for ``optimizer``."""
    if name not in SCHEDULES:
        raise ValueError(f"schedule must be one of {', '.join(SCHEDULES)}, got {name!r}")
    return SCHEDULES[name](optimizer, d_model, warmup, factor)


def make_optimizer(model: nn.Module) -> torch.optim.Adam:
    """Adam with the paper's β1 = 0.9, β2 = 0.98, ε = 1e-9 and base lr 1 (for NoamSchedule)."""
    return torch.optim.Adam(model.parameters(), lr=1.0, betas=(0.9, 0.98), eps=1e-9)
