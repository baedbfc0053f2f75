"""The translator that runs in the reader's browser, for the static HTML book (intro, 11).

In the built book a box made by :func:`live_translator_html` translates whatever the
reader types, draws the attention maps of every kind, layer and head, and switches heads
off, all computed in the browser: ``_static/live/live-translate.js`` runs the shipped
model, exported to ONNX by :mod:`transformer_lib.pipeline.onnx_export` (``make book``),
with onnxruntime-web. No kernel and no server are needed; it works from ``file://`` too.

In Jupyter or Colab the notebook has a Python kernel and the ipywidgets explorers
translate live, so :func:`live_translator` shows the box only when the book is being
built (:func:`~transformer_lib.views.explorers.frames.static_mode`).
"""

from __future__ import annotations

import html

__all__ = ["DEFAULT_EXAMPLE", "colormap_stops", "live_translator", "live_translator_html"]

#: The sentence the box translates when the page opens.
DEFAULT_EXAMPLE = "The children are playing in the garden."
#: Attribute that marks a translator box; the book's Sphinx extension
#: (``scripts/vendor_js.py``) adds the script to pages that contain it.
MARKER = "data-live-translate"


#: The kinds of attention the box draws (its "attention" menu), by key.
KINDS = ("encoder", "decoder", "cross")


def live_translator_html(
    example: str = DEFAULT_EXAMPLE, *, switches_open: bool = True, kind: str = "cross"
) -> str:
    """The HTML of one translator box (filled in by ``live-translate.js``).

    Args:
        example: the sentence typed in the box when the page opens (translated at once).
        switches_open: show the head on/off switches unfolded.
        kind: the attention its maps show first: ``"encoder"`` (self-attention),
            ``"decoder"`` (self-attention) or ``"cross"``; the reader can switch.

    Returns:
        A ``<div>`` that says what it is until the script has built the box, and that
        says why if the script cannot run.

    Raises:
        ValueError: for a ``kind`` that is not one of :data:`KINDS`.
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}, got {kind!r}")
    attrs = f'class="live-translate" {MARKER} data-example="{html.escape(example, quote=True)}"'
    if not switches_open:
        attrs += ' data-switches="closed"'
    if kind != "cross":
        attrs += f' data-kind="{kind}"'
    return (
        f"<div {attrs}>\n"
        '<p class="lt-fallback">Loading the in-browser translator…</p>\n'
        "<noscript>The in-browser translator needs JavaScript.</noscript>\n"
        "</div>"
    )


def live_translator(example: str = DEFAULT_EXAMPLE, *, static: bool | None = None):
    """Display the in-browser translator in the built book; in a live kernel, a note.

    Args:
        example: the sentence the box starts with.
        static: force the book version (True) or the notebook version (False); default
            :func:`~transformer_lib.views.explorers.frames.static_mode`.

    Returns:
        An ``IPython.display.HTML`` (the box) or ``Markdown`` (the note) object.
    """
    from IPython.display import HTML, Markdown

    from .explorers.frames import static_mode

    if static if static is not None else static_mode():
        return HTML(live_translator_html(example))
    return Markdown(
        "*In the HTML book a translator box appears here that runs the model in the "
        "browser. With a kernel, the explorer above translates whatever you type.*"
    )


def colormap_stops(n: int = 17) -> list[str]:
    """``n`` evenly spaced colours of the book's sequential colour map, as ``#rrggbb``.

    ``live-translate.js`` draws its heatmaps with these stops (tests compare them).
    """
    import matplotlib as mpl
    import numpy as np

    from .style import SEQUENTIAL_CMAP

    rgb = mpl.colormaps[SEQUENTIAL_CMAP](np.linspace(0.0, 1.0, n))[:, :3]
    return ["#" + "".join(f"{int(round(v * 255)):02x}" for v in row) for row in rgb]
