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


def test_live_explorer_redraws_and_explains_bad_input(translator):
    box = beam_explorer(translator, SENTENCE, static=False)
    first = bytes(box.image.value)
    assert first.startswith(PNG_MAGIC)
    box.controls["beam"].index = 0  # k = 1: greedy
    assert bytes(box.image.value) != first
    box.controls["sentence"].value = "   "
    assert "empty" in box.message.value
    assert box.last_error() is None
