"""A boolean attention mask drawn cell by cell: True = may attend (chapter 6)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from matplotlib.axes import Axes
from matplotlib.colors import ListedColormap
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from .style import (
    _KEY_LABEL,
    _QUERY_LABEL,
    _figure_and_axes,
    _integer_ticks,
    _set_token_ticks,
    _squeeze_to,
    _styled,
    _swap_hint,
    _tick_fontsize,
    _to_numpy,
    _token_labels,
)

__all__ = ["plot_mask"]


_ATTEND_COLOUR = "#0072B2"  # dark blue: may attend
_BLOCKED_COLOUR = "#E8E8E8"  # light grey: blocked (also distinct in greyscale)


@_styled
def plot_mask(
    mask: Any,
    query_tokens: Sequence[Any] | None = None,
    key_tokens: Sequence[Any] | None = None,
    title: str = "Attention mask",
    *,
    ax: Axes | None = None,
    legend: tuple[str, str] = ("True: may attend", "False: blocked"),
    xlabel: str | None = None,
    ylabel: str | None = None,
    key_labels: str = "auto",
) -> Figure:
    """Draw a boolean attention mask: True = may attend (blue), False = blocked (grey) (ch. 6).

    Rows are queries, columns are keys, as in :func:`plot_attention`.

    Args:
        mask: ``(Tq, Tk)`` booleans (or 0/1). Leading size-1 axes are dropped, so
            ``causal_mask(T)`` of shape ``(1, 1, T, T)`` works directly. A padding
            mask with one row, ``(1, Tk)`` or ``(Tk,)``, is broadcast over the
            queries when ``query_tokens`` is given, as attention broadcasts it.
        query_tokens, key_tokens: labels for rows and columns.
        legend: the legend's labels for True (blue) and False (grey) cells; a grid of
            booleans that is not a mask (say, "changed" / "unchanged") gets its own.
        xlabel, ylabel: axis labels for such a grid; default the mask's "key (attends
            to)" and "query (attends from)".
        key_labels: how the key (column) labels are set: ``"upright"``, ``"staggered"``
            (upright, every other one a line lower, for narrow columns), ``"slanted"``
            (45 degrees) or ``"auto"``: upright if the widest label fits its column,
            staggered if it fits two, else slanted, measured on the axes as they are when
            called (give ``"staggered"`` for a panel that a layout engine widens later).
            Upright or slanted, the SentencePiece marker of "▁Danke" stays under the
            word; turned by 90 degrees it would look like a stray vertical bar.

    The legend is the figure's, under the mask, when ``plot_mask`` makes the figure
    (``fig.legends[0]``), and the axes' own, beside it, when ``ax`` is given (callers
    that draw several masks remove it and put one legend under the panels).

    Returns:
        The figure (the one of ``ax`` when given).

    Example:
        >>> from transformer_lib import causal_mask
        >>> fig = plot_mask(causal_mask(3), ["<bos>", "▁Tom", "."], ["<bos>", "▁Tom", "."])
    """
    func = "plot_mask"
    arr = _to_numpy(mask)
    while arr.ndim > 2 and arr.shape[0] == 1:
        arr = arr[0]
    if arr.ndim == 1:
        arr = arr[None, :]
    arr = _squeeze_to(arr, 2, "mask", func, "(Tq, Tk)") if arr.ndim != 2 else arr
    if arr.dtype != bool:
        values = np.unique(arr)
        if not np.isin(values, [0, 1]).all():
            raise ValueError(
                f"{func}: expected a boolean mask (True = may attend), got values "
                f"{values[:6].tolist()}. For an additive mask of 0 / -inf pass (mask == 0)."
            )
        arr = arr.astype(bool)
    if arr.shape[0] == 1 and query_tokens is not None and len(query_tokens) > 1:
        arr = np.broadcast_to(arr, (len(query_tokens), arr.shape[1]))
    tq, tk = arr.shape
    hint = _swap_hint(query_tokens, key_tokens, tq, tk)
    y_labels = _token_labels(query_tokens, tq, "query_tokens", func, hint)
    x_labels = _token_labels(key_tokens, tk, "key_tokens", func, hint)

    own_figure = ax is None
    # Its own figure has the legend under the mask (room for two lines of it), so that
    # a mask of a few tokens is narrow enough for a phone's column; in a figure of
    # several panels the legend stays beside the mask's axes, as callers expect.
    width = float(np.clip(0.55 * tk + 2.2, 4.2, 13.0))
    height = float(np.clip(0.42 * tq + 2.3, 3.1, 10.5))
    fig, ax = _figure_and_axes(ax, (width, height))
    cm = ListedColormap([_BLOCKED_COLOUR, _ATTEND_COLOUR])
    ax.imshow(arr.astype(int), cmap=cm, vmin=0, vmax=1, interpolation="nearest")
    # White grid lines between cells make single cells countable.
    ax.set_xticks(np.arange(-0.5, tk, 1), minor=True)
    ax.set_yticks(np.arange(-0.5, tq, 1), minor=True)
    ax.grid(which="minor", color="white", linewidth=1.5)
    ax.tick_params(which="minor", length=0)
    fontsize = _tick_fontsize(max(tq, tk), 0.42 * max(tq, tk))
    _set_token_ticks(ax, x_labels, y_labels, fontsize)
    if x_labels is not None:
        _set_key_labels(fig, ax, tk, key_labels)
    if x_labels is None or y_labels is None:
        _integer_ticks(ax)
    if xlabel is None:
        xlabel = _KEY_LABEL if x_labels is not None else f"{_KEY_LABEL}, position"
    if ylabel is None:
        ylabel = _QUERY_LABEL if y_labels is not None else f"{_QUERY_LABEL}, position"
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    handles = [
        Patch(facecolor=_ATTEND_COLOUR, edgecolor="#555555", label=legend[0]),
        Patch(facecolor=_BLOCKED_COLOUR, edgecolor="#555555", label=legend[1]),
    ]
    if own_figure:
        fig.legend(handles=handles, loc="outside lower center", ncols=2)
    else:
        ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.03, 1.0), borderaxespad=0.0)
    return fig


_KEY_LABEL_STYLES = ("auto", "upright", "staggered", "slanted")


def _set_key_labels(fig: Figure, ax: Axes, n_keys: int, style: str) -> None:
    """Set the key labels upright, staggered or slanted (``plot_mask``'s ``key_labels``);
    ``"auto"`` keeps a 20 % margin for a layout engine that narrows the axes later."""
    if style not in _KEY_LABEL_STYLES:
        raise ValueError(
            f"plot_mask: key_labels must be one of {', '.join(map(repr, _KEY_LABEL_STYLES))}, "
            f"got {style!r}."
        )
    labels = ax.get_xticklabels()
    if style == "auto":
        renderer = fig.canvas.get_renderer()
        for label in labels:
            label.set(rotation=0)
        widest = max(label.get_window_extent(renderer).width for label in labels)
        column = 0.8 * ax.get_window_extent(renderer).width / max(n_keys, 1)
        style = (
            "upright" if widest <= column else "staggered" if widest <= 2 * column else "slanted"
        )
    texts = [label.get_text() for label in labels]
    if style == "slanted":
        ax.set_xticks(ax.get_xticks(), texts, rotation=45, ha="right", rotation_mode="anchor")
        return
    if style == "staggered":  # every other label one line lower
        texts = [("\n" + t) if j % 2 else t for j, t in enumerate(texts)]
    ax.set_xticks(ax.get_xticks(), texts, rotation=0, ha="center", rotation_mode="default")
