"""What every explorer is built from: the live and the precomputed (static) version.

* **live**, when a Python kernel runs: :func:`_live_explorer` lays out a header, the
  controls, a message line and an image, and calls ``draw()`` whenever a control changes.
  :class:`_LayoutMemo` keeps redraws fast by reusing one constrained layout.
* **static**, for the HTML book, which has no kernel: every state is drawn when the book
  is built (:func:`figure_to_png`, small PNGs) and :func:`_static_explorer` stacks the
  frames in nested ``widgets.Stack`` widgets, one level per control, each tied to its
  control with ``widgets.jslink`` (:func:`_frame_stack`), so the browser switches frames
  by itself.

:func:`static_mode` chooses the version from ``TRANSFORMER_BOOK_STATIC``. ipywidgets is
imported only when an explorer is built (:func:`_widgets`), matplotlib and Pillow only when
something is drawn.
"""

from __future__ import annotations

import contextlib
import html
import io
import os
import warnings
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from ..text_size import recording_text_sizes, with_text_size

__all__ = [
    "FRAME_DPI",
    "KERNEL_NOTE",
    "LIVE_DPI",
    "STATIC_ENV_VAR",
    "InputProblem",
    "figure_to_png",
    "static_mode",
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


def static_mode() -> bool:
    """True when the explorers should be precomputed: ``TRANSFORMER_BOOK_STATIC=1``.

    The book build sets the variable; in Jupyter or Colab it is unset and every explorer
    is live. ``"true"``, ``"yes"`` and ``"on"`` count as set too.
    """
    return os.environ.get(STATIC_ENV_VAR, "").strip().lower() in ("1", "true", "yes", "on")


def _want_static(static: bool | None) -> bool:
    return static_mode() if static is None else bool(static)


def _widgets():
    try:
        import ipywidgets
    except ImportError as exc:  # pragma: no cover - ipywidgets is in the book's requirements
        raise ImportError(
            "The explorers need ipywidgets 8: `pip install 'ipywidgets>=8'`, then restart "
            "the kernel."
        ) from exc
    return ipywidgets


class InputProblem(ValueError):
    """Something about the reader's input that the explorer explains instead of failing."""


@contextlib.contextmanager
def _style() -> Iterator[None]:
    """The book's matplotlib style (font sizes, colour cycle), warnings silenced.

    A glyph missing from the font (emoji, Chinese) would otherwise print a warning under
    the widget on every redraw.
    """
    import matplotlib as mpl

    from ..style import _RC

    with mpl.rc_context(_RC), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def _figure(figsize: tuple[float, float], **kwargs: Any):
    """A figure that pyplot does not know about: Jupyter never shows it by itself."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=figsize, **kwargs)
    FigureCanvasAgg(fig)
    return fig


def _encode_png(rgb: np.ndarray, palette: bool) -> bytes:
    from PIL import Image

    image = Image.fromarray(rgb)
    out = io.BytesIO()
    if palette:  # 256 colours: about a third of the bytes, no visible difference here
        image = image.quantize(256, method=Image.Quantize.FASTOCTREE, dither=Image.Dither.NONE)
        image.save(out, format="PNG", optimize=True)
    else:
        image.save(out, format="PNG", compress_level=1)  # fast, for live redraws
    return out.getvalue()


def _canvas_png(fig, palette: bool) -> bytes:
    """Draw ``fig`` and encode what is on its canvas (no second layout pass)."""
    with _style(), recording_text_sizes() as sizes:
        fig.canvas.draw()
    rgba = np.asarray(fig.canvas.buffer_rgba())
    # The page's readability check reads the smallest text size back from the PNG.
    return with_text_size(_encode_png(np.ascontiguousarray(rgba[..., :3]), palette), sizes)


def figure_to_png(fig, dpi: int = FRAME_DPI, palette: bool = True) -> bytes:
    """Render a matplotlib figure to PNG bytes, small enough to store many in a page.

    Args:
        fig: the figure (it is closed if pyplot knows it).
        dpi: resolution; 72–90 keeps a typical figure at 20–40 KB.
        palette: reduce to 256 colours, which shrinks the file about threefold.
    """
    import matplotlib.pyplot as plt

    fig.set_dpi(dpi)
    png = _canvas_png(fig, palette)
    plt.close(fig)  # no-op for figures made by _figure
    return png


class _LayoutMemo:
    """Reuse one constrained layout across live redraws of figures with the same layout.

    Constrained layout measures every label on every draw, more than half of a redraw
    here. Most slider moves change the data, not the labels: the first figure of each
    ``key`` is laid out as usual and its axes positions are remembered; later figures with
    that key take those positions and skip the layout pass.
    """

    def __init__(self) -> None:
        self.positions: dict[Any, list] = {}

    def png(self, fig, key: Any) -> bytes:
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


def _image_layout(widgets):
    # No side margins: with the widgets' default 2 px each side, an image as wide as the
    # page's output area would overflow it and make the area scroll sideways.
    return widgets.Layout(max_width="100%", height="auto", margin="2px 0")


def _count_slider(widgets, values: Sequence[int], value: int, description: str, static: bool):
    """A slider over ``values`` (counts, shown with thousands separators) set to ``value``
    (to the middle one when ``value`` is not among them).

    Static: options are the labels, as the frame stack is linked by index; it moves while
    dragged. Live: each label carries its number, and the figure is redrawn on release.
    """
    common = dict(
        description=description,
        style={"description_width": "initial"},
        layout=widgets.Layout(width="420px"),
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
        f"<div style='line-height:1.35'><b>{html.escape(title)}</b><br>"
        f"<span style='font-size:0.92em'>{description}</span></div>"
    )


def _note(widgets, text: str, kind: str = "info"):
    colour = {"info": "#555555", "warn": "#8a4b00", "error": "#a00000"}[kind]
    return f"<div style='color:{colour};font-size:0.92em;margin:2px 0'>{html.escape(text)}</div>"


def _index_trait(widgets, control) -> str:
    """The synced integer trait of a control that equals the frame index."""
    if isinstance(control, widgets.IntSlider):
        if control.min != 0 or control.step != 1:
            raise ValueError("an IntSlider that selects frames must start at 0 with step 1")
        return "value"
    return "index"  # SelectionSlider, Dropdown, ToggleButtons, ...


def _current_index(widgets, control) -> int:
    return int(getattr(control, _index_trait(widgets, control)))


def _frame_stack(widgets, frames: list, controls: Sequence[Any], layout) -> tuple[Any, list]:
    """Nested Stacks of Image widgets: one nesting level per control, all jslinked.

    ``frames`` is a nested list of PNG bytes, indexed ``[i0][i1]...`` by the controls'
    indices. Every stack of level ``k`` is linked to control ``k``: the browser shows the
    right frame with no kernel.
    """
    control, rest = controls[0], controls[1:]
    links: list = []
    if not rest:
        children = [widgets.Image(value=png, format="png", layout=layout) for png in frames]
    else:
        children = []
        for sub in frames:
            child, sub_links = _frame_stack(widgets, sub, rest, layout)
            children.append(child)
            links += sub_links
    stack = widgets.Stack(children, selected_index=_current_index(widgets, control))
    links.append(
        widgets.jslink((control, _index_trait(widgets, control)), (stack, "selected_index"))
    )
    return stack, links


def _count_frames(frames: list) -> int:
    return sum(_count_frames(f) for f in frames) if isinstance(frames, list) else 1


def _static_explorer(
    widgets,
    title: str,
    description: str,
    control_rows: Sequence[Any],
    controls: dict[str, Any],
    linked: Sequence[Any],
    frames: list,
    note: str | None = None,
    *,
    alt: str,
):
    """Header, controls, optional note, then the frames selected by the ``linked`` controls.

    ``alt`` (required) describes what every frame shows, for readers who cannot see the
    images: it follows them as text that the page does not show, and the book's
    ``explorer-alt.js`` copies it into each frame's ``alt`` attribute (a widget image has
    none of its own).
    """
    stack, links = _frame_stack(widgets, frames, linked, _image_layout(widgets))
    rows = [_header(widgets, title, description), *control_rows]
    if note:
        rows.append(widgets.HTML(_note(widgets, note)))
    rows.append(stack)
    if not alt.strip():
        raise ValueError(f"explorer {title!r}: describe its frames in alt= (for screen readers)")
    # _static/explorer-alt.js copies this text into every frame's alt attribute.
    rows.append(
        widgets.HTML(f"<span class='visually-hidden explorer-alt'>{html.escape(alt)}</span>")
    )
    box = widgets.VBox(rows)
    box.add_class("static-explorer")
    box.add_class("transformer-explorer")
    box.controls = controls
    box.stack = stack
    box.links = links  # also keeps them alive: they are saved with the notebook's widgets
    box.frame_count = _count_frames(frames)
    return box


def _live_explorer(
    widgets,
    title: str,
    description: str,
    control_rows: Sequence[Any],
    controls: dict[str, Any],
    draw: Callable[[], tuple[bytes, str]],
    watched: Sequence[Any],
):
    """Header, controls, message line and image; ``draw()`` runs on every change.

    ``draw`` returns ``(png, note_html)``. An :class:`InputProblem` it raises becomes a
    note; any other exception becomes a short error line. The widget never shows a
    traceback.
    """
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
            message.value = _note(widgets, str(problem), "warn")
        except Exception as exc:  # the widget must survive anything a reader does
            state["error"] = exc  # for whoever debugs it: box.last_error()
            message.value = _note(
                widgets, f"Could not update the figure ({type(exc).__name__}: {exc}).", "error"
            )
        else:
            image.value = png
            message.value = note
        finally:
            state["busy"] = False

    for control in watched:
        control.observe(update, names="value")
    update()
    box = widgets.VBox([_header(widgets, title, description), *control_rows, message, image])
    box.add_class("live-explorer")
    box.add_class("transformer-explorer")
    box.controls = controls
    box.image = image
    box.message = message
    box.update = update
    box.last_error = lambda: state["error"]
    box._state = state
    return box
