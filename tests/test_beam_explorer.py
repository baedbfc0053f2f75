"""The beam-search explorer of chapter 10 (transformer_lib.views.explorers.beam).

``beam_steps`` must agree with ``beam_search`` (k = 1 is greedy decoding, the finished
hypotheses are the search's own), and the static explorer must hold one distinct frame per
(beam size, α) with every Stack jslinked to its control.
"""

from __future__ import annotations

import math

import pytest

widgets = pytest.importorskip("ipywidgets")

from ipywidgets.widgets.widget_link import Link  # noqa: E402
from widget_tree import find_widgets, shipped_or_random_translator  # noqa: E402

from transformer_lib import beam_search, greedy_decode  # noqa: E402
from transformer_lib.pipeline.decoding import length_penalty  # noqa: E402
from transformer_lib.views.explorers.beam import (  # noqa: E402
    BEAM_SIZES,
    LENGTH_PENALTIES,
    beam_explorer,
    beam_steps,
    trace_beam_search,
)

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
SENTENCE = "How tall is he?"


@pytest.fixture(scope="module")
def translator():
    return shipped_or_random_translator()


@pytest.mark.parametrize("beam_size,alpha", [(1, 0.6), (2, 0.0), (4, 0.6), (4, 1.0)])
def test_beam_steps_match_the_search(translator, beam_size, alpha):
    steps, finished = beam_steps(translator, SENTENCE, beam_size, alpha)
    src = translator.encode(SENTENCE)
    want = beam_search(translator.model, src, beam_size, alpha)[0].tolist()
    want = [i for i in want if i != translator.tokenizer.pad_id]
    assert finished[0][0] == translator.tokenizer.decode(want)
    if beam_size == 1:
        assert want == greedy_decode(translator.model, src)[0].tolist()
    scores = [score for *_, score in finished]
    assert scores == sorted(scores, reverse=True)
    for _, tokens, log_p, score in finished:
        assert math.isclose(score, log_p / length_penalty(len(tokens), alpha), rel_tol=1e-6)
    # every step holds at most k live prefixes plus the added prefixes of finished ones
    for t, hyps in enumerate(steps[:-1], start=1):
        assert all(len(tokens) == t for tokens, _ in hyps)
        assert len(hyps) <= 2 * beam_size
    assert [tokens for tokens, _ in steps[-1]] == [tokens for _, tokens, *_ in finished]


@pytest.mark.parametrize("beam_size", [1, 3, 4])
def test_trace_follows_the_rule_of_the_loop(translator, beam_size):
    """The rule the docstring of beam_search and chapter 10 describe, step by step."""
    K, eos = beam_size, translator.tokenizer.eos_id
    trace = trace_beam_search(translator, SENTENCE, K, 0.6)
    src = translator.encode(SENTENCE)
    hyps = beam_search(translator.model, src, K, 0.6, n_best=K, return_hypotheses=True)[0]
    assert sorted(h.tokens for h in trace.finished) == sorted(h.tokens for h in hyps)
    n_finished = 0
    for t, step in enumerate(trace.steps, start=1):
        logps = [lp for _, lp in step.candidates]
        assert len(logps) <= 2 * K and logps == sorted(logps, reverse=True)
        # Candidates in order of log P: <eos> is set aside as finished while fewer
        # than K have finished; any other is kept live until K are; then the step ends.
        want, kept = [], 0
        for ids, lp in step.candidates:
            if ids[-1] == eos:
                if n_finished + len(want) < K:
                    want.append((ids, lp))
            else:
                kept += 1
                if kept == K:
                    break
        if t < trace.max_new_tokens:
            assert [(h.tokens, h.log_prob) for h in step.finished] == want
            assert step.live == [c for c in step.candidates if c[0][-1] != eos][:K]
        n_finished += len(step.finished)
        if t < len(trace.steps):  # the next step extends exactly the live hypotheses
            extended = {tuple(ids[:-1]) for ids, _ in trace.steps[t].candidates}
            assert extended <= {tuple(ids) for ids, _ in step.live}
    assert n_finished == len(trace.finished) == K or len(trace.steps) == trace.max_new_tokens


def test_static_explorer_frames_switch_in_the_browser(translator):
    box = beam_explorer(translator, SENTENCE, static=True)
    assert box.frame_count == len(BEAM_SIZES) * len(LENGTH_PENALTIES) <= 36
    pngs = [bytes(image.value) for image in find_widgets(box, widgets.Image)]
    assert len(pngs) == box.frame_count
    assert all(png.startswith(PNG_MAGIC) for png in pngs)
    assert len(set(pngs)) == len(pngs), "every (k, α) frame should differ"
    stacks = find_widgets(box, widgets.Stack)
    links = [link for link in box.links if isinstance(link, Link)]
    assert len(links) == len(stacks) == 1 + len(BEAM_SIZES)
    outer = box.stack
    assert outer.selected_index == BEAM_SIZES.index(4)
    assert outer.children[0].selected_index == LENGTH_PENALTIES.index(0.6)


@pytest.mark.parametrize("static", [True, False])
def test_alpha_label_and_buttons_share_a_row_of_their_own(translator, static):
    """Beside the beam-size slider the α buttons wrapped away from their label."""
    box = beam_explorer(translator, SENTENCE, static=static)
    alpha = box.controls["alpha"]
    assert alpha in box.children  # a row of the explorer, not half of an HBox
    assert not any(alpha in row.children for row in find_widgets(box, widgets.HBox))
    assert alpha.description == "α"
    assert alpha.layout.display == "flex" and alpha.layout.flex_flow == "row nowrap"


def test_live_explorer_redraws_and_explains_bad_input(translator):
    box = beam_explorer(translator, SENTENCE, static=False)
    first = bytes(box.image.value)
    assert first.startswith(PNG_MAGIC)
    box.controls["beam"].index = 0  # k = 1: greedy
    assert bytes(box.image.value) != first
    box.controls["sentence"].value = "   "
    assert "empty" in box.message.value
    assert box.last_error() is None
