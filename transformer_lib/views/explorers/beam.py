"""Beam size × length penalty: what beam search returns for one sentence (chapter 10).

Each state runs the library's :func:`~transformer_lib.pipeline.decoding.beam_search` with
one beam size ``k`` and one length-penalty exponent ``α`` and draws the hypotheses the beam
held after every step (:func:`beam_steps`, :func:`~transformer_lib.views.beam_search.
plot_beam_search`), with the finished hypotheses listed under the tree: their text, their
log-probability and the length-normalised score that ranks them.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass

from ..phone_layout import with_phone_png
from .frames import (
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

__all__ = [
    "BEAM_SIZES",
    "LENGTH_PENALTIES",
    "BeamTrace",
    "TracedStep",
    "beam_explorer",
    "beam_steps",
    "trace_beam_search",
]

#: Beam sizes and length-penalty exponents of the precomputed explorer: 4 × 3 frames.
BEAM_SIZES = (1, 2, 4, 8)
LENGTH_PENALTIES = (0.0, 0.6, 1.0)


@dataclass
class TracedStep:
    """What :func:`~transformer_lib.pipeline.decoding.beam_search_loop` did at one step.

    ``candidates``: the ``2k`` best extensions of the live hypotheses, best first, as
    ``(ids, log P)`` (``ids`` start with ``<bos>``). ``live``: the hypotheses in the beam
    after the step, the ``k`` best candidates that do not end in ``<eos>`` (none at the
    length limit). ``finished``: the hypotheses set aside as finished at this step.
    """

    candidates: list[tuple[list[int], float]]
    live: list[tuple[list[int], float]]
    finished: list  # of pipeline.decoding.Hypothesis


@dataclass
class BeamTrace:
    """A beam search for one sentence, step by step (:func:`trace_beam_search`)."""

    steps: list[TracedStep]
    finished: list  # every Hypothesis, in the order the search set them aside
    max_new_tokens: int  # the length limit: most tokens the search could add


def trace_beam_search(translator, english: str, beam_size: int = 4, alpha: float = 0.6):
    """Run the library's beam search on one sentence and record every step.

    :func:`~transformer_lib.pipeline.decoding.beam_search` reports each step of its loop
    (``on_step``): the ``2k`` best candidates, the hypotheses it kept live and those it
    set aside as finished. The finished hypotheses are the search's own.

    Returns:
        A :class:`BeamTrace`.
    """
    from ...pipeline.decoding import beam_search, max_output_length

    model, tok = translator.model, translator.tokenizer
    if not tok.encode(english):
        raise InputProblem("Type an English sentence (the source is empty).")
    src = translator.encode(english).to(next(model.parameters()).device)  # (1, S)
    steps: list[TracedStep] = []

    def record(b, t, candidates, live, finished):
        steps.append(TracedStep(candidates, live, finished))

    beam_search(model, src, beam_size, alpha, n_best=beam_size, on_step=record)
    finished = [h for s in steps for h in s.finished]
    return BeamTrace(steps, finished, max_output_length(src.size(1), model.config.max_len) - 1)


def beam_steps(translator, english: str, beam_size: int = 4, alpha: float = 0.6):
    """The hypotheses a beam search held after every step, for one sentence.

    From :func:`trace_beam_search`: for every step ``t`` the live hypotheses in the beam
    after it and those set aside as finished at it; the last entry holds all the
    finished hypotheses.

    Args:
        translator: a ``Translator`` (encoder–decoder model and tokenizer).
        english: the source sentence.
        beam_size, alpha: as in :func:`~transformer_lib.pipeline.decoding.beam_search`.

    Returns:
        ``(steps, finished)``: ``steps`` in the form :func:`plot_beam_search` takes (token
        lists without ``<bos>`` and their log-probabilities, the finished ones last), and
        ``finished`` as ``(text, tokens, log P, score)`` tuples, best score first.
    """
    tok = translator.tokenizer
    trace = trace_beam_search(translator, english, beam_size, alpha)

    def names(ids: Sequence[int]) -> list[str]:
        return [tok.id_to_token(i) for i in ids[1:]]  # without <bos>

    done = sorted(trace.finished, key=lambda h: h.score, reverse=True)  # as beam_search
    steps = [
        [(names(ids), lp) for ids, lp in s.live]
        + [(names(h.tokens), h.log_prob) for h in s.finished]
        for s in trace.steps
    ]
    steps.append([(names(h.tokens), h.log_prob) for h in done])
    finished = [(tok.decode(h.tokens), names(h.tokens), h.log_prob, h.score) for h in done]
    return steps, finished


def _frame_width(depth: int) -> float:
    """Inches for a tree ``depth`` tokens deep: 0.62 per column (the start and one per
    step), so that a tree of about seven steps stays narrow enough for a phone's column
    at the smallest readable text; never wider than the page column's 8.4."""
    return min(8.4, max(5.0, 0.62 * (depth + 1) + 0.5))


def _phone_width(depth: int) -> float:
    """Inches of a frame's phone version for trees up to ``depth`` tokens deep: 0.64 per
    column with less room beside the first and last (shown in a phone's 350-pixel
    column, its 10-point text stays 9 CSS px up to seven steps)."""
    return 0.64 * (depth + 0.97) + 0.2


def _beam_figure(
    translator,
    english: str,
    beam_size: int,
    alpha: float,
    width: float | None = None,
    *,
    searched=None,
    phone: bool = False,
):
    """The frame for one state; ``searched`` is :func:`beam_steps`'s answer when known.
    ``phone``: the phone version, ``width`` inches wide, the tree's columns closer to
    the edges."""
    from ..beam_search import plot_beam_search

    if searched is None:
        searched = beam_steps(translator, english, beam_size, alpha)
    steps, finished = searched
    shown = finished[:4]
    prefixes = {tuple(tokens) for hyps in steps for tokens, _ in hyps}
    leaves = sum(not any(q[: len(p)] == p and q != p for q in prefixes) for p in prefixes)
    tree_height = max(4.6, 0.52 * leaves + 1.2)  # inches: room for every leaf's label
    if width is None:
        width = _frame_width(max(len(p) for p in prefixes))
    narrow = width < 7.0  # the legend's two columns need about 6.5 inches
    with book_style():
        fig = new_figure((width, tree_height + (2.6 if narrow else 2.0)), layout="constrained")
        ax, text_ax = fig.subplots(2, 1, height_ratios=[tree_height, 1.4])
        plot_beam_search(
            steps,
            best=finished[0][1],
            title=f"k = {beam_size}, α = {alpha:g}: “{english}”",
            ax=ax,
            fontsize=10,
            legend_columns=1 if narrow else 2,
        )
        if narrow:
            ax.set_ylabel("")  # the rows carry no scale; the legend says what they are
        if phone:
            depth = max(len(p) for p in prefixes)
            ax.set_xlim(-0.52, depth + 0.45)
        text_ax.axis("off")
        text_ax.text(
            0.0,
            1.0,
            "Finished (best first, up to 4): log P / score = log P / lp",
            fontsize=10,
            fontweight="bold",
            va="top",
            transform=text_ax.transAxes,
        )
        for i, (text, tokens, log_p, score) in enumerate(shown):
            mark = "→ " if i == 0 else "   "
            text_ax.text(
                0.0,
                0.78 - 0.2 * i,
                f"{mark}{text}  {log_p:.2f} / {score:.2f}  ({len(tokens)} tokens)",
                fontsize=10,
                va="top",
                transform=text_ax.transAxes,
            )
    return fig


def beam_explorer(translator, english: str, *, static: bool | None = None):
    """Beam size and length penalty: the tree, the outputs and their scores for one sentence.

    Chapter 10. Each state runs :func:`~transformer_lib.pipeline.decoding.beam_search` and
    draws the tree of hypotheses (:func:`beam_steps`) with the finished hypotheses, their
    log-probabilities and length-normalised scores under it; ``k = 1`` is greedy decoding.

    Args:
        translator: a ``Translator`` (encoder–decoder model and tokenizer).
        english: the sentence to translate.
        static: force the precomputed (True) or the live (False) version.

    Returns:
        The explorer. Static: a beam-size slider (1, 2, 4, 8) × α buttons (0, 0.6, 1):
        12 frames. Live: the same controls and a text box for another sentence.
    """
    widgets = load_ipywidgets()
    title = "Beam size and length penalty"
    beam = widgets.SelectionSlider(
        options=[str(k) for k in BEAM_SIZES],
        index=BEAM_SIZES.index(4),
        description="beam size k",
        tooltip="how many hypotheses beam search keeps at each step",
        style={"description_width": "initial"},
        layout=widgets.Layout(width="360px"),
    )
    alpha = widgets.ToggleButtons(
        options=[f"{a:g}" for a in LENGTH_PENALTIES],
        index=LENGTH_PENALTIES.index(0.6),
        description="α",
        tooltip="length penalty exponent alpha (0: no penalty)",
        style={"button_width": "64px", "description_width": "initial"},
        # The book's widget manager draws the label inline and the buttons as a block
        # under it; a flex row keeps the buttons beside their label.
        layout=widgets.Layout(display="flex", flex_flow="row nowrap", align_items="center"),
    )
    # One row per control, so that a narrow page cannot push the buttons under the slider.
    control_rows = [beam, alpha]
    if use_static(static):
        # One width for every frame (the deepest tree's), so the page does not jump.
        searches = {(k, a): beam_steps(translator, english, k, a) for k in BEAM_SIZES
                    for a in LENGTH_PENALTIES}  # fmt: skip
        depth = max(
            len(tokens) for steps, _ in searches.values() for hyps in steps for tokens, _ in hyps
        )
        width = _frame_width(depth)

        def frame(k: int, a: float) -> bytes:
            # In the static build each frame carries a phone version drawn for it (the
            # stacked re-layout would squeeze the tree's columns until its nodes overlap).
            searched = searches[k, a]
            png = figure_to_png(
                _beam_figure(translator, english, k, a, width, searched=searched), phone=False
            )
            if not static_mode():
                return png
            small = _beam_figure(
                translator, english, k, a, _phone_width(depth), searched=searched, phone=True
            )
            return with_phone_png(png, figure_to_png(small, phone=False))

        frames = [[frame(k, a) for a in LENGTH_PENALTIES] for k in BEAM_SIZES]
        return static_explorer(
            title,
            "Move the beam size and choose the length-penalty exponent α: the tree shows the "
            "hypotheses kept after every step, and the list under it the finished ones with "
            "the scores that rank them. k = 1 is greedy decoding.",
            control_rows,
            {"beam": beam, "alpha": alpha},
            [beam, alpha],
            frames,
            alt="A tree of the German hypotheses beam search keeps after each step for one "
            "English sentence, each node a token with its cumulative log-probability, and "
            "below it the finished translations with the length-normalised scores that "
            "rank them.",
        )
    sentence = widgets.Text(value=english, description="English", continuous_update=False)
    memo = LayoutMemo()

    def draw() -> tuple[bytes, str]:
        k, a = BEAM_SIZES[beam.index], LENGTH_PENALTIES[alpha.index]
        fig = _beam_figure(translator, sentence.value.strip(), k, a)
        return memo.png(fig, key=(k, a, sentence.value)), (
            f"<span style='font-size:0.92em'>{html.escape(sentence.value)}</span>"
        )

    return live_explorer(
        title,
        "Change the beam size and α, or type another sentence (recomputed live).",
        [*control_rows, sentence],
        {"beam": beam, "alpha": alpha, "sentence": sentence},
        draw,
        [beam, alpha, sentence],
    )
