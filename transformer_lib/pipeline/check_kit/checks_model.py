"""Checks of the forward pass: masks, positions, attention, embeddings, parity, dropout.

Each check feeds the model small random inputs, measures one property the paper requires,
and, when the property fails, names the kinds of bug that typically break it.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from .causes import (
    ATTENTION_DIFFERS,
    COPIED,
    CROSS_ON_SELF,
    CROSS_PAD,
    DROPOUT_IN_EVAL,
    DROPOUT_NEVER,
    FFN_DIFFERS,
    HALVES,
    HEADS_MERGED,
    HEADS_SPLIT,
    MEMORY_UNUSED,
    MISSING_RESIDUAL,
    NO_CAUSAL,
    NO_EMBED_SCALE,
    NO_SCALE,
    NORM_PLACEMENT,
    NOT_SINUSOIDAL,
    OFF_BY_ONE,
    OWN_TOKEN_HIDDEN,
    PAD_IGNORED,
    PAD_INVERTED,
    SINGLE_FREQUENCY,
    SOFTMAX_AXIS,
    SWAPPED,
    UNTIED,
    WRONG_EMBED_SCALE,
    WRONG_FREQUENCIES,
    WRONG_SCALE,
    WRONG_SHAPE,
)
from .registry import Kit, max_abs, register, scale_of
from .results import CheckResult, result


# ---- dropout -------------------------------------------------------------------------------
@register(
    "eval_determinism",
    "eval mode is deterministic (no dropout); train mode applies dropout (paper §5.4)",
    needs=("module",),
)
def eval_determinism(kit: Kit) -> CheckResult:
    """Two eval-mode passes must agree exactly; two train-mode passes must differ
    when the model has dropout."""
    a = kit.adapter
    src, tgt = kit.source(2, 7), kit.target(2, 8)
    module, was_training = a.module, a.module.training
    try:
        module.eval()
        first = kit.logits(src, tgt)
        eval_diff = max_abs(kit.logits(src, tgt), first)
        module.train()
        train_diff = max_abs(kit.logits(src, tgt), kit.logits(src, tgt))
    finally:
        module.train(was_training)
    measured = {"eval-mode difference": eval_diff, "train-mode difference": train_diff}
    tol = 1e-6 * scale_of(first)
    tolerance = f"eval difference <= {tol:.2g}" + (
        "; train difference > it (P_drop > 0)" if a.dropout else ""
    )
    title = eval_determinism.check_title
    if eval_diff > tol:
        finding = "two forward passes in eval mode give different logits"
        return result(
            "eval_determinism", title, False, measured, tolerance, finding, [DROPOUT_IN_EVAL]
        )
    if a.dropout and train_diff <= tol:
        finding = f"P_drop = {a.dropout} but train mode is deterministic"
        return result(
            "eval_determinism", title, False, measured, tolerance, finding, [DROPOUT_NEVER]
        )
    return result("eval_determinism", title, True, measured, tolerance)


# ---- causality ----------------------------------------------------------------------------
@register("causality", "changing a future target token changes no earlier logit (paper §3.2.3)")
def causality(kit: Kit) -> CheckResult:
    """Change the token at position t; logits at positions < t must not move, at t they must."""
    a = kit.adapter
    T = min(12, a.max_len)
    src, tgt = kit.source(2, 7), kit.target(2, T)
    base = kit.logits(src, tgt)
    tol = 1e-5 * scale_of(base)
    leak_at = [0.0] * T  # largest change at distance d = t - position
    own = math.inf
    for t in sorted({1, T // 2, T - 1}):
        changed = tgt.clone()
        changed[:, t] = kit.other_tokens(tgt[:, t])
        per_pos = (kit.logits(src, changed) - base).abs().nan_to_num(nan=math.inf).amax((0, 2))
        for p in range(t):
            leak_at[t - p] = max(leak_at[t - p], float(per_pos[p]))
        own = min(own, float(per_pos[t]))
    leak = max(leak_at)
    far = max(leak_at[T // 2 + 1 :], default=0.0)
    measured = {"largest change before t": leak, "smallest change at t": own}
    tolerance = f"change before t <= {tol:.2g}; change at t > {tol:.2g}"
    if leak > tol:
        leaking = [d for d in range(1, T) if leak_at[d] > tol]
        finding = f"a token changes the logits of earlier positions (distances {leaking[:6]})"
        mixing = [HEADS_SPLIT, HEADS_MERGED, SOFTMAX_AXIS, NO_CAUSAL]
        causes = [OFF_BY_ONE, *mixing] if far <= tol else [*mixing, OFF_BY_ONE]
        return result(
            "causality", causality.check_title, False, measured, tolerance, finding, causes
        )
    if own <= tol:
        finding = "changing the token at t does not change the logits at t"
        return result(
            "causality",
            causality.check_title,
            False,
            measured,
            tolerance,
            finding,
            [OWN_TOKEN_HIDDEN],
        )
    return result("causality", causality.check_title, True, measured, tolerance)


# ---- padding ------------------------------------------------------------------------------
@register("padding_invariance", "extra <pad> tokens change no logit of a real position")
def padding_invariance(kit: Kit) -> CheckResult:
    """Append three pads to the source, then to the target: real positions must not move."""
    a = kit.adapter
    src, tgt = kit.source(2, 7), kit.target(2, min(9, a.max_len - 3))
    base = kit.logits(src, tgt)
    tol = 1e-5 * scale_of(base)
    measured = {}
    if src is not None:
        measured["change from source pads"] = max_abs(kit.logits(kit.pad(src, 3), tgt), base)
    padded = kit.logits(src, kit.pad(tgt, 3))[:, : tgt.size(1)]
    key = "change from target pads" if a.encoder_decoder else "change from pads"
    measured[key] = max_abs(padded, base)
    tolerance = f"<= {tol:.2g} (float rounding)"
    bad = [k for k, v in measured.items() if v > tol]
    if not bad:
        return result(
            "padding_invariance", padding_invariance.check_title, True, measured, tolerance
        )
    finding = "appending <pad> tokens changes the logits of real positions (" + ", ".join(bad) + ")"
    causes = [PAD_IGNORED, PAD_INVERTED]
    if bad == ["change from source pads"]:
        causes.append(CROSS_PAD)
    causes += [HEADS_SPLIT, HEADS_MERGED]
    return result(
        "padding_invariance",
        padding_invariance.check_title,
        False,
        measured,
        tolerance,
        finding,
        causes,
    )


# ---- attention rows -------------------------------------------------------------------------
def _allowed(kit: Kit, src: Tensor | None, tgt: Tensor) -> dict[str, tuple[Tensor, Tensor]]:
    """Per attention kind: which queries are real ``(B, 1, Tq, 1)`` and which keys each may
    attend to ``(B, 1, Tq, Tk)``, by the paper's rules."""
    pad = kit.adapter.pad_id
    real_t = tgt != pad  # (B, T)
    T = tgt.size(1)
    causal = torch.ones(T, T, dtype=torch.bool, device=tgt.device).tril()
    out = {"decoder": (real_t[:, None, :, None], causal[None, None] & real_t[:, None, None, :])}
    if src is not None:
        real_s = src != pad
        S = src.size(1)
        out["encoder"] = (real_s[:, None, :, None], real_s[:, None, None, :].expand(-1, 1, S, S))
        out["cross"] = (real_t[:, None, :, None], real_s[:, None, None, :].expand(-1, 1, T, S))
    return out


@register(
    "attention_rows",
    "each attention row sums to 1 over the keys it may see, and is 0 on masked keys",
    needs=("attention",),
)
def attention_rows(kit: Kit) -> CheckResult:
    """Weights of real queries: sum 1 over allowed keys; 0 on padding and on future keys."""
    a = kit.adapter
    src = kit.source(3, 8)
    tgt = kit.target(3, min(9, a.max_len))
    if src is not None:
        src[0, 5:] = a.pad_id
        src[1, 7:] = a.pad_id
    tgt[2, 4:] = a.pad_id
    weights = a.attention(src, tgt) if src is not None else a.attention(tgt)
    rules = _allowed(kit, src, tgt)
    stats: dict[str, dict[str, float]] = {}  # kind -> worst value over layers
    problems, causes = [], []
    for kind, (query, allowed) in rules.items():
        layers = weights.get(kind) if hasattr(weights, "get") else None
        if not layers:
            problems.append(f"no {kind!r} weights returned")
            continue
        keys = _key_classes(kind, src, tgt, a.pad_id)
        for i, w in enumerate(layers):
            w = w.detach().float()
            if w.dim() != 4 or w.shape[-2:] != allowed.shape[-2:]:
                problems.append(f"{kind} layer {i}: weights of shape {tuple(w.shape)}")
                own_keys = kind == "cross" and w.dim() == 4 and w.size(-1) == tgt.size(1)
                causes.append(CROSS_ON_SELF if own_keys else WRONG_SHAPE)
                continue
            q = query.expand_as(w)
            rows = q[..., :1]  # (B, H, Tq, 1) the real queries
            layer = {
                "row sum error": max_abs((w.sum(-1, keepdim=True) - 1)[rows]),
                "allowed-key sum": -float((w * allowed).sum(-1, keepdim=True)[rows].mean()),
                "weight on padding": max_abs((w * keys["pad"])[q]),
                "next": max_abs((w * keys["next"])[q]),
                "later": max_abs((w * keys["later"])[q]),
            }
            worst = stats.setdefault(kind, dict.fromkeys(layer, -float("inf")))
            for name, value in layer.items():
                worst[name] = max(worst[name], value)
    measured, findings = {}, []
    for kind, st in stats.items():
        err, allowed_sum, on_pad = (
            st["row sum error"],
            -st["allowed-key sum"],
            st["weight on padding"],
        )
        nxt, later = st["next"], st["later"]
        measured[f"{kind} row sum error"] = err
        measured[f"{kind} weight on padding"] = on_pad
        if kind == "decoder":
            measured["decoder weight on later positions"] = max(nxt, later)
        if allowed_sum < 0.5:
            findings.append(f"{kind}: the weights go to masked keys or nowhere")
            causes.append(PAD_INVERTED)
        elif err > 1e-5:
            findings.append(f"{kind}: rows do not sum to 1")
            causes.append(SOFTMAX_AXIS)
        if on_pad > 1e-6 and allowed_sum >= 0.5 and err <= 1e-5:
            findings.append(f"{kind}: real tokens attend to <pad>")
            causes.append(CROSS_PAD if kind == "cross" else PAD_IGNORED)
        if max(nxt, later) > 1e-6 and allowed_sum >= 0.5 and err <= 1e-5:
            findings.append(f"{kind}: queries attend to later positions")
            causes.append(NO_CAUSAL if later > 1e-6 else OFF_BY_ONE)
    tolerance = "row sum error <= 1e-5; weight on masked keys <= 1e-6"
    # Padding ignored everywhere shows in the cross-attention too: name it once, first.
    if PAD_IGNORED in causes and CROSS_PAD in causes:
        causes.remove(CROSS_PAD)
    ok = not causes and not problems
    finding = "; ".join(problems + findings)
    unique = list(dict.fromkeys(causes))
    return result(
        "attention_rows", attention_rows.check_title, ok, measured, tolerance, finding, unique
    )


def _key_classes(kind: str, src, tgt: Tensor, pad: int) -> dict[str, Tensor]:
    """Masks ``(B, 1, Tq, Tk)`` of the keys that are padding, later than the query, or the
    very next position."""
    keys = src if kind in ("encoder", "cross") else tgt
    Tq, Tk = (src.size(1) if kind == "encoder" else tgt.size(1)), keys.size(1)
    pad_keys = (keys == pad)[:, None, None, :].expand(-1, 1, Tq, Tk)
    if kind == "decoder":
        ones = torch.ones(Tq, Tk, dtype=torch.bool, device=keys.device)
        nxt = (ones.triu(1) & ~ones.triu(2))[None, None] & ~pad_keys
        later = ones.triu(2)[None, None] & ~pad_keys
    else:
        nxt = later = torch.zeros_like(pad_keys)
    return {"pad": pad_keys, "next": nxt, "later": later}


# ---- the scale of the scores ------------------------------------------------------------------
@register(
    "score_scale",
    "the variance of q·k/√d_k stays near 1 as d_k grows (paper §3.2.1)",
    needs=("attention_function",),
)
def score_scale(kit: Kit) -> CheckResult:
    """Random unit-variance q and k: the scores' variance must not grow (or shrink) with d_k.

    The variance of the scores along a row is read from the weights: log-softmax only
    subtracts a constant per row, so the variance of log w over the keys is theirs.
    """
    fn = kit.adapter.attention_function
    variances = {}
    for d_k in (4, 16, 64):
        shape = (4, 2, 24, d_k)
        q, k, v = (torch.randn(shape, generator=kit.generator).to(kit.device) for _ in range(3))
        out = fn(q, k, v, None)
        w = (out[1] if isinstance(out, tuple) else out).detach().double()
        variances[d_k] = float(w.clamp_min(1e-300).log().var(dim=-1).mean())
    measured = {f"score variance at d_k={d}": v for d, v in variances.items()}
    lo, hi = 0.6, 1.6
    ok = all(lo <= v <= hi for v in variances.values())
    tolerance = f"each variance in [{lo}, {hi}] (1 when divided by √d_k)"
    growth = variances[64] / max(variances[4], 1e-12)
    measured["growth from d_k=4 to 64"] = growth
    if ok:
        return result("score_scale", score_scale.check_title, True, measured, tolerance)
    if growth > 4:
        finding, causes = "the variance grows with d_k (about ∝ d_k)", [NO_SCALE, WRONG_SCALE]
    else:
        finding, causes = "the scores are scaled, but not to unit variance", [WRONG_SCALE, NO_SCALE]
    return result(
        "score_scale", score_scale.check_title, False, measured, tolerance, finding, causes
    )


# ---- positional encoding ---------------------------------------------------------------------
def _sinusoids(L: int, D: int, layout: str = "interleaved") -> Tensor:
    """§3.5's table written out here, independently of the model (float64)."""
    pos = torch.arange(L, dtype=torch.float64)[:, None]
    omega = 10000.0 ** (-torch.arange(0, D, 2, dtype=torch.float64) / D)
    sin, cos = torch.sin(pos * omega), torch.cos(pos * omega[: D // 2])
    pe = torch.zeros(L, D, dtype=torch.float64)
    if layout == "interleaved":
        pe[:, 0::2], pe[:, 1::2] = sin, cos
    elif layout == "swapped":
        pe[:, 0::2], pe[:, 1::2] = torch.cos(pos * omega), torch.sin(pos * omega[: D // 2])
    else:  # halves
        pe = torch.cat([sin, cos], dim=1)[:, :D]
    return pe


@register(
    "positional_spectrum",
    "the positional table has frequencies 1/10000^(2i/d_model), sin on even and cos on odd "
    "dimensions (paper §3.5)",
    needs=("positional_table",),
)
def positional_spectrum(kit: Kit) -> CheckResult:
    """Compare the table with the formula; if it differs, find its frequencies and layout."""
    a = kit.adapter
    L, D = min(64, a.max_len), a.d_model
    pe = a.positional_table(L).detach().double().cpu()
    title = positional_spectrum.check_title
    if pe.shape != (L, D):
        finding = f"positional_table({L}) has shape {tuple(pe.shape)}, not ({L}, {D})"
        return result("positional_spectrum", title, False, {}, "", finding, [NOT_SINUSOIDAL])
    tol = 1e-4
    error = max_abs(pe, _sinusoids(L, D))
    measured = {"max error": error}
    tolerance = f"max |table - formula| <= {tol:g}"
    if error <= tol:
        return result("positional_spectrum", title, True, measured, tolerance)
    # Each column pair (2i, 2i+1) as a complex number turns by its frequency per position.
    pairs = D // 2
    z = torch.complex(pe[:, 1 : 2 * pairs : 2], pe[:, 0 : 2 * pairs : 2])  # cos + i·sin
    radius = z.abs()
    step = (z[1:] * z[:-1].conj()).angle().abs()  # (L-1, pairs) the turn per position
    freq = step.median(dim=0).values
    measured["frequency range"] = (float(freq.min()), float(freq.max()))
    measured["distinct frequencies"] = len({round(float(f), 6) for f in freq})
    if max_abs(pe, _sinusoids(L, D, "swapped")) <= tol:
        finding, causes = "sin and cos are on the wrong dimensions", [SWAPPED]
    elif max_abs(pe, _sinusoids(L, D, "halves")) <= tol:
        finding, causes = "the sin and cos columns are not interleaved", [HALVES]
    elif max_abs(radius, torch.ones_like(radius)) > 1e-3:
        finding, causes = "the columns are not sin/cos pairs of one angle", [NOT_SINUSOIDAL]
    elif measured["distinct frequencies"] == 1:
        finding = f"every pair turns at the same frequency {float(freq[0]):.4g}"
        causes = [SINGLE_FREQUENCY]
    else:
        finding = "the frequencies are not those of the paper's §3.5"
        causes = [WRONG_FREQUENCIES, SWAPPED]
    return result("positional_spectrum", title, False, measured, tolerance, finding, causes)


# ---- embeddings ---------------------------------------------------------------------------
@register(
    "embedding_scale",
    "token embeddings are the embedding matrix's rows times √d_model (paper §3.4)",
    needs=("token_embedding", "embedding_matrices"),
)
def embedding_scale(kit: Kit) -> CheckResult:
    """The vectors fed to the positional encoding are the embedding rows × √d_model."""
    a = kit.adapter
    ids = kit.tokens(2, 6)
    vectors = a.token_embedding(ids).detach().double()
    matrix = next(iter(a.embedding_matrices().values())).detach().double()
    rows = matrix[ids]
    expected = math.sqrt(a.d_model)
    scale = float((vectors.norm(dim=-1) / rows.norm(dim=-1).clamp_min(1e-12)).median())
    error = max_abs(vectors, rows * expected) / max(max_abs(rows * expected), 1e-12)
    measured = {"scale": scale, "√d_model": expected, "relative error": error}
    ok = error <= 1e-5
    tolerance = "relative error <= 1e-5"
    if ok:
        return result("embedding_scale", embedding_scale.check_title, True, measured, tolerance)
    if abs(scale - 1) < 1e-3:
        finding, causes = "the embeddings are not scaled at all", [NO_EMBED_SCALE]
    else:
        finding, causes = f"the embeddings are scaled by {scale:.4g}", [WRONG_EMBED_SCALE]
    return result(
        "embedding_scale",
        embedding_scale.check_title,
        False,
        measured,
        tolerance,
        finding,
        causes,
    )


@register(
    "tied_embeddings",
    "the embeddings and the pre-softmax projection share one matrix (paper §3.4)",
    needs=("embedding_matrices",),
)
def tied_embeddings(kit: Kit) -> CheckResult:
    """Every matrix named by ``embedding_matrices()`` is one and the same tensor."""
    mats = dict(kit.adapter.embedding_matrices())
    title = tied_embeddings.check_title
    if len(mats) < 2:
        finding = "embedding_matrices() must name at least two matrices (embedding and output)"
        return result("tied_embeddings", title, False, {}, "", finding, [UNTIED])
    names = list(mats)
    first = mats[names[0]]
    separate = [n for n in names[1:] if mats[n].data_ptr() != first.data_ptr()]
    copies = [n for n in separate if mats[n].shape == first.shape and torch.equal(mats[n], first)]
    measured = {"matrices": len(mats), "separate": len(separate)}
    tolerance = "all the same tensor"
    if not separate:
        return result("tied_embeddings", title, True, measured, tolerance)
    finding = f"{', '.join(separate)}: not the same tensor as {names[0]}"
    causes = [COPIED, UNTIED] if copies == separate else [UNTIED]
    return result("tied_embeddings", title, False, measured, tolerance, finding, causes)


# ---- parity with PyTorch --------------------------------------------------------------------
@register(
    "torch_parity",
    "the logits equal torch.nn.Transformer's holding the same weights (paper layout)",
    needs=("torch_reference",),
)
def torch_parity(kit: Kit) -> CheckResult:
    """Same inputs (with padding) through the model and through its copy in PyTorch's
    modules: the logits at real target positions must agree."""
    a = kit.adapter
    reference = a.torch_reference()
    src, tgt = kit.source(2, 8), kit.target(2, min(7, a.max_len))
    if src is not None:
        src[0, 6:] = a.pad_id
    tgt[1, 5:] = a.pad_id
    ours, theirs = kit.logits(src, tgt), kit.logits(src, tgt, fn=reference)
    real = tgt != a.pad_id
    error = max_abs(ours[real], theirs[real])
    tol = 1e-4 * scale_of(ours)
    measured = {"max difference": error}
    tolerance = f"<= {tol:.2g} at real target positions"
    ok = error <= tol
    causes = [MISSING_RESIDUAL, NORM_PLACEMENT, ATTENTION_DIFFERS, FFN_DIFFERS]
    finding = "" if ok else "the logits differ from PyTorch's with the same weights"
    return result(
        "torch_parity", torch_parity.check_title, ok, measured, tolerance, finding, causes
    )


# ---- the decoder reads the encoder -----------------------------------------------------------
@register(
    "source_dependence",
    "the decoder's output depends on the source through cross-attention (paper §3.2.3)",
    archs=("encoder-decoder",),
)
def source_dependence(kit: Kit) -> CheckResult:
    """Another source, the same target prefix: the logits must change."""
    src, tgt = kit.source(2, 7), kit.target(2, 6)
    base = kit.logits(src, tgt)
    change = max_abs(kit.logits(kit.other_tokens(src), tgt), base) / scale_of(base)
    measured = {"relative change from another source": change}
    ok = change > 1e-3
    tolerance = "> 1e-3"
    finding = "" if ok else "the logits do not change when the source changes"
    return result(
        "source_dependence",
        source_dependence.check_title,
        ok,
        measured,
        tolerance,
        finding,
        [CROSS_ON_SELF, MEMORY_UNUSED],
    )
