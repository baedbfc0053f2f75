"""Attention over training: the shipped run's cross-attention, step by step (ch. 9).

While the shipped model trained, the trainer recorded at a few steps
(:mod:`transformer_lib.pipeline.snapshots`) the greedy translation of three example
sentences and the cross-attention of every decoder layer and head. This module loads
those records (:func:`load_training_snapshots`), draws one map per step
(:func:`plot_attention_over_training`, the chapter's static figure) and puts them behind
a step slider and a sentence menu (:func:`training_snapshots_explorer`).

Every map is the cross-attention of one decoder layer (the last by default), averaged
over its heads, drawn with :func:`~transformer_lib.views.attention_maps.plot_attention`.
Rows are the decoder's queries, one per decoding step, labelled "token read → token
written"; columns are the English source tokens (the keys).
"""

from __future__ import annotations

import json
import math
import os
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .frames import (
    FRAME_DPI,
    LIVE_DPI,
    book_style,
    figure_to_png,
    live_explorer,
    load_ipywidgets,
    new_figure,
    static_explorer,
    use_static,
)

__all__ = [
    "EXPLORER_ROWS",
    "MAX_ROWS",
    "SNAPSHOTS_FILE",
    "check_snapshots",
    "load_training_snapshots",
    "plot_attention_over_training",
    "training_snapshots_explorer",
]

#: File name of the snapshots, in a run folder and in the book's ``data/``.
SNAPSHOTS_FILE = "attention_snapshots.json"

#: At most this many decoder steps (rows) are drawn. An untrained model repeats one token
#: until the length limit (dozens of rows of the same thing); the title says when rows
#: were left out.
MAX_ROWS = 12

#: At most this many decoder steps (rows) in the explorer's map: the trained model's
#: outputs of the three sentences take 6 to 9, so the rows stay about square.
EXPLORER_ROWS = 9

#: At most this many frames in the static explorer (steps are thinned evenly beyond it).
MAX_FRAMES = 36

_CELL = 0.36  # inches per cell of the explorer's map: the same at every step
_TICK_PT = 10.0  # plot_attention's tick labels at this size (the smallest text)
_Y_LABEL = "query (decoder step): token read → written"
_X_LABEL = "key: English source token"


# --------------------------------------------------------------------------- data
def load_training_snapshots(path: str | os.PathLike | None = None) -> list[dict[str, Any]]:
    """Read the attention snapshots of a training run, checked and sorted by step.

    Args:
        path: an ``attention_snapshots.json`` written by the trainer
            (``train --snapshot-at ...``); default: the book's copy,
            ``data/attention_snapshots.json`` (in
            :func:`~transformer_lib.pipeline.corpus.shipped_data_dir`).

    Returns:
        The records, ``{"step", "sentences": [{"source", "translation",
        "source_tokens", "target_tokens", "cross": [layer][head][T][S]}]}``, by step.

    Raises:
        FileNotFoundError: no file at ``path`` (the message says how to make one).
        ValueError: the file is not a list of snapshot records, or its records disagree
            (other sentences, or attention maps that do not match their tokens).
    """
    if path is None:
        from ...pipeline.corpus import shipped_data_dir

        path = shipped_data_dir() / SNAPSHOTS_FILE
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(
            f"No attention snapshots at {path}. The book ships them as "
            f"data/{SNAPSHOTS_FILE}; a run of your own records them with "
            f"`python -m transformer_lib train ... --snapshot-at 0,100,1000 --out runs/mine` "
            f"(then pass 'runs/mine/{SNAPSHOTS_FILE}')."
        )
    try:
        records = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path} is not a JSON file of attention snapshots: {exc}") from exc
    check_snapshots(records, str(path))
    return sorted(records, key=lambda r: r["step"])


def _layer_name(layer: int, n_layers: int) -> str:
    """A layer as the book numbers it, from 0: "1 (the last)", "0"."""
    return f"{layer} (the last)" if layer == n_layers - 1 else f"{layer}"


def check_snapshots(records: Any, where: str = "snapshots") -> None:
    """Raise ``ValueError`` unless ``records`` are snapshot records of one set of sentences."""
    if not isinstance(records, list) or not records:
        raise ValueError(f"{where}: expected a non-empty list of snapshot records.")
    sources = None
    for record in records:
        if not isinstance(record, dict) or not isinstance(record.get("step"), int):
            raise ValueError(f"{where}: every record needs an integer 'step'.")
        step, sentences = record["step"], record.get("sentences")
        if not isinstance(sentences, list) or not sentences:
            raise ValueError(f"{where}: the record of step {step} has no 'sentences'.")
        these = [s.get("source") for s in sentences]
        if sources is None:
            sources = these
        elif these != sources:
            raise ValueError(f"{where}: step {step} records other sentences than the first step.")
        for s in sentences:
            shape = (len(s.get("target_tokens", ())), len(s.get("source_tokens", ())))
            try:
                cross = np.asarray(s.get("cross"), dtype=float)
            except (TypeError, ValueError):  # ragged lists: rows or columns missing
                cross = None
            if cross is None or cross.ndim != 4 or cross.shape[2:] != shape:
                got = "lists of unequal lengths" if cross is None else f"shape {cross.shape}"
                raise ValueError(
                    f"{where}: step {step}, {s.get('source')!r}: 'cross' must have shape "
                    f"(layers, heads, T, S) = (…, …, {shape[0]}, {shape[1]}) for its "
                    f"target and source tokens, got {got}."
                )
    steps = [r["step"] for r in records]
    if len(set(steps)) != len(steps):
        raise ValueError(f"{where}: a step is recorded twice.")


def _as_snapshots(snapshots: Any) -> list[dict[str, Any]]:
    if snapshots is None or isinstance(snapshots, (str, os.PathLike)):
        return load_training_snapshots(snapshots)
    records = list(snapshots)
    check_snapshots(records)
    return sorted(records, key=lambda r: r["step"])


def _panel(sentence: dict[str, Any], layer: int, max_rows: int):
    """``(map (T', S), row labels, total rows)``: one layer averaged over its heads."""
    cross = np.asarray(sentence["cross"], dtype=float)  # (layers, H, T, S)
    mean = cross[layer].mean(axis=0)  # (T, S)
    read = list(sentence["target_tokens"])
    # Row t reads read[t] and writes read[t + 1]; the last row wrote <eos> (an output cut
    # off at the length limit is far longer than max_rows, so its last row is never shown).
    written = read[1:] + ["<eos>"]
    shown = min(len(read), max_rows)
    labels = [f"{a} → {b}" for a, b in zip(read[:shown], written[:shown])]
    return mean[:shown], labels, len(read)


def _layer_index(records: list[dict[str, Any]], layer: int) -> tuple[int, int, int]:
    """``(layer index, number of layers, heads)`` with ``layer`` checked (-1 = last)."""
    n_layers, n_heads = np.asarray(records[0]["sentences"][0]["cross"]).shape[:2]
    if not -n_layers <= layer < n_layers:
        raise ValueError(f"layer {layer} does not exist: the snapshots have {n_layers} layers.")
    return layer % n_layers, int(n_layers), int(n_heads)


def _rows_note(shown: int, total: int) -> str:
    return f"first {shown} of {total} decoder steps" if total > shown else ""


def _short(text: str, width: int) -> str:
    return textwrap.shorten(text, width, placeholder=" …") if text.strip() else "(empty)"


def _text_width_pt(labels: Sequence[str], size: float) -> float:
    """Width in points of the widest label in DejaVu Sans at ``size`` points."""
    from matplotlib.font_manager import FontProperties
    from matplotlib.textpath import TextToPath

    font, measure = FontProperties(family="DejaVu Sans", size=size), TextToPath()
    return max(
        (measure.get_text_width_height_descent(s, font, ismath=False)[0] for s in labels),
        default=0.0,
    )


def _draw_panel(ax, sentence: dict[str, Any], layer: int, max_rows: int, title: str):
    """One map into ``ax`` with plot_attention; returns ``(image, rows shown, total rows)``."""
    from ..attention_maps import plot_attention

    mat, labels, total = _panel(sentence, layer, max_rows)
    plot_attention(mat, labels, sentence["source_tokens"], ax=ax, title=title, colorbar=False)
    ax.set_ylabel(_Y_LABEL)
    ax.set_xlabel(_X_LABEL)
    return ax.images[-1], len(labels), total


# --------------------------------------------------------------------------- static figure
def plot_attention_over_training(
    snapshots: Any = None,
    sentence: int = 0,
    steps: Sequence[int] | None = None,
    *,
    layer: int = -1,
    ncols: int = 2,
    max_rows: int = MAX_ROWS,
    title: str | None = None,
):
    """Cross-attention of one example sentence at several training steps, one panel each.

    Chapter 9. Each panel: one decoder layer's cross-attention (the last by default),
    averaged over heads; rows are decoding steps ("token read → token written"), columns
    the English source tokens. The panel title gives the step.

    Args:
        snapshots: the records (:func:`load_training_snapshots`), a path, or ``None`` for
            the book's ``data/attention_snapshots.json``.
        sentence: index of the example sentence.
        steps: recorded steps to draw (default: all).
        layer: decoder layer, ``-1`` = the last.
        ncols: panels per row (2 keeps four panels readable at page width).
        max_rows: at most this many decoding steps per panel.
        title: figure title (default: the sentence, the layer and the number of heads).

    Raises:
        ValueError: a step that was not recorded, or a sentence or layer out of range.
    """
    from ..style import _styled

    records = _as_snapshots(snapshots)
    by_step = {r["step"]: r for r in records}
    steps = list(by_step) if steps is None else [int(s) for s in steps]
    missing = [s for s in steps if s not in by_step]
    if missing or not steps:
        raise ValueError(f"steps {missing or steps} not recorded; recorded: {sorted(by_step)}")
    n_sentences = len(records[0]["sentences"])
    if not 0 <= sentence < n_sentences:
        raise ValueError(f"sentence must be 0 … {n_sentences - 1}, got {sentence}")
    layer, n_layers, n_heads = _layer_index(records, layer)
    chosen = [by_step[s]["sentences"][sentence] for s in steps]
    ncols = max(1, min(ncols, len(steps)))
    return _styled(_grid_figure)(chosen, steps, layer, n_layers, n_heads, ncols, max_rows, title)


def _grid_figure(chosen, steps, layer, n_layers, n_heads, ncols, max_rows, title):
    from ..style import _new_figure

    nrows = math.ceil(len(steps) / ncols)
    panels = [_panel(s, layer, max_rows) for s in chosen]
    rows = [len(labels) for _, labels, _ in panels]
    grid_rows = [max(rows[r * ncols : (r + 1) * ncols]) for r in range(nrows)]
    cell = 0.24  # inches: ten source tokens make a map under 2.5 inches wide
    labels_in = _text_width_pt([lab for _, labels, _ in panels for lab in labels], _TICK_PT) / 72
    # source tokens stand upright under their columns (at 45° they crowd into each other)
    sources_in = _text_width_pt(chosen[0]["source_tokens"], _TICK_PT) / 72 + 0.15
    panel_w = labels_in + 0.25 + len(chosen[0]["source_tokens"]) * cell
    heights = [g * cell + sources_in + 0.75 for g in grid_rows]  # map, ticks, titles
    fig, axes = _new_figure(
        (ncols * panel_w + 0.5, sum(heights) + 1.6),
        nrows,
        ncols,
        squeeze=False,
        gridspec_kw={"height_ratios": heights},
    )
    used = []
    for idx, ax in enumerate(axes.flat):
        if idx >= len(steps):
            ax.remove()
            continue
        note = _rows_note(rows[idx], panels[idx][2])
        panel_title = f"step {steps[idx]:,}" + (f" ({note})" if note else "")
        im, _, _ = _draw_panel(ax, chosen[idx], layer, max_rows, panel_title)
        for label in ax.get_xticklabels():
            label.set(rotation=90, ha="center", rotation_mode="default")
        ax.set_ylabel("")
        used.append(ax)
    fig.supylabel(_Y_LABEL)
    fig.colorbar(
        im, ax=used, label="attention weight", orientation="horizontal", shrink=0.5, aspect=40
    )
    for ax in used:
        ax.set_anchor("N")  # maps of different heights line up at the top (after colorbar)
    if title is None:
        title = (
            f"“{chosen[0]['source']}”: cross-attention over training\n"
            f"decoder layer {_layer_name(layer, n_layers)}, mean of {n_heads} heads"
        )
    fig.suptitle(title)
    return fig


# --------------------------------------------------------------------------- explorer
class _FrameGeometry:
    """A fixed layout for every frame: the map's corners stay put while the slider moves.

    The map always fills the same rectangle, ``rows`` cells high: a frame with fewer
    decoding steps gets taller rows instead of blank space under the map.
    """

    def __init__(self, records: list[dict[str, Any]], layer: int, max_rows: int):
        panels = [_panel(s, layer, max_rows) for r in records for s in r["sentences"]]
        self.rows = max(len(p[1]) for p in panels)
        self.cols = max(p[0].shape[1] for p in panels)
        sources = [t for r in records[:1] for s in r["sentences"] for t in s["source_tokens"]]
        y_labels_in = _text_width_pt([lab for p in panels for lab in p[1]], _TICK_PT) / 72
        x_labels_in = _text_width_pt(sources, _TICK_PT) / 72 * math.sin(math.pi / 4) + 0.15
        self.left = y_labels_in + 0.75  # tick labels, the axis title, margins
        self.top = 1.1  # three or four lines of titles
        self.bottom = x_labels_in + 0.6
        right = 1.35  # colour bar, its ticks and label
        block = self.left + self.cols * _CELL + right
        self.width = max(block, 7.6)  # room for the title line with the translation
        self.shift = (self.width - block) / 2  # centre the map and its colour bar
        self.height = self.top + self.rows * _CELL + self.bottom

    def axes(self, fig, cols: int):
        w, h = cols * _CELL, self.rows * _CELL
        x0 = self.shift + self.left
        y0 = self.height - self.top - h
        ax = fig.add_axes((x0 / self.width, y0 / self.height, w / self.width, h / self.height))
        cb_h = min(self.rows * _CELL, 3.2)
        cb_x = self.shift + self.left + self.cols * _CELL + 0.3
        cax = fig.add_axes(
            (
                cb_x / self.width,
                (self.height - self.top - cb_h) / self.height,
                0.18 / self.width,
                cb_h / self.height,
            )
        )
        return ax, cax


def _frame_figure(
    record: dict[str, Any],
    sentence: int,
    layer: int,
    n_layers: int,
    n_heads: int,
    geometry: _FrameGeometry,
    max_rows: int,
):
    s = record["sentences"][sentence]
    mat, labels, total = _panel(s, layer, max_rows)
    with book_style():
        fig = new_figure((geometry.width, geometry.height))
        ax, cax = geometry.axes(fig, mat.shape[1])
        im, _, _ = _draw_panel(ax, s, layer, max_rows, "")
        ax.set_aspect("auto")  # the rows share the map's fixed height
        fig.colorbar(im, cax=cax, label="attention weight")
        kind = (
            f"cross-attention, decoder layer {_layer_name(layer, n_layers)}, "
            f"mean of {n_heads} heads"
        )
        lines = [
            (f"Training step {record['step']:,}", 12, "bold", "black"),
            (f"greedy translation: “{_short(s['translation'], 66)}”", 11, "normal", "black"),
            (kind, 10, "normal", "#444444"),
        ]
        if total > len(labels):
            note = f"(only the first {len(labels)} of {total} decoder steps are shown)"
            lines.append((note, 10, "normal", "#444444"))
        y = 0.15  # inches from the top
        for text, size, weight, colour in lines:
            fig.text(
                (geometry.shift + 0.2) / geometry.width,
                1 - y / geometry.height,
                text,
                fontsize=size,
                fontweight=weight,
                color=colour,
                va="top",
            )
            y += size * 1.45 / 72
    return fig


def _spread(n: int, k: int) -> list[int]:
    """``k`` indices of ``range(n)`` spread evenly, first and last included."""
    if n <= k:
        return list(range(n))
    return sorted({round(i * (n - 1) / (k - 1)) for i in range(k)})


def training_snapshots_explorer(
    snapshots: Any = None,
    *,
    layer: int = -1,
    max_rows: int = EXPLORER_ROWS,
    static: bool | None = None,
):
    """Slide through training and watch a translation and its cross-attention form.

    Chapter 9. A slider over the steps at which the run recorded snapshots and a menu of
    its example sentences; the map is one decoder layer's cross-attention (the last by
    default) averaged over heads, rows = decoding steps ("token read → token written"),
    columns = source tokens, with the greedy translation of that step in the title.

    Args:
        snapshots: the records (:func:`load_training_snapshots`), a path, or ``None`` for
            the book's ``data/attention_snapshots.json``.
        layer: decoder layer, ``-1`` = the last.
        max_rows: at most this many decoding steps per map.
        static: force the precomputed (True) or the live (False) version. Both show the
            same pictures (the snapshots are data); the static one draws every frame in
            advance (sentences × steps, at most :data:`MAX_FRAMES`: beyond that, steps
            are thinned evenly), the live one draws on demand.

    Raises:
        FileNotFoundError: ``snapshots`` is ``None`` or a path and there is no file.
    """
    widgets = load_ipywidgets()
    records = _as_snapshots(snapshots)
    layer, n_layers, n_heads = _layer_index(records, layer)
    sources = [s["source"] for s in records[0]["sentences"]]
    title = "Attention over training"
    description = (
        "Move the slider through the training steps at which the run recorded a snapshot; "
        "pick an example sentence. Rows: decoding steps (token read → token written); "
        "columns: English source tokens."
    )
    static = use_static(static)
    if static:
        per_sentence = max(1, MAX_FRAMES // len(sources))
        records = [records[i] for i in _spread(len(records), per_sentence)]
    geometry = _FrameGeometry(records, layer, max_rows)
    example = widgets.Dropdown(
        options=sources, index=0, description="sentence", layout=widgets.Layout(width="95%")
    )
    step = widgets.SelectionSlider(
        options=[f"{r['step']:,}" for r in records],
        index=len(records) - 1,
        description="step",
        tooltip="training step of the snapshot shown",
        layout=widgets.Layout(width="95%"),
    )
    controls = {"sentence": example, "step": step}

    def figure(i_sentence: int, i_step: int):
        return _frame_figure(
            records[i_step], i_sentence, layer, n_layers, n_heads, geometry, max_rows
        )

    if static:
        frames = [
            [figure_to_png(figure(i, j), dpi=FRAME_DPI) for j in range(len(records))]
            for i in range(len(sources))
        ]
        return static_explorer(
            title,
            description,
            [example, step],
            controls,
            [example, step],
            frames,
            alt="A cross-attention heatmap of the shipped model for the chosen sentence at "
            "the chosen training step: rows are the German tokens written, columns the "
            "English tokens read.",
        )

    def draw() -> tuple[bytes, str]:
        return figure_to_png(figure(example.index, step.index), LIVE_DPI, palette=False), ""

    return live_explorer(title, description, [example, step], controls, draw, [example, step])
