"""The key-value view of the FFN (chapter 7): activations, top contexts, value projections."""

from __future__ import annotations

import pytest
import torch

from transformer_lib import Transformer, TransformerConfig
from transformer_lib.views.ffn_memories import (
    Census,
    Context,
    Memory,
    context_tokens,
    decoder_ffn_hidden,
    ffn_census,
    ffn_memories,
    top_contexts,
    value_logits,
)

torch.set_num_threads(1)
PAD = 0


def _model(**overrides) -> Transformer:
    torch.manual_seed(0)
    config = TransformerConfig(
        vocab_size=50,
        d_model=16,
        n_heads=2,
        d_ff=32,
        n_encoder_layers=1,
        n_decoder_layers=2,
        dropout=0.1,
        max_len=32,
        **overrides,
    )
    return Transformer(config).eval()


def _batch():
    torch.manual_seed(1)
    src = torch.randint(4, 50, (3, 6))
    tgt = torch.randint(4, 50, (3, 8))
    tgt[:, 0] = 2  # <bos>
    tgt[1, 5:] = PAD  # a shorter sentence
    return src, tgt


@pytest.mark.parametrize("layer", [0, 1])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
def test_hidden_matches_a_hook_on_the_ffn(layer, activation):
    model = _model(activation=activation)
    src, tgt = _batch()
    ffn = model.decoder.layers[layer].ffn
    seen = {}
    hooks = [
        ffn.linear1.register_forward_hook(lambda m, i, o: seen.setdefault("pre", o)),
        ffn.register_forward_hook(lambda m, i, o: seen.setdefault("out", o)),
    ]
    with torch.no_grad():
        model(src, tgt[:, :-1])
    for hook in hooks:
        hook.remove()
    hidden = decoder_ffn_hidden(model, src, tgt[:, :-1], layer)
    act = torch.nn.functional.gelu if activation == "gelu" else torch.relu
    torch.testing.assert_close(hidden, act(seen["pre"]))
    # the key-value sum: sum_i hidden_i v_i + b2 is the FFN's output
    values = ffn.linear2.weight  # (D, d_ff): column i is unit i's value
    rebuilt = torch.einsum("btf,df->btd", hidden, values) + ffn.linear2.bias
    torch.testing.assert_close(rebuilt, seen["out"], atol=1e-5, rtol=1e-5)


def test_top_contexts_are_sorted_real_and_the_maximum():
    torch.manual_seed(2)
    act = torch.randn(4, 7)
    real = torch.rand(4, 7) > 0.3
    found = top_contexts(act, real, k=5)
    scores = [a for _, _, a in found]
    assert scores == sorted(scores, reverse=True)
    assert all(bool(real[b, t]) for b, t, _ in found)
    assert all(act[b, t].item() == pytest.approx(a) for b, t, a in found)
    assert scores[0] == pytest.approx(act[real].max().item())
    assert len(top_contexts(act, real, k=1000)) == int(real.sum())
    with pytest.raises(ValueError, match="same shape"):
        top_contexts(act, real[:, :3], k=2)


def test_bad_layer_unit_and_swiglu_raise_clear_errors():
    model = _model()
    src, tgt = _batch()
    with pytest.raises(ValueError, match="decoder layers 0 to 1"):
        decoder_ffn_hidden(model, src, tgt[:, :-1], layer=2)
    with pytest.raises(ValueError, match="decoder layers 0 to 1"):
        ffn_memories(model, src, tgt, layer=-1, pad_id=PAD)
    with pytest.raises(ValueError, match="units 0 to 31"):
        value_logits(model, 0, 32)
    with pytest.raises(ValueError, match="SwiGLU"):
        decoder_ffn_hidden(_model(activation="swiglu"), src, tgt[:, :-1], 0)


def test_memories_follow_the_stated_rule():
    model = _model()
    src, tgt = _batch()
    memories = ffn_memories(model, src, tgt, layer=1, pad_id=PAD, n_units=3, n_contexts=4)
    hidden = decoder_ffn_hidden(model, src, tgt[:, :-1], 1)
    real = tgt[:, 1:] != PAD
    variance = hidden[real].var(0)
    assert [m.unit for m in memories] == variance.topk(3).indices.tolist()
    for m in memories:
        acts = [c.activation for c in m.contexts]
        assert acts == sorted(acts, reverse=True) and len(acts) == 4
        assert all(c.next_id == int(tgt[c.sentence, c.position + 1]) for c in m.contexts)
        logits = model.generator.weight @ model.decoder.layers[1].ffn.linear2.weight[:, m.unit]
        assert m.value_tokens == logits.topk(10).indices.tolist()
        assert 0.0 <= m.agreement <= 1.0


def test_agreement_and_context_tokens():
    contexts = [Context(0, 2, 3.0, 7), Context(1, 0, 2.0, 9), Context(0, 1, 1.0, 5)]
    memory = Memory(layer=0, unit=4, variance=1.0, contexts=contexts, value_tokens=[7, 5, 11])
    assert memory.agreement == pytest.approx(2 / 3)
    tgt_in = torch.tensor([[2, 10, 11, 12], [2, 13, 14, 15]])
    assert context_tokens(tgt_in, contexts[0], str) == ["2", "10", "11"]
    assert context_tokens(tgt_in, contexts[1], str, last=3) == ["2"]


def test_census_agrees_with_the_memories_of_single_units():
    model = _model()
    src, tgt = _batch()
    census = ffn_census(model, src, tgt, layer=1, pad_id=PAD, n_contexts=4, n_tokens=10)
    d_ff = model.config.d_ff
    assert census.cross.shape == (d_ff, d_ff) and census.live.shape == (d_ff,)
    memories = ffn_memories(model, src, tgt, 1, PAD, n_units=d_ff, n_contexts=4)
    hidden = decoder_ffn_hidden(model, src, tgt[:, :-1], 1)[tgt[:, 1:] != PAD]
    for m in memories:
        assert bool(census.live[m.unit]) == (int((hidden[:, m.unit] > 0).sum()) >= 4)
        if census.live[m.unit]:  # its top contexts are places where it fires
            assert census.agreement[m.unit].item() == pytest.approx(m.agreement)
    # one cross entry by hand: unit a's contexts against unit b's value
    by_unit = {m.unit: m for m in memories}
    a, b = census.live.nonzero().flatten()[:2].tolist()
    shared = [c.next_id in set(by_unit[b].value_tokens) for c in by_unit[a].contexts]
    assert census.cross[a, b].item() == pytest.approx(sum(shared) / len(shared))


def test_census_summaries_and_baseline():
    cross = torch.tensor([[1.0, 0.0, 0.5], [0.25, 0.5, 0.0], [0.0, 1.0, 0.0]])
    live = torch.tensor([True, True, False])
    census = Census(layer=0, n_contexts=4, n_tokens=2, cross=cross, live=live)
    own, other = census.mean()
    assert own == pytest.approx(0.75) and other == pytest.approx(0.125)  # live pairs only
    assert census.share_at_least(0.75) == pytest.approx((0.5, 0.0))
    assert census.agreement.tolist() == [1.0, 0.5, 0.0]
    with pytest.raises(ValueError, match="fewer than n_contexts"):
        model = _model()
        src, tgt = _batch()
        ffn_census(model, src, tgt, layer=0, pad_id=PAD, n_contexts=1000)
