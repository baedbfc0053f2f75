"""Interactive explorers: move a slider or type a sentence and watch attention change.

Every explorer comes in two versions that look alike:

* **live**, when a Python kernel runs (Jupyter, Colab): each control calls back into
  Python, which recomputes and redraws, so any value and any sentence works;
* **static**, for the HTML book, which has no kernel: a finite set of states is computed
  when the book is built, each one a small PNG, stacked in a ``widgets.Stack``. The
  controls are tied to the stack's ``selected_index`` with ``widgets.jslink``, so the
  browser switches frames by itself. Two or three controls use nested stacks.

:func:`static_mode` chooses the version: the book build sets ``TRANSFORMER_BOOK_STATIC=1``.
Every explorer also takes ``static=True`` or ``static=False`` to force one. Static explorers
carry the CSS class ``static-explorer``, live ones ``live-explorer``.

==========================================  ==========================================
Chapter                                     Explorer
==========================================  ==========================================
3 Scaled dot-product attention              :func:`temperature_explorer`
5 Positional encoding                       :func:`positional_encoding_explorer`
6 Masks                                     :func:`mask_explorer`
9 Training                                  :func:`lr_schedule_explorer`
11 Inside the trained model                 :func:`attention_explorer`,
                                            :func:`head_ablation_explorer`
==========================================  ==========================================

A live explorer is an ``ipywidgets.VBox`` with a few extra attributes, handy in tests and
for readers who want to drive it from code: ``controls`` (name → widget), ``image`` (the
``widgets.Image`` it draws into), ``message`` (a ``widgets.HTML`` for notes and input
problems), ``update()`` (redraw from the current control values) and ``last_error()`` (the
exception behind the last "Could not update" message, if any). A static explorer has
``controls``, ``stack`` (the outer ``widgets.Stack``), ``frame_count`` and ``links`` (the
``jslink`` widgets).

ipywidgets is imported only when an explorer is built, so ``import transformer_lib`` does
not need it. Figures follow :mod:`transformer_lib.visualize`: rows are queries, columns are
keys, colour-blind-safe maps.
"""

from __future__ import annotations

import contextlib
import functools
import html
import io
import math
import os
import textwrap
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = [
    "EXAMPLE_SENTENCES",
    "KERNEL_NOTE",
    "STATIC_ENV_VAR",
    "attention_explorer",
    "figure_to_png",
    "head_ablation_explorer",
    "lr_schedule_explorer",
    "mask_explorer",
    "positional_encoding_explorer",
    "static_mode",
    "temperature_explorer",
]

#: Environment variable that switches every explorer to its precomputed version.
STATIC_ENV_VAR = "TRANSFORMER_BOOK_STATIC"

#: Shown next to a text box that cannot work without a kernel.
KERNEL_NOTE = (
    "Typing your own sentence needs a live Python kernel — open this chapter in Colab "
    "(rocket button at the top)"
)

#: English sentences of the kind the shipped model was trained on (short, everyday).
EXAMPLE_SENTENCES = (
    "The cat is sleeping on the sofa.",
    "I don't know where my keys are.",
    "We will go to the beach tomorrow if it doesn't rain.",
    "She gave her brother a book for his birthday.",
    "Tom has lived in Berlin for three years.",
)
ABLATION_SENTENCE = "The children are playing in the garden."

#: Longest source (in tokens) the attention explorers take: longer maps are unreadable, and
#: the model was trained on sentences of at most a few dozen tokens.
MAX_TOKENS = 40
#: Resolution of precomputed frames: small PNGs keep the book's pages light.
FRAME_DPI = 80
#: Resolution of live redraws (a lower one is faster to draw).
LIVE_DPI = 72

_KINDS = ("encoder", "decoder", "cross")
_KIND_TITLES = {
    "encoder": "encoder self-attention",
    "decoder": "decoder self-attention (masked)",
    "cross": "encoder–decoder (cross) attention",
}
_QUERY_AXIS, _KEY_AXIS = "query (attends from)", "key (attends to)"  # as in visualize
_KIND_SHORT = {"encoder": "encoder self", "decoder": "decoder self", "cross": "cross"}


# =========================================================================== mode switch
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


# =========================================================================== drawing
@contextlib.contextmanager
def _style() -> Iterator[None]:
    """The book's matplotlib style (font sizes, colour cycle), warnings silenced.

    A glyph missing from the font (emoji, Chinese) would otherwise print a warning under
    the widget on every redraw.
    """
    import matplotlib as mpl

    from .visualize import _RC

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
    with _style():
        fig.canvas.draw()
    rgba = np.asarray(fig.canvas.buffer_rgba())
    return _encode_png(np.ascontiguousarray(rgba[..., :3]), palette)


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


def _plain(text: str) -> str:
    """User text for a matplotlib label: ``$`` would start mathtext."""
    return text.replace("$", r"\$")


def _token_label(token: str, width: int = 12) -> str:
    """A token as a tick label: blanks made visible, long ones shortened."""
    s = str(token)
    if not s.strip():
        s = s.replace(" ", "␣").replace("\t", "\\t").replace("\n", "\\n") or "''"
    return s if len(s) <= width else s[: width - 1] + "…"


def _softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


class _HeadGrid:
    """Draws attention maps of several heads side by side, straight into pixels (Pillow).

    The live explorers redraw on every change of a control, and matplotlib spends most of
    a redraw laying out the ~60 text labels of such a grid (≈ 80 ms here). Drawing the
    same picture with Pillow takes a few milliseconds, in the same font (DejaVu Sans)
    and colour map as :mod:`~transformer_lib.visualize`. Rows are queries, columns are
    keys; every map shares one colour bar from 0 to 1.
    """

    def __init__(self, dpi: int = LIVE_DPI):
        import matplotlib as mpl

        from .visualize import SEQUENTIAL_CMAP

        self.px = dpi / 72  # pixels per point
        lut = mpl.colormaps[SEQUENTIAL_CMAP](np.linspace(0.0, 1.0, 256))[:, :3]
        self.lut = np.round(lut * 255).astype(np.uint8)  # (256, 3)

    @staticmethod
    @functools.lru_cache(maxsize=16)
    def _font(size_px: int):
        from matplotlib import font_manager
        from PIL import ImageFont

        path = font_manager.findfont("DejaVu Sans")
        return ImageFont.truetype(path, size_px, layout_engine=ImageFont.Layout.BASIC)

    def font(self, points: float):
        return self._font(max(6, round(points * self.px)))

    def _colour(self, values: np.ndarray) -> np.ndarray:
        idx = np.round(np.clip(np.nan_to_num(values), 0.0, 1.0) * 255).astype(np.intp)
        return self.lut[idx]  # (..., 3)

    @staticmethod
    def _rotated(size: tuple[int, int], draw_fn) -> Any:
        """A text mask drawn left-to-right in a ``size`` strip, turned to read bottom-to-top."""
        from PIL import Image, ImageDraw

        strip = Image.new("L", size, 0)
        draw_fn(ImageDraw.Draw(strip))
        return strip.transpose(Image.Transpose.ROTATE_90)

    def render(
        self,
        mats: np.ndarray,
        query_tokens: Sequence[str],
        key_tokens: Sequence[str],
        *,
        title: str,
        panel_titles: Sequence[str],
        ncols: int,
        off: Sequence[bool] = (),
        palette: bool = False,
    ) -> bytes:
        """Tile ``mats`` ``(n, Tq, Tk)`` in ``ncols`` columns; return PNG bytes."""
        from PIL import Image, ImageDraw

        px = self.px
        n, tq, tk = mats.shape
        ncols = max(1, min(ncols, n))
        nrows = math.ceil(n / ncols)
        # Cell size: the maps fill about 430 x 400 points, each cell 9 to 24 points (a long
        # sentence makes a wider image rather than unreadable labels).
        cell_pt = float(np.clip(min(430 / (ncols * tk), 400 / (nrows * tq)), 9.0, 24.0))
        cell = max(3, round(cell_pt * px))
        tick_font = self.font(float(np.clip(cell_pt * 0.85, 7.5, 10.0)))
        label_font, title_font = self.font(11), self.font(11)
        panel_font = self.font(9.5)
        q_labels = [_token_label(t) for t in query_tokens]
        k_labels = [_token_label(t) for t in key_tokens]
        pad = round(4 * px)
        line = round(14 * px)  # height of one line of 11-point text
        gap_x = max(cell, round(12 * px))
        gap_y = line + pad  # room for the panel titles of the next row
        maps_w = ncols * tk * cell + (ncols - 1) * gap_x
        maps_h = nrows * tq * cell + (nrows - 1) * gap_y
        y_label_w = round(max((tick_font.getlength(s) for s in q_labels), default=0))
        x_label_h = round(max((tick_font.getlength(s) for s in k_labels), default=0))
        left = pad + line + pad + y_label_w + pad
        cbar_w, cbar_label_w = round(12 * px), round(self.font(9).getlength("0.0")) + pad
        width = max(left + maps_w + 3 * pad + cbar_w + cbar_label_w + line + pad, round(400 * px))
        wrap = max(40, int(width / (6.2 * px)))
        lines = [ln for part in title.split("\n") for ln in textwrap.wrap(part, wrap) or [""]]
        top = pad + len(lines) * line + pad + line + pad  # title, then the first panel titles
        height = top + maps_h + pad + x_label_h + pad + line + pad

        canvas = np.full((height, width, 3), 255, dtype=np.uint8)
        origins = []
        for idx in range(n):
            r, c = divmod(idx, ncols)
            y0, x0 = top + r * (tq * cell + gap_y), left + c * (tk * cell + gap_x)
            rgb = self._colour(mats[idx])  # (Tq, Tk, 3)
            block = rgb.repeat(cell, axis=0).repeat(cell, axis=1)
            if idx < len(off) and off[idx]:  # fade a switched-off head towards white
                block = (0.3 * block + 0.7 * 255).astype(np.uint8)
            canvas[y0 : y0 + tq * cell, x0 : x0 + tk * cell] = block
            origins.append((y0, x0))
        # Colour bar: 0 at the bottom, 1 at the top.
        cb_h = min(maps_h, round(250 * px))
        cb_x, cb_y = left + maps_w + 3 * pad, top
        ramp = self._colour(np.linspace(1.0, 0.0, cb_h))[:, None, :]
        canvas[cb_y : cb_y + cb_h, cb_x : cb_x + cbar_w] = ramp.repeat(cbar_w, axis=1)

        image = Image.fromarray(canvas)
        draw = ImageDraw.Draw(image)
        ink, grey = (0, 0, 0), (68, 68, 68)
        for i, text_line in enumerate(lines):
            draw.text((pad, pad + i * line), text_line, font=title_font, fill=ink)
        rows_y0 = sorted({y0 for y0, _ in origins})
        cols_x0 = sorted({x0 for _, x0 in origins})
        for y0 in rows_y0:  # query labels left of each row of panels
            for i, s in enumerate(q_labels):
                draw.text(
                    (left - pad, y0 + i * cell + cell // 2),
                    s,
                    font=tick_font,
                    fill=ink,
                    anchor="rm",
                )
        longest = max(panel_titles, key=len, default="")
        size = 9.5
        while size > 6 and panel_font.getlength(longest) > tk * cell + gap_x - 2 * pad:
            size -= 0.5  # narrow panels: smaller titles rather than overlapping ones
            panel_font = self.font(size)
        for idx, (y0, x0) in enumerate(origins):
            draw.text(
                (x0 + tk * cell // 2, y0 - pad // 2),
                panel_titles[idx],
                font=panel_font,
                fill=ink,
                anchor="md",
            )
            if idx < len(off) and off[idx]:
                w, h = tk * cell, tq * cell
                for c in range(0, w + h, round(10 * px)):  # hatching: lines x + y = c
                    start = (x0 + max(0, c - h), y0 + min(h, c))
                    end = (x0 + min(w, c), y0 + max(0, c - w))
                    draw.line([start, end], fill=grey, width=1)
                draw.rectangle([x0, y0, x0 + w - 1, y0 + h - 1], outline=grey)
                draw.text(
                    (x0 + w // 2, y0 + h // 2),
                    "switched off",
                    font=panel_font,
                    fill=ink,
                    anchor="mm",
                    stroke_width=2,
                    stroke_fill=(255, 255, 255),
                )
        # Key labels under the bottom row, reading upwards, as in the other heatmaps.
        strip_w = x_label_h + 1

        def key_labels(d) -> None:
            for x0 in cols_x0:
                for j, s in enumerate(k_labels):
                    d.text(
                        (strip_w - 1, x0 - left + j * cell + cell // 2),
                        s,
                        font=tick_font,
                        fill=255,
                        anchor="rm",
                    )

        maps_bottom = top + maps_h
        mask = self._rotated((strip_w, maps_w), key_labels)
        image.paste(ink, (left, maps_bottom + pad), mask)
        draw.text(
            (left + maps_w // 2, height - pad), _KEY_AXIS, font=label_font, fill=ink, anchor="md"
        )
        q_axis = _QUERY_AXIS if label_font.getlength(_QUERY_AXIS) <= maps_h else "query"
        q_axis_w = round(label_font.getlength(q_axis)) + 2
        mask = self._rotated(
            (q_axis_w, line), lambda d: d.text((0, 0), q_axis, font=label_font, fill=255)
        )
        image.paste(ink, (pad, top + max(0, (maps_h - q_axis_w) // 2)), mask)
        for v in (0.0, 0.2, 0.4, 0.6, 0.8, 1.0):
            y = cb_y + round((1 - v) * (cb_h - 1))
            draw.line([(cb_x + cbar_w, y), (cb_x + cbar_w + 3, y)], fill=ink)
            draw.text((cb_x + cbar_w + 5, y), f"{v:.1f}", font=self.font(9), fill=ink, anchor="lm")
        cb_label_w = round(self.font(10).getlength("attention weight")) + 2
        mask = self._rotated(
            (cb_label_w, line),
            lambda d: d.text((0, 0), "attention weight", font=self.font(10), fill=255),
        )
        image.paste(
            ink, (cb_x + cbar_w + cbar_label_w + pad, cb_y + max(0, (cb_h - cb_label_w) // 2)), mask
        )
        return _encode_png(np.asarray(image), palette)


# =========================================================================== assembly
def _image_layout(widgets):
    return widgets.Layout(max_width="100%", height="auto")


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
):
    """Header, controls, optional note, then the frames selected by the ``linked`` controls."""
    stack, links = _frame_stack(widgets, frames, linked, _image_layout(widgets))
    rows = [_header(widgets, title, description), *control_rows]
    if note:
        rows.append(widgets.HTML(_note(widgets, note)))
    rows.append(stack)
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


# =========================================================================== 1. temperature
TEMPERATURE_TOKENS = ("The", "cat", "sat", "on", "the", "mat")
_STATIC_TAUS = (1, 2, 4, 8, 16, 32, 64)


def _temperature_scores(n: int, d_k: int, seed: int) -> np.ndarray:
    """Raw dot products ``q · k`` of random unit-Gaussian vectors: std ≈ √d_k."""
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((n, d_k))
    k = rng.standard_normal((n, d_k))
    return q @ k.T  # (n, n)


def _temperature_figure(tokens: Sequence[str], d_k: int, tau: float, seed: int):
    from .visualize import OKABE_ITO, plot_attention

    n = len(tokens)
    weights = _softmax(_temperature_scores(n, d_k, seed) / tau)
    entropy = -(weights * np.log2(np.clip(weights, 1e-12, None))).sum(-1)
    with _style():
        fig = _figure((9.4, 4.3), layout="constrained")
        ax0, ax1 = fig.subplots(1, 2, width_ratios=[1.55, 1])
        marker = " = √d_k, the paper's scaling" if math.isclose(tau, math.sqrt(d_k)) else ""
        plot_attention(
            weights,
            tokens,
            tokens,
            ax=ax0,
            annotate=True,
            title=f"softmax(q·k / τ) with τ = {tau:g}{marker}",
        )
        ax1.barh(np.arange(n), entropy, color=OKABE_ITO[0], height=0.6)
        uniform = math.log2(n)
        ax1.axvline(uniform, color="#666666", linestyle="--", linewidth=1.2)
        ax1.set_xlim(0, uniform * 1.05)
        ax1.set_ylim(n - 0.5, -0.5)  # same row order as the heatmap
        ax1.set_yticks(np.arange(n), [_plain(t) for t in tokens])
        ax1.text(
            uniform,
            -0.45,
            "uniform ",
            ha="right",
            va="top",
            rotation=90,
            fontsize=9,
            color="#444444",
        )
        ax1.set_xlabel("entropy of the row (bits)")
        ax1.set_ylabel("query (attends from)")
        ax1.set_title(f"Spread of each row: mean {entropy.mean():.2f} bits")
        ax1.grid(axis="x", alpha=0.3)
        fig.suptitle(
            f"Random queries and keys, d_k = {d_k}: raw scores q·k have std ≈ √d_k = "
            f"{math.sqrt(d_k):.3g}"
        )
    return fig


def temperature_explorer(
    tokens: Sequence[str] = TEMPERATURE_TOKENS,
    d_k: int = 64,
    *,
    seed: int = 0,
    static: bool | None = None,
):
    """Softmax temperature: how dividing the scores by τ sharpens or flattens attention.

    Chapter 3. The scores are dot products of random ``d_k``-dimensional queries and keys
    (std ≈ √d_k); the weights are ``softmax(scores / τ)``. τ = √d_k is the paper's
    scaling (§3.2.1); τ → 0 gives a one-hot arg-max, τ → ∞ a uniform average. The right
    panel shows each row's entropy in bits.

    Args:
        tokens: the token names (rows = queries, columns = keys).
        d_k: key width; the static version uses it throughout.
        seed: seed of the random queries and keys.
        static: force the precomputed (True) or the live (False) version; default
            :func:`static_mode`.

    Returns:
        The explorer (an ``ipywidgets.VBox``). Live: a τ slider and a ``d_k`` choice.
        Static: a τ slider over 1, 2, 4, ..., 64 (seven frames).
    """
    widgets = _widgets()
    tokens = [str(t) for t in tokens]
    if len(tokens) < 2:
        raise ValueError("temperature_explorer needs at least two tokens")
    title = "Softmax temperature"
    if _want_static(static):
        taus = list(_STATIC_TAUS)
        default = min(range(len(taus)), key=lambda i: abs(taus[i] - math.sqrt(d_k)))
        labels = [f"{t:g} (√d_k)" if i == default else f"{t:g}" for i, t in enumerate(taus)]
        tau = widgets.SelectionSlider(
            options=labels,
            index=default,
            description="τ",
            continuous_update=True,
            layout=widgets.Layout(width="420px"),
        )
        frames = [figure_to_png(_temperature_figure(tokens, d_k, t, seed)) for t in taus]
        return _static_explorer(
            widgets,
            title,
            "Move the slider: divide the scores by τ before the softmax.",
            [tau],
            {"tau": tau},
            [tau],
            frames,
        )
    tau = widgets.FloatLogSlider(
        value=math.sqrt(d_k),
        base=2,
        min=-2,
        max=8,
        step=0.25,
        description="τ",
        continuous_update=False,
        readout_format=".3g",
        layout=widgets.Layout(width="420px"),
    )
    dk = widgets.Dropdown(
        options=sorted({4, 16, 64, 256, int(d_k)}),
        value=int(d_k),
        description="d_k",
        layout=widgets.Layout(width="160px"),
    )

    memo = _LayoutMemo()

    def draw() -> tuple[bytes, str]:
        fig = _temperature_figure(tokens, dk.value, tau.value, seed)
        return memo.png(fig, key=dk.value), ""

    return _live_explorer(
        widgets,
        title,
        "Divide the scores by τ before the softmax; change d_k to see why the paper picks √d_k.",
        [widgets.HBox([tau, dk])],
        {"tau": tau, "d_k": dk},
        draw,
        [tau, dk],
    )


# =========================================================================== 2. positions
_PE_SIZES = (32, 128, 512)
_PE_FRACTIONS = (
    ("0", 0.0),
    ("1/16", 1 / 16),
    ("1/8", 1 / 8),
    ("1/4", 1 / 4),
    ("3/8", 3 / 8),
    ("1/2", 1 / 2),
    ("3/4", 3 / 4),
    ("15/16", 15 / 16),
)


def _pe_figure(d_model: int, length: int, pair: int):
    from matplotlib.patheffects import Normal, Stroke

    from .components.positional import sinusoidal_positional_encoding
    from .visualize import plot_positional_encoding, plot_sinusoids

    pe = sinusoidal_positional_encoding(length, d_model).numpy()
    dims = [d for d in (2 * pair, 2 * pair + 1) if d < d_model]
    wavelength = 2 * math.pi * 10000 ** (2 * pair / d_model)
    with _style():
        fig = _figure((11.0, 4.3), layout="constrained")
        fig.get_layout_engine().set(wspace=0.06)
        ax0, ax1 = fig.subplots(1, 2, width_ratios=[1, 1.3])
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
        fig.suptitle(
            f"d_model = {d_model}, pair i = {pair} (2i/d_model = {2 * pair / d_model:.3g}): "
            f"wavelength 2π·10000^(2i/d_model) = "
            f"{f'{wavelength:,.0f}' if wavelength >= 100 else f'{wavelength:.1f}'} positions"
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
        ``d_model`` ∈ {32, 128, 512} × eight values of ``2i / d_model`` (24 frames).
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


# =========================================================================== 3. LR schedule
_LR_SIZES = ((128, "128 (this book)"), (512, "512 (paper, base)"), (1024, "1024 (paper, big)"))
_LR_WARMUPS = (100, 200, 400, 1000, 2000, 4000, 8000)


def _noam(step: int, d_model: int, warmup: int, factor: float) -> float:
    from .pipeline.objectives import noam_lr

    return noam_lr(step, d_model, warmup, factor)


def _lr_figure(d_model: int, warmup: int, factor: float, max_steps: int):
    from .visualize import OKABE_ITO, plot_lr_schedule

    steps = np.unique(np.concatenate([np.linspace(1, max_steps, 800).astype(int), [warmup, 4000]]))
    steps = steps[steps <= max_steps]
    ours = np.array([_noam(s, d_model, warmup, factor) for s in steps])
    paper = np.array([_noam(s, 512, 4000, 1.0) for s in steps])
    label = f"d_model = {d_model}, warm-up = {warmup:,}, factor = {factor:g}"
    with _style():
        fig = _figure((8.2, 4.4), layout="constrained")
        ax = fig.subplots()
        plot_lr_schedule(
            {
                "paper, base model: d_model = 512, warm-up = 4,000": (steps, paper),
                label: (steps, ours),
            },
            ax=ax,
            warmup_steps=warmup if warmup <= max_steps else None,
            title="",
        )
        fig.suptitle("lr = factor · d_model^−0.5 · min(step^−0.5, step · warmup^−1.5)  (§5.3)")
        ax.lines[0].set(color="#888888", linestyle="--", linewidth=1.6)
        ax.lines[1].set(color=OKABE_ITO[1], linewidth=2.2)
        if warmup <= max_steps:
            peak = _noam(warmup, d_model, warmup, factor)
            ax.plot([warmup], [peak], "o", color=OKABE_ITO[1])
            ax.annotate(
                f"peak {peak:.2e}",
                (warmup, peak),
                xytext=(8, 4),
                textcoords="offset points",
                fontsize=9,
            )
        ax.set_ylim(0, max(ours.max(), paper.max()) * 1.15)
        ax.legend(loc="upper right")  # again: the restyled lines need new legend handles
    return fig


def lr_schedule_explorer(*, static: bool | None = None):
    """The warm-up-then-decay learning-rate schedule of §5.3 (Eq. 3) against the paper's.

    Chapter 9. Uses :func:`transformer_lib.training.noam_lr`; the paper's base model
    (``d_model`` 512, 4,000 warm-up steps, factor 1) is drawn dashed for reference.

    Returns:
        The explorer. Live: ``d_model``, warm-up steps, factor and the number of steps
        shown. Static: ``d_model`` ∈ {128 (this book), 512, 1024} × seven warm-up lengths
        (21 frames, factor 1, 20,000 steps).
    """
    widgets = _widgets()
    title = "Learning-rate schedule"
    if _want_static(static):
        sizes, warmups = _LR_SIZES, _LR_WARMUPS
        dm = widgets.ToggleButtons(
            options=[label for _, label in sizes],
            index=0,
            description="d_model",
            style={"button_width": "130px"},
        )
        wu = widgets.SelectionSlider(
            options=[f"{w:,}" for w in warmups],
            index=warmups.index(400) if 400 in warmups else 0,  # this book's warm-up
            description="warm-up",
            layout=widgets.Layout(width="420px"),
        )
        frames = [[figure_to_png(_lr_figure(d, w, 1.0, 20_000)) for w in warmups] for d, _ in sizes]
        return _static_explorer(
            widgets,
            title,
            "Choose d_model and the warm-up length (factor 1). The peak is at step = warm-up.",
            [dm, wu],
            {"d_model": dm, "warmup": wu},
            [dm, wu],
            frames,
        )
    dm = widgets.Dropdown(
        options=[64, 128, 256, 512, 1024],
        value=128,
        description="d_model",
        layout=widgets.Layout(width="180px"),
    )
    wu = widgets.IntSlider(
        value=400,
        min=50,
        max=16_000,
        step=50,
        description="warm-up",
        continuous_update=False,
    )
    factor = widgets.FloatSlider(
        value=1.0,
        min=0.1,
        max=5.0,
        step=0.1,
        description="factor",
        continuous_update=False,
    )
    span = widgets.SelectionSlider(
        options=[("2,000", 2000), ("5,000", 5000), ("20,000", 20_000), ("100,000", 100_000)],
        value=20_000,
        description="steps shown",
        style={"description_width": "initial"},
    )

    memo = _LayoutMemo()

    def draw() -> tuple[bytes, str]:
        fig = _lr_figure(dm.value, wu.value, factor.value, span.value)
        return memo.png(fig, key=(dm.value, span.value)), ""

    return _live_explorer(
        widgets,
        title,
        "The rate rises linearly during warm-up, then decays as 1/√step.",
        [widgets.HBox([dm, wu]), widgets.HBox([factor, span])],
        {"d_model": dm, "warmup": wu, "factor": factor, "steps": span},
        draw,
        [dm, wu, factor, span],
    )


# =========================================================================== 4. masks
MASK_BATCH = (
    ("<bos>", "Ich", "bin", "müde", ".", "<pad>", "<pad>"),
    ("<bos>", "Wo", "ist", "der", "Bahnhof", "?", "<pad>"),
    ("<bos>", "Hallo", "!", "<pad>", "<pad>", "<pad>", "<pad>"),
)


def _mask_figure(batch: Sequence[Sequence[str]], padding: bool, causal: bool, row: int):
    import torch

    from .components.attention import scaled_dot_product_attention
    from .components.masks import causal_mask, combine_masks, padding_mask
    from .visualize import plot_attention, plot_mask

    vocab = {"<pad>": 0}
    ids = torch.tensor([[vocab.setdefault(t, len(vocab)) for t in seq] for seq in batch])  # (B, T)
    B, T = ids.shape
    gen = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(B, 1, T, 8, generator=gen) for _ in range(3))  # (B, H=1, T, Dk)
    mask = combine_masks(
        padding_mask(ids, pad_id=0) if padding else None,  # (B, 1, 1, T)
        causal_mask(T) if causal else None,  # (1, 1, T, T)
    )
    _, weights = scaled_dot_product_attention(q, k, v, mask)  # (B, 1, T, T)
    full = torch.ones(B, 1, T, T, dtype=torch.bool)
    shown = (full if mask is None else mask.expand(B, 1, T, T))[row, 0]  # (T, T)
    tokens = list(batch[row])
    name = " + ".join(n for n, on in (("padding", padding), ("causal", causal)) if on) or "none"
    with _style():
        fig = _figure((10.6, 4.3), layout="constrained")
        ax0, ax1 = fig.subplots(1, 2)
        plot_mask(shown, tokens, tokens, ax=ax0, title=f"Mask: {name}")
        plot_attention(
            weights[row, 0],
            tokens,
            tokens,
            ax=ax1,
            annotate=True,
            title="Attention weights (each row sums to 1)",
        )
        fig.suptitle(f"Sentence {row} of a padded batch of {B}, random queries and keys")
    return fig


def mask_explorer(batch: Sequence[Sequence[str]] = MASK_BATCH, *, static: bool | None = None):
    """Padding and causal masks on a small padded batch, and the attention they allow.

    Chapter 6 (§3.2.3). Left: the boolean mask (True = may attend); right: the weights of
    :func:`~transformer_lib.attention.scaled_dot_product_attention` with that mask, for
    random queries and keys. Rows are queries, columns are keys.

    Args:
        batch: token sequences of equal length, padded with ``"<pad>"``.
        static: force the precomputed (True) or the live (False) version.

    Returns:
        The explorer: padding on/off, causal on/off and a slider for the sentence
        (static: 2 × 2 × ``len(batch)`` frames).
    """
    widgets = _widgets()
    batch = [list(map(str, seq)) for seq in batch]
    if not batch or len({len(s) for s in batch}) != 1:
        raise ValueError("mask_explorer needs sequences of one common (padded) length")
    pad = widgets.ToggleButtons(
        options=["off", "on"], index=1, description="padding", style={"button_width": "50px"}
    )
    causal = widgets.ToggleButtons(
        options=["off", "on"], index=1, description="causal", style={"button_width": "50px"}
    )
    row = widgets.IntSlider(
        value=0, min=0, max=len(batch) - 1, description="sentence", continuous_update=True
    )
    controls = {"padding": pad, "causal": causal, "sentence": row}
    title = "Attention masks"
    description = "Switch the padding and causal masks on and off; slide through the batch."
    rows = [widgets.HBox([pad, causal]), row]
    if _want_static(static):
        frames = [
            [
                [figure_to_png(_mask_figure(batch, bool(p), bool(c), r)) for r in range(len(batch))]
                for c in (0, 1)
            ]
            for p in (0, 1)
        ]
        return _static_explorer(
            widgets, title, description, rows, controls, [pad, causal, row], frames
        )
    row.continuous_update = False

    memo = _LayoutMemo()

    def draw() -> tuple[bytes, str]:
        fig = _mask_figure(batch, pad.index == 1, causal.index == 1, row.value)
        return memo.png(fig, key=row.value), ""

    return _live_explorer(widgets, title, description, rows, controls, draw, [pad, causal, row])


# =========================================================================== the model
@functools.lru_cache(maxsize=1)
def _shipped_translator():
    from .pipeline.pretrained import load_pretrained

    return load_pretrained()


def _as_translator(translator):
    """A :class:`~transformer_lib.pretrained.Translator`: the shipped one by default."""
    from .pipeline.pretrained import Translator

    if translator is None:
        return _shipped_translator()
    if isinstance(translator, tuple) and len(translator) == 2:  # (model, tokenizer)
        return Translator(*translator)
    if not all(hasattr(translator, a) for a in ("model", "tokenizer", "translate")):
        raise TypeError(
            "translator must be a transformer_lib.pretrained.Translator (see load_pretrained) "
            f"or a (model, tokenizer) pair, got {type(translator).__name__}"
        )
    return translator


@dataclass
class _Run:
    """One sentence through the model: its translation and every attention map."""

    source: str
    src_tokens: list[str]
    tgt_tokens: list[str]  # decoder input: <bos> + the translation's tokens
    translation: str
    attention: dict[str, list[np.ndarray]]  # kind -> per layer (H, Tq, Tk)
    notes: list[str] = field(default_factory=list)

    def maps(self, kind: str, layer: int) -> tuple[np.ndarray, list[str], list[str]]:
        """``(weights (H, Tq, Tk), query tokens, key tokens)`` of one layer."""
        q = self.src_tokens if kind == "encoder" else self.tgt_tokens
        k = self.tgt_tokens if kind == "decoder" else self.src_tokens
        return self.attention[kind][layer], q, k


def _translate(translator, text: Any) -> _Run:
    """Greedy translation of ``text`` with the attention maps of the teacher-forced pass.

    :meth:`Translator.translate` with ``return_attention=True`` runs
    ``model(src, <bos> + translation, return_attention=True)``. Input it cannot take is
    explained with an :class:`InputProblem`; a sentence longer than :data:`MAX_TOKENS` is
    cut, with a note.
    """
    if not isinstance(text, str) or not text.strip():
        raise InputProblem("Type an English sentence into the box (it is empty).")
    text = " ".join(text.split())
    tok, model = translator.tokenizer, translator.model
    enc = tok.backend.encode(text, add_special_tokens=False)
    ids, offsets = list(enc.ids), list(enc.offsets)
    if not ids:
        raise InputProblem("The sentence has no tokens the model can read.")
    if all(i == tok.unk_id or not piece.strip("\u2581") for i, piece in zip(ids, enc.tokens)):
        raise InputProblem(
            "None of these characters occurred in the training data (English and German "
            "text), so the model would see only <unk>. Try an English sentence."
        )
    notes = []
    limit = min(MAX_TOKENS, model.config.max_len)
    if len(ids) > limit:
        notes.append(
            f"The sentence has {len(ids)} tokens; only the first {limit} are translated (the "
            f"model was trained on short sentences, and longer maps are unreadable)."
        )
        text = text[: offsets[limit - 1][1]]
        ids, offsets = ids[:limit], offsets[:limit]
    unknown = [text[a:b] for i, (a, b) in zip(ids, offsets) if i == tok.unk_id]
    if unknown:
        notes.append(
            "Never seen in training, so the model reads it as <unk>: "
            + " ".join(dict.fromkeys(unknown))
        )
    result = translator.translate(text, return_attention=True)  # greedy
    if not result.target_tokens or result.target_tokens[-1] != "<eos>":
        notes.append(
            f"The model stopped after {len(result.target_tokens)} tokens without ending the "
            "sentence."
        )
    elif len(result.target_tokens) == 1:
        notes.append("The model's translation is empty (it ended the sentence at once).")
    attention = {
        kind: [np.asarray(a.detach().float().cpu()) for a in result.attention[kind]]
        for kind in _KINDS
    }  # kind -> N x (H, Tq, Tk)
    return _Run(
        source=text,
        src_tokens=list(result.source_tokens),
        tgt_tokens=list(result.decoder_input_tokens),
        translation=result.text,
        attention=attention,
        notes=notes,
    )


@contextlib.contextmanager
def _heads_off(model, off: Sequence[tuple[str, int, int]]) -> Iterator[None]:
    """Switch the listed ``(kind, layer, head)`` off; restore every gate afterwards."""
    import torch

    saved = {kind: [m.head_gate for m in model.attention_modules(kind)] for kind in _KINDS}
    try:
        gates: dict[tuple[str, int], torch.Tensor] = {}
        for kind, layer, head in off:
            gate = gates.setdefault((kind, layer), torch.ones(model.config.n_heads))
            gate[head] = 0.0
        for (kind, layer), gate in gates.items():
            model.set_head_gate(kind, layer, gate)
        yield
    finally:
        for kind, old in saved.items():
            for layer, gate in enumerate(old):
                model.set_head_gate(kind, layer, gate)


def _run_title(run: _Run) -> str:
    return f"“{run.source}” → “{run.translation}”"


def _notes_html(widgets, run: _Run, extra: str = "") -> str:
    parts = [
        f"<div style='margin:2px 0'><b>Translation</b> (greedy): "
        f"{html.escape(run.translation) or '<i>(empty)</i>'}</div>"
    ]
    parts += [_note(widgets, n, "warn") for n in run.notes]
    return "".join(parts) + extra


def _attention_png(
    grid: _HeadGrid, run: _Run, kind: str, layer: int, head: int | None, palette: bool
) -> bytes:
    mats, q, k = run.maps(kind, layer)
    heads = list(range(mats.shape[0])) if head is None else [head]
    return grid.render(
        mats[heads],
        q,
        k,
        title=f"{_run_title(run)}\n{_KIND_TITLES[kind]}, layer {layer}",
        panel_titles=[f"head {h}" for h in heads],
        ncols=math.ceil(math.sqrt(len(heads))),
        palette=palette,
    )


# =========================================================================== 5. attention
def attention_explorer(
    translator=None,
    sentences: Sequence[str] = EXAMPLE_SENTENCES,
    *,
    static: bool | None = None,
):
    """Type an English sentence; see the model's translation and its attention maps.

    Chapter 11. The translation is greedy; the maps come from a teacher-forced pass
    ``model(src, tgt_in, return_attention=True)`` over the source and ``<bos>`` + the
    translation. Choose the kind (encoder self, decoder self, cross), the layer and one
    head or all heads.

    Args:
        translator: a :class:`~transformer_lib.pretrained.Translator` (or a
            ``(model, tokenizer)`` pair); default: the shipped model,
            :func:`~transformer_lib.pretrained.load_pretrained`.
        sentences: example sentences (the static version precomputes these).
        static: force the precomputed (True) or the live (False) version.

    Returns:
        The explorer. Static: a sentence menu × kind × layer slider, every frame showing
        all heads (``len(sentences) · 3 · N`` frames); the text box is disabled.
    """
    widgets = _widgets()
    translator = _as_translator(translator)
    model = translator.model
    sentences = [s for s in sentences if isinstance(s, str) and s.strip()]
    if not sentences:
        raise ValueError("attention_explorer needs at least one example sentence")
    n_layers, n_heads = model.config.n_encoder_layers, model.config.n_heads
    if model.config.n_decoder_layers != n_layers:
        raise ValueError("attention_explorer expects as many encoder as decoder layers")
    title = "Attention in the trained model"
    kind = widgets.ToggleButtons(
        options=[("encoder self", "encoder"), ("decoder self", "decoder"), ("cross", "cross")],
        value="cross",
        description="attention",
        style={"button_width": "110px"},
    )
    layer = widgets.IntSlider(
        value=0, min=0, max=n_layers - 1, description="layer", continuous_update=True
    )
    text = widgets.Text(
        description="sentence", layout=widgets.Layout(width="95%"), continuous_update=False
    )
    if _want_static(static):
        grid = _HeadGrid(dpi=FRAME_DPI)
        runs = [_translate(translator, s) for s in sentences]
        frames = [
            [
                [_attention_png(grid, run, kd, ly, None, True) for ly in range(n_layers)]
                for kd in _KINDS
            ]
            for run in runs
        ]
        example = widgets.Dropdown(
            options=sentences, index=0, description="example", layout=widgets.Layout(width="95%")
        )
        text.disabled = True
        text.placeholder = "your own sentence (needs a live kernel)"
        return _static_explorer(
            widgets,
            title,
            "Pick an example sentence, the kind of attention and the layer. Each panel is one "
            "head; rows are queries, columns are keys.",
            [example, text, kind, layer],
            {"example": example, "kind": kind, "layer": layer, "sentence": text},
            [example, kind, layer],
            frames,
            note=KERNEL_NOTE,
        )

    head = widgets.Dropdown(
        options=[("all heads", -1)] + [(f"head {h}", h) for h in range(n_heads)],
        value=-1,
        description="head",
        layout=widgets.Layout(width="180px"),
    )
    example = widgets.Dropdown(
        options=["(type your own)", *sentences],
        index=1,
        description="example",
        layout=widgets.Layout(width="95%"),
    )
    text.value = sentences[0]
    grid = _HeadGrid(dpi=LIVE_DPI)
    cache: dict[str, Any] = {"text": None, "run": None}

    def draw() -> tuple[bytes, str]:
        if cache["text"] != text.value or cache["run"] is None:
            cache["run"], cache["text"] = None, None
            cache["run"] = _translate(translator, text.value)
            cache["text"] = text.value
        run = cache["run"]
        h = None if head.value < 0 else head.value
        png = _attention_png(grid, run, kind.value, layer.value, h, False)
        return png, _notes_html(widgets, run)

    def pick_example(change) -> None:
        if example.index and example.index > 0:
            text.value = example.value

    example.observe(pick_example, names="index")
    box = _live_explorer(
        widgets,
        title,
        "Type a sentence and press Enter. Each panel is one head; rows are queries, columns "
        "are keys.",
        [example, text, kind, widgets.HBox([layer, head])],
        {"example": example, "sentence": text, "kind": kind, "layer": layer, "head": head},
        draw,
        [text, kind, layer, head],
    )
    box.grid = grid
    return box


# =========================================================================== 6. ablation
def _ablations(n_layers: int, n_heads: int) -> list[tuple[str, tuple[tuple[str, int, int], ...]]]:
    """The precomputed ablations: none, each cross head, whole layers, whole kinds."""
    heads = range(n_heads)
    out: list[tuple[str, tuple[tuple[str, int, int], ...]]] = [("all heads on", ())]
    for ly in range(n_layers):
        for h in heads:
            out.append((f"cross-attention layer {ly}, head {h} off", (("cross", ly, h),)))
    for ly in range(n_layers):
        out.append(
            (f"all cross-attention heads of layer {ly} off", tuple(("cross", ly, h) for h in heads))
        )
    out.append(
        (
            "all cross-attention off: the decoder cannot see the source",
            tuple(("cross", ly, h) for ly in range(n_layers) for h in heads),
        )
    )
    for ly in range(n_layers):
        out.append(
            (
                f"all encoder self-attention heads of layer {ly} off",
                tuple(("encoder", ly, h) for h in heads),
            )
        )
    out.append(
        (
            "all decoder self-attention off",
            tuple(("decoder", ly, h) for ly in range(n_layers) for h in heads),
        )
    )
    return out


def _ablation_png(
    grid: _HeadGrid,
    base: _Run,
    run: _Run,
    off: Sequence[tuple[str, int, int]],
    label: str,
    palette: bool,
) -> bytes:
    n_layers = len(run.attention["cross"])
    n_heads = run.attention["cross"][0].shape[0]
    mats = np.concatenate(run.attention["cross"], axis=0)  # (N·H, T, S)
    switched = set(off)
    same = " (unchanged)" if run.translation == base.translation else ""
    lines = [f"Source: “{run.source}”", f"All heads on: “{base.translation}”"]
    if switched:  # the first frame switches nothing off: one translation line is enough
        lines.append(f"{label[0].upper() + label[1:]}: “{run.translation}”{same}")
    lines.append("Cross-attention of that translation (decoder queries, source keys):")
    title = "\n".join(lines)
    return grid.render(
        mats,
        run.tgt_tokens,
        run.src_tokens,
        title=title,
        panel_titles=[f"layer {ly}, head {h}" for ly in range(n_layers) for h in range(n_heads)],
        ncols=n_heads,
        off=[("cross", ly, h) in switched for ly in range(n_layers) for h in range(n_heads)],
        palette=palette,
    )


def _diff_html(base: str, now: str) -> str:
    """``now`` with new words highlighted and words of ``base`` that are gone struck out."""
    import difflib

    a, b = base.split(), now.split()
    out = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b).get_opcodes():
        old, new = html.escape(" ".join(a[i1:i2])), html.escape(" ".join(b[j1:j2]))
        if op == "equal":
            out.append(new)
            continue
        if old:
            out.append(f"<del style='color:#a00000'>{old}</del>")
        if new:
            out.append(f"<mark>{new}</mark>")
    return " ".join(out) or "<i>(empty)</i>"


def head_ablation_explorer(
    translator=None,
    sentence: str = ABLATION_SENTENCE,
    *,
    static: bool | None = None,
):
    """Switch attention heads off and watch the translation and the cross-attention change.

    Chapter 11. A head is switched off with :meth:`Transformer.set_head_gate` (its output
    is multiplied by 0); the model's gates are restored after every redraw.

    Args:
        translator: a Translator or ``(model, tokenizer)``; default: the shipped model.
        sentence: the English sentence to translate.
        static: force the precomputed (True) or the live (False) version.

    Returns:
        The explorer. Live: one toggle per head of every layer and kind, and a text box.
        Static: a slider (and a menu) over a fixed list of ablations — none, each
        cross-attention head, whole layers, whole kinds — each frame showing the
        translation and the cross-attention maps.
    """
    widgets = _widgets()
    translator = _as_translator(translator)
    model = translator.model
    n_layers, n_heads = model.config.n_decoder_layers, model.config.n_heads
    title = "Switching heads off"
    if _want_static(static):
        specs = _ablations(n_layers, n_heads)
        grid = _HeadGrid(dpi=FRAME_DPI)
        base = _translate(translator, sentence)
        frames = []
        for label, off in specs:
            with _heads_off(model, off):
                run = _translate(translator, sentence)
            frames.append(_ablation_png(grid, base, run, off, label, True))
        step = widgets.IntSlider(
            value=0, min=0, max=len(specs) - 1, description="ablation", continuous_update=True
        )
        menu = widgets.Dropdown(
            options=[label for label, _ in specs],
            index=0,
            description="heads off",
            layout=widgets.Layout(width="95%"),
        )
        box = _static_explorer(
            widgets,
            title,
            "Step through the ablations with the slider or pick one from the menu. Hatched "
            "panels are heads that are switched off.",
            [step, menu],
            {"ablation": step, "menu": menu},
            [step],
            frames,
            note=KERNEL_NOTE.replace("Typing your own sentence", "Choosing your own heads"),
        )
        # The menu selects the same frames as the slider (both tied to the one stack).
        box.links.append(widgets.jslink((menu, "index"), (box.stack, "selected_index")))
        return box

    text = widgets.Text(
        value=sentence,
        description="sentence",
        continuous_update=False,
        layout=widgets.Layout(width="95%"),
    )
    toggles: dict[tuple[str, int, int], Any] = {}
    rows = []
    for kind in _KINDS:
        for ly in range(n_layers):
            buttons = []
            for h in range(n_heads):
                b = widgets.ToggleButton(
                    value=True,
                    description=f"h{h}",
                    tooltip=f"{_KIND_TITLES[kind]}, layer {ly}, head {h}",
                    layout=widgets.Layout(width="48px"),
                )
                toggles[(kind, ly, h)] = b
                buttons.append(b)
            label = widgets.Label(
                f"{_KIND_SHORT[kind]}, layer {ly}", layout=widgets.Layout(width="140px")
            )
            rows.append(widgets.HBox([label, *buttons]))
    reset = widgets.Button(description="all heads on", layout=widgets.Layout(width="120px"))
    grid = _HeadGrid(dpi=LIVE_DPI)
    cache: dict[str, Any] = {"text": None, "base": None}

    def draw() -> tuple[bytes, str]:
        if cache["text"] != text.value or cache["base"] is None:
            cache["base"], cache["text"] = None, None
            cache["base"] = _translate(translator, text.value)
            cache["text"] = text.value
        base = cache["base"]
        off = [key for key, b in toggles.items() if not b.value]
        with _heads_off(model, off):
            run = _translate(translator, text.value)
        label = f"{len(off)} head{'s' if len(off) != 1 else ''} off" if off else "all heads on"
        png = _ablation_png(grid, base, run, off, label, False)
        note = (
            f"<div style='margin:2px 0'><b>All heads on:</b> {html.escape(base.translation)}"
            f"<br><b>{html.escape(label[0].upper() + label[1:])}:</b> "
            f"{_diff_html(base.translation, run.translation)}</div>"
            + "".join(_note(widgets, n, "warn") for n in run.notes)
        )
        return png, note

    controls = {
        "sentence": text,
        "reset": reset,
        **{f"{k}-{ly}-{h}": b for (k, ly, h), b in toggles.items()},
    }
    box = _live_explorer(
        widgets,
        title,
        "Pressed = head on. Click a head to switch it off; changed words are highlighted. "
        "Hatched panels are heads that are off.",
        [text, *rows, reset],
        controls,
        draw,
        [text, *toggles.values()],
    )

    def reset_all(_button=None) -> None:
        box._state["busy"] = True  # one redraw for all the toggles
        try:
            for b in toggles.values():
                b.value = True
        finally:
            box._state["busy"] = False
        box.update()

    reset.on_click(reset_all)
    box.toggles = toggles
    box.reset = reset_all
    box.grid = grid
    return box
