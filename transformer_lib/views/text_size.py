"""Record in every figure's PNG how small its smallest text is, so the page can be checked.

A figure is readable only if its smallest text is still readable once the page has
scaled the image to fit the text column. The page knows the scale (displayed width /
image width) but not the text sizes inside the image; this module writes them into the
image. While a figure is drawn, :func:`recording_text_sizes` notes the size in image
pixels of every string the renderer actually draws (tick labels of a hidden axis, empty
strings and clipped-away annotations are never drawn, so never counted), and
:func:`with_text_size` stores the smallest in a PNG ``tEXt`` chunk under
:data:`TEXT_SIZE_KEY`. The book's browser test reads it back and multiplies by the scale.

Two paths draw the book's PNGs: Jupyter's inline backend (every ``plot_*`` figure and
every plain pyplot figure; :func:`record_inline_figures`, called by ``setup_notebook``)
and the precomputed explorer frames (``explorers/frames.py``).
"""

from __future__ import annotations

import base64
import contextlib
import struct
import zlib
from collections.abc import Iterator

__all__ = [
    "TEXT_SIZE_KEY",
    "recording_text_sizes",
    "with_text_size",
    "png_text_size",
    "record_inline_figures",
]

#: Key of the PNG ``tEXt`` chunk: the smallest drawn text, in pixels of the image.
TEXT_SIZE_KEY = "smallest-text-px"
_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


@contextlib.contextmanager
def recording_text_sizes() -> Iterator[list[float]]:
    """Collect the size in image pixels of every string drawn by Agg inside the block.

    >>> with recording_text_sizes() as sizes:
    ...     fig.canvas.draw()
    >>> min(sizes)  # the smallest text of the figure, in pixels of its image
    """
    from matplotlib.backends.backend_agg import RendererAgg

    sizes: list[float] = []
    original = RendererAgg.draw_text

    def draw_text(self, gc, x, y, s, prop, angle, ismath=False, mtext=None):
        if str(s).strip():
            sizes.append(prop.get_size_in_points() * self.dpi / 72)
        return original(self, gc, x, y, s, prop, angle, ismath=ismath, mtext=mtext)

    RendererAgg.draw_text = draw_text
    try:
        yield sizes
    finally:
        RendererAgg.draw_text = original


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def _chunks(png: bytes) -> Iterator[tuple[bytes, bytes, int]]:
    """(type, data, end offset) of each chunk of ``png``."""
    if not png.startswith(_PNG_SIGNATURE):
        raise ValueError("not a PNG image (its first 8 bytes are not the PNG signature)")
    at = len(_PNG_SIGNATURE)
    while at + 8 <= len(png):
        (length,) = struct.unpack(">I", png[at : at + 4])
        kind = png[at + 4 : at + 8]
        end = at + 12 + length
        yield kind, png[at + 8 : at + 8 + length], end
        at = end


def with_text_size(png: bytes, sizes: list[float]) -> bytes:
    """``png`` with the smallest of ``sizes`` stored under :data:`TEXT_SIZE_KEY`.

    A figure without any text is marked ``none``, so that "no text" and "not recorded"
    stay distinguishable.
    """
    value = f"{min(sizes):.2f}" if sizes else "none"
    _, _, header_end = next(_chunks(png))  # IHDR comes first; tEXt may follow it
    text = _chunk(b"tEXt", TEXT_SIZE_KEY.encode("latin-1") + b"\0" + value.encode("latin-1"))
    return png[:header_end] + text + png[header_end:]


def png_text_size(png: bytes) -> float | None:
    """The recorded smallest text size of ``png`` in image pixels (``inf`` for no text).

    Returns None when the image carries no record (it was not drawn through the book's
    figure paths).
    """
    for kind, data, _ in _chunks(png):
        if kind == b"tEXt" and data.startswith(TEXT_SIZE_KEY.encode("latin-1") + b"\0"):
            value = data.split(b"\0", 1)[1].decode("latin-1")
            return float("inf") if value == "none" else float(value)
        if kind == b"IDAT":
            break
    return None


def _static_build() -> bool:
    from .explorers.frames import static_mode

    return static_mode()


def _recording(format_png):
    """Wrap IPython's PNG formatter for figures so that its images carry the text size,
    and, in the static book build, a phone version when they need one
    (:mod:`~transformer_lib.views.phone_layout`)."""

    def render(fig, args, kwargs) -> tuple[bytes | None, bool]:
        """The PNG with its smallest text size; whether the formatter returned base64."""
        with recording_text_sizes() as sizes:
            data = format_png(fig, *args, **kwargs)
        if data is None:
            return None, False
        if isinstance(data, str):  # the inline backend returns base64 text
            return with_text_size(base64.b64decode(data), sizes), True
        return with_text_size(data, sizes), False

    def format_with_text_size(fig, *args, **kwargs):
        png, as_text = render(fig, args, kwargs)
        if png is None:
            return None
        if _static_build():
            from .phone_layout import phone_version, with_phone_png

            phone = phone_version(fig, png, png_text_size(png))
            if phone is not None:
                png = with_phone_png(png, phone)
        return base64.b64encode(png).decode("ascii") if as_text else png

    format_with_text_size.records_text_size = True
    return format_with_text_size


def record_inline_figures() -> bool:
    """Make Jupyter's inline figures carry their smallest text size; False outside IPython.

    Loads the matplotlib backend first (in a kernel that registers the inline backend's
    PNG formatter), then wraps that formatter. Calling it again does nothing.
    """
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    shell = get_ipython()
    if shell is None:
        return False
    import matplotlib
    import matplotlib.pyplot as plt
    from matplotlib.figure import Figure

    # Load the backend now (pyplot does it lazily): in a kernel, importing the inline
    # backend registers its PNG formatter, which is what gets wrapped below.
    plt.switch_backend(matplotlib.get_backend())
    formatter = shell.display_formatter.formatters["image/png"]
    try:
        current = formatter.lookup_by_type(Figure)
    except KeyError:
        return False  # not an inline backend: figures are not shown as PNG
    if not getattr(current, "records_text_size", False):
        formatter.for_type(Figure, _recording(current))
    return True
