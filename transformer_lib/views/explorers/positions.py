"""The sinusoidal positional-encoding table and one sin/cos pair of its columns (ch. 5)."""

from __future__ import annotations

import math

from .frames import (
    LayoutMemo,
    book_style,
    figure_to_png,
    live_explorer,
    load_ipywidgets,
    new_figure,
    static_explorer,
    use_static,
)

__all__ = ["positional_encoding_explorer", "slider_pairs"]


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


def slider_pairs(d_model: int) -> list[tuple[str, int]]:
    """The precomputed explorer's settings of ``2i / d_model`` and the pair ``i`` each shows.

    >>> slider_pairs(128)[-2:]
    [('3/4', 48), ('last', 63)]
    """
    return [(label, min(round(f * d_model / 2), d_model // 2 - 1)) for label, f in _PE_FRACTIONS]


def _pe_figure(d_model: int, length: int, pair: int):
    from matplotlib.patheffects import Normal, Stroke

    from ...components.positional import sinusoidal_positional_encoding
    from ..positions import _format_wavelength, plot_positional_encoding, plot_sinusoids

    pe = sinusoidal_positional_encoding(length, d_model).numpy()
    dims = [d for d in (2 * pair, 2 * pair + 1) if d < d_model]
    wavelength = 2 * math.pi * 10000 ** (2 * pair / d_model)
    with book_style():
        # 8.6 inches = 688 px at FRAME_DPI: shown at full size, every text at 11 pt or more
        # (12.2 CSS px).
        fig = new_figure((8.6, 5.2), layout="constrained")
        fig.get_layout_engine().set(wspace=0.06)
        ax0, ax1 = fig.subplots(1, 2, width_ratios=[1.1, 1])
        fig.delaxes(ax1)  # put back after the table's colour bar: fig.axes ends with it
        # 256 or 512 columns in a panel about 290 px wide: "nearest" would show some
        # columns and skip others, drawing stripes (moiré) that are not in the data; a
        # Gaussian filter blends neighbouring columns instead.
        interpolation = "gaussian" if d_model > 128 else "nearest"
        plot_positional_encoding(
            pe,
            ax=ax0,
            title=f"The table; arrows: pair i = {pair}",
            interpolation=interpolation,
        )
        ax0.set_xlabel("dimension dim (pair i: 2i, 2i+1)")
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
        # The colour bar goes under the table, so that its label is not next to the right
        # panel's y label; it belongs to the table's panel (not inset axes), so that the
        # layout makes room for it and the phone version can stack it with its panel.
        ax0.images[0].colorbar.remove()
        colorbar = fig.colorbar(
            ax0.images[0], ax=ax0, location="bottom", fraction=0.045, pad=0.05, aspect=40
        )
        colorbar.set_ticks([-1, -0.5, 0, 0.5, 1])
        colorbar.set_label("colour: PE(pos, dim)")
        fig.add_axes(ax1)
        plot_sinusoids(pe, dims=dims, ax=ax1, stacked=False, title=f"Columns {dims}")
        ax1.set_ylabel("PE(pos, dim)")
        ax1.get_legend().remove()  # below the panel instead of beside it: more room
        legend = ax1.legend(
            loc="upper center", bbox_to_anchor=(0.5, -0.17), frameon=False, fontsize=11
        )
        # Left out of the layout: it fits in the room the colour bar takes under the table
        # (counted, the colour bar would go under the legend's foot).
        legend.set_in_layout(False)
        for ax in (ax0, ax1, colorbar.ax):
            ax.tick_params(labelsize=11)
            ax.xaxis.label.set_fontsize(12)
            ax.yaxis.label.set_fontsize(12)
            ax.title.set_fontsize(12)
        shown = _format_wavelength(wavelength)  # as in the legend: 6.28, 628, 54,410
        last = " (the last pair)" if pair == d_model // 2 - 1 else ""
        fig.suptitle(
            f"d_model = {d_model}, pair i = {pair}{last}, 2i/d_model = {2 * pair / d_model:.3g}\n"
            f"wavelength 2π·10000^(2i/d_model) = {shown} positions",
            fontsize=13,
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
    widgets = load_ipywidgets()
    title = "Positional encoding"
    if use_static(static):
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
            tooltip="which sine/cosine pair of columns is drawn",
            style={"description_width": "initial"},
            layout=widgets.Layout(width="420px"),
        )
        laid_out: dict[int, tuple] = {}  # per d_model: its first frame's axes and title places

        def frame(size: int, pair: int) -> bytes:
            # The frames of one d_model differ only in data and numbers: its first frame's
            # constrained layout serves them all, pixel for pixel (the layout pass is a
            # third of a frame's cost; the phone versions need the time).
            fig = _pe_figure(size, max_position, pair)
            if size in laid_out:
                fig.set_layout_engine("none")
                places, title = laid_out[size]
                for ax, place in zip(fig.axes, places):
                    ax.set_position(place)
                fig._suptitle.set_position(title)
            png = figure_to_png(fig)
            places = [ax.get_position() for ax in fig.axes]
            laid_out.setdefault(size, (places, fig._suptitle.get_position()))
            return png

        frames = [[frame(s, pair) for _, pair in slider_pairs(s)] for s in sizes]
        return static_explorer(
            title,
            "Choose d_model and slide through the column pairs, from fast (left of the table) "
            "to slow (right). At d_model = 512 the table has more columns than the panel has "
            "pixels, so neighbouring columns are blended: where the sines are near 0 and the "
            "cosines near 1, their blend shows as one pale red.",
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
        tooltip="how many positions the table shows",
        continuous_update=False,
    )
    pair = widgets.IntSlider(
        value=min(4, dm.value // 2 - 1),
        min=0,
        max=dm.value // 2 - 1,
        description="pair i",
        tooltip="which sine/cosine pair of columns is drawn",
        continuous_update=False,
    )

    memo = LayoutMemo()

    def draw() -> tuple[bytes, str]:
        pair.max = dm.value // 2 - 1  # also clamps pair.value; the busy flag skips that redraw
        fig = _pe_figure(dm.value, length.value, pair.value)
        return memo.png(fig, key=(dm.value, length.value)), ""

    return live_explorer(
        title,
        "Pair i holds columns 2i (sine) and 2i + 1 (cosine); their wavelength grows with i.",
        [widgets.HBox([dm, length, pair])],
        {"d_model": dm, "positions": length, "pair": pair},
        draw,
        [dm, length, pair],
    )
