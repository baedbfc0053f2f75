"""Attention weights against the size of what they move (chapter 11).

An attention weight ``a_ij`` says how much of key ``j``'s value vector query ``i`` takes,
not how large that vector is. Kobayashi et al. (2020) measure the contribution of key
``j`` to query ``i`` by the norm of the vector it actually adds to the layer's output,

    || sum_h a^h_ij v^h_j W^O_h ||,

where ``v^h_j = x_j W^V_h + b^V_h`` is head ``h``'s value of key ``j`` and ``W^O_h`` the
rows of ``W^O`` that head ``h``'s output is multiplied by (§3.2.2). A key whose value
vector is short contributes little however large its weight: the "resting places" of
chapter 11 (a final full stop, ``<bos>``) often are such keys.

:func:`weighted_value_norms` computes it from a :class:`MultiHeadAttention` module, its
value input and its weights; :func:`layer_value_norms` runs the model once and returns
the weights and norms of one attention layer; :func:`plot_norm_weighted_attention` draws
the head-averaged weights beside the norms.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import matplotlib as mpl
import numpy as np
import torch
from matplotlib.figure import Figure
from torch import Tensor

from ..components.model import Transformer
from ..components.multihead import MultiHeadAttention
from .style import (
    _KEY_LABEL,
    _QUERY_LABEL,
    SEQUENTIAL_CMAP,
    _new_figure,
    _set_token_ticks,
    _styled,
    _tick_fontsize,
    _token_labels,
)

__all__ = ["weighted_value_norms", "layer_value_norms", "plot_norm_weighted_attention"]

KINDS = ("encoder", "decoder", "cross")


def weighted_value_norms(attention: MultiHeadAttention, value: Tensor, weights: Tensor) -> Tensor:
    """Norm of what each key adds to each query's output, summed over heads (§3.2.2).

    Args:
        attention: the layer's module; its ``in_proj`` gives ``W^V`` and ``b^V``, its
            ``out_proj`` gives ``W^O`` (its bias belongs to no key and is left out). A
            ``head_gate`` that is set scales each head, as in the forward pass.
        value: the module's value input ``x`` (the layer's input in self-attention, the
            encoder memory in cross-attention).
        weights: the module's attention weights for that input.

    Returns:
        ``||sum_h a^h_ij (x_j W^V_h + b^V_h) W^O_h||`` for every query ``i`` and key
        ``j``; masked keys (weight 0) give 0.

    Shape:
        value ``(B, Tk, D)``, weights ``(B, H, Tq, Tk)`` → ``(B, Tq, Tk)``.

    Example:
        >>> mha = MultiHeadAttention(d_model=8, n_heads=2)
        >>> x = torch.randn(1, 3, 8)
        >>> _, w = mha(x, x, x, need_weights=True)
        >>> weighted_value_norms(mha, x, w).shape
        torch.Size([1, 3, 3])
    """
    d, h, dk = attention.d_model, attention.n_heads, attention.d_head
    if value.dim() != 3 or value.size(-1) != d:
        raise ValueError(f"value must have shape (B, Tk, d_model={d}), got {tuple(value.shape)}")
    b, tk = value.shape[:2]
    if weights.dim() != 4 or weights.shape[0] != b or weights.shape[1] != h:
        raise ValueError(
            f"weights must have shape (B={b}, H={h}, Tq, Tk={tk}), got {tuple(weights.shape)}"
        )
    if weights.shape[-1] != tk:
        raise ValueError(
            f"weights have {weights.shape[-1]} keys but value has {tk} positions: pass the "
            "value input of the same call that produced the weights"
        )
    w_v = attention.in_proj.weight[2 * d :]  # (D, D): W^V of all heads, side by side
    b_v = attention.in_proj.bias[2 * d :]
    v = (value @ w_v.T + b_v).view(b, tk, h, dk).transpose(1, 2)  # (B, H, Tk, Dk)
    if attention.head_gate is not None:
        v = v * attention.head_gate.to(v).view(1, -1, 1, 1)
    w_o = attention.out_proj.weight.view(d, h, dk)  # output = concat(heads) @ W^O.T
    moved = torch.einsum("bhkc,ehc->bhke", v, w_o)  # (B, H, Tk, D): v^h_j W^O_h
    added = torch.einsum("bhqk,bhke->bqke", weights.to(moved), moved)  # (B, Tq, Tk, D)
    return added.norm(dim=-1)


def layer_value_norms(
    model: Transformer, src: Tensor, tgt_in: Tensor, kind: str, layer: int
) -> tuple[Tensor, Tensor]:
    """Attention weights and :func:`weighted_value_norms` of one layer, in one forward pass.

    Args:
        model: a :class:`Transformer` (e.g. the shipped one of ``load_pretrained``).
        src: source ids; tgt_in: decoder input ids (``<bos>`` + target), as for ``model``.
        kind: ``"encoder"``, ``"decoder"`` (self-attention) or ``"cross"``.
        layer: the layer, counting from 0.

    Returns:
        ``(weights, norms)``: weights ``(B, H, Tq, Tk)``, norms ``(B, Tq, Tk)``.

    Example:
        >>> w, n = layer_value_norms(model, src, tgt_in, "encoder", 1)  # doctest: +SKIP
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    modules = model.attention_modules(kind)
    if not 0 <= layer < len(modules):
        raise ValueError(f"layer {layer} does not exist: {kind} has layers 0 to {len(modules) - 1}")
    seen: dict[str, Tensor] = {}

    def keep(module, args, kwargs, output):
        seen["value"] = args[2] if len(args) > 2 else kwargs["value"]
        seen["weights"] = output[1]

    hook = modules[layer].register_forward_hook(keep, with_kwargs=True)
    try:
        with torch.no_grad():
            model(src, tgt_in, return_attention=True)
            norms = weighted_value_norms(modules[layer], seen["value"], seen["weights"])
    finally:
        hook.remove()
    return seen["weights"], norms


@_styled
def plot_norm_weighted_attention(
    weights: Any,
    norms: Any,
    query_tokens: Sequence[Any],
    key_tokens: Sequence[Any],
    title: str = "Attention weights and the norms of what they move",
) -> Figure:
    """The head-averaged weights of a layer beside its value-norm map (chapter 11).

    Both panels are rows = queries, columns = keys, on one colour scale (0 to the
    largest cell of either panel): left the
    weights averaged over heads, right :func:`weighted_value_norms` divided by its row
    sum (each key's share of what the layer adds to the query).

    Args:
        weights: ``(H, Tq, Tk)`` weights of one sentence (``(1, H, Tq, Tk)`` works too).
        norms: ``(Tq, Tk)`` norms of the same sentence (``(1, Tq, Tk)`` works too).
        query_tokens, key_tokens: labels of the rows and columns.
    """
    w = torch.as_tensor(weights, dtype=torch.float32).detach()
    w = (w[0] if w.dim() == 4 else w).numpy()
    n = torch.as_tensor(norms, dtype=torch.float32).detach()
    n = (n[0] if n.dim() == 3 else n).numpy()
    if w.ndim != 3 or n.shape != w.shape[1:]:
        raise ValueError(
            f"plot_norm_weighted_attention: weights (H, Tq, Tk) and norms (Tq, Tk) of one "
            f"sentence, got {w.shape} and {n.shape}"
        )
    tq, tk = n.shape
    func = "plot_norm_weighted_attention"
    rows = _token_labels(query_tokens, tq, "query_tokens", func)
    cols = _token_labels(key_tokens, tk, "key_tokens", func)
    share = n / np.maximum(n.sum(-1, keepdims=True), 1e-12)
    panels = [
        (w.mean(0), "attention weight\n(mean over heads)"),
        (share, "norm-weighted\n" r"$\|\sum_h a^h_{ij} v^h_j W^O_h\|$, row share"),
    ]
    cell = float(np.clip(0.3 * max(tq, tk), 2.2, 3.2))
    fig, axes = _new_figure((2 * cell + 2.6, cell + 1.9), 1, 2)
    fontsize = _tick_fontsize(max(tq, tk), cell)
    cm = mpl.colormaps[SEQUENTIAL_CMAP]
    # One scale for both panels, up to their largest cell (rounded up to 0.1).
    top = min(1.0, float(np.ceil(10 * max(panels[0][0].max(), share.max())) / 10))
    for ax, (data, name) in zip(axes, panels):
        im = ax.imshow(data, cmap=cm, vmin=0.0, vmax=top, interpolation="nearest")
        _set_token_ticks(ax, cols, rows, fontsize)
        ax.set_title(name, fontsize=11)
        ax.set_xlabel(_KEY_LABEL, fontsize=10)
    axes[0].set_ylabel(_QUERY_LABEL, fontsize=10)
    axes[1].tick_params(labelleft=False)
    fig.colorbar(im, ax=list(axes), label="share of the row", shrink=0.9)
    fig.suptitle(title)
    return fig
