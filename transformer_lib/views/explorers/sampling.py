"""Temperature, top-k and top-p: what the decoder-only model samples after a prompt (ch. 12).

The prompt is an English sentence, ``<sep>`` and the start of its German translation. Each
state shows the next-token distribution that :func:`~transformer_lib.pipeline.generation.
generate` samples from (:func:`~transformer_lib.pipeline.generation.next_token_distribution`)
as bars with the real German tokens, and a few seeded continuations drawn with the same
settings under it. The static version precomputes every temperature of
:data:`_STATIC_TEMPERATURES` with every cut-off of :data:`_STATIC_CUTOFFS` (top-k and top-p).
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .frames import (
    InputProblem,
    LayoutMemo,
    book_style,
    figure_to_png,
    live_explorer,
    load_ipywidgets,
    new_figure,
    static_explorer,
    use_static,
)

__all__ = ["SAMPLING_PROMPT", "sampling_explorer"]

#: The default prompt: (English sentence, German start).
SAMPLING_PROMPT = ("I would like a cup of coffee.", "Ich möchte")
_STATIC_TEMPERATURES = (0.3, 0.6, 1.0, 1.5, 2.5)
#: The static explorer's cut-offs: (button label, top_k, top_p); None: that cut is off.
_STATIC_CUTOFFS = (
    ("all", None, None),
    ("top-k 20", 20, None),
    ("top-k 5", 5, None),
    ("top-k 1", 1, None),
    ("top-p 0.9", None, 0.9),
    ("top-p 0.5", None, 0.5),
)
_SEEDS = (0, 1, 2)
_NEW_TOKENS = 12
_SHOW = 12  # bars drawn
_RIGHT_ROOM = 0.15  # inches kept free right of the bars, for half a tick label


@dataclass
class _Prompt:
    """The model, its tokenizer and one prompt, with the logits of the next token."""

    model: Any
    tokenizer: Any
    source: str
    start: str
    ids: list[int]  # English <sep> German start
    n_source: int  # English tokens + <sep>
    never: tuple[int, ...]  # ids never generated: <pad>, <bos>, <sep>
    logits: Any  # (V,) next-token logits, `never` set to -inf

    @property
    def vocab(self) -> list[str]:
        return [self.tokenizer.id_to_token(i) for i in range(self.logits.numel())]


def _prompt(translator, source: str, start: str) -> _Prompt:
    import torch

    model, tok = translator.model, translator.tokenizer
    if getattr(model, "arch", None) != "decoder-only":
        raise TypeError(
            "sampling_explorer needs the decoder-only translator, e.g. "
            "load_pretrained(DEFAULT_DECODER_ONLY); got an encoder-decoder model"
        )
    sep = tok.token_to_id("<sep>")
    if sep is None:
        raise ValueError("the tokenizer has no <sep> token; the decoder-only model needs one")
    source_ids = tok.encode(source)
    if not source_ids:
        raise InputProblem("Type an English sentence (the source is empty).")
    ids = [*source_ids, sep, *tok.encode(start)]
    if len(ids) + _NEW_TOKENS > model.config.max_len:
        raise InputProblem(f"The prompt has {len(ids)} tokens: too long for this explorer.")
    never = (tok.pad_id, tok.bos_id, sep)
    prefix = torch.tensor([len(ids)]) if model.prefix_lm else None
    model.eval()
    with torch.no_grad():
        logits = model(torch.tensor([ids]), prefix_len=prefix)[0, -1].float()  # (V,)
    logits[list(never)] = float("-inf")  # as generate(never=...) does
    return _Prompt(model, tok, source, start, ids, len(source_ids) + 1, never, logits)


def _kept(p: _Prompt, temperature: float, top_k: int | None, top_p: float | None) -> int:
    """How many tokens the next draw can pick with these settings."""
    from ...pipeline.generation import next_token_distribution

    return int((next_token_distribution(p.logits, temperature, top_k, top_p) > 0).sum())


def _samples(
    p: _Prompt, temperature: float, top_k: int | None, top_p: float | None = None
) -> list[str]:
    """One seeded continuation per seed in :data:`_SEEDS` (German start included)."""
    import torch

    from ...pipeline.generation import generate

    rows = []
    for seed in _SEEDS:
        out = generate(
            p.model,
            torch.tensor(p.ids),
            _NEW_TOKENS,
            temperature=temperature,
            top_k=top_k,
            top_p=top_p,
            seed=seed,
            eos_id=p.tokenizer.eos_id,
            prefix_lm=p.model.prefix_lm,
            never=p.never,
        )
        text = p.tokenizer.decode(out[p.n_source :].tolist())
        if p.tokenizer.eos_id not in out[len(p.ids) :].tolist():
            text += " …"
        rows.append(text)
    return rows


def _sampling_figure(
    p: _Prompt,
    temperature: float,
    top_k: int | None,
    vocab: Sequence[str],
    top_p: float | None = None,
):
    from ...pipeline.generation import next_token_distribution
    from ..decoder_only import plot_next_token_distribution

    probs = next_token_distribution(p.logits, temperature, top_k, top_p)  # (V,)
    plain = next_token_distribution(p.logits)
    samples = _samples(p, temperature, top_k, top_p)
    kept = int((probs > 0).sum())
    nz = probs[probs > 0].double()
    entropy = max(0.0, float(-(nz * nz.log2()).sum()))  # no "-0.00" for one token
    cuts = [f"top-k = {top_k}"] if top_k is not None else []
    cuts += [f"top-p = {top_p:g}"] if top_p is not None and top_p < 1 else []
    cut = ", ".join(cuts) or "no cut-off"
    tokens = "token" if kept == 1 else "tokens"
    with book_style():
        fig = new_figure((8.0, 6.2), layout="constrained")
        ax, text_ax = fig.subplots(2, 1, height_ratios=[3.3, 1.0])
        plot_next_token_distribution(
            probs.numpy(),
            vocab,
            reference=plain.numpy(),
            ax=ax,
            title=f"temperature {temperature:g}, {cut}: {kept:,} {tokens} possible, "
            f"entropy {entropy:.2f} bits",
            show=_SHOW,
        )
        text_ax.axis("off")
        lines = [f"seed {s}:  {t}" for s, t in zip(_SEEDS, samples)]
        text_ax.text(
            0.0,
            1.0,
            "Sampled continuations (up to 12 new tokens):",
            fontsize=10,
            fontweight="bold",
            va="top",
            transform=text_ax.transAxes,
        )
        for i, line in enumerate(lines):
            text_ax.text(
                0.0, 0.72 - 0.26 * i, line, fontsize=10, va="top", transform=text_ax.transAxes
            )
        fig.suptitle(
            f"After “{p.source}” <sep> “{p.start}”, the model samples the next token from …",
            fontsize=11,
        )
    return fig


class _OneLayout:
    """Lay out the first frame; give every later frame the same axes positions.

    The frames differ in their data, not in their labels (the bars keep the order of the
    plain distribution), and skipping the constrained-layout pass halves the drawing time.
    The axes end :data:`_RIGHT_ROOM` short of the first frame's layout: a frame whose
    x axis ends at a tick (0.7) keeps that tick's label inside the image.
    """

    def __init__(self) -> None:
        self.positions: list | None = None

    def png(self, fig) -> bytes:
        from matplotlib.transforms import Bbox

        if self.positions is None:
            figure_to_png(fig)  # the constrained layout of the first frame
            room = _RIGHT_ROOM / fig.get_figwidth()
            self.positions = [
                Bbox.from_extents(b.x0, b.y0, b.x1 - room, b.y1)
                for b in (ax.get_position() for ax in fig.get_axes())
            ]
        fig.set_layout_engine("none")
        for ax, position in zip(fig.get_axes(), self.positions):
            ax.set_position(position)
        return figure_to_png(fig)


def sampling_explorer(
    translator,
    source: str = SAMPLING_PROMPT[0],
    start: str = SAMPLING_PROMPT[1],
    *,
    static: bool | None = None,
):
    """Temperature, top-k and top-p sampling from the decoder-only translator, after a prompt.

    Chapter 12. The prompt is ``source <sep> start``; each state draws the distribution of
    the next token with the real German tokens (the dashed outlines are the model's plain
    distribution, temperature 1 and no cut-off) and three continuations sampled with seeds
    0, 1 and 2 by :func:`~transformer_lib.pipeline.generation.generate`.

    Args:
        translator: the decoder-only model and its tokenizer (a ``Translator`` from
            ``load_pretrained(DEFAULT_DECODER_ONLY)``).
        source: the English sentence.
        start: the beginning of the German translation, continued by the model.
        static: force the precomputed (True) or the live (False) version.

    Returns:
        The explorer. Static: a temperature slider (0.3 … 2.5) × a ``cut-off`` toggle
        (all, top-k 20, 5 and 1, top-p 0.9 and 0.5): 30 frames, controls
        ``"temperature"`` and ``"cutoff"``. Live: temperature, top-k and top-p sliders
        and the German start (``"temperature"``, ``"top_k"``, ``"top_p"``, ``"start"``).
    """
    widgets = load_ipywidgets()
    title = "Sampling the next token"
    p = _prompt(translator, source, start)
    vocab = p.vocab
    if use_static(static):
        temps, cutoffs = _STATIC_TEMPERATURES, _STATIC_CUTOFFS
        temperature = widgets.SelectionSlider(
            options=[f"{t:g}" for t in temps],
            index=temps.index(1.0),
            description="temperature",
            tooltip="the scores are divided by the temperature before the softmax",
            style={"description_width": "initial"},
            layout=widgets.Layout(width="420px"),
        )
        cutoff = widgets.ToggleButtons(
            options=[label for label, _, _ in cutoffs],
            index=0,
            description="cut-off",
            tooltip="top-k keeps the k likeliest tokens; top-p the fewest likeliest "
            "whose probabilities add up to at least p",
            style={"button_width": "80px"},
        )
        layout = _OneLayout()
        frames = [
            [layout.png(_sampling_figure(p, t, k, vocab, top_p)) for _, k, top_p in cutoffs]
            for t in temps
        ]

        def describe(i: int, j: int) -> str:
            label, k, top_p = cutoffs[j]
            kept = _kept(p, temps[i], k, top_p)
            cut = "no cut-off" if k is None and top_p is None else label
            return (
                f"temperature {temps[i]:g}, {cut}: {kept:,} "
                f"{'token' if kept == 1 else 'tokens'} possible"
            )

        return static_explorer(
            title,
            "Move the temperature slider and choose a cut-off: top-k keeps the k likeliest "
            "tokens, top-p the fewest likeliest whose probabilities add up to at least p. "
            "Three seeded samples under the bars use the same settings.",
            [temperature, cutoff],
            {"temperature": temperature, "cutoff": cutoff},
            [temperature, cutoff],
            frames,
            alt="Bars of the decoder-only model's next-token probabilities after the prompt "
            "at the chosen temperature, tokens removed by the top-k or top-p cut-off shown "
            "in grey, and three seeded samples drawn with the same settings.",
            describe=describe,
        )
    temperature = widgets.FloatLogSlider(
        value=1.0,
        base=10,
        min=-1,
        max=0.7,
        step=0.05,
        description="temperature",
        tooltip="the scores are divided by the temperature before the softmax",
        continuous_update=False,
        readout_format=".2f",
        style={"description_width": "initial"},
    )
    top_k = widgets.IntSlider(
        value=0,
        min=0,
        max=100,
        description="top-k (0 = all)",
        continuous_update=False,
        style={"description_width": "initial"},
    )
    top_p = widgets.FloatSlider(
        value=1.0,
        min=0.05,
        max=1.0,
        step=0.05,
        description="top-p",
        tooltip="sample only from the most likely tokens that make up probability p",
        continuous_update=False,
    )
    german = widgets.Text(value=start, description="German start")
    state = {"prompt": p}
    memo = LayoutMemo()

    def draw() -> tuple[bytes, str]:
        if german.value != state["prompt"].start:
            state["prompt"] = _prompt(translator, source, german.value)
        q = state["prompt"]
        k = top_k.value or None
        fig = _sampling_figure(q, temperature.value, k, vocab, top_p.value)
        note = f"<span style='font-size:0.92em'>Prompt: {html.escape(source)} &lt;sep&gt; "
        return memo.png(fig, key=0), note + f"{html.escape(q.start)}</span>"

    return live_explorer(
        title,
        "Change the temperature, top-k and top-p; edit the German start to change the prompt.",
        [widgets.HBox([temperature, top_k]), widgets.HBox([top_p, german])],
        {"temperature": temperature, "top_k": top_k, "top_p": top_p, "start": german},
        draw,
        [temperature, top_k, top_p, german],
    )
