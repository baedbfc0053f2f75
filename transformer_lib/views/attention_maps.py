"""Attention maps as heatmaps: one matrix, one layer's heads, every layer and head.

Rows are queries, columns are keys (:mod:`~transformer_lib.views.style`). Chapter 3 draws
one matrix (:func:`plot_attention`), chapter 4 the heads of a layer
(:func:`plot_attention_heads`), chapter 11 the trained model's layers and heads, what
switching a head off costs, what each head attends to and how cross-attention lines up
with a word alignment.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import matplotlib as mpl
import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch, Rectangle

from .style import (
    _KEY_LABEL,
    _QUERY_LABEL,
    DIVERGING_CMAP,
    OKABE_ITO,
    SEQUENTIAL_CMAP,
    _annotate_cells,
    _check_range,
    _figure_and_axes,
    _integer_ticks,
    _label_text,
    _new_figure,
    _set_token_ticks,
    _squeeze_to,
    _styled,
    _swap_hint,
    _symmetric_limit,
    _tick_fontsize,
    _token_labels,
)

__all__ = [
    "plot_attention",
    "plot_attention_heads",
    "plot_attention_layers_heads",
    "plot_head_importance",
    "plot_head_statistics",
    "plot_attention_alignment",
]


@_styled
def plot_attention(
    weights: Any,
    query_tokens: Sequence[Any] | None = None,
    key_tokens: Sequence[Any] | None = None,
    ax: Axes | None = None,
    title: str = "Attention weights",
    cmap: str = SEQUENTIAL_CMAP,
    annotate: bool = False,
    *,
    vmin: float | None = 0.0,
    vmax: float | None = 1.0,
    colorbar: bool = True,
    cbar_label: str = "attention weight",
    fmt: str = ".2f",
) -> Figure:
    """Heatmap of one attention matrix; rows are queries, columns are keys (chapters 3, 4, 11).

    Cell ``(i, j)`` shows how much query ``i`` attends to key ``j``; each row of
    softmax weights sums to 1. Fully masked rows (NaN) are drawn grey.

    Args:
        weights: ``(Tq, Tk)`` attention weights. Leading axes of size 1 (a batch of
            one, a single head) are dropped, so ``(1, 1, Tq, Tk)`` works too.
        query_tokens: ``Tq`` labels for the rows (y axis).
        key_tokens: ``Tk`` labels for the columns (x axis).
        ax: draw into this axes instead of a new figure.
        title: axes title.
        cmap: a sequential colour map.
        annotate: write each weight in its cell (best for matrices up to ~12 x 12).
        vmin, vmax: colour range; ``None`` uses the data's range. With the default
            ``[0, 1]`` values outside it raise ``ValueError`` (probably scores, not
            weights).
        colorbar: add a colour bar labelled ``cbar_label``.
        fmt: number format for ``annotate``.

    Raises:
        ValueError: if ``weights`` is not 2-D or a token list does not match its side.

    Example:
        >>> fig = plot_attention(w[0, 0], src_tokens, src_tokens)  # doctest: +SKIP
    """
    func = "plot_attention"
    data = _squeeze_to(weights, 2, "weights", func, "(Tq, Tk)").astype(float)
    tq, tk = data.shape
    hint = _swap_hint(query_tokens, key_tokens, tq, tk)
    y_labels = _token_labels(query_tokens, tq, "query_tokens", func, hint)
    x_labels = _token_labels(key_tokens, tk, "key_tokens", func, hint)
    if vmin == 0.0 and vmax == 1.0:
        _check_range(data, vmin, vmax, func)

    width = float(np.clip(0.45 * tk + 2.8, 4.0, 12.0))
    height = float(np.clip(0.45 * tq + 1.8, 3.0, 10.0))
    fig, ax = _figure_and_axes(ax, (width, height))
    cm = mpl.colormaps[cmap].with_extremes(bad="#BBBBBB")
    im = ax.imshow(data, cmap=cm, vmin=vmin, vmax=vmax, interpolation="nearest")
    fontsize = _tick_fontsize(max(tq, tk), 0.45 * max(tq, tk))
    _set_token_ticks(ax, x_labels, y_labels, fontsize)
    if x_labels is None or y_labels is None:
        _integer_ticks(ax)
    ax.set_xlabel(_KEY_LABEL if x_labels is not None else f"{_KEY_LABEL}, position")
    ax.set_ylabel(_QUERY_LABEL if y_labels is not None else f"{_QUERY_LABEL}, position")
    ax.set_title(title)
    if annotate:
        _annotate_cells(ax, im, data, fmt, fontsize=9 if max(tq, tk) <= 8 else 7)
    if colorbar:
        fig.colorbar(im, ax=ax, label=cbar_label, shrink=0.9)
    return fig


def _heatmap_grid(
    mats: np.ndarray,
    query_tokens: Sequence[Any] | None,
    key_tokens: Sequence[Any] | None,
    *,
    func: str,
    title: str,
    cmap: str,
    vmin: float | None,
    vmax: float | None,
    cbar_label: str,
    col_titles: list[str],
    row_labels: list[str] | None,
    ncols: int,
    annotate: bool = False,
    fmt: str = ".2f",
    panel_inches: float | None = None,
) -> Figure:
    """Shared code for head grids: ``mats`` is ``(n_panels, Tq, Tk)`` laid out row-major.

    ``panel_inches`` fixes the side of each panel (default: grows with the token count)."""
    n, tq, tk = mats.shape
    hint = _swap_hint(query_tokens, key_tokens, tq, tk)
    y_labels = _token_labels(query_tokens, tq, "query_tokens", func, hint)
    x_labels = _token_labels(key_tokens, tk, "key_tokens", func, hint)
    if vmin == 0.0 and vmax == 1.0:
        _check_range(mats, vmin, vmax, func)
    if vmax is None:
        vmax = float(np.nanmax(mats))
    if vmin is None:
        vmin = float(np.nanmin(mats))

    ncols = max(1, min(ncols, n))
    nrows = math.ceil(n / ncols)
    label_room = 0.9 if y_labels is not None else 0.5
    if panel_inches is not None and not 1.0 <= panel_inches <= 4.0:
        raise ValueError(f"{func}: panel_inches={panel_inches} must lie in [1, 4] inches.")
    cell = panel_inches or float(np.clip(0.22 * max(tq, tk) + 0.8, 1.6, 3.6))
    cell = min(cell, (13.0 - label_room - 1.3) / ncols, (14.0 - label_room - 0.6) / nrows)
    fig, axes = _new_figure(
        (ncols * cell + label_room + 1.3, nrows * cell + label_room + 0.6),
        nrows,
        ncols,
        squeeze=False,
    )
    cm = mpl.colormaps[cmap].with_extremes(bad="#BBBBBB")
    fontsize = _tick_fontsize(max(tq, tk), cell)
    used = []
    for idx, ax in enumerate(axes.flat):
        if idx >= n:
            ax.remove()
            continue
        r, c = divmod(idx, ncols)
        im = ax.imshow(mats[idx], cmap=cm, vmin=vmin, vmax=vmax, interpolation="nearest")
        used.append(ax)
        bottom = idx + ncols >= n  # nothing drawn below this panel
        _set_token_ticks(ax, x_labels, y_labels, fontsize)
        if panel_inches is not None and x_labels is not None:
            # Small panels: upright key labels, which need one line's width per token
            # where labels at 45° run into their neighbours.
            for label in ax.get_xticklabels():
                label.set(rotation=90, ha="center", rotation_mode="default")
        if x_labels is None or y_labels is None:
            _integer_ticks(ax)
        if not bottom:
            ax.tick_params(labelbottom=False)
        if c != 0:
            ax.tick_params(labelleft=False)
        if col_titles[idx]:
            ax.set_title(col_titles[idx], fontsize=11)
        if row_labels is not None and c == 0:
            ax.set_ylabel(row_labels[r], fontsize=11, fontweight="bold")
        elif row_labels is None:
            if c == 0:
                ax.set_ylabel(_QUERY_LABEL, fontsize=10)
            if bottom:
                ax.set_xlabel(_KEY_LABEL, fontsize=10)
        if annotate:
            _annotate_cells(ax, im, mats[idx], fmt, fontsize=7)
    if row_labels is not None:
        fig.supxlabel(_KEY_LABEL, fontsize=11)
        fig.supylabel(_QUERY_LABEL, fontsize=11)
    fig.colorbar(im, ax=used, label=cbar_label, shrink=min(0.9, 0.5 + 0.2 * nrows), aspect=30)
    fig.suptitle(title)
    return fig


@_styled
def plot_attention_heads(
    weights: Any,
    query_tokens: Sequence[Any] | None = None,
    key_tokens: Sequence[Any] | None = None,
    title: str = "Attention weights per head",
    ncols: int = 4,
    *,
    cmap: str = SEQUENTIAL_CMAP,
    vmin: float | None = 0.0,
    vmax: float | None = 1.0,
    head_labels: Sequence[str] | None = None,
    cbar_label: str = "attention weight",
    panel_inches: float | None = None,
) -> Figure:
    """Grid of attention heads of one layer with one shared colour bar (chapters 4, 11).

    Each panel is titled "head h" (0-based, as the tensor is indexed); rows are
    queries and columns are keys, as in :func:`plot_attention`.

    Args:
        weights: ``(H, Tq, Tk)``; ``(1, H, Tq, Tk)`` from a batch of one works too.
        query_tokens, key_tokens: labels for rows and columns.
        title: figure title.
        ncols: panels per row.
        vmin, vmax: shared colour range (``None`` = data range). Lowering ``vmax``
            brings out weak patterns.
        head_labels: panel titles instead of "head h".
        panel_inches: side of each panel in inches (1 to 4; default grows with the
            number of tokens). Smaller panels fit more of them in a row of the page.
    """
    data = _squeeze_to(weights, 3, "weights", "plot_attention_heads", "(H, Tq, Tk)")
    n_heads = data.shape[0]
    titles = list(head_labels) if head_labels is not None else [f"head {h}" for h in range(n_heads)]
    if len(titles) != n_heads:
        raise ValueError(
            f"plot_attention_heads: {len(titles)} head_labels for {n_heads} heads; "
            "give one label per head."
        )
    return _heatmap_grid(
        data.astype(float),
        query_tokens,
        key_tokens,
        func="plot_attention_heads",
        title=title,
        cmap=cmap,
        vmin=vmin,
        vmax=vmax,
        cbar_label=cbar_label,
        col_titles=titles,
        row_labels=None,
        ncols=ncols,
        panel_inches=panel_inches,
    )


@_styled
def plot_attention_layers_heads(
    weights: Sequence[Any] | Any,
    query_tokens: Sequence[Any] | None = None,
    key_tokens: Sequence[Any] | None = None,
    title: str = "Attention weights by layer and head",
    *,
    cmap: str = SEQUENTIAL_CMAP,
    vmin: float | None = 0.0,
    vmax: float | None = 1.0,
    cbar_label: str = "attention weight",
    panel_inches: float | None = None,
) -> Figure:
    """Layers x heads grid of attention maps, one shared colour bar (chapter 11).

    Row ``l`` is layer ``l`` (0 = closest to the embeddings), column ``h`` is head
    ``h``. Inside each panel rows are queries and columns are keys.

    Args:
        weights: a list with one ``(H, Tq, Tk)`` (or ``(1, H, Tq, Tk)``) tensor per
            layer, e.g. ``attn["encoder"]`` from ``model(src, tgt,
            return_attention=True)`` with a batch of one; or one ``(N, H, Tq, Tk)``
            array.
        query_tokens, key_tokens: labels for rows and columns of every panel.
        panel_inches: side of each panel in inches, as in :func:`plot_attention_heads`.
    """
    func = "plot_attention_layers_heads"
    if isinstance(weights, (list, tuple)):
        layers = [_squeeze_to(w, 3, "each layer's weights", func, "(H, Tq, Tk)") for w in weights]
        if not layers:
            raise ValueError(f"{func}: got an empty list of layers.")
        shapes = {w.shape for w in layers}
        if len(shapes) != 1:
            raise ValueError(f"{func}: every layer must have the same shape, got {sorted(shapes)}.")
        data = np.stack(layers)
    else:
        data = _squeeze_to(weights, 4, "weights", func, "(N, H, Tq, Tk)")
    n_layers, n_heads, tq, tk = data.shape
    titles = [f"head {idx}" if idx < n_heads else "" for idx in range(n_layers * n_heads)]
    return _heatmap_grid(
        data.reshape(n_layers * n_heads, tq, tk).astype(float),
        query_tokens,
        key_tokens,
        func=func,
        title=title,
        cmap=cmap,
        vmin=vmin,
        vmax=vmax,
        cbar_label=cbar_label,
        col_titles=titles,
        row_labels=[f"layer {layer}" for layer in range(n_layers)],
        ncols=n_heads,
        panel_inches=panel_inches,
    )


@_styled
def plot_head_importance(
    importance: Any,
    title: str = "What removing each head does",
    *,
    ax: Axes | None = None,
    cbar_label: str = "change in BLEU (points) without the head",
    cmap: str = DIVERGING_CMAP,
    annotate: bool = True,
    fmt: str = "+.1f",
    layer_labels: Sequence[str] | None = None,
) -> Figure:
    """Layers x heads heatmap of a signed score per head, e.g. BLEU change on ablation (ch. 11).

    Args:
        importance: ``(N, H)`` values; the diverging colour map is centred at 0.
        cbar_label: what the values are, with units.
        layer_labels: ``N`` row labels instead of the layer numbers, e.g. to stack the
            encoder, decoder and cross-attention layers of one model in one figure.
    """
    func = "plot_head_importance"
    data = _squeeze_to(importance, 2, "importance", func, "(N, H)").astype(float)
    n_layers, n_heads = data.shape
    if layer_labels is not None and len(layer_labels) != n_layers:
        raise ValueError(f"{func}: {len(layer_labels)} layer_labels for {n_layers} rows.")
    width = float(np.clip(0.7 * n_heads + 2.8, 4.5, 11)) + (1.6 if layer_labels else 0.0)
    fig, ax = _figure_and_axes(ax, (width, 0.5 * n_layers + 1.8))
    lim = _symmetric_limit(data)
    im = ax.imshow(data, cmap=cmap, vmin=-lim, vmax=lim, interpolation="nearest")
    ax.set_xticks(np.arange(n_heads))
    ax.set_yticks(np.arange(n_layers))
    if layer_labels is not None:
        ax.set_yticklabels([_label_text(label) for label in layer_labels])
    ax.set_xlabel("head")
    ax.set_ylabel("layer" if layer_labels is None else "attention, layer")
    ax.set_title(title)
    if annotate:
        _annotate_cells(ax, im, data, fmt, fontsize=9)
    fig.colorbar(im, ax=ax, label=cbar_label, shrink=0.9)
    return fig


@_styled
def plot_head_statistics(
    values: Any,
    head_labels: Sequence[str],
    stat_labels: Sequence[str],
    title: str = "What each head attends to",
    *,
    row_groups: Sequence[int] | None = None,
    col_groups: Sequence[int] | None = None,
    cbar_label: str = "share of attention",
    vmin: float = 0.0,
    vmax: float = 1.0,
    fmt: str = ".2f",
    xlabel: str = "statistic (averaged over queries and sentences)",
    ylabel: str = "attention head",
    ax: Axes | None = None,
) -> Figure:
    """Heads x statistics heatmap with the value written in each cell (chapter 11).

    One row per head (e.g. "enc L0 h2"), one column per measured statistic (share of
    attention on the previous token, normalised entropy, ...). NaN cells (a statistic
    that does not apply, such as the next token under a causal mask) are grey and blank.

    Args:
        values: ``(R, C)`` numbers, by default in ``[0, 1]``.
        head_labels: ``R`` row labels; stat_labels: ``C`` column labels.
        row_groups: sizes of consecutive row groups (e.g. ``[8, 8, 2]`` for encoder heads,
            decoder heads and reference rows); a line is drawn between groups.
        col_groups: the same for columns (e.g. ``[5, 1]`` to set a statistic of another
            kind apart from five shares of attention).
        vmin, vmax: colour range of the sequential (viridis) map.
    """
    func = "plot_head_statistics"
    data = _squeeze_to(values, 2, "values", func, "(R, C)").astype(float)
    n_rows, n_cols = data.shape
    rows = _token_labels(head_labels, n_rows, "head_labels", func)
    cols = _token_labels(stat_labels, n_cols, "stat_labels", func)
    if row_groups is not None and sum(row_groups) != n_rows:
        raise ValueError(f"{func}: row_groups {list(row_groups)} must add up to {n_rows} rows.")
    if col_groups is not None and sum(col_groups) != n_cols:
        raise ValueError(f"{func}: col_groups {list(col_groups)} must add up to {n_cols} columns.")
    fig, ax = _figure_and_axes(
        ax,
        (
            # At most 6.6 inches (660 px): shown unshrunk in the book's text column, so
            # the numbers in the cells stay readable.
            float(np.clip(0.75 * n_cols + 2.2, 4.5, 6.6)),
            float(np.clip(0.28 * n_rows + 2.4, 3.0, 12)),  # rows of 28 px hold 8.5-pt numbers
        ),
    )
    cm = mpl.colormaps[SEQUENTIAL_CMAP].with_extremes(bad="#DDDDDD")
    im = ax.imshow(np.ma.masked_invalid(data), cmap=cm, vmin=vmin, vmax=vmax, aspect="auto")
    ax.set_xticks(np.arange(n_cols))
    # 45°: at 30° a long label (“first token”) runs into its left neighbour's end.
    ax.set_xticklabels(cols, rotation=45, ha="right", rotation_mode="anchor")
    ax.set_yticks(np.arange(n_rows))
    ax.set_yticklabels(rows)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    _annotate_cells(ax, im, data, fmt, fontsize=8.5)
    if row_groups:
        for edge in np.cumsum(row_groups)[:-1]:
            ax.axhline(edge - 0.5, color="white", linewidth=3)
    if col_groups:
        for edge in np.cumsum(col_groups)[:-1]:
            ax.axvline(edge - 0.5, color="white", linewidth=3)
    fig.colorbar(im, ax=ax, label=cbar_label, shrink=0.9)
    return fig


@_styled
def plot_attention_alignment(
    weights: Any,
    query_tokens: Sequence[Any],
    key_tokens: Sequence[Any],
    alignment: Sequence[tuple[int, int]],
    title: str = "Cross-attention and the reference word alignment",
    *,
    cbar_label: str = "attention weight",
    ax: Axes | None = None,
) -> Figure:
    """One attention map with reference alignment cells outlined and each row's maximum
    marked (chapter 11).

    Rows are queries (target positions), columns keys (source tokens), as in
    :func:`plot_attention`. A head that aligns words puts each row's dot inside an
    outlined cell.

    Args:
        weights: ``(Tq, Tk)`` attention weights.
        alignment: ``(query index, key index)`` cells of the reference alignment.
    """
    func = "plot_attention_alignment"
    data = _squeeze_to(weights, 2, "weights", func, "(Tq, Tk)").astype(float)
    tq, tk = data.shape
    bad = [(i, j) for i, j in alignment if not (0 <= i < tq and 0 <= j < tk)]
    if bad:
        raise ValueError(f"{func}: alignment cells {bad[:4]} lie outside the {tq} x {tk} map.")
    own_figure = ax is None
    fig = plot_attention(data, query_tokens, key_tokens, ax=ax, title=title, cbar_label=cbar_label)
    ax = fig.axes[0] if own_figure else ax
    for i, j in alignment:
        ax.add_patch(
            Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, edgecolor=OKABE_ITO[1], linewidth=2.2)
        )
    best = np.nanargmax(np.nan_to_num(data, nan=-1.0), axis=1)
    ax.scatter(best, np.arange(tq), s=28, marker="o", color="white", edgecolors="black", zorder=3)
    handles = [
        Patch(facecolor="none", edgecolor=OKABE_ITO[1], linewidth=2, label="reference alignment"),
        Line2D(
            [],
            [],
            marker="o",
            linestyle="",
            markerfacecolor="white",
            markeredgecolor="black",
            label="largest weight in the row",
        ),
    ]
    if own_figure:  # below the axes and their labels, whatever the tick labels' length
        fig.legend(handles=handles, loc="outside lower center", ncols=2, frameon=False)
    else:
        ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.3, 1.0), frameon=False)
    return fig
