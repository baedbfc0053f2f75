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
screens (``<picture>``).

Cost: the desktop PNG has been taken when this runs and the figure is not drawn again
for it, so the figure itself is re-laid out (no copy) and drawn once more, and only when
it needs a phone version; what was changed is put back afterwards (sizes, grid, labels),
so a later display draws the desktop figure again. Every test that can refuse without
drawing comes first.

A figure keeps its scrolling desktop image only (no phone version) when re-laying it out
is not safe or would not help:

* it has one panel, or its panels are not plain cells of one grid (insets, twin axes,
  nested grids, panels that overlap, axes placed by hand);
* something is placed in figure coordinates, other than the figure's title and its
  shared axis labels (``suptitle``, ``supxlabel``, ``supylabel``), which the layout
  keeps at the top, bottom and side, and legends placed outside the panels
  (``loc="outside ..."``);
* a colour bar was given its own axes (``cax=``) or the layout cannot move it;
* the stacked figure's smallest text would still be under :data:`MIN_TEXT_PX` CSS pixels
  on a :data:`PHONE_COLUMN_PX`-pixel column.

Nothing here runs outside the static build (``explorers.frames.static_mode``): figures
in Jupyter and Colab are drawn once, as before.
"""

from __future__ import annotations

import math
import struct
import textwrap
import warnings
import zlib
from collections.abc import Callable, Iterator

__all__ = [
    "MIN_TEXT_PX",
    "PHONE_CHUNK",
    "PHONE_COLUMN_PX",
    "PHONE_WIDTH_IN",
    "phone_png",
    "strip_phone_png",
    "with_phone_png",
    "phone_version",
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

#: The image's margins beyond the figure's width (``bbox_inches="tight"`` pads 0.1 in a
#: side, the layout's own padding is cropped), in inches.
_TIGHT_MARGIN_IN = 0.12

_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


# --------------------------------------------------------------------------------------
# The chunk
# --------------------------------------------------------------------------------------


def _chunks(png: bytes) -> Iterator[tuple[bytes, int, int]]:
    """(type, start, end) of each chunk of ``png``."""
    if not png.startswith(_PNG_SIGNATURE):
        raise ValueError("not a PNG image (its first 8 bytes are not the PNG signature)")
    at = len(_PNG_SIGNATURE)
    while at + 8 <= len(png):
        (length,) = struct.unpack(">I", png[at : at + 4])
        end = at + 12 + length
        yield png[at + 4 : at + 8], at, end
        at = end


def with_phone_png(png: bytes, phone: bytes) -> bytes:
    """``png`` carrying ``phone`` (a whole PNG) in a :data:`PHONE_CHUNK` before its end."""
    for kind, start, _ in _chunks(png):
        if kind == b"IEND":
            chunk = PHONE_CHUNK + phone
            packed = struct.pack(">I", len(phone)) + chunk + struct.pack(">I", zlib.crc32(chunk))
            return png[:start] + packed + png[start:]
    raise ValueError("PNG without an IEND chunk")


def phone_png(png: bytes) -> bytes | None:
    """The phone version carried by ``png``, or None."""
    for kind, start, end in _chunks(png):
        if kind == PHONE_CHUNK:
            return png[start + 8 : end - 4]
    return None


def strip_phone_png(png: bytes) -> bytes:
    """``png`` without its phone version (unchanged when it carries none)."""
    for kind, start, end in _chunks(png):
        if kind == PHONE_CHUNK:
            return png[:start] + png[end:]
    return png


# --------------------------------------------------------------------------------------
# Re-laying out a figure
# --------------------------------------------------------------------------------------


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
    from matplotlib.layout_engine import ConstrainedLayoutEngine

    if fig.subfigs or fig.artists or fig.lines or fig.patches or fig.images:
        return None
    sup = {getattr(fig, name, None) for name in ("_suptitle", "_supxlabel", "_supylabel")}
    if any(t not in sup for t in fig.texts if t.get_visible() and t.get_text().strip()):
        return None  # fig.text(...) somewhere in the figure
    if any(leg._outside_loc is None or leg._bbox_to_anchor is not None for leg in fig.legends):
        return None  # a legend placed in figure coordinates
    bars = [ax for ax in fig.axes if getattr(ax, "_colorbar", None) is not None]
    panels = [ax for ax in fig.axes if getattr(ax, "_colorbar", None) is None]
    if len(panels) < 2 or not all(ax.get_visible() for ax in fig.axes):
        return None
    engine = fig.get_layout_engine()
    constrained = isinstance(engine, ConstrainedLayoutEngine)
    if bars and not constrained:
        return None  # colour bars of other layouts steal room the stack cannot give back
    if engine is not None and not constrained and not engine.adjust_compatible:
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


def _tick_labels(axis) -> tuple[str, ...]:
    """The axis's major tick labels, shown or hidden."""
    return tuple(axis.get_major_formatter().format_ticks(axis.get_majorticklocs()))


def _label_every_panel(panels, undo: _Undo) -> None:
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
            donors = [
                other
                for other in panels
                if other is not ax
                and same(specs[other]) == same(specs[ax])
                and axis_of(other).get_visible()
                and axis_of(other).get_tick_params().get(label_key, True)
            ]
            if not donors:
                continue
            donor = donors[0]
            mine = _tick_labels(axis)
            if not shown and any(mine) and mine == _tick_labels(axis_of(donor)):
                ax.tick_params(axis=side, **{label_key: True})

                def hide(ax=ax, side=side, key=label_key) -> None:
                    ax.tick_params(axis=side, **{key: False})

                undo.add(hide)
            label = axis.label
            donor_label = axis_of(donor).label
            if not label.get_text() and donor_label.get_text() and (shown or any(mine)):
                font, colour = label.get_fontproperties(), label.get_color()
                label.set_fontproperties(donor_label.get_fontproperties())
                label.set_color(donor_label.get_color())
                label.set_text(donor_label.get_text())

                def unlabel(label=label, font=font, colour=colour) -> None:
                    label.set_text("")
                    label.set_fontproperties(font)
                    label.set_color(colour)

                undo.add(unlabel)


def _wrap(text_artist, width_px: float, renderer, undo: _Undo) -> None:
    """Break a title into lines no wider than ``width_px`` (plain text only)."""
    text = text_artist.get_text()
    if not text.strip() or "$" in text or "\n" in text or not text_artist.get_visible():
        return
    extent = text_artist.get_window_extent(renderer).width
    if extent <= width_px:
        return
    chars = max(12, int(len(text) * width_px / extent))
    text_artist.set_text("\n".join(textwrap.wrap(text, chars)))
    undo.add(lambda: text_artist.set_text(text))


def _relayout(fig, panels, bars, width_in: float, renderer, undo: _Undo) -> None:
    """Stack ``panels`` in one column of a ``width_in``-inch figure (undone by ``undo``)."""
    from matplotlib.layout_engine import ConstrainedLayoutEngine
    from matplotlib.transforms import Bbox

    dpi = fig.dpi
    old_size = fig.get_size_inches().copy()
    engine = fig.get_layout_engine()
    # Room the decorations take (tick labels, titles, per-panel colour bars), in inches,
    # measured on the desktop figure: text keeps its size when the panels are stacked.
    own_bars = {ax: [b for b in bars if b._colorbar_info["parents"] == [ax]] for ax in panels}
    shared = [b for b in bars if len(b._colorbar_info["parents"]) > 1]
    dec_w = dec_h = 0.0
    for ax in panels:
        box = ax.get_position(original=False).transformed(fig.transFigure)
        tight = Bbox.union(
            [ax.get_tightbbox(renderer)] + [b.get_tightbbox(renderer) for b in own_bars[ax]]
        )
        dec_w = max(dec_w, (tight.width - box.width) / dpi)
        dec_h = max(dec_h, (tight.height - box.height) / dpi)
    side_w = 0.0
    top_h = bottom_h = 0.0
    for bar in shared:
        tight = bar.get_tightbbox(renderer)
        if bar._colorbar_info["location"] in ("left", "right"):
            side_w += tight.width / dpi + 0.15
        else:
            bottom_h += tight.height / dpi + 0.15
    panel_w = width_in - dec_w - side_w - 0.15
    if panel_w < 1.2:
        raise _Refuse("decorations leave too little room for the panels")

    # Titles and labels as wide as the figure or their panel are broken into lines.
    fig_px = width_in * dpi
    if fig._suptitle is not None:
        _wrap(fig._suptitle, fig_px * 0.95, renderer, undo)
        top_h += fig._suptitle.get_window_extent(renderer).height / dpi + 0.1
    if fig._supxlabel is not None:
        bottom_h += fig._supxlabel.get_window_extent(renderer).height / dpi + 0.1
    for ax in panels:
        for title in (ax.title, ax._left_title, ax._right_title):
            _wrap(title, (panel_w + dec_w * 0.5) * dpi, renderer, undo)
        _wrap(ax.xaxis.label, panel_w * dpi, renderer, undo)
    for leg in fig.legends:
        if leg.get_window_extent(renderer).width > fig_px * 0.95 and leg._ncols > 1:
            ncols = leg._ncols
            leg.set_ncols(1)
            undo.add(lambda leg=leg, ncols=ncols: leg.set_ncols(ncols))
        height = leg.get_window_extent(renderer).height / dpi + 0.1
        if leg._outside_loc == "upper":
            top_h += height
        elif leg._outside_loc == "lower":
            bottom_h += height
        else:  # beside the panels: they get narrower
            panel_w -= leg.get_window_extent(renderer).width / dpi + 0.1
    if panel_w < 1.2:
        raise _Refuse("a legend beside the panels leaves too little room for them")

    # Each panel keeps the shape of its box (a square attention map stays square).
    heights = []
    for ax in panels:
        box = ax.get_position(original=False)
        aspect = (box.height * old_size[1]) / (box.width * old_size[0])
        heights.append(panel_w * min(aspect, 1.6))
    height_in = sum(heights) + len(panels) * (dec_h + 0.1) + top_h + bottom_h + 0.2

    specs = [(ax, ax.get_subplotspec(), ax.get_position(original=True)) for ax in panels]

    def restore_grid() -> None:
        for ax, spec, position in specs:
            ax.set_subplotspec(spec)
            ax._set_position(position, which="original")  # (set_position leaves the layout)

    undo.add(lambda: fig.set_size_inches(old_size, forward=False))
    undo.add(restore_grid)
    for bar in shared:
        info = bar._colorbar_info
        saved = dict(info)
        undo.add(lambda info=info, saved=saved: info.update(saved))
        if info["location"] in ("left", "right"):
            # As long as on the desktop figure, at the top of the stack, not the stack's height.
            length = bar.get_position(original=False).height * old_size[1]
            info["shrink"] = min(1.0, length / max(sum(heights), 1e-6))
            info["anchor"] = (info["anchor"][0], 1.0)
    if not isinstance(engine, ConstrainedLayoutEngine):  # no colour bars (see _panels)

        def restore_engine() -> None:
            fig._layout_engine = engine

        fig.set_layout_engine("constrained")
        undo.add(restore_engine)
    grid = fig.add_gridspec(len(panels), 1, height_ratios=heights)
    for i, ax in enumerate(panels):
        ax.set_subplotspec(grid[i, 0])
    fig.set_size_inches(width_in, height_in, forward=False)


class _Refuse(Exception):
    """The figure cannot be stacked safely: it keeps its desktop image only."""


def phone_version(
    fig, desktop_png: bytes, smallest_px: float | None, render: Callable[[], bytes]
) -> bytes | None:
    """The phone PNG of ``fig``, or None when it needs none or cannot have one.

    Call it right after the desktop PNG is taken: the figure is re-laid out in place,
    drawn once with ``render()`` (which returns the PNG with its recorded text size), and
    put back as it was.

    Args:
        fig: the figure, as just drawn for ``desktop_png``.
        desktop_png: the desktop image (its width decides whether a phone one is needed).
        smallest_px: the smallest text drawn in it, in image pixels.
        render: draws ``fig`` and returns PNG bytes carrying its smallest text size.
    """
    from .text_size import png_text_size

    if not smallest_px or not math.isfinite(smallest_px):
        return None
    if _readable_width(_png_width(desktop_png), smallest_px) <= PHONE_COLUMN_PX:
        return None  # readable on a phone as it is
    dpi = _save_dpi(fig)
    # Widest image whose smallest text is still 9 px once shown in the phone's column.
    widest_in = (PHONE_COLUMN_PX * smallest_px / MIN_TEXT_PX - 1) / dpi
    width_in = min(PHONE_WIDTH_IN, widest_in) - _TIGHT_MARGIN_IN
    if width_in < _NARROWEST_IN:
        return None  # its text is too small for a phone even in one column
    found = _panels(fig)
    if found is None:
        return None
    panels, bars = found
    undo = _Undo()
    try:
        _label_every_panel(panels, undo)
        _relayout(fig, panels, bars, width_in, fig.canvas.get_renderer(), undo)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            png = render()
        if any("constrained_layout not applied" in str(w.message) for w in caught):
            return None  # the stacked panels did not fit the layout
    except Exception:  # _Refuse, or a figure this module does not foresee: no phone version
        return None
    finally:
        undo()
        fig.stale = True
    smallest = png_text_size(png)
    if smallest is None or not math.isfinite(smallest) or smallest <= 0:
        return None
    if _readable_width(_png_width(png), smallest) > PHONE_COLUMN_PX:
        return None  # still too small at the phone's width
    return png
