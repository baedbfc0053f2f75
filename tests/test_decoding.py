"""Greedy decoding, beam search and the KV cache (chapter 10)."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from transformer_lib import Transformer, TransformerConfig
from transformer_lib.components.layers import KVCache
from transformer_lib.pipeline.decoding import (
    beam_search,
    greedy_decode,
    length_penalty,
    max_output_length,
    score_sequences,
)

PAD, UNK, BOS, EOS = 0, 1, 2, 3


def small_model(
    seed: int = 0, max_len: int = 20, vocab: int = 50, positional: str = "sinusoidal"
) -> Transformer:
    torch.manual_seed(seed)
    cfg = TransformerConfig.tiny(
        vocab, d_model=32, n_heads=4, d_ff=64, dropout=0.0, max_len=max_len, positional=positional
    )
    return Transformer(cfg).eval()


def sources(vocab: int = 50) -> torch.Tensor:
    g = torch.Generator().manual_seed(1)
    src = torch.randint(4, vocab, (3, 6), generator=g)
    src[1, 4:] = PAD  # ragged batch
    src[2, 2:] = PAD
    return src


class ChainModel(nn.Module):
    """A fake translator whose next-token distribution depends only on the last token.

    ``table[a]`` holds the probabilities of every next token after token ``a``; crafted
    tables make greedy decoding and beam search disagree in known ways.
    """

    def __init__(self, table: list[list[float]], max_len: int = 10):
        super().__init__()
        V = len(table)
        self.config = TransformerConfig(
            vocab_size=V, d_model=4, n_heads=1, d_ff=4, n_encoder_layers=0,
            n_decoder_layers=1, max_len=max_len,
        )  # fmt: skip
        probs = torch.tensor(table, dtype=torch.float32).clamp_min(1e-9)
        self.register_buffer("log_table", probs.log())
        self.dummy = nn.Parameter(torch.zeros(1))

    def encode(self, src):
        return torch.zeros(src.size(0), src.size(1), 4), (src != PAD)[:, None, None, :]

    def new_cache(self):
        return KVCache(1)

    def decode(self, tgt, memory, src_mask, cache=None):
        if cache is not None:
            cache.length += tgt.size(1)
        return self.log_table[tgt]  # (B, T, V)

    def forward(self, src, tgt):
        return self.decode(tgt, *self.encode(src))


def chain(rows: dict[int, dict[int, float]], V: int) -> list[list[float]]:
    table = []
    for a in range(V):
        row = [0.0] * V
        given = rows.get(a, {EOS: 1.0})
        for b, p in given.items():
            row[b] = p
        table.append(row)
    return table


# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("positional", ["sinusoidal", "learned"])
def test_cached_logits_equal_full_recomputation(positional):
    """Step-by-step decoding with the cache gives the full pass's logits: each new token
    gets the position after the cached ones, for the fixed and the learned encoding."""
    model = small_model(positional=positional)
    src = sources()
    tgt = torch.randint(4, 50, (3, 7), generator=torch.Generator().manual_seed(2))
    tgt[:, 0] = BOS
    memory, src_mask = model.encode(src)
    full = model.decode(tgt, memory, src_mask)  # (B, T, V), causal mask
    cache = model.new_cache()
    steps = [model.decode(tgt[:, t : t + 1], memory, src_mask, cache=cache) for t in range(7)]
    torch.testing.assert_close(torch.cat(steps, dim=1), full, atol=1e-5, rtol=1e-5)
    assert cache.length == 7


def test_greedy_with_cache_equals_without():
    model = small_model()
    src = sources()
    with_cache = greedy_decode(model, src, use_cache=True)
    without = greedy_decode(model, src, use_cache=False)
    assert torch.equal(with_cache, without)
    assert (with_cache[:, 0] == BOS).all()


def test_max_length_guard():
    model = small_model(max_len=20)  # an untrained model rarely says <eos>
    src = sources()
    out = greedy_decode(model, src)
    assert out.size(1) <= max_output_length(src.size(1), 20) == 20
    assert beam_search(model, src, beam_size=3).size(1) <= 20
    assert max_output_length(5, 512) == 55  # source length + 50


def test_beam_size_one_is_greedy():
    model = small_model()
    src = sources()
    greedy = greedy_decode(model, src)
    beam = beam_search(model, src, beam_size=1, alpha=0.6)
    assert torch.equal(beam, greedy[:, : beam.size(1)])
    assert (greedy[:, beam.size(1) :] == PAD).all()


def test_beam_search_batched_equals_one_by_one():
    model = small_model(seed=3)
    src = sources()
    batched = beam_search(model, src, beam_size=3)
    for b in range(src.size(0)):
        row = src[b : b + 1, : int((src[b] != PAD).sum())]
        single = beam_search(model, row, beam_size=3)
        n = single.size(1)
        assert torch.equal(batched[b, :n], single[0])
        assert (batched[b, n:] == PAD).all()


def test_beam_scores_are_model_scores():
    model = small_model(seed=4)
    src = sources()
    hyps = beam_search(model, src, beam_size=3, alpha=0.0, return_hypotheses=True, n_best=3)
    for b, hyp_list in enumerate(hyps):
        assert len(hyp_list) == 3
        assert [h.score for h in hyp_list] == sorted((h.score for h in hyp_list), reverse=True)
        for h in hyp_list:
            tgt = torch.tensor([h.tokens])
            expected = score_sequences(model, src[b : b + 1], tgt).item()
            assert h.log_prob == pytest.approx(expected, abs=1e-3)


def test_beam_finds_a_better_hypothesis_than_greedy():
    A, B = 4, 5
    # Greedy takes A (0.6) and then ends with p = 0.6 · 0.36; via B the sentence ends
    # with p = 0.4 · 0.9, which only a search that keeps B alive can find.
    table = chain(
        {BOS: {A: 0.6, B: 0.4}, A: {EOS: 0.36, A: 0.34, B: 0.3}, B: {EOS: 0.9, A: 0.1}}, 6
    )
    model = ChainModel(table)
    src = torch.tensor([[4, 5]])
    greedy = greedy_decode(model, src)
    beam = beam_search(model, src, beam_size=2, alpha=0.0)
    assert greedy[0].tolist() == [BOS, A, EOS]
    assert beam[0].tolist() == [BOS, B, EOS]
    g_score, b_score = score_sequences(model, src, greedy), score_sequences(model, src, beam)
    assert b_score.item() == pytest.approx(math.log(0.36), abs=1e-5)
    assert b_score.item() > g_score.item()


def test_length_penalty_prefers_longer_outputs_as_alpha_grows():
    A = 4
    table = chain({BOS: {EOS: 0.5, A: 0.48, UNK: 0.02}, A: {EOS: 0.9, A: 0.1}}, 5)
    model = ChainModel(table)
    src = torch.tensor([[4]])
    # α = 0: raw log-probability; "<eos>" alone (0.5) beats "A <eos>" (0.432).
    assert beam_search(model, src, beam_size=2, alpha=0.0)[0].tolist() == [BOS, EOS]
    # α = 2: log 0.432 / ((5+2)/6)^2 = -0.617 beats log 0.5 / 1 = -0.693.
    assert beam_search(model, src, beam_size=2, alpha=2.0)[0].tolist() == [BOS, A, EOS]


def test_length_penalty_formula():
    assert length_penalty(1, 0.6) == pytest.approx(1.0)
    assert length_penalty(7, 0.6) == pytest.approx(2.0**0.6)
    assert length_penalty(10, 0.0) == 1.0


def test_decoders_never_emit_pad_or_bos_mid_sentence():
    model = small_model(seed=5)
    with torch.no_grad():  # make <pad> and <bos> the most likely outputs
        model.generator.bias[PAD] = 50.0
        model.generator.bias[BOS] = 40.0
    src = sources()
    for out in (greedy_decode(model, src), beam_search(model, src, beam_size=2)):
        body = out[:, 1:]
        assert not (body == BOS).any()
        for row in body.tolist():  # padding only after <eos>
            if PAD in row:
                assert EOS in row and row.index(PAD) > row.index(EOS)


def test_too_long_source_is_a_clear_error():
    model = small_model(max_len=20)
    with pytest.raises(ValueError, match="max_len=20"):
        greedy_decode(model, torch.randint(4, 50, (1, 21)))


def test_strict_eos_finishes_only_the_k_best_of_a_step():
    """Step 2 ranks: a·<eos> -1.20, a·a -1.71, b·<eos> -1.72, b·a -1.97 (k = 2). By
    default b·<eos> finishes (one live extension ranks above it) and the search is done;
    with fairseq's rule it ranks third of the step, is dropped, and the search goes on."""
    from types import SimpleNamespace

    from transformer_lib.pipeline.decoding import beam_search_loop

    pad, bos, eos, a, b = range(5)
    config = SimpleNamespace(pad_id=pad, bos_id=bos, eos_id=eos, vocab_size=5)
    table = {  # last token -> next-token probabilities of (<eos>, a, b)
        bos: (1e-6, 0.6, 0.4),
        a: (0.5, 0.3, 0.2),
        b: (0.45, 0.35, 0.2),
    }

    def step(ys):  # (B·K, t) -> (B·K, V) log-probabilities
        out = torch.full((ys.size(0), 5), -1e9)
        for row, last in enumerate(ys[:, -1].tolist()):
            out[row, [eos, a, b]] = torch.tensor(table[last]).log()
        return out

    def search(strict):
        seen = []
        start = torch.full((2, 1), bos)
        (done,) = beam_search_loop(
            step, lambda rows: None, start, 1, 2, 5, 0.0, config,
            on_step=lambda *args: seen.append(args[1]), strict_eos=strict,
        )  # fmt: skip
        return sorted(tuple(h.tokens) for h in done), seen

    loose, loose_steps = search(False)
    assert loose == [(bos, a, eos), (bos, b, eos)] and loose_steps == [1, 2]
    strict, strict_steps = search(True)
    assert (bos, b, eos) not in strict and strict_steps[:3] == [1, 2, 3]
    assert (bos, a, eos) in strict and len(strict) == 2
