"""Checks of training: teacher forcing, label smoothing, the schedule, Adam, the defaults (§5).

The teacher-forcing check replaces the model by two stand-ins and asks the training (and
validation) loss to score them: a model that *copies* the token it reads, and an *oracle*
that predicts the true next token. With targets shifted by one, as teacher forcing needs,
the oracle scores low and the copier high; with unshifted targets it is the other way round.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from .adapter import LossBatch
from .causes import (
    ADAM_DEFAULTS,
    DEFAULT_CAUSES,
    MISALIGNED,
    NOAM_EXPONENTS,
    NOAM_SCALE,
    NOAM_STEP,
    NOT_ADAM,
    SIZE_CAUSE,
    SMOOTHING_PADS,
    UNSHIFTED,
)
from .registry import Kit, register
from .results import CheckResult, result

PAPER_DEFAULTS = {
    "norm_first": False,
    "share_embeddings": True,
    "positional": "sinusoidal",
    "dropout": 0.1,
    "d_model": 512,
    "n_heads": 8,
    "d_ff": 2048,
    "n_encoder_layers": 6,
    "n_decoder_layers": 6,
}


# ---- teacher forcing -----------------------------------------------------------------------
CONFIDENCE = 8.0  # the stand-ins' logit for the token they pick (the others get 0)


def _loss_batch(kit: Kit) -> tuple[LossBatch, dict[int, list[int]]]:
    """A batch of four examples and, by each example's first token, its full sequence."""
    a = kit.adapter
    lengths = [(6, 5), (4, 3), (5, 4), (3, 2)]  # (source, target words)
    first = kit.distinct_rows(len(lengths), 1)[:, 0].tolist()
    rows, srcs, prefix = [], [], []
    for (s, t), f in zip(lengths, first):
        source = [f, *kit.tokens(1, s - 1)[0].tolist()]
        words = kit.tokens(1, t)[0].tolist()
        if a.encoder_decoder:
            srcs.append(source)
            rows.append(([a.bos_id] if a.bos_id is not None else []) + words + [a.eos_id])
        else:  # English <sep> German <eos>; a plain LM without <sep> gets no separator
            sep = [] if a.sep_id is None else [a.sep_id]
            rows.append([*source, *sep, *words, a.eos_id])
            prefix.append(s + len(sep))

    def padded(seqs):
        width = max(len(x) for x in seqs)
        return torch.tensor([x + [a.pad_id] * (width - len(x)) for x in seqs]).to(kit.device)

    if a.encoder_decoder:
        by_first = {src[0]: row for src, row in zip(srcs, rows)}
        return LossBatch(padded(srcs), padded(rows), None), by_first
    by_first = {row[0]: row for row in rows}
    return LossBatch(None, padded(rows), torch.tensor(prefix).to(kit.device)), by_first


def _stand_ins(kit: Kit, by_first: dict[int, list[int]]):
    """A copying model, a next-token oracle and a uniform guess, with ``forward``'s signature."""
    a = kit.adapter
    V = a.vocab_size

    def one_hot(ids: Tensor) -> Tensor:
        return nn.functional.one_hot(ids.clamp(0, V - 1), V).float() * CONFIDENCE

    def copy(*inputs):
        return one_hot(inputs[-1])

    def oracle(*inputs):
        reads, key = inputs[-1], inputs[0]  # the example is known by its first token
        out = torch.zeros(*reads.shape, V, device=reads.device)
        for b in range(reads.size(0)):
            full = by_first.get(int(key[b, 0]))
            if full is None:
                continue
            for j in range(min(reads.size(1), len(full) - 1)):
                out[b, j, full[j + 1]] = CONFIDENCE
        return out

    def uniform(*inputs):
        return torch.zeros(*inputs[-1].shape, V, device=inputs[-1].device)

    return {"oracle": oracle, "uniform": uniform, "copy": copy}


def _as_losses(value) -> dict[str, float]:
    if isinstance(value, dict):
        return {k: float(v) for k, v in value.items()}
    return {"loss": float(value)}


@register(
    "teacher_forcing",
    "the training and validation losses predict the next token: a copying model scores "
    "high, a next-token oracle low",
    needs=("training_loss",),
)
def teacher_forcing(kit: Kit) -> CheckResult:
    """The training (and validation) loss of a next-token oracle, a uniform guess and a
    model that copies its input, in that order from low to high."""
    a = kit.adapter
    batch, by_first = _loss_batch(kit)
    stand_ins = _stand_ins(kit, by_first)
    losses: dict[str, dict[str, float]] = {}
    parts = [("training", a.training_loss)]
    if a.validation_loss is not None:
        parts.append(("validation", a.validation_loss))
    for part, fn in parts:
        for who, model_fn in stand_ins.items():
            with torch.no_grad():
                for key, value in _as_losses(fn(model_fn, batch)).items():
                    name = part if key == "loss" else f"{part} {key}"
                    losses.setdefault(name, {})[who] = value
    measured, bad, unshifted = {}, [], False
    for name, by in losses.items():
        measured[f"{name} (oracle, uniform, copy)"] = (by["oracle"], by["uniform"], by["copy"])
        good = by["oracle"] + 0.5 < by["uniform"] < by["copy"] - 0.5
        if not all(math.isfinite(v) for v in by.values()) or not good:
            bad.append(name)
            unshifted |= by["copy"] <= by["oracle"]
    tolerance = "oracle + 0.5 < uniform guess < copying model - 0.5 (nats)"
    if not bad:
        return result("teacher_forcing", teacher_forcing.check_title, True, measured, tolerance)
    finding = f"{', '.join(bad)}: the loss does not reward predicting the next token"
    if unshifted:
        finding = f"{', '.join(bad)}: a model that copies its input scores best"
    causes = [UNSHIFTED, MISALIGNED] if unshifted else [MISALIGNED, UNSHIFTED]
    return result(
        "teacher_forcing", teacher_forcing.check_title, False, measured, tolerance, finding, causes
    )


# ---- label smoothing -------------------------------------------------------------------------
@register(
    "label_smoothing_pads",
    "the label-smoothed loss ignores <pad> targets: no loss and no gradient (paper §5.4)",
    needs=("loss_function",),
)
def label_smoothing_pads(kit: Kit) -> CheckResult:
    """Pad targets appended to a batch, with random logits, change neither the loss
    nor receive any gradient."""
    a = kit.adapter
    B, T, extra = 2, 5, 3
    target = kit.pad(kit.tokens(B, T), extra)  # (B, T + extra), pads at the end
    logits = torch.randn(B, T + extra, a.vocab_size, generator=kit.generator).to(kit.device)
    logits.requires_grad_(True)
    with torch.enable_grad():
        real = a.loss_function(logits[:, :T], target[:, :T])
        padded = a.loss_function(logits, target)
        (grad,) = torch.autograd.grad(padded, logits)
    change = abs(float(padded) - float(real))
    pad_grad = float(grad[:, T:].abs().max())
    measured = {"loss change from pad targets": change, "gradient at pad targets": pad_grad}
    tol = 1e-5 * max(1.0, abs(float(real)))
    tolerance = f"change <= {tol:.2g}, gradient <= 1e-7"
    ok = change <= tol and pad_grad <= 1e-7
    finding = "" if ok else "<pad> targets change the loss or receive a gradient"
    return result(
        "label_smoothing_pads",
        label_smoothing_pads.check_title,
        ok,
        measured,
        tolerance,
        finding,
        [SMOOTHING_PADS],
    )


# ---- the learning-rate schedule ---------------------------------------------------------------
@register(
    "noam_peak",
    "the learning rate peaks at step = warmup at factor · d_model^-0.5 · warmup^-0.5 (Eq. 3)",
    needs=("lr_schedule",),
)
def noam_peak(kit: Kit) -> CheckResult:
    """The schedule at every step of three warm-ups: its peak step and height, the linear
    warm-up at warmup/2 and the step^-0.5 decay at 4·warmup."""
    a = kit.adapter
    title = noam_peak.check_title
    if not a.warmup:
        finding = "the adapter needs warmup (the schedule's warm-up steps) as well"
        return result("noam_peak", title, False, {}, "", finding, [NOAM_EXPONENTS])
    w = int(a.warmup)
    lr = {s: float(a.lr_schedule(s)) for s in {1, w // 2, w - 1, w, w + 1, 4 * w}}
    scan = {s: float(a.lr_schedule(s)) for s in range(1, 3 * w + 1)}  # every step
    lr.update(scan)
    peak_step = max(lr, key=lambda s: (lr[s], -s))
    expected = a.lr_factor * a.d_model**-0.5 * w**-0.5
    rel = abs(lr[w] / expected - 1)
    warm = abs(lr[w // 2] / (expected * (w // 2) / w) - 1) if w >= 2 else 0.0
    decay = abs(lr[4 * w] / (expected / 2) - 1)
    measured = {
        "peak step": peak_step,
        "warmup": w,
        "lr at warmup": lr[w],
        "Eq. 3 peak": expected,
        "error at warmup/2": warm,
        "error at 4·warmup": decay,
    }
    tolerance = "peak at warmup; relative error <= 1e-6 at warmup, warmup/2 and 4·warmup"
    ok = peak_step == w and max(rel, warm, decay) <= 1e-6
    if ok:
        return result("noam_peak", title, True, measured, tolerance)
    if peak_step in (w - 1, w + 1):
        finding, causes = f"the peak is at step {peak_step}, one off", [NOAM_STEP, NOAM_EXPONENTS]
    elif peak_step == w:
        finding, causes = f"the peak is {lr[w] / expected:.4g} × Eq. 3's", [NOAM_SCALE]
    else:
        finding = f"the peak is at step {peak_step}, not at warmup = {w}"
        causes = [NOAM_EXPONENTS, NOAM_STEP]
    return result("noam_peak", title, False, measured, tolerance, finding, causes)


# ---- the optimiser ---------------------------------------------------------------------------
@register(
    "adam_settings",
    "Adam with β1 = 0.9, β2 = 0.98, ε = 1e-9 (paper §5.3)",
    needs=("optimizer",),
)
def adam_settings(kit: Kit) -> CheckResult:
    """The optimiser's first parameter group has the paper's betas and eps."""
    optimizer = kit.adapter.optimizer(nn.Linear(2, 2))
    group = optimizer.param_groups[0]
    title = adam_settings.check_title
    if "betas" not in group:
        finding = f"{type(optimizer).__name__} has no betas"
        return result("adam_settings", title, False, {}, "", finding, [NOT_ADAM])
    betas, eps = tuple(float(b) for b in group["betas"]), float(group["eps"])
    measured = {"optimiser": type(optimizer).__name__, "betas": betas, "eps": eps}
    ok = (
        math.isclose(betas[0], 0.9, rel_tol=1e-9)
        and math.isclose(betas[1], 0.98, rel_tol=1e-9)
        and math.isclose(eps, 1e-9, rel_tol=1e-6)
    )
    finding = "" if ok else f"betas {betas}, eps {eps:g}"
    return result(
        "adam_settings", title, ok, measured, "exactly (0.9, 0.98), 1e-9", finding, [ADAM_DEFAULTS]
    )


# ---- the defaults ----------------------------------------------------------------------------
@register(
    "paper_defaults",
    "the config's defaults are the paper's base model: post-LN, tied, sinusoidal, P_drop 0.1",
    needs=("default_config",),
)
def paper_defaults(kit: Kit) -> CheckResult:
    """The default hyper-parameters agree with the paper's base model (Table 3, §3.1,
    §3.4, §3.5, §5.4)."""
    defaults = dict(kit.adapter.default_config())
    checked = {k: v for k, v in PAPER_DEFAULTS.items() if k in defaults}
    wrong = {k: defaults[k] for k, v in checked.items() if defaults[k] != v}
    measured = {k: defaults[k] for k in checked}
    tolerance = "equal to " + ", ".join(f"{k}={v}" for k, v in checked.items())
    title = paper_defaults.check_title
    if not checked:
        finding = "default_config() names none of " + ", ".join(PAPER_DEFAULTS)
        return result("paper_defaults", title, False, measured, "", finding, [SIZE_CAUSE])
    if not wrong:
        return result("paper_defaults", title, True, measured, tolerance)
    finding = "defaults differ: " + ", ".join(f"{k}={v!r}" for k, v in wrong.items())
    causes = [DEFAULT_CAUSES[k] for k in DEFAULT_CAUSES if k in wrong]
    if set(wrong) - set(DEFAULT_CAUSES):
        causes.append(SIZE_CAUSE)
    return result("paper_defaults", title, False, measured, tolerance, finding, causes)
