"""The sinusoidal positional encoding of §3.5, drawn four ways (chapter 5).

The table itself (:func:`plot_positional_encoding`), a few of its columns as waves
(:func:`plot_sinusoids`), the dot products between positions
(:func:`plot_position_similarity`) and each sin/cos pair as a point turning around a circle
(:func:`plot_position_rotation`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from .phone_layout import set_phone_narrow
from .style import (
    DIVERGING_CMAP,
    OKABE_ITO,
    SEQUENTIAL_CMAP,
    _figure_and_axes,
    _integer_ticks,
    _new_figure,
    _squeeze_to,
    _styled,
    _symmetric_limit,
)

# One colour per sin/cos pair in plot_sinusoids: Okabe-Ito without orange next to
# vermillion (the two read alike side by side, and alike under red-green colour
# blindness); black takes its place, orange and yellow come last.
_PAIR_COLOURS = tuple(OKABE_ITO[i] for i in (0, 1, 2, 6, 4, 5, 3, 7))

__all__ = [
    "plot_positional_encoding",
    "plot_sinusoids",
    "plot_position_similarity",
    "plot_position_rotation",
]


@_styled
def plot_positional_encoding(
    pe: Any,
    title: str = "Sinusoidal positional encoding",
    *,
    ax: Axes | None = None,
    cmap: str = DIVERGING_CMAP,
    interpolation: str = "nearest",
) -> Figure:
    """Heatmap of a positional-encoding table: x = embedding dimension, y = position (ch. 5).

    The columns are labelled ``dim`` (0 to ``D - 1``), not ``i``: in the paper's formula
    ``i`` counts sin/cos *pairs*, and pair ``i`` holds dimensions ``2i`` and ``2i + 1``.

    Sinusoidal values lie in ``[-1, 1]`` and the diverging colour map is fixed to
    that range (centred at 0); learned encodings with larger values get a
    symmetric range around 0 instead.

    Args:
        pe: ``(L, D)`` table (``(1, L, D)`` works too).
        interpolation: passed to ``imshow``. ``"nearest"`` shows every cell as it is
            while each column gets a few pixels; when the table has more columns than
            the panel has pixels, a smoothing filter (``"gaussian"``) blends neighbouring
            columns instead of picking some and skipping others, which would draw
            stripes (moiré) that are not in the data.
    """
    data = _squeeze_to(pe, 2, "pe", "plot_positional_encoding", "(L, D)").astype(float)
    lim = max(1.0, _symmetric_limit(data))
    made = ax is None
    fig, ax = _figure_and_axes(ax, (8.0, 4.6))
    im = ax.imshow(
        data,
        cmap=cmap,
        vmin=-lim,
        vmax=lim,
        aspect="auto",
        interpolation=interpolation,
        interpolation_stage="data",  # average the values, then colour them
    )
    ax.set_xlabel("embedding dimension dim (pair i = dims 2i, 2i+1)")
    ax.set_ylabel("position in the sequence (pos)")
    ax.set_title(title)
    _integer_ticks(ax)
    fig.colorbar(im, ax=ax, label="encoding value PE(pos, dim)")
    if made:  # a phone shows the table narrower (its cells read at any width)
        set_phone_narrow(fig, 1.0)
    return fig


def _wavelength(dim: int, d_model: int, base: float) -> float:
    return 2 * math.pi * base ** (2 * (dim // 2) / d_model)


def _format_wavelength(wavelength: float) -> str:
    """``6.28``, ``62.8``, ``628``, ``54,410``: never ``5.44e+04``, as the chapter writes it."""
    return f"{wavelength:,.0f}" if wavelength >= 1000 else f"{wavelength:.3g}"


@_styled
def plot_sinusoids(
    pe: Any,
    dims: Sequence[int] | None = None,
    title: str = "Positional encoding: one sinusoid per dimension",
    *,
    ax: Axes | None = None,
    stacked: bool = True,
    base: float = 10000.0,
) -> Figure:
    """Value of ``pe[:, dim]`` against position for a few dimensions (chapter 5).

    Dimensions ``2i`` (sine, solid) and ``2i + 1`` (cosine, dashed) share a
    frequency and a colour; each is labelled with its wavelength
    ``2π · base^(2i/D)`` in positions (§3.5).

    Args:
        pe: ``(L, D)`` table.
        dims: dimensions to draw; default ``(0, 1, D/16, D/8, D/4)`` (rounded to even),
            whose wavelengths are about 6, 11, 20 and 63 positions.
        stacked: one row per dimension (each spanning -1 to 1), labelled on the y
            axis; ``False`` overlays the curves on one axis with a legend.
        base: the 10000 in the paper's formula, used only for the wavelength labels.
    """
    data = _squeeze_to(pe, 2, "pe", "plot_sinusoids", "(L, D)").astype(float)
    length, d_model = data.shape
    if dims is None:  # wavelengths 2π, ~11, ~20 and ~63 positions whatever D is
        fractions = [2 * (d_model // k) for k in (32, 16, 8)]
        dims = [d for d in (0, 1, *fractions) if d < d_model]
    dims = list(dict.fromkeys(int(d) for d in dims))
    bad = [d for d in dims if not 0 <= d < d_model]
    if bad:
        raise ValueError(f"plot_sinusoids: dims {bad} outside 0..{d_model - 1} (pe is (L, D)).")
    height = 1.1 + 0.75 * len(dims) if stacked else 4.2
    made = ax is None
    fig, ax = _figure_and_axes(ax, (9.0, max(3.2, height)))
    freq_ids = list(dict.fromkeys(d // 2 for d in dims))
    positions = np.arange(length)
    gap = 2.6  # vertical distance between stacked rows; each row spans [-1, 1]
    offsets, tick_labels = [], []
    for row, d in enumerate(dims):
        colour = _PAIR_COLOURS[freq_ids.index(d // 2) % len(_PAIR_COLOURS)]
        kind = "sin" if d % 2 == 0 else "cos"
        label = f"dim {d} ({kind}), λ = {_format_wavelength(_wavelength(d, d_model, base))}"
        offset = -row * gap if stacked else 0.0
        ax.plot(
            positions,
            data[:, d] + offset,
            color=colour,
            linestyle="-" if d % 2 == 0 else "--",
            marker="o" if length <= 60 else None,
            markersize=3,
            linewidth=1.8,
            label=label,
        )
        if stacked:
            ax.axhline(offset, color="#BBBBBB", linewidth=0.8, zorder=0)
            offsets.append(offset)
            tick_labels.append(label.replace(", ", "\n"))
    ax.set_xlabel("position in the sequence (pos)")
    ax.set_title(title)
    ax.set_xlim(0, length - 1)
    if stacked:
        ax.set_yticks(offsets)
        ax.set_yticklabels(tick_labels, fontsize=10)
        ax.set_ylim(offsets[-1] - 1.3, 1.3)
        ax.set_ylabel("PE(pos, dim); each row spans −1 to 1")
    else:
        ax.axhline(0, color="#999999", linewidth=0.8, zorder=0)
        ax.set_ylim(-1.15, 1.15)
        ax.set_ylabel("encoding value PE(pos, dim)")
        ax.legend(
            title="dimension (wavelength in positions)",
            loc="upper left",
            bbox_to_anchor=(1.02, 1.0),
            borderaxespad=0.0,
        )
    if made and stacked:  # a phone shows the rows narrower, 0.55 inches high or more
        set_phone_narrow(fig, max(0.7, 0.25 * len(dims)))
    return fig


@_styled
def plot_position_similarity(
    pe: Any,
    show_distance: bool = True,
    title: str = "Similarity between positional encodings",
    *,
    ax: Axes | None = None,
    reference: int | None = None,
    cmap: str | None = None,
) -> Figure:
    """Dot products ``PE(p) · PE(q)`` between all positions, and against distance (ch. 5).

    Left: the ``(L, L)`` similarity matrix; rows and columns are positions.
    Non-negative similarities (as for sinusoids) use the sequential colour map,
    signed ones a diverging map centred at 0 (blue below 0, red above, readable with
    red-green colour blindness); the colour bar's ticks give the values and their sign.
    Right (``show_distance=True``): the row of a reference position ``p`` against the
    offset ``k = q - p``. For sinusoids it depends only on ``k``, is symmetric, and
    shrinks as ``|k|`` grows.

    Args:
        pe: ``(L, D)`` table.
        show_distance: add the similarity-against-offset panel.
        ax: draw only the matrix into this axes (``show_distance`` is ignored).
        reference: reference position ``p`` for the right panel (default ``L // 2``).
        cmap: colour map for the matrix (default: chosen as above).
    """
    func = "plot_position_similarity"
    data = _squeeze_to(pe, 2, "pe", func, "(L, D)").astype(float)
    length = data.shape[0]
    p = length // 2 if reference is None else int(reference)
    if not 0 <= p < length:
        raise ValueError(f"{func}: reference {p} outside 0..{length - 1}.")
    sim = data @ data.T  # (L, L)
    show_distance = show_distance and ax is None
    if show_distance:
        # 9 inches wide: at the book's page width every label stays >= 9 CSS pixels.
        fig, (ax, ax_line) = _new_figure((9.0, 4.2), 1, 2, width_ratios=[1, 1.1])
        fig.get_layout_engine().set(wspace=0.06)  # the colour bar's label apart from the panel
    else:
        fig, ax = _figure_and_axes(ax, (6.0, 5.0))
    sequential = cmap is None and np.nanmin(sim) >= 0
    if sequential:
        im = ax.imshow(sim, cmap=SEQUENTIAL_CMAP, interpolation="nearest")
    else:
        lim = _symmetric_limit(sim)
        im = ax.imshow(
            sim, cmap=cmap or DIVERGING_CMAP, vmin=-lim, vmax=lim, interpolation="nearest"
        )
    ax.set_xlabel("position q")
    ax.set_ylabel("position p")
    _integer_ticks(ax)
    # "colour": apart from the right panel's y label, which names the same quantity
    fig.colorbar(im, ax=ax, label="colour: dot product PE(p) · PE(q)", shrink=0.9)
    if show_distance:
        ax.set_title("PE(p) · PE(q) for all pairs")
        offsets = np.arange(length) - p
        ax_line.plot(offsets, sim[p], color=OKABE_ITO[0], linewidth=1.8)
        ax_line.axhline(0, color="#999999", linewidth=0.8, zorder=0)
        ax_line.axvline(0, color="#999999", linewidth=0.8, linestyle=":", zorder=0)
        ax_line.set_xlabel(f"offset k = q − p, for p = {p}")
        ax_line.set_ylabel("dot product PE(p) · PE(p + k)")
        ax_line.set_title(f"Along row p = {p} (dashed line)")
        ax.axhline(p, color="white" if sequential else "black", linewidth=1.0, linestyle="--")
        fig.suptitle(title)
    else:
        ax.set_title(title)
    return fig


@_styled
def plot_position_rotation(
    pe: Any,
    pairs: Sequence[int] | None = None,
    offset: int = 3,
    starts: Sequence[int] = (2, 9),
    title: str = "Each sin/cos pair turns around a circle as the position grows",
    *,
    base: float = 10000.0,
) -> Figure:
    """Each pair ``(PE(pos, 2i), PE(pos, 2i+1))`` drawn as a point on the unit circle (ch. 5).

    One panel per pair ``i``; points are coloured by position. Arrows from the origin
    to positions ``p`` and ``p + offset`` for each ``p`` in ``starts`` show that moving
    ``offset`` positions turns the point by the same angle ``ω_i · offset`` wherever
    it starts: ``PE(pos + k)`` is a rotation, a linear function, of ``PE(pos)`` (§3.5).

    Args:
        pe: ``(L, D)`` sinusoidal table (sine in even, cosine in odd dimensions).
        pairs: pair indices ``i`` (dimensions ``2i`` and ``2i + 1``); default three
            pairs with wavelengths of about 6, 20 and 63 positions.
        offset: the shift ``k`` drawn by the arrows.
        starts: the start positions ``p`` of the arrows.
        base: the 10000 of the formula, for the angle in the panel titles.
    """
    func = "plot_position_rotation"
    data = _squeeze_to(pe, 2, "pe", func, "(L, D)").astype(float)
    length, d_model = data.shape
    if pairs is None:
        pairs = [i for i in (0, d_model // 16, d_model // 8) if 2 * i + 1 < d_model]
    pairs = list(dict.fromkeys(int(i) for i in pairs))
    bad = [i for i in pairs if not 0 <= 2 * i + 1 < d_model]
    if bad:
        raise ValueError(f"{func}: pairs {bad} need dimensions beyond d_model={d_model}.")
    starts = [int(p) for p in starts]
    if any(not 0 <= p or p + offset >= length for p in starts):
        raise ValueError(f"{func}: every start p needs p + offset < L = {length}.")
    # At most 9 inches wide, so that the labels stay readable at the book's page width.
    width = min(9.0, 2.7 * len(pairs) + 1.2)
    fig, axes = _new_figure((width, 4.6), 1, len(pairs), squeeze=False)
    fig.set_layout_engine("compressed")  # square panels without gaps
    axes = axes[0]
    positions = np.arange(length)
    theta = np.linspace(0, 2 * np.pi, 200)
    arrow_colours = (OKABE_ITO[1], OKABE_ITO[6], OKABE_ITO[4], OKABE_ITO[0])
    for ax, i in zip(axes, pairs):
        x, y = data[:, 2 * i], data[:, 2 * i + 1]
        ax.plot(np.sin(theta), np.cos(theta), color="#BBBBBB", linewidth=0.8, zorder=0)
        sc = ax.scatter(
            x, y, c=positions, cmap=SEQUENTIAL_CMAP, s=22, zorder=2, vmin=0, vmax=length - 1
        )
        omega = base ** (-2 * i / d_model)
        for n, p in enumerate(starts):
            colour = arrow_colours[n % len(arrow_colours)]
            for q, style in ((p, "-"), (p + offset, "--")):
                ax.annotate(
                    "",
                    xy=(x[q], y[q]),
                    xytext=(0, 0),
                    arrowprops=dict(
                        arrowstyle="-|>",
                        color=colour,
                        lw=1.6,
                        linestyle=style,
                        shrinkA=0,
                        shrinkB=3,
                    ),
                    zorder=3,
                )
        ax.set_aspect("equal")
        ax.set_xlim(-1.25, 1.25)
        ax.set_ylim(-1.25, 1.25)
        ax.set_xlabel(f"PE(pos, {2 * i}) = sin")
        ax.set_ylabel(f"PE(pos, {2 * i + 1}) = cos")
        turn = math.degrees(omega * offset) % 360
        ax.set_title(
            f"pair i = {i}, ω = {omega:.3g}\n{offset} steps: turn {turn:.1f}°", fontsize=10.5
        )
    handles = []
    for n, p in enumerate(starts):
        colour = arrow_colours[n % len(arrow_colours)]
        handles.append(Line2D([], [], color=colour, lw=1.6, label=f"pos {p}"))
        handles.append(
            Line2D([], [], color=colour, lw=1.6, linestyle="--", label=f"pos {p + offset}")
        )
    fig.legend(
        handles=handles,
        loc="outside lower center",
        ncols=len(handles),
        frameon=False,
        title=f"arrows: a position and the one {offset} steps later",
        columnspacing=1.2,
    )
    fig.colorbar(sc, ax=list(axes), label="position pos", shrink=0.8)
    fig.suptitle(title)
    return fig
