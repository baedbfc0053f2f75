"""Settings a figure gives its phone version, and the pieces of text and legend that
:mod:`~transformer_lib.views.phone_layout` moves when it re-lays a figure out for a phone.

A figure asks for its phone version here: its panels so high (:func:`set_phone_aspect`),
in columns (:func:`set_phone_columns`), one panel drawn narrower
(:func:`set_phone_narrow`), or a drawing of its own (:func:`set_phone_figure`). Each
change made for the phone is recorded in an ``undo`` (anything with ``add``), which puts
it back once the phone version is drawn.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

__all__ = ["set_phone_aspect", "set_phone_columns", "set_phone_figure", "set_phone_narrow"]


def _tick_labels(axis) -> tuple[str, ...]:
    """The axis's major tick labels, shown or hidden."""
    return tuple(axis.get_major_formatter().format_ticks(axis.get_majorticklocs()))


def _label_every_panel(panels, undo) -> None:
    """Give every panel the tick labels and axis labels its grid row (y) or column (x)
    showed only once: stacked, each panel is the first of its row and column."""
    specs = {ax: ax.get_subplotspec() for ax in panels}
    for side, axis_of, label_key, same in (
        ("y", lambda ax: ax.yaxis, "labelleft", lambda s: s.rowspan.start),
        ("x", lambda ax: ax.xaxis, "labelbottom", lambda s: s.colspan.start),
    ):
        for ax in panels:
            axis = axis_of(ax)
            if not axis.get_visible():
                continue
            shown = axis.get_tick_params().get(label_key, True)
            mine = _tick_labels(axis)
            if not any(mine):
                continue
            # A donor: a panel of the same grid row (column) with the same tick labels.
            donors = [
                other
                for other in panels
                if other is not ax
                and same(specs[other]) == same(specs[ax])
                and axis_of(other).get_visible()
                and axis_of(other).get_tick_params().get(label_key, True)
                and _tick_labels(axis_of(other)) == mine
            ]
            if not donors:
                continue
            donor = donors[0]
            if not shown:
                ax.tick_params(axis=side, **{label_key: True})

                def hide(ax=ax, side=side, key=label_key) -> None:
                    ax.tick_params(axis=side, **{key: False})

                undo.add(hide)
                _copy_tick_colours(axis, axis_of(donor), undo)
            label = axis.label
            donor_label = axis_of(donor).label
            if not label.get_text() and donor_label.get_text():
                font, colour = label.get_fontproperties(), label.get_color()
                label.set_fontproperties(donor_label.get_fontproperties())
                label.set_color(donor_label.get_color())
                label.set_text(donor_label.get_text())

                def unlabel(label=label, font=font, colour=colour) -> None:
                    label.set_text("")
                    label.set_fontproperties(font)
                    label.set_color(colour)

                undo.add(unlabel)


def _extents(boxes) -> tuple[float, float, float, float]:
    """(x0, y0, x1, y1) around the non-empty ``boxes`` (display pixels)."""
    boxes = [b for b in boxes if b is not None and b.width > 0 and b.height > 0]
    return (
        min(b.x0 for b in boxes),
        min(b.y0 for b in boxes),
        max(b.x1 for b in boxes),
        max(b.y1 for b in boxes),
    )


def _text_box(text, renderer):
    if text is None or not text.get_visible() or not text.get_text().strip():
        return None
    return text.get_window_extent(renderer)


def _copy_tick_colours(axis, donor, undo) -> None:
    """Colour ``axis``'s tick labels as ``donor``'s (a figure may colour some labels)."""
    for mine, theirs in zip(axis.get_ticklabels(), donor.get_ticklabels()):
        old, new = mine.get_color(), theirs.get_color()
        if old != new:
            mine.set_color(new)
            undo.add(lambda t=mine, c=old: t.set_color(c))


def set_phone_aspect(fig, aspect: float | None = None, *, height_in: float | None = None) -> None:
    """Stack ``fig``'s panels ``aspect`` (height / width) high, not as their desktop
    panels (clamped to 0.3-1.6): a narrow panel of three bars need not be square. Or
    ``height_in`` inches high, whatever their width: a panel of 27 rows of labelled bars
    needs room for 27 lines of text."""
    if (aspect is None) == (height_in is None):
        raise ValueError("set_phone_aspect: give aspect or height_in")
    if aspect is not None:
        fig._phone_aspect = float(aspect)
    else:
        fig._phone_height = float(height_in)


def set_phone_columns(fig, columns: int, order: str = "rows") -> None:
    """Lay ``fig``'s panels out ``columns`` to a row on a phone, not one under another.

    ``order="rows"`` fills the phone's rows in the desktop reading order; ``"columns"``
    fills its columns, so that a desktop grid of 2 rows by 5 becomes 5 rows by 2, each
    desktop row a phone column. The phone version is then up to
    :data:`PHONE_WIDTH_IN` x 1.5 inches wide (for two columns), as far as its smallest text
    stays :data:`MIN_TEXT_PX` CSS px in the phone's column. A panel whose y tick labels
    repeat those of the panel left of it on the phone shows none.
    """
    if columns < 1 or order not in ("rows", "columns"):
        raise ValueError(
            f"set_phone_columns: columns >= 1, order 'rows' or 'columns', got "
            f"{columns!r}, {order!r}"
        )
    fig._phone_columns = (int(columns), order)


def _phone_grid(fig, panels) -> tuple[int, list[tuple[int, int]]]:
    """(number of columns, (row, column) of each panel) of the phone version."""
    columns, order = getattr(fig, "_phone_columns", (1, "rows"))
    columns = max(1, min(columns, len(panels)))
    rows = math.ceil(len(panels) / columns)
    if order == "columns":
        return columns, [(i % rows, i // rows) for i in range(len(panels))]
    return columns, [(i // columns, i % columns) for i in range(len(panels))]


def _hide_repeated_y_ticks(panels, cells, undo) -> None:
    """In a phone row, drop the y tick labels of a panel that repeats its left
    neighbour's (same labels, same limits)."""
    at = {cell: ax for ax, cell in zip(panels, cells)}
    for ax, (row, col) in zip(panels, cells):
        left = at.get((row, col - 1))
        if left is None or not ax.yaxis.get_tick_params().get("labelleft", True):
            continue
        if _tick_labels(ax.yaxis) != _tick_labels(left.yaxis) or ax.get_ylim() != left.get_ylim():
            continue
        ax.tick_params(axis="y", labelleft=False)
        undo.add(lambda ax=ax: ax.tick_params(axis="y", labelleft=True))


def set_phone_figure(fig, make: Callable[[], object]) -> None:
    """Give ``fig`` a phone version drawn by ``make()``, a figure of its own (a diagram
    laid out anew for a narrow column, with shorter labels), instead of ``fig`` re-laid
    out. ``make`` runs only in the static build, when the desktop image is too wide."""
    fig._phone_figure = make


def _other_figure(make, dpi: float) -> tuple[np.ndarray, list[float]]:
    """The figure ``make()`` draws, as RGB pixels cut to its ink (as ``bbox_inches=
    "tight"``), and the sizes of its strings (image pixels)."""
    import matplotlib.pyplot as plt
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from .text_size import recording_text_sizes

    other = make()
    try:
        canvas = FigureCanvasAgg(other)
        other.dpi = dpi
        with recording_text_sizes() as sizes:
            canvas.draw()
        rgb = np.array(np.asarray(canvas.buffer_rgba())[..., :3])
    finally:
        plt.close(other)
    return rgb, sizes


def set_phone_narrow(fig, aspect: float = 0.7) -> None:
    """Give ``fig`` a phone version even when it has one panel: the panel drawn
    :data:`PHONE_WIDTH_IN` inches wide, ``aspect`` (height / width) high, its text at its
    size. For plots whose content reads at any width (curves over an axis); a diagram
    drawn in data coordinates would crowd its text."""
    fig._phone_narrow = float(aspect)


def _raise_title(ax, box, renderer, undo) -> float:
    """Raise the titles of ``ax`` above the text it draws over its top edge (``box``,
    display pixels); how far, in pixels."""
    notes = [b for b in (_text_box(t, renderer) for t in ax.texts) if b is not None]
    over = max([b.y1 - box.y1 for b in notes], default=0.0)
    if over <= 0:
        return 0.0
    over += 4 / 72 * ax.figure.dpi  # and 4 points clear of it
    old = ax.titleOffsetTrans.get_matrix()[1, 2] / ax.figure.dpi * 72  # points
    ax._set_title_offset_trans(old + over * 72 / ax.figure.dpi)
    undo.add(lambda: ax._set_title_offset_trans(old))
    return over


def _legend_below(fig, ax, undo) -> None:
    """Move the legend of ``ax`` under it, in one column: in a narrower panel it would
    cover the curves."""
    leg = ax.get_legend()
    if leg is None or not leg.get_visible():
        return
    new = fig.legend(
        list(leg.legend_handles),
        [t.get_text() for t in leg.texts],
        loc="outside lower center",
        ncols=1,
        frameon=leg.get_frame_on(),
        prop=leg.prop,
        title=leg.get_title().get_text() or None,
    )
    leg.set_visible(False)

    def put_back() -> None:
        fig.legends.remove(new)
        leg.set_visible(True)

    undo.add(put_back)


def _one_column(fig, leg, undo) -> None:
    """Put a legend in one column: a new legend with the same entries, in the old one's
    place in ``fig.legends`` (``set_ncols`` alone keeps the entries where they were put:
    a legend's box is built when it is made)."""
    i = fig.legends.index(leg)
    new = fig.legend(
        list(leg.legend_handles),
        [t.get_text() for t in leg.texts],
        loc=f"outside {leg._outside_loc} center",
        ncols=1,
        frameon=leg.get_frame_on(),
        prop=leg.prop,
        title=leg.get_title().get_text() or None,
    )
    fig.legends.remove(new)
    fig.legends[i] = new

    def put_back():
        fig.legends[i] = leg

    undo.add(put_back)


def _move_text(text, x: float | None, y: float | None, undo) -> None:
    old = text.get_position()
    undo.add(lambda: text.set_position(old))
    text.set_position((old[0] if x is None else x, old[1] if y is None else y))
