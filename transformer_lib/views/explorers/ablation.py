"""Switch attention heads off and watch the translation change (chapter 11)."""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any

import numpy as np

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
from .model_runs import (
    _KIND_SHORT,
    _KIND_TITLES,
    _KINDS,
    _as_translator,
    _heads_off,
    _Run,
    _translate,
)

__all__ = ["ABLATION_SENTENCE", "head_ablation_explorer"]


ABLATION_SENTENCE = "The children are playing in the garden."

#: What the rows and columns of a frame are (as in the attention explorer).
_CROSS_AXES = "rows: the German token being written; columns: the English tokens read"


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


def _slider_label(off: Sequence[tuple[str, int, int]], n_layers: int, n_heads: int) -> str:
    """A short name for an ablation, short enough for the slider's readout.

    ``"none"``, ``"cross layer 0, head 3"``, ``"cross layer 0, all"``, ``"all cross"``,
    ``"encoder layer 1, all"``, ``"all decoder self"``: layers and heads counted from 0.
    """
    if not off:
        return "none"
    kinds = {kind for kind, _, _ in off}
    layers = sorted({ly for _, ly, _ in off})
    if len(kinds) != 1:
        return f"{len(off)} heads"
    kind = next(iter(kinds))
    short = {"encoder": "encoder", "decoder": "decoder self", "cross": "cross"}[kind]
    if len(off) == 1:
        _, ly, h = off[0]
        return f"{short} layer {ly}, head {h}"
    if len(off) == n_layers * n_heads:
        return f"all {short}"
    if len(layers) == 1 and len(off) == n_heads:
        return f"{short} layer {layers[0]}, all"
    return f"{len(off)} {short} heads"


def _unchanged(base: _Run, run: _Run) -> str:
    """' (unchanged)' when the heads switched off left the translation as it was."""
    return " (unchanged)" if run.translation == base.translation else ""


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
    same = _unchanged(base, run)
    lines = [f"Source: “{run.source}”", f"All heads on: “{base.translation}”"]
    if switched:  # the first frame switches nothing off: one translation line is enough
        lines.append(f"{label[0].upper() + label[1:]}: “{run.translation}”{same}")
    queries = run.tgt_tokens
    if len(run.written_tokens) == len(queries):
        # Row i reads <bos> + translation[i] and writes token i: name it by what it
        # writes, as every cross-attention map of chapter 11 does.
        queries = run.written_tokens
        lines.append(f"Cross-attention of that translation ({_CROSS_AXES}):")
    else:
        lines.append("Cross-attention of that translation (decoder queries, source keys):")
    title = "\n".join(lines)
    return grid.render(
        mats,
        queries,
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
    widgets = load_ipywidgets()
    translator = _as_translator(translator)
    model = translator.model
    n_layers, n_heads = model.config.n_decoder_layers, model.config.n_heads
    title = "Switching heads off"
    if use_static(static):
        specs = _ablations(n_layers, n_heads)
        grid = _HeadGrid(dpi=FRAME_DPI)
        base = _translate(translator, sentence)
        frames, said = [], []
        for label, off in specs:
            with _heads_off(model, off):
                run = _translate(translator, sentence)
            frames.append(_ablation_png(grid, base, run, off, label, True))
            same = _unchanged(base, run) if off else ""
            said.append(f"{label}: the model writes “{run.translation}”{same}")
        # Labelled steps, so that the readout says which heads are off (not a bare index).
        step = widgets.SelectionSlider(
            options=[_slider_label(off, n_layers, n_heads) for _, off in specs],
            index=0,
            description="heads off",
            tooltip="which heads are switched off, one ablation after another",
            continuous_update=True,
            layout=widgets.Layout(width="95%"),
        )
        menu = widgets.Dropdown(
            options=[label for label, _ in specs],
            index=0,
            description="ablation",
            tooltip="which heads are switched off",
            layout=widgets.Layout(width="95%"),
        )
        box = static_explorer(
            title,
            "Step through the ablations with the slider or pick one from the menu. Hatched "
            "panels are heads that are switched off; rows are the German tokens being "
            "written, columns the English tokens read.",
            [step, menu],
            {"ablation": step, "menu": menu},
            [step],
            frames,
            note=KERNEL_NOTE.replace("Typing your own sentence", "Choosing your own heads"),
            alt="Cross-attention heatmaps of every head for one sentence, one row for each "
            "German token being written and one column for each English token read, with "
            "the chosen heads hatched as switched off, and the translation with those "
            "heads off under the full model's translation.",
            describe=lambda i: said[i],
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
            + "".join(note_html(n, "warn") for n in run.notes)
        )
        return png, note

    controls = {
        "sentence": text,
        "reset": reset,
        **{f"{k}-{ly}-{h}": b for (k, ly, h), b in toggles.items()},
    }
    box = live_explorer(
        title,
        "Pressed = head on. Click a head to switch it off; changed words are highlighted. "
        "Hatched panels are heads that are off; rows are the German tokens being written, "
        "columns the English tokens read.",
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
