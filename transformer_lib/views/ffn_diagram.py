"""The position-wise feed-forward block as a diagram (chapter 7).

:func:`plot_ffn_block` draws a few positions side by side, input at the bottom: each
position's vector of ``d_model`` entries goes through ``W1`` to ``d_ff`` hidden units, the
ReLU zeroes the negative ones, and ``W2`` maps them back to ``d_model``. ``W1``, the ReLU
and ``W2`` are bands drawn across every position: one set of weights serves them all, and
no arrow runs from one position to another.
"""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from .architecture import _ARCH_STYLE, _LINE, _path, _rounded_box
from .style import _new_figure, _styled

__all__ = ["plot_ffn_block"]

_CELL_DIMS = 16  # entries of a vector one drawn cell stands for


@_styled
def plot_ffn_block(
    d_model: int = 128,
    d_ff: int = 512,
    n_positions: int = 3,
    title: str = "The FFN, one position at a time",
) -> Figure:
    """The FFN of §3.3 applied to ``n_positions`` positions with the same weights.

    Each position (a column) shows its input vector, its ``d_ff`` hidden units after the
    ReLU (white cells: units set to 0) and its output vector, drawn to scale: one cell
    stands for 16 entries. The bands ``W1``, ReLU and ``W2`` span all the columns.

    Args:
        d_model: width of the input and output vectors.
        d_ff: number of hidden units.
        n_positions: how many positions to draw (2 to 4).
        title: the figure's title.

    Returns:
        The figure. The vectors are patches with ``gid`` ``"position <t> <what>"``,
        ``<what>`` one of ``input``, ``hidden`` and ``output``, one patch per cell; the bands
        have ``gid`` ``"W1"``, ``"ReLU"`` and ``"W2"``.

    Example:
        >>> plot_ffn_block(d_model=128, d_ff=512)
    """
    if not 2 <= n_positions <= 4:
        raise ValueError(f"plot_ffn_block: n_positions must be 2 to 4, got {n_positions}.")
    if d_ff < d_model or d_model < _CELL_DIMS:
        raise ValueError(
            f"plot_ffn_block: expects d_ff >= d_model >= {_CELL_DIMS}, got d_model = "
            f"{d_model}, d_ff = {d_ff}."
        )
    width, height = 5.3, 3.9  # inches: narrow enough to stay readable on a phone
    fig, ax = _new_figure((width, height))
    ax.set_axis_off()
    ax.set_xlim(0, 10)
    ax.set_ylim(-0.05, 6.1)
    left, right = 2.45, 9.95  # the columns' room; the row labels sit left of it
    pitch = (right - left) / n_positions
    centres = [left + pitch * (t + 0.5) for t in range(n_positions)]
    hidden_w = 0.88 * pitch
    n_in = max(1, round(d_model / _CELL_DIMS))
    n_hidden = max(1, round(d_ff / _CELL_DIMS))
    cell_w = hidden_w / n_hidden
    strip_h = 0.32
    y_in, y_w1, y_relu, y_hidden, y_w2, y_out = 0.75, 1.65, 2.5, 3.35, 4.25, 5.15
    band_h = 0.52
    rng = np.random.default_rng(0)
    colour = _ARCH_STYLE["ffn"][1]

    def strip(xc: float, y: float, n: int, gid: str, zero: np.ndarray | None = None) -> None:
        x0 = xc - n * cell_w / 2
        shade = rng.uniform(0.3, 1.0, size=n)
        for i in range(n):
            off = zero is not None and zero[i]
            ax.add_patch(
                Rectangle(
                    (x0 + i * cell_w, y - strip_h / 2),
                    cell_w,
                    strip_h,
                    facecolor="white" if off else colour,
                    alpha=1.0 if off else float(shade[i]),
                    edgecolor="#888888" if off else "none",
                    linewidth=0.4,
                    zorder=3,
                    gid=gid,
                )
            )
        ax.add_patch(
            Rectangle(
                (x0, y - strip_h / 2),
                n * cell_w,
                strip_h,
                facecolor="none",
                edgecolor=_LINE,
                linewidth=0.9,
                zorder=4,
            )
        )

    for t, xc in enumerate(centres):
        ax.text(xc, 0.2, f"position {t}", ha="center", va="center", fontsize=10)
        strip(xc, y_in, n_in, f"position {t} input")
        strip(xc, y_hidden, n_hidden, f"position {t} hidden", zero=rng.random(n_hidden) < 0.5)
        strip(xc, y_out, n_in, f"position {t} output")
        # one path per position, bottom to top: nothing passes between the columns
        for low, high in (
            (y_in + strip_h / 2, y_w1 - band_h / 2),
            (y_w1 + band_h / 2, y_relu - band_h / 2),
            (y_relu + band_h / 2, y_hidden - strip_h / 2),
            (y_hidden + strip_h / 2, y_w2 - band_h / 2),
            (y_w2 + band_h / 2, y_out - strip_h / 2),
        ):
            _path(ax, [(xc, low), (xc, high)])
    band_x = (left + right) / 2
    band_w = right - left - 0.1
    bands = (
        ("W1", y_w1, f"$W_1$ ({d_model} × {d_ff}), $b_1$: the same at every position", "ffn"),
        ("ReLU", y_relu, "ReLU: max(0, ·), unit by unit", "softmax"),
        ("W2", y_w2, f"$W_2$ ({d_ff} × {d_model}), $b_2$: the same at every position", "ffn"),
    )
    for gid, y, text, kind in bands:
        _rounded_box(ax, band_x, y, band_w, band_h, _ARCH_STYLE[kind], rounding=0.12, gid=gid)
        ax.text(band_x, y, text, ha="center", va="center", fontsize=10, zorder=5)
    rows = (
        (y_in, f"input $x$\n$d_{{model}}$ = {d_model}"),
        (y_hidden, f"hidden units\n$d_{{ff}}$ = {d_ff}\n(white: 0)"),
        (y_out, f"FFN($x$)\n$d_{{model}}$ = {d_model}"),
    )
    for y, text in rows:
        ax.text(0.05, y, text, ha="left", va="center", fontsize=10, linespacing=1.15)
    ax.text(
        5.0,
        6.05,
        title,
        ha="center",
        va="top",
        fontsize=11,
        fontweight="bold",
    )
    ax.text(
        band_x,
        y_out + 0.42,
        f"one cell = {_CELL_DIMS} entries",
        ha="center",
        va="center",
        fontsize=10,
        color="#555555",
    )
    return fig
