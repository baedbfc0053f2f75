"""Phone versions of wide figures: the same panels stacked in one column.

A figure made of several panels (a 2 x 4 grid of attention heads) is wide: shrunk to a
phone's column (about :data:`PHONE_COLUMN_PX` CSS pixels) its smallest text would drop
under :data:`MIN_TEXT_PX`, so the page lets it shrink only so far and its box scrolls
sideways (``scripts/vendor_js.py``). For the static book build this module draws such a
figure a second time, re-laid out for a phone: every panel in a row of its own, colour
bars, legends and the figure's title kept, about :data:`PHONE_WIDTH_IN` inches wide and
as tall as the panels need. The phone PNG travels inside the desktop PNG, in a private
chunk (:data:`PHONE_CHUNK`); when the page is written, the chunk is taken out of the
desktop image, the phone image is written next to it and the page shows it on narrow
screens (``<picture>``). The explorers' precomputed frames use it too
(``explorers.frames.figure_to_png``): there the page swaps the frame image for its
phone version (``_static/explorer-alt.js``).

Cost: right after the desktop PNG is taken, the figure itself (no copy) is re-laid out
and drawn once more, only when it needs a phone version; its panels are placed by hand
from what the desktop drawing measured (text keeps its size), so no layout pass runs.
What was changed is put back. Every test that can refuse without drawing comes first.

A figure keeps its scrolling desktop image only (no phone version) when re-laying it out
is not safe or would not help:

* it has one panel (unless it asks for a narrower one, :func:`set_phone_narrow`), or its
  panels are not plain cells of one grid (insets, twin axes,
  nested grids, panels that overlap, axes placed by hand);
* something is placed in figure coordinates, other than the figure's title and its
  shared axis labels (``suptitle``, ``supxlabel``, ``supylabel``), which move to the
  top, bottom and side of the stack, and legends placed under the panels
  (``loc="outside lower ..."``), which stay at its foot;
* a colour bar was given axes of its own (``cax=``), or sits left of or above its
  panels (one panel's bar goes beside or under it, as on the desktop);
* the stacked figure's smallest text would still be under :data:`MIN_TEXT_PX` CSS pixels
  on a :data:`PHONE_COLUMN_PX`-pixel column.

Nothing here runs outside the static build (``explorers.frames.static_mode``): figures
in Jupyter and Colab are drawn once, as before.
"""

from __future__ import annotations

import io
import math
import warnings
from collections.abc import Callable, Iterator

import numpy as np

from .phone_panels import (
    _extents,
    _hide_repeated_y_ticks,
    _label_every_panel,
    _legend_below,
    _move_text,
    _one_column,
    _other_figure,
    _phone_grid,
    _raise_title,
    _text_box,
    set_phone_aspect,
    set_phone_columns,
    set_phone_figure,
    set_phone_narrow,
)
from .phone_text import thin_ticks, upright_ticks
from .phone_text import wrap as _wrap_text
from .text_size import _chunk, _chunks

__all__ = [
    "MIN_TEXT_PX",
    "PHONE_CHUNK",
    "PHONE_COLUMN_PX",
    "PHONE_WIDTH_IN",
    "phone_png",
    "strip_phone_png",
    "with_phone_png",
    "phone_version",
    "set_phone_aspect",
    "set_phone_columns",
    "set_phone_figure",
    "set_phone_narrow",
]

#: Type of the private PNG chunk that carries the phone version inside the desktop PNG
#: (ancillary, private, safe to copy: image viewers ignore it).
PHONE_CHUNK = b"phOn"

#: Width of a phone's text column, in CSS pixels (a 390-pixel screen less the margins).
PHONE_COLUMN_PX = 350

#: The smallest text, in CSS pixels, a reader should see (as in ``explorers.frames``).
MIN_TEXT_PX = 9.0

#: Width of the phone version, in inches (narrower when the smallest text needs it).
PHONE_WIDTH_IN = 4.0

#: The narrowest phone version tried, in inches; a figure that needs less is left as is.
_NARROWEST_IN = 3.3


# The chunk ----------------------------------------------------------------------------


def _spans(png: bytes) -> Iterator[tuple[bytes, bytes, int, int]]:
    """(type, data, start, end) of each chunk of ``png`` (read by ``text_size._chunks``)."""
    for kind, data, end in _chunks(png):
        yield kind, data, end - 12 - len(data), end


def with_phone_png(png: bytes, phone: bytes) -> bytes:
    """``png`` carrying ``phone`` (a whole PNG) in a :data:`PHONE_CHUNK` before its end."""
    for kind, _, start, _ in _spans(png):
        if kind == b"IEND":
            return png[:start] + _chunk(PHONE_CHUNK, phone) + png[start:]
    raise ValueError("PNG without an IEND chunk")


def phone_png(png: bytes) -> bytes | None:
    """The phone version carried by ``png``, or None."""
    for kind, data, _, _ in _spans(png):
        if kind == PHONE_CHUNK:
            return data
    return None


def strip_phone_png(png: bytes) -> bytes:
    """``png`` without its phone version (unchanged when it carries none)."""
    for kind, _, start, end in _spans(png):
        if kind == PHONE_CHUNK:
            return png[:start] + png[end:]
    return png


# Re-laying out a figure ---------------------------------------------------------------


def _readable_width(width_px: int, smallest_px: float) -> int:
    # As explorers.frames.readable_width: the narrowest width keeping the text at 9 px.
    return math.ceil(width_px * MIN_TEXT_PX / smallest_px) + 1


def _png_width(png: bytes) -> int:
    return int.from_bytes(png[16:20], "big")


def _save_dpi(fig) -> float:
    import matplotlib as mpl

    dpi = mpl.rcParams["savefig.dpi"]
    return float(fig.dpi if dpi == "figure" else dpi)


class _Undo:
    """What a re-layout changed, to put back in reverse order."""

    def __init__(self) -> None:
        self.steps: list[Callable[[], None]] = []

    def add(self, step: Callable[[], None]) -> None:
        self.steps.append(step)

    def __call__(self) -> None:
        for step in reversed(self.steps):
            step()
        self.steps.clear()


def _panels(fig):
    """(panels in reading order, colour bar axes), or None when a re-layout is unsafe."""
    from matplotlib.gridspec import GridSpec

    if fig.subfigs or fig.artists or fig.lines or fig.patches or fig.images:
        return None
    sup = {getattr(fig, name, None) for name in ("_suptitle", "_supxlabel", "_supylabel")}
    if any(t not in sup for t in fig.texts if t.get_visible() and t.get_text().strip()):
        return None  # fig.text(...) somewhere in the figure
    if any(leg._outside_loc is None or leg._bbox_to_anchor is not None for leg in fig.legends):
        return None  # a legend placed in figure coordinates
    bars = [ax for ax in fig.axes if getattr(ax, "_colorbar", None) is not None]
    panels = [ax for ax in fig.axes if getattr(ax, "_colorbar", None) is None]
    fewest = 1 if getattr(fig, "_phone_narrow", None) else 2
    if len(panels) < fewest or not all(ax.get_visible() for ax in fig.axes):
        return None
    grid = None
    for ax in panels:
        spec = ax.get_subplotspec()
        if spec is None or ax.child_axes or type(spec.get_gridspec()) is not GridSpec:
            return None  # placed by hand, with insets, or in a nested grid
        if grid is None:
            grid = spec.get_gridspec()
        elif spec.get_gridspec() is not grid:
            return None
    for bar in bars:
        info = getattr(bar, "_colorbar_info", None)
        if info is None or not all(p in panels for p in info["parents"]) or bar.child_axes:
            return None  # a colour bar in axes of its own (cax=...)
    boxes = [ax.get_position(original=False) for ax in panels]
    for i, a in enumerate(boxes):
        for b in boxes[i + 1 :]:
            w = min(a.x1, b.x1) - max(a.x0, b.x0)
            h = min(a.y1, b.y1) - max(a.y0, b.y0)
            if w > 1e-6 and h > 1e-6:
                return None  # overlapping panels (twin axes, panels placed on others)
    order = sorted(
        panels,
        key=lambda ax: (ax.get_subplotspec().rowspan.start, ax.get_subplotspec().colspan.start),
    )
    return order, bars


def _set_box(ax, box_in, size_in, undo: _Undo) -> None:
    """Place ``ax`` at ``box_in`` = (left, top, width, height), inches from the top left."""
    from matplotlib.transforms import Bbox

    original, active = ax.get_position(original=True), ax.get_position(original=False)

    def restore() -> None:
        ax._set_position(original, which="original")
        ax._set_position(active, which="active")

    undo.add(restore)
    left, top, width, height = box_in
    fig_w, fig_h = size_in
    ax._set_position(
        Bbox.from_bounds(left / fig_w, 1 - (top + height) / fig_h, width / fig_w, height / fig_h)
    )


def _relayout(
    fig, panels, bars, width_in: float, renderer, undo: _Undo, wider: bool = False
) -> None:
    """Place ``panels`` one under another (or in the grid :func:`set_phone_columns`
    asks for) in a ``width_in``-inch figure, by hand: the room each one's labels take is
    measured on the desktop figure (text keeps its size), so the phone version needs no
    layout pass. ``undo`` puts everything back."""
    dpi = fig.dpi
    old_size = fig.get_size_inches().copy()
    pad, gap = 0.08, 0.18  # figure margin, room between two panels (inches)
    n_cols, cells = _phone_grid(fig, panels)
    col_of = {ax: c for ax, (_, c) in zip(panels, cells)}
    row_of = {ax: r for ax, (r, _) in zip(panels, cells)}
    if n_cols > 1:
        _hide_repeated_y_ticks(panels, cells, undo)
    narrow = len(panels) == 1  # set_phone_narrow: a lone panel, its legend put under it
    if narrow:
        _legend_below(fig, panels[0], undo)
    own = {ax: [b for b in bars if list(b._colorbar_info["parents"]) == [ax]] for ax in panels}
    shared = [b for b in bars if b not in sum(own.values(), [])]
    if any(b._colorbar_info["location"] not in ("right", "bottom") for b in shared):
        raise _Refuse("a shared colour bar on the left or at the top")
    if any(leg._outside_loc != "lower" for leg in fig.legends):
        raise _Refuse("a legend beside or above the panels")
    boxes = {
        ax: ax.get_position(original=False).transformed(fig.transFigure) for ax in [*panels, *bars]
    }
    tights = {bar: bar.get_tightbbox(renderer) for bar in bars}  # measured once: costly

    if any(b._colorbar_info["location"] not in ("right", "bottom") for b in sum(own.values(), [])):
        raise _Refuse("a panel's colour bar on its left or above it")

    under_bar = lambda bar: bar._colorbar_info["location"] == "bottom"  # noqa: E731

    # Left and right of the panels: tick labels, axis labels, their own colour bars and
    # a legend placed under the panel.
    sides, x_bottom = {}, {}
    for ax in panels:
        box = boxes[ax]
        legend = ax.get_legend()
        shown = legend is not None and legend.get_visible()
        legends = [legend.get_window_extent(renderer)] if shown else []
        x_bottom[ax] = ax.xaxis.get_tightbbox(renderer)
        labels = [box, x_bottom[ax], ax.yaxis.get_tightbbox(renderer)]
        x0, _, x1, _ = _extents(labels + legends + [tights[b] for b in own[ax]])
        # Below: the panel's labels, a colour bar under it; a colour bar beside it is kept
        # within the panel's height (an image of fixed aspect draws a panel shorter than
        # the bar beside it), so only what hangs under the bar's foot counts.
        below = [tights[b] for b in own[ax] if under_bar(b)]
        _, y0, _, _ = _extents(labels + legends + below)
        under = max(
            [boxes[b].y0 - tights[b].y0 for b in own[ax] if not under_bar(b)],
            default=0,
        )
        sides[ax] = ((box.x0 - x0) / dpi, (x1 - box.x1) / dpi, max(box.y0 - y0, under) / dpi)
    # Room left and right of each phone column.
    lefts = [max(v[0] for ax, v in sides.items() if col_of[ax] == c) for c in range(n_cols)]
    rights = [max(v[1] for ax, v in sides.items() if col_of[ax] == c) for c in range(n_cols)]
    left, right = lefts[0], rights[-1]
    sup_y = _text_box(fig._supylabel, renderer)
    lead = sup_y.width / dpi + 0.05 if sup_y is not None else 0.0
    bar_room = 0.0
    for bar in shared:
        if bar._colorbar_info["location"] == "right":
            tight = tights[bar]
            parent_x1 = max(boxes[p].x1 for p in bar._colorbar_info["parents"])
            bar_room = max(bar_room, (tight.x1 - parent_x1) / dpi - right)
    between = sum(lefts[1:]) + sum(rights[:-1]) + gap * (n_cols - 1)
    room = width_in - 2 * pad - (left + lead) - right - max(0.0, bar_room) - between
    panel_w = room / n_cols
    if panel_w < 1.2:
        raise _TooNarrow("the labels leave too little room for the panels")
    # Left edge of each phone column's panels.
    col_x = [pad + lead + lefts[0]]
    for c in range(1, n_cols):
        col_x.append(col_x[-1] + panel_w + rights[c - 1] + gap + lefts[c])

    # A legend in the last panel that would cover much of it there goes under it.
    legend = panels[-1].get_legend()
    if not narrow and n_cols == 1 and legend is not None and legend.get_visible():
        if legend.get_window_extent(renderer).width > 0.6 * panel_w * dpi:
            _legend_below(fig, panels[-1], undo)

    # Titles as wide as the figure or their panel are broken into lines.
    fig_px = width_in * dpi
    _wrap_text(fig._suptitle, fig_px - 2 * pad * dpi, renderer, undo)
    for ax in panels:
        c = col_of[ax]
        # A title centred over its panel reaches as far into the room on either side.
        beside = (lefts[c] + (lead + pad if c == 0 else 0.0), rights[c] + pad)
        title_w = panel_w + min(
            0.5 * (lefts[c] + rights[c] + (lead if c == 0 else 0.0)), 2 * min(beside)
        )
        for title in (ax.title, ax._left_title, ax._right_title):
            _wrap_text(title, title_w * dpi, renderer, undo)
        before = len(undo.steps)
        _wrap_text(ax.xaxis.label, panel_w * dpi, renderer, undo)
        upright_ticks(ax, panel_w * dpi, undo)
        thin_ticks(ax, panel_w * dpi, renderer, undo)
        if len(undo.steps) > before and x_bottom[ax] is not None:  # more room under it
            more = (x_bottom[ax].y0 - ax.xaxis.get_tightbbox(renderer).y0) / dpi
            sides[ax] = (*sides[ax][:2], sides[ax][2] + max(0.0, more))
    for leg in list(fig.legends):
        if leg.get_window_extent(renderer).width > fig_px - 2 * pad * dpi and leg._ncols > 1:
            _one_column(fig, leg, undo)
    if wider and any(  # a legend wider than the figure even in one column: try wider
        leg.get_window_extent(renderer).width > fig_px - 2 * pad * dpi for leg in fig.legends
    ):
        raise _TooNarrow("a legend wider than the figure")

    # Top to bottom: the figure's title, each row of panels (their titles above them,
    # their tick labels below), the shared colour bar and the legend at the foot.
    suptitle = _text_box(fig._suptitle, renderer)
    y = pad + (suptitle.height / dpi + 0.06 if suptitle is not None else 0.0)
    layout = []
    n_rows = max(row_of.values()) + 1
    last_below = 0.0
    for r in range(n_rows):
        row = [ax for ax in panels if row_of[ax] == r]
        tops, heights = [], []
        for ax in row:
            box = boxes[ax]
            texts = [
                _text_box(t, renderer)
                for t in (ax.title, ax._left_title, ax._right_title, ax.yaxis.offsetText)
            ]
            _, _, _, y1 = _extents([box, *texts])
            if narrow:  # a note over the panel's top edge: the title goes above it
                y1 += _raise_title(ax, box, renderer, undo)
            over = max([tights[b].y1 - boxes[b].y1 for b in own[ax]], default=0)
            tops.append(max(y1 - box.y1, over) / dpi)
            aspect = (
                getattr(fig, "_phone_aspect", None)
                or (getattr(fig, "_phone_narrow", None) if len(panels) == 1 else None)
                or min(max(box.height / box.width, 0.3), 1.6)
            )
            heights.append(getattr(fig, "_phone_height", None) or panel_w * aspect)
        y += max(tops)
        height = max(heights)
        layout += [(ax, col_x[col_of[ax]], y, height) for ax in row]
        last_below = max(sides[ax][2] for ax in row)
        y += height + last_below + gap
    y -= gap
    x0 = col_x[0]
    grid_w = col_x[-1] + panel_w - x0
    bar_places = {}
    for bar in shared:
        bb, tight = boxes[bar], tights[bar]
        parents = bar._colorbar_info["parents"]
        if bar._colorbar_info["location"] == "right":
            # Beside the first of its panels on the phone, as long as on the desktop but
            # no longer than the run of its panels from there (a panel that is not its
            # own, under it, is not its to cover).
            offset = (bb.x0 - max(boxes[p].x1 for p in parents)) / dpi
            first = next(i for i, (ax, *_) in enumerate(layout) if ax in parents)
            run = first
            while run + 1 < len(layout) and layout[run + 1][0] in parents:
                run += 1
            span = layout[run][2] + layout[run][3] - layout[first][2]
            bar_places[bar] = (
                col_x[max(col_of[p] for p in parents if p in col_of)] + panel_w + offset,
                layout[first][2],
                bb.width / dpi,
                min(bb.height / dpi, span),
            )
        else:  # under the last row of panels
            top = y + (min(boxes[p].y0 for p in parents) - bb.y1) / dpi - last_below
            width = min(grid_w, bb.width / dpi)
            bar_places[bar] = (x0 + (grid_w - width) / 2, top, width, bb.height / dpi)
            y = top + (bb.y1 - tight.y0) / dpi
    legends = sum(leg.get_window_extent(renderer).height for leg in fig.legends) / dpi
    sup_x = _text_box(fig._supxlabel, renderer)
    foot = (sup_x.height / dpi + 0.05 if sup_x is not None else 0.0) + legends
    height_in = y + foot + pad + (0.1 if legends else 0.0)
    size = (width_in, height_in)

    undo.add(lambda: fig.set_size_inches(old_size, forward=False))
    fig.set_size_inches(width_in, height_in, forward=False)
    for ax, left_in, top, height in layout:
        _set_box(ax, (left_in, top, panel_w, height), size, undo)
        box = boxes[ax]
        for bar in own[ax]:  # beside its panel, where it was, as long relative to it
            bb = boxes[bar]
            if under_bar(bar):  # under it, as far below, as wide relative to it
                scale = panel_w / (box.width / dpi)
                bar_places[bar] = (
                    left_in + (bb.x0 - box.x0) / dpi * scale,
                    top + height + (box.y0 - bb.y1) / dpi,
                    bb.width / dpi * scale,
                    bb.height / dpi,
                )
                continue
            scale = height / (box.height / dpi)
            offset = max(0.0, (box.y1 - bb.y1) / dpi * scale)  # never above the panel
            bar_places[bar] = (
                left_in + panel_w + (bb.x0 - box.x1) / dpi,
                top + offset,
                bb.width / dpi,
                min(bb.height / dpi * scale, height - offset),  # nor below it
            )
    for bar, place in bar_places.items():
        _set_box(bar, place, size, undo)
    if fig._suptitle is not None:
        title, va = fig._suptitle, fig._suptitle.get_verticalalignment()
        if va != "top":  # the compressed layout hangs it from its bottom edge
            title.set_verticalalignment("top")
            undo.add(lambda: title.set_verticalalignment(va))
        _move_text(title, None, 1 - pad / height_in, undo)
    if sup_x is not None:
        _move_text(fig._supxlabel, None, (pad + legends + 0.05) / height_in, undo)
    if sup_y is not None:
        middle = (layout[0][2] + layout[-1][2] + layout[-1][3]) / 2
        _move_text(fig._supylabel, pad / width_in, 1 - middle / height_in, undo)


def _draw(fig, dpi: float) -> tuple[np.ndarray, list[float]]:
    """Draw ``fig`` once on Agg at ``dpi``, without a layout pass: its RGB pixels and the
    sizes of the strings drawn (image pixels)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from .text_size import recording_text_sizes

    old_canvas, old_dpi, engine = fig.canvas, fig.dpi, fig.get_layout_engine()
    canvas = old_canvas if isinstance(old_canvas, FigureCanvasAgg) else FigureCanvasAgg(fig)
    fig._layout_engine = None  # the panels are placed already: no layout pass
    try:
        fig.dpi = dpi
        with recording_text_sizes() as sizes:
            canvas.draw()
        rgb = np.array(np.asarray(canvas.buffer_rgba())[..., :3])
    finally:
        fig._layout_engine = engine
        fig.dpi = old_dpi
        if canvas is not old_canvas:
            fig.set_canvas(old_canvas)
    return rgb, sizes


def _crop(rgb: np.ndarray, background, margin: int) -> np.ndarray:
    """``rgb`` cut to what is drawn on it, plus ``margin`` pixels."""
    ink = (rgb != np.asarray(background, dtype=rgb.dtype)).any(axis=-1)
    rows, cols = np.flatnonzero(ink.any(axis=1)), np.flatnonzero(ink.any(axis=0))
    if not len(rows):
        return rgb
    top, bottom = max(0, rows[0] - margin), min(rgb.shape[0], rows[-1] + 1 + margin)
    left, right = max(0, cols[0] - margin), min(rgb.shape[1], cols[-1] + 1 + margin)
    return rgb[top:bottom, left:right]


def _encode(rgb: np.ndarray) -> bytes:
    from PIL import Image

    out = io.BytesIO()
    Image.fromarray(np.ascontiguousarray(rgb)).save(out, format="PNG", compress_level=3)
    return out.getvalue()


class _Refuse(Exception):  # the figure cannot be stacked safely: desktop image only
    pass


class _TooNarrow(_Refuse):  # its labels leave too little room for the panels
    pass


def phone_version(
    fig,
    desktop_png: bytes,
    smallest_px: float | None,
    encode: Callable[[np.ndarray], bytes] | None = None,
) -> bytes | None:
    """The phone PNG of ``fig`` (with its smallest text recorded), or None when it needs
    none or cannot have one.

    Call it right after the desktop PNG is taken: the figure is re-laid out in place,
    drawn once, and put back as it was.

    Args:
        fig: the figure, as just drawn for ``desktop_png``.
        desktop_png: the desktop image (its width decides whether a phone one is needed).
        smallest_px: the smallest text drawn in it, in image pixels.
        encode: turns the ``(H, W, 3)`` pixels into PNG bytes (default: full colour);
            the explorers' frames pass their 256-colour encoder.
    """
    from matplotlib.colors import to_rgba

    from .text_size import with_text_size

    if not smallest_px or not math.isfinite(smallest_px):
        return None
    if _readable_width(_png_width(desktop_png), smallest_px) <= PHONE_COLUMN_PX:
        return None  # readable on a phone as it is
    dpi = _save_dpi(fig)

    make = getattr(fig, "_phone_figure", None)
    if make is not None:  # a drawing of its own for the phone
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                rgb, sizes = _other_figure(make, dpi)
        except Exception:
            return None
        background = np.round(np.array(to_rgba(fig.get_facecolor())[:3]) * 255)
        rgb = _crop(rgb, background, margin=round(0.06 * dpi))
        if not sizes or _readable_width(rgb.shape[1], min(sizes)) > PHONE_COLUMN_PX:
            return None
        return with_text_size((encode or _encode)(rgb), sizes)
    # Widest image whose smallest text is still 9 px once shown in the phone's column.
    widest_in = (PHONE_COLUMN_PX * smallest_px / MIN_TEXT_PX - 1) / dpi
    columns = getattr(fig, "_phone_columns", (1, "rows"))[0]
    width_in = min(PHONE_WIDTH_IN * (1 + 0.5 * (columns - 1)), widest_in)
    if width_in < _NARROWEST_IN:
        return None  # its text is too small for a phone even in one column
    found = _panels(fig)
    if found is None:
        return None
    panels, bars = found
    undo = _Undo()
    try:
        # The renderer that drew the desktop image knows the sizes of its strings already.
        renderer = getattr(fig.canvas, "renderer", None)
        if renderer is None or renderer.dpi != fig.dpi:
            renderer = fig.canvas.get_renderer()
        # Labels too wide for the panels at the usual width: as wide as the text allows.
        widths = [width_in] + ([widest_in] if widest_in > width_in + 0.05 else [])
        for i, width in enumerate(widths):
            try:
                _label_every_panel(panels, undo)
                _relayout(fig, panels, bars, width, renderer, undo, i + 1 < len(widths))
                break
            except _TooNarrow:
                if i + 1 == len(widths):
                    raise
                undo()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            rgb, sizes = _draw(fig, dpi)
    except Exception:  # _Refuse, or a figure this module does not foresee: no phone version
        return None
    finally:
        undo()
        fig.stale = True
    background = np.round(np.array(to_rgba(fig.get_facecolor())[:3]) * 255)
    rgb = _crop(rgb, background, margin=round(0.06 * dpi))
    if not sizes or _readable_width(rgb.shape[1], min(sizes)) > PHONE_COLUMN_PX:
        return None  # still too small at the phone's width
    return with_text_size((encode or _encode)(rgb), sizes)
