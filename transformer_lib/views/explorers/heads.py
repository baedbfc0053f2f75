"""One head against the average of all heads, in the trained model's encoder (ch. 4)."""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any

import numpy as np

from .frames import (
    KERNEL_NOTE,
    LayoutMemo,
    book_style,
    figure_to_png,
    live_explorer,
    load_ipywidgets,
    new_figure,
    note_html,
    static_explorer,
    use_static,
)
from .model_runs import _as_translator, _Run, _translate

__all__ = ["HEAD_SENTENCES", "head_explorer"]


#: Sentences for the precomputed version: short, everyday, with a pronoun or two.
HEAD_SENTENCES = (
    "The cat is sleeping on the sofa.",
    "I don't know where my keys are.",
)


#: Font size (pt) of the token labels: 13.3 px at FRAME_DPI, shown at full size.
_TOKEN_PT = 12


def _row_peak(weights: np.ndarray) -> float:
    """Mean over the rows (queries) of the largest weight in the row."""
    return float(weights.max(axis=-1).mean())


def _head_figure(run: _Run, layer: int, head: int):
    from ..attention_maps import plot_attention

    mats, q, k = run.maps("encoder", layer)  # (H, S, S)
    n_heads = mats.shape[0]
    one, mean = mats[head], mats.mean(axis=0)
    n = len(q)
    with book_style():
        # Two panels share the 672-px frame: every text is drawn at 11 pt or more (at
        # least 12 CSS px at FRAME_DPI), the token labels at 12 pt.
        fig = new_figure((8.4, 0.32 * n + 2.1), layout="constrained")
        ax0, ax1 = fig.subplots(1, 2)
        plot_attention(
            one,
            q,
            k,
            ax=ax0,
            colorbar=False,
            title=f"head {head}: top weight {_row_peak(one):.2f}",
        )
        plot_attention(
            mean,
            q,
            k,
            ax=ax1,
            title=f"mean of {n_heads} heads: top weight {_row_peak(mean):.2f}",
        )
        for ax in (ax0, ax1):
            ax.title.set_fontsize(12)
            ax.tick_params(labelsize=_TOKEN_PT)
            ax.xaxis.label.set_fontsize(12)
            ax.yaxis.label.set_fontsize(12)
        colorbar = ax1.images[0].colorbar
        colorbar.ax.tick_params(labelsize=11)
        colorbar.ax.yaxis.label.set_fontsize(12)
        fig.suptitle(f"“{run.source}”: encoder self-attention, layer {layer}", fontsize=12)
    return fig


def head_explorer(
    translator=None,
    sentences: Sequence[str] = HEAD_SENTENCES,
    *,
    static: bool | None = None,
):
    """One attention head of the trained model next to the mean of all its heads.

    Chapter 4. Encoder self-attention of the shipped translator on one sentence: the
    chosen head's weights (left) and their average over the layer's heads (right), rows
    queries and columns keys. Each panel title gives the mean, over the rows, of the
    largest weight in a row: a head that commits to one key per query scores near 1,
    and averaging heads that look at different places brings it down.

    Args:
        translator: a :class:`~transformer_lib.pipeline.pretrained.Translator` (or a
            ``(model, tokenizer)`` pair); default the shipped model.
        sentences: example sentences (the static version precomputes these).
        static: force the precomputed (True) or the live (False) version.

    Returns:
        The explorer. Static: sentence × layer × head, ``len(sentences) · N · H`` frames
        (16 for the shipped model and two sentences); the text box is disabled. Live:
        also a text box for your own sentence.
    """
    widgets = load_ipywidgets()
    translator = _as_translator(translator)
    config = translator.model.config
    n_layers, n_heads = config.n_encoder_layers, config.n_heads
    sentences = [s for s in sentences if isinstance(s, str) and s.strip()]
    if not sentences:
        raise ValueError("head_explorer needs at least one example sentence")
    title = "One head, or the average of all heads?"
    description = (
        "Slide through the heads of a layer: each one attends in its own way; their "
        "average (right) spreads its weight more widely. Top weight: the mean, over the "
        "rows, of a row's largest weight."
    )
    head = widgets.IntSlider(
        value=0, min=0, max=n_heads - 1, description="head", continuous_update=True
    )
    layer = widgets.ToggleButtons(
        options=[str(i) for i in range(n_layers)],
        index=0,
        description="layer",
        style={"button_width": "50px"},
    )
    text = widgets.Text(description="sentence", layout=widgets.Layout(width="95%"))
    if use_static(static):
        runs = [_translate(translator, s) for s in sentences]
        frames = [
            [
                [figure_to_png(_head_figure(run, ly, h)) for h in range(n_heads)]
                for ly in range(n_layers)
            ]
            for run in runs
        ]
        example = widgets.Dropdown(
            options=sentences, index=0, description="example", layout=widgets.Layout(width="95%")
        )
        text.disabled = True
        text.placeholder = "your own sentence (needs a live kernel)"
        return static_explorer(
            title,
            description,
            [head, layer, example, text],
            {"head": head, "layer": layer, "example": example, "sentence": text},
            [example, layer, head],
            frames,
            note=KERNEL_NOTE,
            alt="Two attention heatmaps of the sentence, rows queries and columns keys: the "
            "chosen head of the encoder layer on the left, the mean of all its heads on the "
            "right.",
        )
    example = widgets.Dropdown(
        options=["(type your own)", *sentences],
        index=1,
        description="example",
        layout=widgets.Layout(width="95%"),
    )
    text.value = sentences[0]
    text.continuous_update = False
    cache: dict[str, Any] = {"text": None, "run": None}
    memo = LayoutMemo()

    def draw() -> tuple[bytes, str]:
        if cache["text"] != text.value or cache["run"] is None:
            cache["run"], cache["text"] = _translate(translator, text.value), text.value
        run = cache["run"]
        fig = _head_figure(run, int(layer.value), head.value)
        notes = "".join(note_html(n, "warn") for n in run.notes)
        translation = html.escape(run.translation) or "<i>(empty)</i>"
        png = memo.png(fig, key=tuple(run.src_tokens))
        return png, f"<div style='margin:2px 0'><b>Translation</b>: {translation}</div>{notes}"

    def pick_example(change) -> None:
        if example.index and example.index > 0:
            text.value = example.value

    example.observe(pick_example, names="index")
    return live_explorer(
        title,
        description + " Type a sentence and press Enter.",
        [head, layer, example, text],
        {"head": head, "layer": layer, "example": example, "sentence": text},
        draw,
        [head, layer, text],
    )
