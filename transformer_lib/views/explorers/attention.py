"""Type an English sentence; see the trained model's translation and attention (ch. 11)."""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from typing import Any

from .frames import (
    FRAME_DPI,
    KERNEL_NOTE,
    LIVE_DPI,
    live_explorer,
    load_ipywidgets,
    note_html,
    static_explorer,
    use_static,
)
from .head_grid import _HeadGrid
from .model_runs import _KIND_TITLES, _KINDS, EXAMPLE_SENTENCES, _as_translator, _Run, _translate

__all__ = ["attention_explorer"]


#: What the rows and columns of a cross-attention frame are.
_CROSS_AXES = "rows (queries): the German token being written; columns (keys): English tokens"


def _run_title(run: _Run) -> str:
    return f"“{run.source}” → “{run.translation}”"


def _notes_html(widgets, run: _Run, extra: str = "") -> str:
    parts = [
        f"<div style='margin:2px 0'><b>Translation</b> (greedy): "
        f"{html.escape(run.translation) or '<i>(empty)</i>'}</div>"
    ]
    parts += [note_html(n, "warn") for n in run.notes]
    return "".join(parts) + extra


def _attention_png(
    grid: _HeadGrid, run: _Run, kind: str, layer: int, head: int | None, palette: bool
) -> bytes:
    mats, q, k = run.maps(kind, layer)
    heads = list(range(mats.shape[0])) if head is None else [head]
    axes = ""
    if kind == "cross" and len(run.written_tokens) == len(q):
        # Row i reads German token i and writes token i + 1: name it by what it writes,
        # the word whose English source an aligning head looks at.
        q, axes = run.written_tokens, "\n" + _CROSS_AXES
    return grid.render(
        mats[heads],
        q,
        k,
        title=f"{_run_title(run)}\n{_KIND_TITLES[kind]}, layer {layer}{axes}",
        panel_titles=[f"head {h}" for h in heads],
        ncols=math.ceil(math.sqrt(len(heads))),
        palette=palette,
    )


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
        translator: a :class:`~transformer_lib.pipeline.pretrained.Translator` (or a
            ``(model, tokenizer)`` pair); default: the shipped model,
            :func:`~transformer_lib.pipeline.pretrained.load_pretrained`.
        sentences: example sentences (the static version precomputes these).
        static: force the precomputed (True) or the live (False) version.

    Returns:
        The explorer. Static: a sentence menu × kind × layer slider, every frame showing
        all heads (``len(sentences) · 3 · N`` frames); the text box is disabled.
    """
    widgets = load_ipywidgets()
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
    if use_static(static):
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
        text.placeholder = "your own sentence: use the in-browser translator below"
        return static_explorer(
            title,
            "Pick an example sentence, the kind of attention and the layer. Each panel is one "
            "head; rows are queries, columns are keys. In cross-attention the rows are the "
            "German tokens being written and the columns the English source tokens.",
            [example, text, kind, layer],
            {"example": example, "kind": kind, "layer": layer, "sentence": text},
            [example, kind, layer],
            frames,
            note=KERNEL_NOTE,
            alt="Attention heatmaps of the trained model for the chosen sentence, one panel "
            "per head of the chosen layer and kind of attention: rows are query tokens, "
            "columns key tokens (in cross-attention: rows the German tokens being written, "
            "columns the English source tokens), and brighter cells carry more weight (0 to "
            "1).",
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
    box = live_explorer(
        title,
        "Type a sentence and press Enter. Each panel is one head; rows are queries, columns "
        "are keys. In cross-attention the rows are the German tokens being written and the "
        "columns the English source tokens.",
        [example, text, kind, widgets.HBox([layer, head])],
        {"example": example, "sentence": text, "kind": kind, "layer": layer, "head": head},
        draw,
        [text, kind, layer, head],
    )
    box.grid = grid
    return box
