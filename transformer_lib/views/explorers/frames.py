"""What every explorer is built from: the frames interface the explorer modules share.

An explorer module says *what* its explorer shows (its figure, its controls, the states
it precomputes); this module says *how* it becomes a widget, in two versions:

* **live**, when a Python kernel runs: :func:`live_explorer` lays out a header, the
  controls, a message line and an image, and calls ``draw()`` whenever a control changes.
  :class:`LayoutMemo` keeps redraws fast by reusing one constrained layout.
* **static**, for the HTML book, which has no kernel: every state is drawn when the book
  is built (:func:`figure_to_png`, small PNGs) and :func:`static_explorer` stacks the
  frames in nested ``widgets.Stack`` widgets, one level per control, each tied to its
  control with ``widgets.jslink``, so the browser switches frames by itself. Each frame
  carries a text description (what every frame shows, and what this one shows, from
  :func:`describe_frame` or the explorer's own ``describe``), and is shown no smaller than
  its smallest text needs (:data:`MIN_TEXT_PX`): on a narrow screen a frame keeps that size
  and scrolls sideways in its box instead of shrinking.

  **Phone frames.** A frame whose panels are too wide for a phone's column also carries
  them stacked (:func:`figure_to_png`, :mod:`~transformer_lib.views.phone_layout`),
  which ``_static/explorer-alt.js`` shows on screens up to 600 px. Measured on chapters
  3, 4 and 6: 0.1-0.4 CPU-s a frame, and about 40 % more page weight.

The interface, in the order an explorer module uses it:

==============================  ==========================================================
:func:`use_static`              which version to build (``static=None``: :func:`static_mode`)
:func:`load_ipywidgets`         the ``ipywidgets`` module, with a clear message if missing
:func:`book_style`              the book's matplotlib style, for drawing a frame
:func:`new_figure`              a figure pyplot does not know about (never shown twice)
:func:`figure_to_png`           a static frame; :func:`encode_png` for pixels drawn directly
:class:`LayoutMemo`             fast live redraws of figures with an unchanged layout
:func:`count_slider`            a slider over counts (1,024, 4,096, ...)
:func:`note_html`               a note, warning or error line under the controls
:class:`InputProblem`           raised by ``draw()``: shown as a note, not a traceback
:func:`static_explorer`         header, controls, note, frames (and their descriptions)
:func:`live_explorer`           header, controls, message line, image redrawn by ``draw()``
==============================  ==========================================================

The page side is ``_static/explorer-alt.js`` (frame descriptions, names of the controls,
announcements, phone frames) and ``_static/book.css`` (layout on narrow screens, focus).

ipywidgets is imported only when an explorer is built (:func:`load_ipywidgets`),
matplotlib and Pillow only when something is drawn.
"""

from __future__ import annotations

import contextlib
import html
import io
import json
import math
import os
import warnings
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from ..text_size import png_text_size, recording_text_sizes, with_text_size

__all__ = [
    "FRAME_DPI",
    "KERNEL_NOTE",
    "LIVE_DPI",
    "MIN_TEXT_PX",
    "STATIC_ENV_VAR",
    "InputProblem",
    "LayoutMemo",
    "book_style",
    "count_slider",
    "describe_frame",
    "encode_png",
    "figure_to_png",
    "live_explorer",
    "load_ipywidgets",
    "new_figure",
    "note_html",
    "readable_width",
    "static_explorer",
    "static_mode",
    "use_static",
]


#: Environment variable that switches every explorer to its precomputed version.
STATIC_ENV_VAR = "TRANSFORMER_BOOK_STATIC"

#: Shown next to a text box that cannot work without a kernel.
KERNEL_NOTE = (
    "Typing your own sentence needs a live Python kernel — open this chapter in Colab "
    "(rocket button at the top)"
)

#: Resolution of precomputed frames: small PNGs keep the book's pages light.
FRAME_DPI = 80

#: Resolution of live redraws (a lower one is faster to draw).
LIVE_DPI = 72

#: The smallest text, in CSS pixels, that a reader should see in a frame on any screen.
MIN_TEXT_PX = 9.0


def static_mode() -> bool:
    """True when the explorers should be precomputed: ``TRANSFORMER_BOOK_STATIC=1``.

    The book build sets the variable; in Jupyter or Colab it is unset and every explorer
    is live. ``"true"``, ``"yes"`` and ``"on"`` count as set too.
    """
    return os.environ.get(STATIC_ENV_VAR, "").strip().lower() in ("1", "true", "yes", "on")


def use_static(static: bool | None) -> bool:
    """Whether to build the precomputed version: ``static`` if given, else :func:`static_mode`.

    Every explorer function takes ``static: bool | None = None`` and passes it here.
    """
    return static_mode() if static is None else bool(static)


def load_ipywidgets():
    """The ``ipywidgets`` module; an ImportError that says how to install it if missing."""
    try:
        import ipywidgets
    except ImportError as exc:  # pragma: no cover - ipywidgets is in the book's requirements
        raise ImportError(
            "The explorers need ipywidgets 8: `pip install 'ipywidgets>=8'`, then restart "
            "the kernel."
        ) from exc
    return ipywidgets


class InputProblem(ValueError):
    """Something about the reader's input that the explorer explains instead of failing.

    Raised by a live explorer's ``draw()``: :func:`live_explorer` shows its message as a
    warning line and keeps the last figure.
    """


@contextlib.contextmanager
def book_style() -> Iterator[None]:
    """The book's matplotlib style (font sizes, colour cycle), warnings silenced.

    Draw every frame inside it. A glyph missing from the font (emoji, Chinese) would
    otherwise print a warning under the widget on every redraw.
    """
    import matplotlib as mpl

    from ..style import _RC

    with mpl.rc_context(_RC), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def new_figure(figsize: tuple[float, float], **kwargs: Any):
    """A matplotlib figure that pyplot does not know about: Jupyter never shows it by itself.

    Args:
        figsize: width and height in inches (at :data:`FRAME_DPI` a 8.6-inch frame is
            688 CSS pixels wide, the widest a frame is shown in a 1280-pixel window).
        **kwargs: passed to :class:`matplotlib.figure.Figure` (``layout=...``).
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=figsize, **kwargs)
    FigureCanvasAgg(fig)
    return fig


def encode_png(rgb: np.ndarray, palette: bool) -> bytes:
    """PNG bytes of an ``(H, W, 3)`` uint8 image.

    Args:
        rgb: the pixels.
        palette: reduce to 256 colours (about a third of the bytes, no visible difference
            in these figures) for stored frames; False encodes fast, for live redraws.
    """
    from PIL import Image

    image = Image.fromarray(rgb)
    out = io.BytesIO()
    if palette:
        image = image.quantize(256, method=Image.Quantize.FASTOCTREE, dither=Image.Dither.NONE)
        image.save(out, format="PNG", optimize=True)
    else:
        image.save(out, format="PNG", compress_level=1)
    return out.getvalue()


def _canvas_png(fig, palette: bool) -> bytes:
    """Draw ``fig`` and encode what is on its canvas (no second layout pass)."""
    with book_style(), recording_text_sizes() as sizes:
        fig.canvas.draw()
    rgba = np.asarray(fig.canvas.buffer_rgba())
    # The page's readability check reads the smallest text size back from the PNG.
    return with_text_size(encode_png(np.ascontiguousarray(rgba[..., :3]), palette), sizes)


def _with_phone_frame(fig, png: bytes, palette: bool) -> bytes:
    """``png`` carrying the phone version of ``fig`` when it qualifies (the rules of
    :mod:`~transformer_lib.views.phone_layout`), else ``png`` unchanged."""
    import matplotlib as mpl

    from ..phone_layout import phone_version, with_phone_png

    # At the frame's resolution (a kernel may set savefig.dpi for inline figures), as
    # small as the desktop frame (256 colours when it has them).
    encode = (lambda rgb: encode_png(rgb, palette=True)) if palette else None
    with book_style(), mpl.rc_context({"savefig.dpi": "figure"}):
        phone = phone_version(fig, png, png_text_size(png), encode=encode)
    return png if phone is None else with_phone_png(png, phone)


def figure_to_png(
    fig, dpi: int = FRAME_DPI, palette: bool = True, phone: bool | None = None
) -> bytes:
    """Render a matplotlib figure to PNG bytes, small enough to store many in a page.

    The PNG records its smallest text (:mod:`~transformer_lib.views.text_size`), which
    the page uses to keep it readable. In the static build, a figure of several panels
    too wide for a phone also carries them stacked
    (:mod:`~transformer_lib.views.phone_layout`), which ``_static/explorer-alt.js``
    shows on a narrow screen; others keep one frame.

    Args:
        fig: the figure (it is closed if pyplot knows it).
        dpi: resolution; 72–90 keeps a typical figure at 20–40 KB.
        palette: reduce to 256 colours, which shrinks the file about threefold.
        phone: add the phone version if the figure qualifies (default :func:`static_mode`:
            never in Jupyter or Colab; ``False`` for an explorer of hundreds of frames).
    """
    import matplotlib.pyplot as plt

    fig.set_dpi(dpi)
    png = _canvas_png(fig, palette)
    if static_mode() if phone is None else phone:
        png = _with_phone_frame(fig, png, palette)
    plt.close(fig)  # no-op for figures made by new_figure
    return png


class LayoutMemo:
    """Reuse one constrained layout across live redraws of figures with the same layout.

    Constrained layout measures every label on every draw, more than half of a redraw
    here. Most slider moves change the data, not the labels: the first figure of each
    ``key`` is laid out as usual and its axes positions are remembered; later figures with
    that key take those positions and skip the layout pass.

    Example:
        >>> memo = LayoutMemo()  # doctest: +SKIP
        >>> png = memo.png(fig, key=(d_model, steps))  # in a live explorer's draw()
    """

    def __init__(self) -> None:
        self.positions: dict[Any, list] = {}

    def png(self, fig, key: Any) -> bytes:
        """PNG bytes of ``fig`` at :data:`LIVE_DPI`, laid out as the first figure of ``key``."""
        fig.set_dpi(LIVE_DPI)
        axes = fig.get_axes()
        known = self.positions.get(key)
        if known is not None and len(known) == len(axes):
            fig.set_layout_engine("none")
            for ax, position in zip(axes, known):
                ax.set_position(position)
            return _canvas_png(fig, palette=False)
        png = _canvas_png(fig, palette=False)
        self.positions[key] = [ax.get_position() for ax in axes]
        return png


def _image_layout(widgets, max_width: str = "100%"):
    # No side margins: with the widgets' default 2 px each side, an image as wide as the
    # page's output area would overflow it and make the area scroll sideways.
    return widgets.Layout(max_width=max_width, height="auto", margin="2px 0")


def readable_width(png: bytes, min_text_px: float = MIN_TEXT_PX) -> int | None:
    """The narrowest width (CSS px) at which the smallest text of ``png`` is ``min_text_px``.

    A frame is shown at its own width (one image pixel per CSS pixel) when the column is
    wide enough, shrunk to the column otherwise, but never below this width: a narrower
    column scrolls the frame sideways. None when the PNG has no text, or records none.

    Args:
        png: a frame made by :func:`figure_to_png` (or :func:`encode_png` with
            :func:`~transformer_lib.views.text_size.with_text_size`).
        min_text_px: the smallest text size a reader should see.
    """
    smallest = png_text_size(png)
    if smallest is None or not math.isfinite(smallest) or smallest <= 0:
        return None
    width = int.from_bytes(png[16:20], "big")  # IHDR: the image's width in pixels
    # One pixel to spare: a layout that rounds the width down keeps the text at the size.
    return min(width, math.ceil(width * min_text_px / smallest) + 1)


def count_slider(values: Sequence[int], value: int, description: str, static: bool, **kw: Any):
    """A slider over ``values`` (counts, shown with thousands separators) set to ``value``
    (to the middle one when ``value`` is not among them).

    Static: options are the labels, as the frame stack is linked by index; it moves while
    dragged. Live: each label carries its number, and the figure is redrawn on release.

    Args:
        values: the counts, ascending.
        value: the count selected first.
        description: the slider's label.
        static: for :func:`static_explorer` (True) or :func:`live_explorer` (False).
        **kw: more ``SelectionSlider`` settings (``tooltip=...``).
    """
    widgets = load_ipywidgets()
    common = dict(
        description=description,
        style={"description_width": "initial"},
        layout=widgets.Layout(width="420px"),
        **kw,
    )
    if static:
        return widgets.SelectionSlider(
            options=[f"{v:,}" for v in values],
            index=values.index(value) if value in values else len(values) // 2,
            continuous_update=True,
            **common,
        )
    if value not in values:
        value = values[len(values) // 2]
    return widgets.SelectionSlider(
        options=[(f"{v:,}", v) for v in values], value=value, continuous_update=False, **common
    )


def _header(widgets, title: str, description: str):
    return widgets.HTML(
        f"<div style='line-height:1.35'><b class='explorer-title'>{html.escape(title)}</b><br>"
        f"<span style='font-size:0.92em'>{description}</span></div>"
    )


_NOTE_CLASSES = {"info": "explorer-note", "warn": "explorer-warning", "error": "explorer-error"}


def note_html(text: str, kind: str = "info") -> str:
    """A line of ``text`` for a live explorer's message area or under the controls.

    Args:
        text: plain text (escaped here).
        kind: ``"info"``, ``"warn"`` or ``"error"``; the colours keep a contrast of at
            least 4.5:1 on the explorer's light background (WCAG 2.1 AA).
    """
    colour = {"info": "#555555", "warn": "#8a4b00", "error": "#a00000"}[kind]
    return (
        f"<div class='{_NOTE_CLASSES[kind]}' style='color:{colour};font-size:0.92em;"
        f"margin:2px 0'>{html.escape(text)}</div>"
    )


def _index_trait(widgets, control) -> str:
    """The synced integer trait of a control that equals the frame index."""
    if isinstance(control, widgets.IntSlider):
        if control.min != 0 or control.step != 1:
            raise ValueError("an IntSlider that selects frames must start at 0 with step 1")
        return "value"
    return "index"  # SelectionSlider, Dropdown, ToggleButtons, ...


def _state_count(widgets, control) -> int:
    if isinstance(control, widgets.IntSlider):
        return control.max + 1
    return len(control._options_labels)


def _current_index(widgets, control) -> int:
    return int(getattr(control, _index_trait(widgets, control)))


def _option_label(widgets, control, index: int) -> str:
    if isinstance(control, widgets.IntSlider):
        return str(index)
    return str(control._options_labels[index])


def describe_frame(controls: Sequence[Any], indices: Sequence[int]) -> str:
    """What selects one frame, in words: each control's label and its setting.

    The default frame description of :func:`static_explorer`, e.g. ``"d_model: 512
    (base); warm-up: 4,000"`` for ``indices`` (1, 5) of a ``d_model`` toggle and a
    ``warm-up`` slider.

    Args:
        controls: the controls that select frames, outermost first.
        indices: one index per control.
    """
    widgets = load_ipywidgets()
    parts = []
    for control, index in zip(controls, indices):
        label = (control.description or "").strip()
        setting = _option_label(widgets, control, index)
        parts.append(f"{label}: {setting}" if label else setting)
    return "; ".join(parts)


def _frame_stack(widgets, frames: list, controls: Sequence[Any], leaf) -> tuple[Any, list]:
    """Nested Stacks of Image widgets: one nesting level per control, all jslinked.

    ``frames`` is a nested list of PNG bytes, indexed ``[i0][i1]...`` by the controls'
    indices; ``leaf(png, indices)`` makes the Image of one frame. Every stack of level
    ``k`` is linked to control ``k``: the browser shows the right frame with no kernel.
    """

    def build(sub: list, level: int, prefix: tuple[int, ...]) -> tuple[Any, list]:
        control = controls[level]
        links: list = []
        children = []
        for i, item in enumerate(sub):
            if level == len(controls) - 1:
                children.append(leaf(item, (*prefix, i)))
            else:
                child, sub_links = build(item, level + 1, (*prefix, i))
                children.append(child)
                links += sub_links
        if len(children) != _state_count(widgets, control):
            raise ValueError(
                f"{len(children)} frames at level {level}, but control "
                f"{control.description!r} has {_state_count(widgets, control)} states"
            )
        stack = widgets.Stack(children, selected_index=_current_index(widgets, control))
        links.append(
            widgets.jslink((control, _index_trait(widgets, control)), (stack, "selected_index"))
        )
        return stack, links

    return build(frames, 0, ())


def _count_frames(frames: list) -> int:
    return sum(_count_frames(f) for f in frames) if isinstance(frames, list) else 1


def static_explorer(
    title: str,
    description: str,
    rows: Sequence[Any],
    controls: dict[str, Any],
    linked: Sequence[Any],
    frames: list,
    note: str | None = None,
    *,
    alt: str,
    describe: Callable[..., str] | None = None,
):
    """The precomputed explorer: header, controls, optional note, then the frames.

    Args:
        title: bold first line.
        description: what to do and what to look at (HTML allowed).
        rows: the widgets shown between the header and the frames (the controls, or
            ``HBox`` rows of them), top to bottom.
        controls: name → control, kept as ``box.controls`` for code and tests.
        linked: the controls that select the frame, outermost first. An ``IntSlider``
            must run from 0 in steps of 1; other controls select by their ``index``.
        frames: nested lists of PNG bytes, ``frames[i0][i1]...`` for the indices of the
            ``linked`` controls (:func:`figure_to_png`).
        note: a line under the controls (e.g. :data:`KERNEL_NOTE`).
        alt: what every frame shows, for readers who cannot see the images (required).
        describe: ``describe(*indices) -> str``, what this frame shows (a value read off
            it, the state in words); default :func:`describe_frame` (the controls'
            settings). The page puts it before ``alt`` in each frame's ``alt`` text and
            announces it when the frame changes.

    Returns:
        A ``VBox`` with CSS classes ``static-explorer`` and ``transformer-explorer`` and
        the attributes ``controls``, ``stack`` (the outer ``Stack``), ``links`` (the
        ``jslink`` widgets, also kept alive by it) and ``frame_count``; each frame is an
        ``Image`` with the class ``frame-<n>`` (its position, row-major).

    Shape:
        A frame is shown at its own width when the column allows, shrunk to the column
        otherwise, but never below :func:`readable_width`: its smallest text stays at
        least :data:`MIN_TEXT_PX` CSS pixels and a narrow column scrolls it sideways.
    """
    widgets = load_ipywidgets()
    if not alt.strip():
        raise ValueError(f"explorer {title!r}: describe its frames in alt= (for screen readers)")
    texts: list[str] = []
    layouts: dict[int | None, Any] = {}

    def leaf(png: bytes, indices: tuple[int, ...]):
        text = describe(*indices) if describe else describe_frame(linked, indices)
        if not text or not text.strip():
            raise ValueError(f"explorer {title!r}: frame {indices} has no description")
        width = readable_width(png)
        if width not in layouts:  # one Layout per distinct width keeps the page light
            layouts[width] = _image_layout(
                widgets, "100%" if width is None else f"max(100%, {width}px)"
            )
        image = widgets.Image(value=png, format="png", layout=layouts[width])
        image.add_class("explorer-frame")
        image.add_class(f"frame-{len(texts)}")
        texts.append(text.strip())
        return image

    stack, links = _frame_stack(widgets, frames, linked, leaf)
    stack.add_class("explorer-frames")
    rows = [_header(widgets, title, description), *rows]
    if note:
        rows.append(widgets.HTML(note_html(note)))
    rows.append(stack)
    # _static/explorer-alt.js gives every frame its alt text (this frame's description, then
    # what all frames show) and announces the description when the frame changes.
    rows.append(
        widgets.HTML(
            f"<span class='visually-hidden explorer-alt' data-frames='"
            f"{html.escape(json.dumps(texts, ensure_ascii=False), quote=True)}'>"
            f"{html.escape(alt)}</span>"
        )
    )
    box = widgets.VBox(rows)
    box.add_class("static-explorer")
    box.add_class("transformer-explorer")
    box.controls = controls
    box.stack = stack
    box.links = links  # also keeps them alive: they are saved with the notebook's widgets
    box.frame_count = _count_frames(frames)
    box.frame_descriptions = texts
    return box


def live_explorer(
    title: str,
    description: str,
    rows: Sequence[Any],
    controls: dict[str, Any],
    draw: Callable[[], tuple[bytes, str]],
    watched: Sequence[Any],
):
    """The live explorer: header, controls, message line and image; ``draw()`` on every change.

    Args:
        title: bold first line.
        description: what to do and what to look at (HTML allowed).
        rows: the widgets between the header and the message line (controls, ``HBox`` rows).
        controls: name → control, kept as ``box.controls``.
        draw: returns ``(png, note_html)`` for the current control values. An
            :class:`InputProblem` it raises becomes a warning line; any other exception a
            short error line (and ``box.last_error()``). The widget never shows a traceback.
        watched: the controls whose ``value`` changes call ``draw()``.

    Returns:
        A ``VBox`` with CSS classes ``live-explorer`` and ``transformer-explorer`` and the
        attributes ``controls``, ``image``, ``message``, ``update()`` and ``last_error()``.
    """
    widgets = load_ipywidgets()
    image = widgets.Image(format="png", layout=_image_layout(widgets))
    message = widgets.HTML()
    state: dict[str, Any] = {"busy": False, "error": None}

    def update(change=None) -> None:
        if state["busy"]:  # a callback changing another control: draw once, at the end
            return
        state["busy"] = True
        try:
            png, note = draw()
        except InputProblem as problem:
            message.value = note_html(str(problem), "warn")
        except Exception as exc:  # the widget must survive anything a reader does
            state["error"] = exc  # for whoever debugs it: box.last_error()
            message.value = note_html(
                f"Could not update the figure ({type(exc).__name__}: {exc}).", "error"
            )
        else:
            image.value = png
            message.value = note
        finally:
            state["busy"] = False

    for control in watched:
        control.observe(update, names="value")
    update()
    box = widgets.VBox([_header(widgets, title, description), *rows, message, image])
    box.add_class("live-explorer")
    box.add_class("transformer-explorer")
    box.controls = controls
    box.image = image
    box.message = message
    box.update = update
    box.last_error = lambda: state["error"]
    box._state = state
    return box
