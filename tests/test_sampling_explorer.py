"""The sampling explorer of chapter 12 (views.explorers.sampling), without a browser.

Static: temperature × cut-off (top-k and top-p) frames in nested Stacks jslinked to their
controls, checked with the same helper as the other explorers; the top-p frames keep the
nucleus. Live: the controls redraw, and the figure's
distribution is exactly what ``generate`` samples from.
"""

from __future__ import annotations

import pytest
import torch

widgets = pytest.importorskip("ipywidgets")

from test_explorers import _check_live, _check_static, _png  # noqa: E402

from transformer_lib import DecoderOnlyTransformer, TransformerConfig  # noqa: E402
from transformer_lib.pipeline.generation import next_token_distribution  # noqa: E402
from transformer_lib.pipeline.pretrained import Translator  # noqa: E402
from transformer_lib.pipeline.tokenizer import Tokenizer  # noqa: E402
from transformer_lib.views.explorers import sampling  # noqa: E402


@pytest.fixture(scope="module")
def translator():
    """A small random decoder-only model with the shipped tokenizer (fast, no checkpoint)."""
    tok = Tokenizer.load()
    torch.manual_seed(0)
    config = TransformerConfig.tiny(tok.vocab_size).replace(n_decoder_layers=1)
    return Translator(DecoderOnlyTransformer(config), tok)


def test_static_frames_and_links(translator, monkeypatch):
    monkeypatch.setattr(sampling, "_STATIC_TEMPERATURES", (0.5, 1.0))
    cutoffs = (("all", None, None), ("top-k 1", 1, None), ("top-p 0.9", None, 0.9))
    monkeypatch.setattr(sampling, "_STATIC_CUTOFFS", cutoffs)
    box = sampling.sampling_explorer(translator, static=True)
    _check_static(box, n_expected=2 * 3)
    assert box.controls["temperature"].value == "1"
    cutoff = box.controls["cutoff"]
    assert cutoff.description == "cut-off"
    assert list(cutoff.options) == ["all", "top-k 1", "top-p 0.9"]
    # Frames are row-major: temperature 1, top-k 1 is frame 4, and keeps one token.
    assert box.frame_descriptions[4] == "temperature 1, top-k 1: 1 token possible"
    assert box.frame_descriptions[3].startswith("temperature 1, no cut-off: ")


def test_temperature_slider_reads_out_the_temperature(translator, monkeypatch):
    # The page gives a slider's handle its readout as aria-valuetext (explorer-alt.js),
    # so a screen reader hears "0.3" … "2.5", the temperature, not the position 0 … 4.
    from pathlib import Path

    monkeypatch.setattr(sampling, "_STATIC_TEMPERATURES", (0.3, 1.0, 2.5))
    monkeypatch.setattr(sampling, "_STATIC_CUTOFFS", sampling._STATIC_CUTOFFS[:1])
    slider = sampling.sampling_explorer(translator, static=True).controls["temperature"]
    assert isinstance(slider, widgets.SelectionSlider) and slider.readout
    assert slider.options == ("0.3", "1", "2.5")
    assert (slider.index, slider.label) == (1, "1")
    script = Path(__file__).parents[1] / "_static" / "explorer-alt.js"
    assert 'setAttribute("aria-valuetext", readout.textContent' in script.read_text()


def _nucleus_size(probs: torch.Tensor, p: float) -> int:
    """The smallest number of likeliest tokens whose probabilities add up to at least p."""
    total = 0.0
    for n, q in enumerate(sorted(probs.tolist(), reverse=True), start=1):
        total += q
        if total >= p:
            return n
    return len(probs)


def test_top_p_keeps_the_nucleus_of_a_known_distribution(translator):
    # 0.6 < 0.9 <= 0.6 + 0.25 + 0.1: top-p 0.9 keeps three tokens, top-p 0.5 one.
    probs = torch.tensor([0.05, 0.6, 0.1, 0.25])
    p = sampling._prompt(translator, "I am tired.", "Ich bin")
    p.logits = probs.log()
    assert sampling._kept(p, 1.0, None, 0.9) == _nucleus_size(probs, 0.9) == 3
    assert sampling._kept(p, 1.0, None, 0.5) == _nucleus_size(probs, 0.5) == 1
    assert sampling._kept(p, 1.0, 2, None) == 2


def test_top_p_frames_show_the_nucleus(translator, monkeypatch):
    monkeypatch.setattr(sampling, "_STATIC_TEMPERATURES", (1.0, 2.5))
    cutoffs = (("all", None, None), ("top-p 0.9", None, 0.9), ("top-p 0.5", None, 0.5))
    monkeypatch.setattr(sampling, "_STATIC_CUTOFFS", cutoffs)
    box = sampling.sampling_explorer(translator, static=True)
    logits = sampling._prompt(translator, *sampling.SAMPLING_PROMPT).logits
    for i, t in enumerate((1.0, 2.5)):
        probs = (logits / t).softmax(-1)
        sizes = [_nucleus_size(probs, p) for p in (0.9, 0.5)]
        said = [box.frame_descriptions[3 * i + j] for j in (1, 2)]
        assert said == [
            f"temperature {t:g}, top-p {p:g}: {n:,} token{'s' * (n != 1)} possible"
            for p, n in zip((0.9, 0.5), sizes)
        ]
        assert sizes[1] <= sizes[0] < int((probs > 0).sum())


def test_the_books_frame_count_is_modest():
    n = len(sampling._STATIC_TEMPERATURES) * len(sampling._STATIC_CUTOFFS)
    assert n == 30 and 1.0 in sampling._STATIC_TEMPERATURES
    labels = [label for label, _, _ in sampling._STATIC_CUTOFFS]
    assert labels[0] == "all" and any(k for _, k, _ in sampling._STATIC_CUTOFFS)
    assert any(top_p for _, _, top_p in sampling._STATIC_CUTOFFS), "top-p frames"
    assert all(len(label) <= 9 for label in labels), "buttons fit a phone's width"


def test_live_redraws(translator):
    box = sampling.sampling_explorer(translator, static=False)
    _check_live(box)
    before = _png(box)
    box.controls["temperature"].value = 0.3
    _check_live(box)
    assert _png(box) != before
    box.controls["start"].value = "Ich habe"
    _check_live(box)


def test_prompt_masks_special_tokens(translator):
    p = sampling._prompt(translator, "I am tired.", "Ich bin")
    sep = translator.tokenizer.token_to_id("<sep>")
    assert p.ids[p.n_source - 1] == sep
    probs = next_token_distribution(p.logits, 0.7, 5)
    assert probs[list(p.never)].sum() == 0 and int((probs > 0).sum()) == 5


def test_encoder_decoder_is_refused():
    from transformer_lib import Transformer

    tok = Tokenizer.load()
    with pytest.raises(TypeError, match="decoder-only"):
        sampling.sampling_explorer(
            Translator(Transformer(TransformerConfig.tiny(tok.vocab_size)), tok)
        )
