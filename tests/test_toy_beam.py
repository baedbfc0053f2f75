"""The toy beam search of chapter 10: the library's loop on a hand-made model, and its tree."""

from __future__ import annotations

import math

from transformer_lib.views.beam_search import plot_beam_search, toy_beam_search

TOY = {
    (): {"Er": 0.5, "Tom": 0.4, "Sie": 0.1},
    ("Er",): {"schläft": 0.4, "lacht": 0.35, "ist": 0.25},
    ("Tom",): {"schläft": 0.9, "lacht": 0.1},
}


def test_toy_beam_search_finds_what_greedy_misses():
    beam, greedy = toy_beam_search(TOY, beam_size=2), toy_beam_search(TOY, beam_size=1)
    assert greedy["best"] == ["Er", "schläft", "<eos>"]
    assert math.isclose(greedy["log_p"], math.log(0.5 * 0.4), rel_tol=1e-6)
    assert beam["best"] == ["Tom", "schläft", "<eos>"]
    assert math.isclose(beam["log_p"], math.log(0.4 * 0.9), rel_tol=1e-6)
    assert [h for h, _ in beam["kept"][1]] == [["Tom", "schläft"], ["Er", "schläft"]]
    assert sorted(beam["pruned"]) == [["Er", "ist"], ["Er", "lacht"], ["Sie"]]


def test_toy_beam_tree_marks_pruned_and_greedy():
    beam, greedy = toy_beam_search(TOY, beam_size=2), toy_beam_search(TOY, beam_size=1)
    fig = plot_beam_search(
        beam["candidates"], best=beam["best"], pruned=beam["pruned"], greedy=greedy["best"]
    )
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert "Sie\n-2.30" in texts and "schläft\n-1.02" in texts
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert "pruned: not among the beam's best" in legend
    assert "greedy decoding's path" in legend
    assert any(line.get_linestyle() == "--" for line in fig.axes[0].lines)
