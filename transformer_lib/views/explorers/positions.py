"""The sinusoidal positional-encoding table and one sin/cos pair of its columns (ch. 5)."""

from __future__ import annotations

import math

from .frames import (
    _figure,
    _LayoutMemo,
    _live_explorer,
    _static_explorer,
    _style,
    _want_static,
    _widgets,
    figure_to_png,
)

__all__ = ["positional_encoding_explorer"]


_PE_SIZES = (32, 128, 512)
_PE_FRACTIONS = (
    ("0", 0.0),
    ("1/16", 1 / 16),
    ("1/8", 1 / 8),
    ("1/4", 1 / 4),
    ("3/8", 3 / 8),
    ("1/2", 1 / 2),
    ("3/4", 3 / 4),
    ("last", 1.0),  # the last pair, i = d_model/2 - 1: 2i/d_model = (d_model - 2)/d_model
)


def _pe_figure(d_model: int, length: int, pair: int):
    from matplotlib.patheffects import Normal, Stroke

    from ...components.positional import sinusoidal_positional_encoding
    from ..positions import plot_positional_encoding, plot_sinusoids

    pe = sinusoidal_positional_encoding(length, d_model).numpy()
    dims = [d for d in (2 * pair, 2 * pair + 1) if d < d_model]
    wavelength = 2 * math.pi * 10000 ** (2 * pair / d_model)
    with _style():
        # 9.2 inches: every label stays >= 9 CSS pixels at the book's page width.
        fig = _figure((9.2, 4.9), layout="constrained")
        fig.get_layout_engine().set(wspace=0.06)
        ax0, ax1 = fig.subplots(1, 2, width_ratios=[1, 1])
        plot_positional_encoding(pe, ax=ax0, title=f"The table; arrows: pair i = {pair}")
        # The pair's columns may be one pixel wide: mark them with a dashed line and arrows.
        x = dims[0] + (len(dims) - 1) / 2
        line = ax0.axvline(x, color="black", linewidth=1.2, linestyle=(0, (4, 2)))
        line.set_path_effects([Stroke(linewidth=3, foreground="white"), Normal()])
        for y, marker in ((length * 0.03, "v"), (length * 0.97 - 1, "^")):
            ax0.plot(
                [x],
                [y],
                marker=marker,
                markersize=11,
                color="black",
                markeredgecolor="white",
                markeredgewidth=1.5,
            )
        plot_sinusoids(pe, dims=dims, ax=ax1, stacked=False, title=f"Columns {dims}")
        ax1.get_legend().remove()  # below the panel instead of beside it: more room
        ax1.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), frameon=False)
        shown = f"{wavelength:,.0f}" if wavelength >= 100 else f"{wavelength:.1f}"
        last = " (the last pair)" if pair == d_model // 2 - 1 else ""
        fig.suptitle(
            f"d_model = {d_model}, pair i = {pair}{last}, 2i/d_model = {2 * pair / d_model:.3g}\n"
            f"wavelength 2π·10000^(2i/d_model) = {shown} positions"
        )
    return fig


def positional_encoding_explorer(
    d_model: int = 128, max_position: int = 100, *, static: bool | None = None
):
    """The sinusoidal positional encoding table and one sin/cos pair of its columns.

    Chapter 5 (§3.5). Left: the ``(positions, d_model)`` table with the chosen pair of
    columns outlined; right: those two columns against position. The wavelength depends
    only on the ratio ``2i / d_model``.

    Args:
        d_model: initial width of the table (live version).
        max_position: initial number of positions.
        static: force the precomputed (True) or the live (False) version.

    Returns:
        The explorer. Live: ``d_model``, number of positions and pair ``i``. Static:
        ``d_model`` ∈ {32, 128, 512} × eight values of ``2i / d_model`` (24 frames), from
        the first pair to the last one, ``i = d_model/2 - 1``, whose wavelength
        ``2π·10000^((d_model - 2)/d_model)`` is the longest of the table.
    """
    widgets = _widgets()
    title = "Positional encoding"
    if _want_static(static):
        sizes = _PE_SIZES
        dm = widgets.ToggleButtons(
            options=[str(s) for s in sizes],
            index=sizes.index(d_model) if d_model in sizes else 0,
            description="d_model",
            style={"button_width": "60px"},
        )
        frac = widgets.SelectionSlider(
            options=[label for label, _ in _PE_FRACTIONS],
            index=min(2, len(_PE_FRACTIONS) - 1),
            description="2i / d_model",
            style={"description_width": "initial"},
            layout=widgets.Layout(width="420px"),
        )
        frames = [
            [
                figure_to_png(_pe_figure(s, max_position, min(round(f * s / 2), s // 2 - 1)))
                for _, f in _PE_FRACTIONS
            ]
            for s in sizes
        ]
        return _static_explorer(
            widgets,
            title,
            "Choose d_model and slide through the column pairs, from fast (left of the table) "
            "to slow (right).",
            [dm, frac],
            {"d_model": dm, "fraction": frac},
            [dm, frac],
            frames,
            alt="The sinusoidal positional encoding for the chosen d_model as a heatmap, "
            "positions down and dimensions across, with the chosen sine/cosine column "
            "pair plotted against the position beside it and its wavelength.",
        )
    dm = widgets.Dropdown(
        options=[16, 32, 64, 128, 256, 512],
        value=d_model if d_model in (16, 32, 64, 128, 256, 512) else 128,
        description="d_model",
        layout=widgets.Layout(width="180px"),
    )
    length = widgets.IntSlider(
        value=max_position,
        min=10,
        max=500,
        step=10,
        description="positions",
        continuous_update=False,
    )
    pair = widgets.IntSlider(
        value=min(4, dm.value // 2 - 1),
        min=0,
        max=dm.value // 2 - 1,
        description="pair i",
        continuous_update=False,
    )

    memo = _LayoutMemo()

    def draw() -> tuple[bytes, str]:
        pair.max = dm.value // 2 - 1  # also clamps pair.value; the busy flag skips that redraw
        fig = _pe_figure(dm.value, length.value, pair.value)
        return memo.png(fig, key=(dm.value, length.value)), ""

    return _live_explorer(
        widgets,
        title,
        "Pair i holds columns 2i (sine) and 2i + 1 (cosine); their wavelength grows with i.",
        [widgets.HBox([dm, length, pair])],
        {"d_model": dm, "positions": length, "pair": pair},
        draw,
        [dm, length, pair],
    )
