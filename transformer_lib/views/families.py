"""The three model families as masks, and the paper's layer beside a modern one (chapter 14).

:func:`family_masks` computes, with the library's own mask functions, the attention masks
of an encoder-only, a decoder-only and an encoder–decoder model on one sentence pair;
:func:`plot_family_masks` draws them (True = may attend; rows are queries, columns are
keys). :func:`plot_paper_vs_modern_layer` draws the paper's post-LN layer beside a typical
recent decoder layer, each change labelled with the :class:`TransformerConfig` option that
switches it on.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from matplotlib.figure import Figure
from matplotlib.patches import Ellipse, Patch

from .architecture import _ARCH_STYLE, _LINE, _path, _rounded_box
from .masks import _ATTEND_COLOUR, _BLOCKED_COLOUR, plot_mask
from .style import OKABE_ITO, _new_figure, _styled

__all__ = ["family_masks", "plot_family_masks", "plot_paper_vs_modern_layer", "MODERN_CHANGES"]

#: The panels of :func:`plot_family_masks`, in drawing order: (family, attention) per panel.
FAMILY_PANELS = (
    ("encoder-only (BERT)", "self-attention, both ways"),
    ("decoder-only (GPT)", "causal self-attention"),
    ("encoder–decoder: decoder", "causal self-attention"),
    ("encoder–decoder: decoder", "cross-attention to the source"),
)


def family_masks(source_ids: Sequence[int], target_ids: Sequence[int], pad_id: int = 0) -> dict:
    """The masks of the three families on one sentence pair, from the library's functions.

    Args:
        source_ids: the source sentence's ids (read by the encoder-only and the decoder-only
            model, and by the encoder–decoder's encoder).
        target_ids: the decoder's input ids of the encoder–decoder (``<bos>`` first).
        pad_id: the padding id; padded keys are blocked in every mask.

    Returns:
        ``{(family, attention): (Tq, Tk) bool array}`` in :data:`FAMILY_PANELS` order:
        the encoder's :func:`~transformer_lib.components.masks.padding_mask` broadcast over
        its queries, :func:`~transformer_lib.components.masks.decoder_mask` of the source
        (decoder-only) and of the target, and the source's padding mask broadcast over the
        target's queries (cross-attention).
    """
    import torch  # imported only here: the figure modules draw without torch

    from ..components.masks import decoder_mask, padding_mask

    src = torch.tensor([list(source_ids)])  # (1, S)
    tgt = torch.tensor([list(target_ids)])  # (1, T)
    s, t = src.size(1), tgt.size(1)
    masks = [
        padding_mask(src, pad_id).expand(1, 1, s, s),  # every query reads every real key
        decoder_mask(src, pad_id),  # causal and not padding
        decoder_mask(tgt, pad_id),
        padding_mask(src, pad_id).expand(1, 1, t, s),  # target queries, source keys
    ]
    return {panel: m[0, 0].numpy() for panel, m in zip(FAMILY_PANELS, masks)}


@_styled
def plot_family_masks(
    tokenizer: Any,
    source: str,
    target: str,
    title: str = "Three families, four masks on one sentence pair",
) -> Figure:
    """The attention masks of the three families on one sentence pair, in a 2 × 2 grid.

    Top: the source read by an encoder-only model (every position both ways; also the
    encoder of an encoder–decoder) and by a decoder-only one (causal). Bottom: the decoder
    of an encoder–decoder, its causal self-attention over the target (``<bos>`` first) and
    its cross-attention from the target to every source token. The masks are those of
    :func:`family_masks`.

    Args:
        tokenizer: has ``encode(text, add_bos=...)``, ``id_to_token(id)`` and ``pad_id``.
        source, target: the sentence pair (e.g. English and German).
        title: the figure's title.

    Returns:
        The figure; its four mask axes in :data:`FAMILY_PANELS` order, then no others.

    Example:
        >>> from transformer_lib.pipeline.tokenizer import Tokenizer
        >>> plot_family_masks(Tokenizer.load(), "Tom is lazy.", "Tom ist faul.")
    """
    src = tokenizer.encode(source)
    tgt = tokenizer.encode(target, add_bos=True)
    masks = family_masks(src, tgt, tokenizer.pad_id)
    src_tokens = [tokenizer.id_to_token(i) for i in src]
    tgt_tokens = [tokenizer.id_to_token(i) for i in tgt]
    tokens = [(src_tokens, src_tokens), (src_tokens, src_tokens)]
    tokens += [(tgt_tokens, tgt_tokens), (tgt_tokens, src_tokens)]
    side = max(len(src), len(tgt))
    size = float(np.clip(0.42 * side + 2.7, 4.6, 6.5))
    fig, axes = _new_figure((size, size + 0.5), 2, 2)
    for ax, (family, kind), (queries, keys) in zip(axes.flat, FAMILY_PANELS, tokens):
        plot_mask(
            masks[(family, kind)],
            queries,
            keys,
            title=f"{family}\n{kind}",
            ax=ax,
            xlabel="key",
            ylabel="query",
            key_labels="auto",
        )
        ax.get_legend().remove()
        ax.title.set_fontsize(10.5)
    handles = [
        Patch(facecolor=_ATTEND_COLOUR, edgecolor="#555555", label="True: may attend"),
        Patch(facecolor=_BLOCKED_COLOUR, edgecolor="#555555", label="False: blocked"),
    ]
    fig.legend(handles=handles, loc="outside lower center", ncols=2, frameon=False)
    fig.suptitle(title)
    return fig


# The blocks of the two layers, bottom to top: (gid, text, kind); kind None = the ⊕.
_PAPER_BLOCKS = (
    ("embedding", "embedding\n+ sinusoidal positions", "embedding"),
    ("attention", "multi-head\nself-attention", "attention"),
    ("add & norm 1", "add, then LayerNorm", "addnorm"),
    ("ffn", "FFN, ReLU", "ffn"),
    ("add & norm 2", "add, then LayerNorm", "addnorm"),
)
#: The modern layer's changed blocks and the options that switch them on ("" = none).
MODERN_CHANGES = {
    "embedding": 'positional="rope"',
    "norm 1": 'norm_first=True, norm="rms"',
    "attention": 'positional="rope"',
    "norm 2": 'norm_first=True, norm="rms"',
    "ffn": 'activation="swiglu"',
    "final norm": "norm_first=True",
}
_MODERN_BLOCKS = (
    ("embedding", "embedding, no positions", "embedding"),
    ("norm 1", "RMSNorm", "addnorm"),
    ("attention", "causal self-attention,\nRoPE on q, k; grouped-query", "attention"),
    ("add 1", "+", None),
    ("norm 2", "RMSNorm", "addnorm"),
    ("ffn", "FFN, SwiGLU", "ffn"),
    ("add 2", "+", None),
    ("final norm", "final RMSNorm\n(once, after the last layer)", "addnorm"),
)
# Which paper block sits level with which modern one.
_LEVEL_WITH = {
    "embedding": "embedding",
    "attention": "attention",
    "add & norm 1": "add 1",
    "ffn": "ffn",
    "add & norm 2": "add 2",
}
# The blocks where a sub-layer's input leaves the residual stream.
_SUBLAYER_STARTS = {"attention", "ffn", "norm 1", "norm 2"}
_CHANGED = OKABE_ITO[1]  # vermillion outline: changed since 2017
_LINE_H = 0.32  # height of one line of text, in data units
_ADD_R = 0.28  # radius of the ⊕


def _block_height(text: str, kind: str | None, option: str | None) -> float:
    if kind is None:
        return 2 * _ADD_R
    return 0.28 + _LINE_H * (text.count("\n") + 1 + bool(option))


@_styled
def plot_paper_vs_modern_layer(
    titles: tuple[str, str] = ("2017: the paper's layer", "2024–2026: a decoder layer"),
) -> Figure:
    """The paper's post-LN layer beside a typical recent decoder layer, input at the bottom.

    Left: embeddings plus sinusoidal positions, then each sub-layer followed by "add, then
    LayerNorm" (post-LN), with a ReLU FFN. Right: no positions added at the input; an
    RMSNorm before each sub-layer (pre-norm) and one after the last layer; rotary positions
    applied to the queries and keys inside attention, often with grouped-query heads; a
    SwiGLU FFN. Each changed block has a vermillion outline and, under its text, the
    :class:`~transformer_lib.TransformerConfig` option that switches it on
    (:data:`MODERN_CHANGES`); grouped-query attention has none in the library.

    Args:
        titles: the two column headings (paper, modern).

    Returns:
        The figure. Every block is a patch with ``gid`` ``"paper <block>"`` or
        ``"modern <block>"``; the residual paths are lines with ``gid``
        ``"<column> residual <n>"``.

    Example:
        >>> plot_paper_vs_modern_layer()
    """
    gap = 0.3
    levels, y = {}, 0.0  # the modern column stacked bottom to top; the paper's level with it
    for i, (gid, text, kind) in enumerate(_MODERN_BLOCKS):
        h = _block_height(text, kind, MODERN_CHANGES.get(gid))
        if i:
            y += h / 2
        levels[gid] = y
        y += h / 2 + gap + (0.25 if i == len(_MODERN_BLOCKS) - 2 else 0.0)
    y_top = y - gap + 0.15
    width, height = 4.9, 0.46 * (y_top + 1.0) + 0.35  # inches
    fig, ax = _new_figure((width, height))
    ax.set_axis_off()
    ax.set_xlim(0.0, 10.0)
    y_low, y_high = -0.55, y_top + 0.45
    ax.set_ylim(y_low, y_high)
    box_w = 4.6
    sx = (width / 10.0) / (height / (y_high - y_low))  # keeps the ⊕ round
    columns = {
        "paper": [(g, t, k, levels[_LEVEL_WITH[g]], None) for g, t, k in _PAPER_BLOCKS],
        "modern": [(g, t, k, levels[g], MODERN_CHANGES.get(g)) for g, t, k in _MODERN_BLOCKS],
    }
    for xc, column, title in zip((2.6, 7.65), columns, titles):
        ax.text(xc, y_high, title, ha="center", va="top", fontsize=10.5, fontweight="bold")
        previous_top, split, residual = None, None, 0
        for gid, text, kind, y, option in columns[column]:
            h = _block_height(text, kind, option)
            low, high = y - h / 2, y + h / 2
            if previous_top is not None:
                _path(ax, [(xc, previous_top), (xc, low)])
                if gid in _SUBLAYER_STARTS:
                    split = (previous_top + low) / 2
            if kind is None:  # the residual addition
                r = _ADD_R
                ax.add_patch(
                    Ellipse(
                        (xc, y),
                        2 * r / sx,
                        2 * r,
                        facecolor="white",
                        edgecolor=_LINE,
                        linewidth=1.3,
                        zorder=3,
                        gid=f"{column} {gid}",
                    )
                )
                for dx, dy in ((0.6 * r / sx, 0), (0, 0.6 * r)):
                    ax.plot([xc - dx, xc + dx], [y - dy, y + dy], color=_LINE, lw=1.3, zorder=4)
                entry = xc - r / sx
            else:
                changed = option is not None
                face, edge = _ARCH_STYLE[kind]
                _rounded_box(
                    ax,
                    xc,
                    y,
                    box_w,
                    h,
                    (face, _CHANGED if changed else edge),
                    linewidth=2.8 if changed else 1.4,
                    linestyle="--" if gid == "final norm" else "-",
                    gid=f"{column} {gid}",
                )
                n = text.count("\n") + 1 + bool(option)
                ax.text(
                    xc,
                    y + (_LINE_H / 2 if option else 0.0),
                    text,
                    ha="center",
                    va="center",
                    fontsize=10,
                    linespacing=1.15,
                    zorder=4,
                )
                if option:
                    ax.text(
                        xc,
                        y - _LINE_H / 2 * (n - 1) - 0.03 * (n - 2),
                        option,
                        ha="center",
                        va="center",
                        fontsize=9,
                        family="monospace",
                        zorder=4,
                    )
                entry = xc - box_w / 2
            previous_top = high
            if gid.startswith("add"):  # the residual path from the split, round the left
                residual += 1
                left = xc - box_w / 2 - 0.3
                (line,) = ax.plot(
                    [xc, left, left], [split, split, y], color=_LINE, lw=1.3, zorder=2
                )
                line.set_gid(f"{column} residual {residual}")
                _path(ax, [(left, y), (entry, y)])
        if column == "paper":
            ax.text(
                xc,
                levels["final norm"],
                "no final norm:\neach sub-layer ends in one",
                ha="center",
                va="center",
                fontsize=9.5,
                color="#555555",
            )
    handles = [
        Patch(facecolor="white", edgecolor=_CHANGED, linewidth=2.8, label="changed since 2017"),
        Patch(facecolor="white", edgecolor="none", label="monospace: the option for it"),
    ]
    fig.legend(handles=handles, loc="outside lower center", ncols=2, frameon=False)
    return fig
