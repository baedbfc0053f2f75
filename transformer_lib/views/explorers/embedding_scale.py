"""The √d_model scale on or off: what the encoder sees of token and position (ch. 2)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ..phone_layout import with_phone_png
from .frames import (
    KERNEL_NOTE,
    InputProblem,
    LayoutMemo,
    book_style,
    figure_to_png,
    live_explorer,
    load_ipywidgets,
    new_figure,
    static_explorer,
    static_mode,
    use_static,
)

__all__ = ["SCALE_SENTENCE", "embedding_scale_explorer", "encoder_inputs"]


#: A sentence whose words come back at other positions: "the", "dog", "cat" and "saw".
SCALE_SENTENCE = "The dog saw the cat and the cat saw the dog."
_MAX_TOKENS = 24


def encoder_inputs(model, ids: Sequence[int], scale: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """The two parts of the encoder's input for token ids: ``(s·E[id], PE[pos])``, each ``(L, D)``.

    The input itself is their sum. ``s = √d_model`` as in the paper (§3.4) when ``scale``
    is true, else 1. The positional encoding is the model's own (sinusoidal or learned);
    dropout is left out.
    """
    import torch

    with torch.no_grad():
        weight = model.src_embed.weight  # (V, D)
        s = math.sqrt(weight.shape[1]) if scale else 1.0
        token = weight[torch.as_tensor(list(ids), dtype=torch.long)] * s  # (L, D)
        position = model.positional(torch.zeros_like(token)[None])[0]  # PE[0:L], (L, D)
    return token.double().numpy(), position.double().numpy()


def _cosine(x: np.ndarray) -> np.ndarray:
    unit = x / np.linalg.norm(x, axis=1, keepdims=True)
    return unit @ unit.T


#: Width of the phone version of a frame, in inches: 344 px at the frames' 80 dpi, shown
#: at full size in a phone's 350-pixel column.
_PHONE_WIDTH_IN = 4.3


def _scale_figure(
    model, tokens: Sequence[str], ids: Sequence[int], scale: bool, which: str, phone: bool = False
):
    """One frame: the heatmap of cosine similarities and the bars of the two parts' lengths.

    ``phone``: laid out for a phone's column (:data:`_PHONE_WIDTH_IN` wide): the heatmap
    across the whole width with its colour bar under it, the bars below, the title wrapped.
    """
    from matplotlib.patches import Rectangle

    from ..style import DIVERGING_CMAP, OKABE_ITO, _label_text

    d_model = model.src_embed.weight.shape[1]
    token_part, pos_part = encoder_inputs(model, ids, scale)
    sim = _cosine(token_part + pos_part)
    n = len(ids)
    same = np.array([[ids[i] == ids[j] and i != j for j in range(n)] for i in range(n)])
    near = np.array([[abs(i - j) == 1 and ids[i] != ids[j] for j in range(n)] for i in range(n)])
    labels = [f"{_label_text(t)} {i}" for i, t in enumerate(tokens)]
    s_text = f"× √d_model = {math.sqrt(d_model):.3g}" if scale else "× 1 (no scale)"
    title = (
        f"{which.capitalize()} embeddings {s_text}. Mean cosine similarity: the same "
        f"token at two positions {sim[same].mean():.2f},\nneighbouring different tokens "
        f"{sim[near].mean():.2f}"
    )
    with book_style():
        if phone:
            # 12 pt tick labels at 80 dpi are 13 px; the heatmap's cells about 20 px.
            fig = new_figure((_PHONE_WIDTH_IN, 8.6), layout="constrained")
            fig.get_layout_engine().set(hspace=0.06)  # room above the bars' title
            ax0, ax1 = fig.subplots(2, 1, height_ratios=[1.9, 1])
            fs = 11 if n <= 14 else 9
            title = (
                f"{which.capitalize()} embeddings {s_text}.\nMean cosine similarity:\n"
                f"the same token at two positions {sim[same].mean():.2f},\n"
                f"neighbouring different tokens {sim[near].mean():.2f}"
            )
        else:
            fig = new_figure((8.4, 5.0), layout="constrained")
            ax0, ax1 = fig.subplots(1, 2, width_ratios=[1.7, 1])
            fs = 12 if n <= 14 else 10.5  # 12 pt at FRAME_DPI 80: 13 px on the page
        im = ax0.imshow(sim, cmap=DIVERGING_CMAP, vmin=-1, vmax=1, interpolation="nearest")
        ax0.set_xticks(np.arange(n), labels, rotation=60, ha="right", rotation_mode="anchor")
        ax0.set_yticks(np.arange(n), labels)
        ax0.tick_params(labelsize=fs)
        for i, j in zip(*np.nonzero(same)):  # outline pairs of equal tokens
            rect = Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, edgecolor="black", lw=1.2)
            ax0.add_patch(rect)
        ax0.set_xlabel("encoder input (token, position)")
        ax0.set_ylabel("encoder input (token, position)")
        ax0.set_title("cosine similarity of the input vectors", fontsize=11)
        if phone:
            fig.colorbar(
                im,
                ax=ax0,
                location="bottom",
                shrink=0.9,
                aspect=30,
                label="cosine similarity",
                ticks=[-1, -0.5, 0, 0.5, 1],
            )
        else:
            fig.colorbar(im, ax=ax0, shrink=0.8, label="cosine similarity")
        parts = [
            ("token part\n" + s_text.split(" (")[0], np.linalg.norm(token_part, axis=1)),
            ("position part\nPE", np.linalg.norm(pos_part, axis=1)),
        ]
        means = [p[1].mean() for p in parts]
        ax1.bar([0, 1], means, color=[OKABE_ITO[0], OKABE_ITO[2]], width=0.6)
        for xpos, m in enumerate(means):
            ax1.text(xpos, m, f"{m:.2g}", ha="center", va="bottom", fontsize=10)
        ax1.set_xticks([0, 1], [p[0] for p in parts])
        ax1.tick_params(axis="x", labelsize=10)
        ax1.set_ylim(0, 20)
        ax1.set_ylabel("mean length" if phone else "mean length of the vector")
        ax1.set_xlabel("the two parts of the input")
        ax1.set_title("which part is longer?", fontsize=11)
        ax1.grid(axis="y", alpha=0.3)
        fig.suptitle(title, fontsize=11)
    return fig


def _frame(model, tokens: Sequence[str], ids: Sequence[int], scale: bool, which: str) -> bytes:
    """A precomputed frame; in the static build it carries its phone version, drawn for a
    phone's column (stacking the desktop panels would leave the heatmap's labels cramped)."""
    png = figure_to_png(_scale_figure(model, tokens, ids, scale, which), phone=False)
    if not static_mode():
        return png
    phone = _scale_figure(model, tokens, ids, scale, which, phone=True)
    return with_phone_png(png, figure_to_png(phone, phone=False))


def _models(translator):
    """``{"trained": model, "untrained": model}``: the shipped model and a fresh one."""
    import torch

    from ...components.model import Transformer

    trained = translator.model.eval()
    with torch.random.fork_rng():
        torch.manual_seed(0)
        fresh = Transformer(trained.config).eval()
    return {"trained": trained, "untrained": fresh}


def embedding_scale_explorer(
    sentence: str = SCALE_SENTENCE,
    translator=None,
    *,
    static: bool | None = None,
):
    """The √d_model scale of §3.4 on or off, for the trained and an untrained model.

    Chapter 2. The encoder's input is ``s·E[token] + PE[position]``. Left: the cosine
    similarity of every pair of input vectors of one sentence; outlined cells pair the
    same token at two positions. Right: the mean length of the token part and of the
    position part. With ``s = √d_model`` the token part is the longer one and equal
    tokens stay alike wherever they stand; with ``s = 1`` the position part dominates
    and neighbours look alike instead.

    Args:
        sentence: the sentence (the static version draws only this one).
        translator: a :class:`~transformer_lib.pipeline.pretrained.Translator`; default
            the shipped model. Its tokenizer splits the sentence.
        static: force the precomputed (True) or the live (False) version.

    Returns:
        The explorer: the scale (× √d_model or × 1) and the embeddings (trained or
        untrained), 4 frames in the static version; the live one also takes a sentence.
    """
    from .model_runs import _as_translator

    widgets = load_ipywidgets()
    translator = _as_translator(translator)
    tok = translator.tokenizer
    models = _models(translator)
    d_model = translator.model.config.d_model
    title = "The √d_model scale, on and off"
    scale = widgets.ToggleButtons(
        options=[(f"× √d_model = {math.sqrt(d_model):.3g}", True), ("× 1 (no scale)", False)],
        value=True,
        description="scale",
        tooltip="multiply the token embeddings by the square root of d_model, or not",
        tooltips=["the paper's scale (§3.4)", "the embeddings as they are"],
        style={"button_width": "150px"},
    )
    which = widgets.ToggleButtons(
        options=[("trained", "trained"), ("untrained", "untrained")],
        value="trained",
        description="embeddings",
        tooltip="the trained model's embeddings or untrained ones",
        style={"button_width": "120px"},
    )
    text = widgets.Text(description="sentence", layout=widgets.Layout(width="95%"))

    def split(s: str) -> tuple[list[str], list[int]]:
        s = " ".join(str(s).split())
        if not s:
            raise InputProblem("Type a sentence into the box (it is empty).")
        ids = tok.encode(s)[:_MAX_TOKENS]
        if len(ids) < 2:
            raise InputProblem("The sentence needs at least two tokens.")
        return [tok.id_to_token(i) for i in ids], ids

    description = (
        "Switch the scale and the embeddings. Outlined cells: the same token at two positions."
    )
    if use_static(static):
        tokens, ids = split(sentence)
        frames = [[_frame(models[w], tokens, ids, s, w) for w in models] for s in (True, False)]
        text.value, text.disabled = sentence, True
        return static_explorer(
            title,
            description,
            [scale, which, text],
            {"scale": scale, "embeddings": which, "sentence": text},
            [scale, which],
            frames,
            note=KERNEL_NOTE,
            alt="Left: heatmap of the cosine similarity between the encoder input vectors of "
            "one sentence, equal tokens outlined. Right: bars of the mean length of the token "
            "part and the position part of the input.",
        )
    text.value = sentence
    text.continuous_update = False
    memo = LayoutMemo()

    def draw() -> tuple[bytes, str]:
        tokens, ids = split(text.value)
        fig = _scale_figure(models[which.value], tokens, ids, scale.value, which.value)
        return memo.png(fig, key=tuple(tokens)), ""

    return live_explorer(
        title,
        description,
        [scale, which, text],
        {"scale": scale, "embeddings": which, "sentence": text},
        draw,
        [scale, which, text],
    )
