"""Figures of the decoder-only chapter (12): loss mask, two masks, next-token bars, attention.

* :func:`plot_decoder_only_diagram`: the encoder–decoder beside the decoder-only model,
  with the parts the latter does not keep in grey.
* :func:`plot_loss_mask`: which next-token predictions of ``English <sep> German <eos>``
  count in the loss.
* :func:`plot_mask_pair`: two boolean masks over the same tokens, side by side (causal and
  prefix-LM).
* :func:`plot_next_token_distribution`: the distribution sampled from, as horizontal bars
  with the real tokens (also drawn by the sampling explorer's frames).
* :func:`plot_self_vs_cross_attention`: per head (or averaged over the heads), the
  decoder-only model's square self-attention map beside the encoder–decoder's
  cross-attention map.

Rows are queries, columns are keys; masks are True = may attend; colours from
:mod:`~transformer_lib.views.style`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import matplotlib as mpl
import numpy as np
from matplotlib.axes import Axes
from matplotlib.colors import ListedColormap
from matplotlib.figure import Figure
from matplotlib.patches import Patch, Rectangle

from .decoder_only_diagram import plot_decoder_only_diagram
from .masks import plot_mask
from .style import (
    _KEY_LABEL,
    OKABE_ITO,
    SEQUENTIAL_CMAP,
    _figure_and_axes,
    _label_text,
    _new_figure,
    _set_token_ticks,
    _squeeze_to,
    _styled,
    _to_numpy,
    _token_labels,
)

__all__ = [
    "plot_decoder_only_diagram",
    "plot_loss_mask",
    "plot_mask_pair",
    "plot_next_token_distribution",
    "plot_self_vs_cross_attention",
]

_COUNTED = "#0072B2"  # blue: the prediction is in the loss
_IGNORED = "#E8E8E8"  # light grey: it is not
# plot_self_vs_cross_attention: both maps' rows are named by the token the position reads
_READ_LABEL = "query: the token it reads"


@_styled
def plot_loss_mask(
    tokens: Sequence[Any],
    loss_mask: Any,
    title: str = "Which predictions count in the loss",
    *,
    ax: Axes | None = None,
) -> Figure:
    """One sequence and its loss mask: column t reads ``tokens[t]`` and predicts ``tokens[t+1]``.

    Args:
        tokens: the ``L`` tokens of ``English <sep> German <eos>``.
        loss_mask: ``(L - 1,)`` booleans (``DecoderOnlyBatch.loss_mask`` of one row): True
            where the prediction of ``tokens[t + 1]`` is in the loss.

    The bottom labels are what each position reads, the top labels what it must predict;
    blue columns count, grey ones do not.
    """
    func = "plot_loss_mask"
    mask = _to_numpy(loss_mask).astype(bool).reshape(-1)
    tokens = [_label_text(t) for t in tokens]
    if len(tokens) != mask.size + 1:
        raise ValueError(
            f"{func}: {len(tokens)} tokens need a loss mask of {len(tokens) - 1} entries "
            f"(one per prediction of the next token), got {mask.size}."
        )
    n = mask.size
    # 0.3 inch a column: the 45-degree labels still clear each other, and a pair of about
    # 15 tokens fits a phone's column with its text at 9 CSS px or more
    fig, ax = _figure_and_axes(ax, (float(np.clip(0.3 * n + 0.6, 4.0, 10.0)), 2.7))
    ax.imshow(
        mask[None, :].astype(int),
        cmap=ListedColormap([_IGNORED, _COUNTED]),
        vmin=0,
        vmax=1,
        aspect="auto",
        interpolation="nearest",
    )
    ax.set_xticks(np.arange(-0.5, n, 1), minor=True)
    ax.grid(which="minor", axis="x", color="white", linewidth=2)
    ax.tick_params(which="minor", length=0)
    ax.set_yticks([])
    _set_token_ticks(ax, tokens[:-1], None, 11)
    ax.set_xlabel("position t reads …")
    top = ax.secondary_xaxis("top")
    top.set_xticks(np.arange(n))
    top.set_xticklabels(tokens[1:], rotation=45, ha="left", rotation_mode="anchor", fontsize=11)
    top.set_xlabel("… and predicts token t + 1")
    for t, counted in enumerate(mask):
        ax.text(
            t,
            0,
            "✓" if counted else "–",
            ha="center",
            va="center",
            fontsize=12,
            color="white" if counted else "#555555",
        )
    handles = [
        Patch(facecolor=_COUNTED, label="in the loss"),
        Patch(facecolor=_IGNORED, edgecolor="#999999", label="not in the loss"),
    ]
    fig.legend(handles=handles, loc="outside lower center", ncol=2)
    fig.suptitle(title)
    return fig


@_styled
def plot_mask_pair(
    masks: Mapping[str, Any],
    tokens: Sequence[Any],
    title: str = "Two attention masks",
) -> Figure:
    """Two (or more) ``(T, T)`` boolean masks over the same tokens, side by side.

    Args:
        masks: panel title → mask (True = may attend); ``(1, 1, T, T)`` works too.
        tokens: the ``T`` tokens, used for rows (queries) and columns (keys).
    """
    n = len(masks)
    if n == 0:
        raise ValueError("plot_mask_pair: give at least one mask")
    size = float(np.clip(0.26 * len(tokens), 2.6, 4.2))  # inches per panel: 10-point labels fit
    fig, axes = _new_figure((n * size + 1.6, size + 1.9), 1, n, squeeze=False)
    for ax, (name, mask) in zip(axes[0], masks.items()):
        plot_mask(mask, tokens, tokens, title=name, ax=ax)
        legend = ax.get_legend()
        if legend is not None:
            legend.remove()
        if ax is not axes[0, 0]:  # the same tokens: label the rows once
            ax.set_ylabel("")
            ax.tick_params(labelleft=False)
    handles = [
        Patch(facecolor="#0072B2", edgecolor="#555555", label="True: may attend"),
        Patch(facecolor="#E8E8E8", edgecolor="#555555", label="False: blocked"),
    ]
    fig.legend(handles=handles, loc="outside lower center", ncol=2)
    fig.suptitle(title)
    return fig


@_styled
def plot_next_token_distribution(
    probs: Any,
    tokens: Sequence[str],
    *,
    reference: Any | None = None,
    reference_label: str = "temperature 1, no cut-off",
    title: str = "Next-token distribution",
    ax: Axes | None = None,
    show: int = 12,
) -> Figure:
    """The most likely next tokens as horizontal bars, most likely at the top.

    Args:
        probs: ``(V,)`` probabilities (what is sampled from, e.g.
            :func:`~transformer_lib.pipeline.generation.next_token_distribution`).
        tokens: the ``V`` token strings of the vocabulary (``tokenizer.id_to_token``).
        reference: optional ``(V,)`` probabilities drawn as outlines behind the bars (the
            model's plain distribution), so the effect of temperature and cut-offs shows.
            The bars are ordered by ``reference`` when it is given, else by ``probs``.
        show: how many tokens to draw.

    Tokens with probability 0 (cut off by top-k or top-p) are labelled in grey.
    """
    p = _squeeze_to(probs, 1, "probs", "plot_next_token_distribution", "(V,)").astype(float)
    ref = None if reference is None else _to_numpy(reference).astype(float).reshape(-1)
    if len(tokens) != p.size or (ref is not None and ref.size != p.size):
        raise ValueError(
            f"plot_next_token_distribution: {p.size} probabilities, {len(tokens)} tokens"
            + ("" if ref is None else f", {ref.size} reference probabilities")
            + "; give one token (and reference value) per vocabulary entry."
        )
    order = np.argsort(-(ref if ref is not None else p), kind="stable")[:show]
    fig, ax = _figure_and_axes(ax, (7.0, 0.32 * show + 1.4))
    y = np.arange(len(order))
    if ref is not None:
        ax.barh(
            y,
            ref[order],
            height=0.78,
            facecolor="none",
            edgecolor="#777777",
            linewidth=1.0,
            linestyle="--",
            label=reference_label,
        )
    ax.barh(y, p[order], height=0.6, color=OKABE_ITO[0], label="sampled from")
    ax.set_yticks(y, [_label_text(tokens[i]) for i in order], fontsize=10)
    for label, i in zip(ax.get_yticklabels(), order):
        if p[i] == 0:
            label.set_color("#999999")
    for yi, i in zip(y, order):
        end = max(p[i], ref[i]) if ref is not None else p[i]
        ax.annotate(
            _probability_text(p[i]),
            (end, yi),
            xytext=(4, 0),
            textcoords="offset points",
            va="center",
            fontsize=9,
            color="#333333" if p[i] > 0 else "#999999",
        )
    ax.set_ylim(len(order) - 0.5, -0.6)
    top = max(float(p[order].max()), float(ref[order].max()) if ref is not None else 0.0)
    ax.set_xlim(0, min(1.12, top * 1.22 + 1e-3))
    ax.set_xlabel("probability of the next token")
    ax.grid(axis="x", alpha=0.3)
    ax.set_title(title)
    if ref is not None:
        ax.legend(loc="lower right", fontsize=9)
    return fig


def _probability_text(p: float) -> str:
    if p == 0:
        return "cut"
    return f"{p:.2f}" if p >= 0.01 else ("< 0.01" if p >= 0.001 else "< 0.001")


def _heatmap(ax: Axes, data: np.ndarray, rows: list[str], cols: list[str], fontsize: float):
    cm = mpl.colormaps[SEQUENTIAL_CMAP].with_extremes(bad="#BBBBBB")
    im = ax.imshow(data, cmap=cm, vmin=0.0, vmax=1.0, interpolation="nearest")
    _set_token_ticks(ax, cols, rows, fontsize)
    return im


@_styled
def plot_self_vs_cross_attention(
    self_weights: Any,
    tokens: Sequence[Any],
    cross_weights: Any,
    target_tokens: Sequence[Any],
    source_tokens: Sequence[Any],
    *,
    block: tuple[int, int] | None = None,
    titles: tuple[str, str] = ("decoder-only: self-attention", "encoder–decoder: cross-attention"),
    title: str = "Where the German reads the English",
    heads: Sequence[int] | None = None,
    average_heads: bool = False,
) -> Figure:
    """Per head, a decoder-only self-attention map beside an encoder–decoder cross-attention map.

    Args:
        self_weights: ``(H, L, L)`` weights of the decoder-only model (one layer): rows and
            columns are all ``L`` positions of ``English <sep> German``.
        tokens: the ``L`` tokens of that sequence.
        cross_weights: ``(H', T, S)`` cross-attention of the encoder–decoder (one layer).
        target_tokens: the ``T`` decoder inputs (``<bos>`` and the German), the rows: each
            row is named by the token its position reads, as in the self-attention map
            (the ``<bos>`` row writes the first German token, as the ``<sep>`` row does
            there).
        source_tokens: the ``S`` English tokens, the columns.
        block: ``(first German-step row, number of English columns)``: outlines the part of
            the square map that plays the role of cross-attention (rows from ``<sep>`` on,
            English columns). The cross-attention map's rows must then be named as the
            self-attention map's German rows, by the token read (``<bos>`` for
            ``<sep>``): a ``ValueError`` otherwise, so the two panels cannot look one row
            apart.
        heads: which heads to draw (default all); head ``h`` of both models shares a row.
        average_heads: draw one row, each model's weights averaged over its heads (rows
            still sum to 1): a figure of one screen instead of one row per head.
    """
    func = "plot_self_vs_cross_attention"
    left = _squeeze_to(self_weights, 3, "self_weights", func, "(H, L, L)").astype(float)
    right = _squeeze_to(cross_weights, 3, "cross_weights", func, "(H, T, S)").astype(float)
    if average_heads:
        n_left, n_right = len(left), len(right)
        left, right = left.mean(0, keepdims=True), right.mean(0, keepdims=True)
        heads = [0]
    _, L, _ = left.shape
    _, T, S = right.shape
    tok = _token_labels(tokens, L, "query_tokens", func)
    rows = _token_labels(target_tokens, T, "query_tokens", func)
    cols = _token_labels(source_tokens, S, "key_tokens", func)
    if block is not None and rows and tok and rows[1:] != tok[block[0] + 1 :]:
        raise ValueError(
            f"{func}: the cross-attention rows {rows} must be named by the token each "
            f"position reads, as the self-attention rows from {block[0]} on, "
            f"{tok[block[0] :]} (the first one, <bos> for <sep>, may differ)."
        )
    heads = list(range(min(len(left), len(right)))) if heads is None else list(heads)
    cell = 0.27  # inches per token: 9-point labels fit, also rotated
    left_w, right_w = L * cell, max(S * cell, 2.4)  # room for the right column's titles
    row_h = L * cell + 0.8
    fig, axes = _new_figure(
        (left_w + right_w + 2.6, len(heads) * row_h + 0.6),
        len(heads),
        2,
        squeeze=False,
        width_ratios=[left_w, right_w],
    )
    im = None
    for r, h in enumerate(heads):
        ax0, ax1 = axes[r]
        im = _heatmap(ax0, left[h], tok, tok, 9)
        _heatmap(ax1, right[h], rows, cols, 9)
        if block is not None:
            first_row, n_cols = block
            ax0.add_patch(
                Rectangle(
                    (-0.5, first_row - 0.5),
                    n_cols,
                    L - first_row,
                    fill=False,
                    edgecolor=OKABE_ITO[1],
                    linewidth=2.2,
                )
            )
        if average_heads:
            ax0.set_title(f"{titles[0]}\nmean of {n_left} heads", fontsize=11)
            ax1.set_title(f"{titles[1]}\nmean of {n_right} heads", fontsize=11)
        else:
            ax0.set_title(f"{titles[0]}\nhead {h}", fontsize=11)
            ax1.set_title(f"{titles[1]}\nhead {h}", fontsize=11)
        ax0.set_ylabel(_READ_LABEL, fontsize=10)
        ax1.set_ylabel(_READ_LABEL, fontsize=10)
        if r == len(heads) - 1:
            ax0.set_xlabel(_KEY_LABEL, fontsize=10)
            ax1.set_xlabel(_KEY_LABEL, fontsize=10)
    fig.colorbar(
        im, ax=list(axes.flat), label="attention weight", location="bottom", shrink=0.5, aspect=30
    )
    fig.suptitle(title)
    return fig
