"""The sampling explorer of chapter 12 (views.explorers.sampling), without a browser.

Static: temperature × top-k frames in nested Stacks jslinked to their controls, checked
with the same helper as the other explorers. Live: the controls redraw, and the figure's
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
    monkeypatch.setattr(sampling, "_STATIC_TOP_K", (None, 1))
    box = sampling.sampling_explorer(translator, static=True)
    _check_static(box, n_expected=4)
    assert box.controls["temperature"].value == "1"


def test_the_books_frame_count_is_modest():
    n = len(sampling._STATIC_TEMPERATURES) * len(sampling._STATIC_TOP_K)
    assert 20 <= n <= 40 and 1.0 in sampling._STATIC_TEMPERATURES


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
