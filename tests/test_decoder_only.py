"""The decoder-only Transformer: parity with nn.TransformerEncoder, masks, the KV cache,
sampling, translation decoding and the ``English <sep> German <eos>`` data format."""

import pytest
import torch
from torch import nn
from torch.testing import assert_close

from transformer_lib import DecoderOnlyTransformer, Transformer, TransformerConfig, count_parameters
from transformer_lib.components.decoder_only import (
    build_model,
    model_config_dict,
    parameter_counts,
)
from transformer_lib.components.masks import causal_mask, prefix_lm_mask
from transformer_lib.components.reference import (
    torch_decoder_only_from,
    torch_decoder_only_hidden,
)
from transformer_lib.pipeline.batching import batch_indices
from transformer_lib.pipeline.decoding import Hypothesis, length_penalty
from transformer_lib.pipeline.generation import (
    generate,
    next_token_distribution,
    translate_decoder_only,
    translate_texts_decoder_only,
)
from transformer_lib.pipeline.lm_batching import (
    DecoderOnlyDataset,
    collate_decoder_only,
    decoder_only_loss,
    join_pair,
)
from transformer_lib.pipeline.objectives import LabelSmoothingLoss
from transformer_lib.pipeline.tasks import DecoderOnlyTask

torch.set_num_threads(1)
V, SEP, EOS, PAD = 40, 4, 3, 0


def make_model(seed=0, prefix_lm=False, **overrides):
    torch.manual_seed(seed)
    kw = dict(d_model=32, n_heads=4, d_ff=64, n_decoder_layers=2, max_len=24, dropout=0.0)
    kw.update(overrides)
    return DecoderOnlyTransformer(TransformerConfig.tiny(V, **kw), prefix_lm=prefix_lm).eval()


def random_ids(B=3, T=9, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(5, V, (B, T), generator=g)  # no special tokens


# ---- the model is the library's encoder stack with a causal mask ----------------------------
@pytest.mark.parametrize("norm_first", [False, True], ids=["post-LN", "pre-LN"])
@pytest.mark.parametrize("grad", [False, True], ids=["no_grad", "grad"])
def test_parity_with_nn_transformer_encoder_and_causal_mask(norm_first, grad):
    model = make_model(norm_first=norm_first)
    with torch.no_grad():  # random γ, β: a swapped or missing norm would show
        for m in model.modules():
            if isinstance(m, nn.LayerNorm):
                nn.init.normal_(m.weight)
                nn.init.normal_(m.bias)
    ref = torch_decoder_only_from(model).eval()
    assert (ref.norm is not None) == norm_first  # a final norm only in pre-LN, as ours
    ids = random_ids()
    ids[0, 6:] = PAD  # right padding
    with torch.set_grad_enabled(grad):  # no_grad lets PyTorch take its fused fast path
        ours = model.hidden_states(ids)  # (B, T, D), before the output projection
        theirs = torch_decoder_only_hidden(model, ref, ids)
    assert ours.shape == (3, 9, 32)
    real = ids != PAD
    assert_close(ours[real], theirs[real], atol=1e-5, rtol=1e-4)
    assert_close(model(ids), model.generator(ours))
    with torch.no_grad():  # and the comparison does notice a changed weight
        ref.layers[1].self_attn.in_proj_weight[0, 0] += 0.5
        assert not torch.allclose(ours, torch_decoder_only_hidden(model, ref, ids), atol=1e-4)


def test_built_from_the_library_parts_with_tied_embeddings():
    model = make_model()
    assert all(type(b).__name__ == "EncoderLayer" for b in model.blocks.layers)
    assert len(model.blocks.layers) == model.config.n_decoder_layers
    assert model.generator.weight is model.embed.weight
    assert isinstance(model.blocks.norm, nn.Identity)  # post-LN: no final norm
    assert isinstance(make_model(norm_first=True).blocks.norm, nn.LayerNorm)
    ids = random_ids(2, 7)
    logits, attn = model(ids, return_attention=True)
    assert logits.shape == (2, 7, V)
    assert len(attn["decoder"]) == 2 and attn["decoder"][0].shape == (2, 4, 7, 7)
    assert torch.all(attn["decoder"][0].triu(diagonal=1) == 0)  # causal weights


def test_parameter_count_and_config_round_trip():
    cfg = TransformerConfig.tiny(V, d_model=32, n_heads=4, d_ff=64)
    model = DecoderOnlyTransformer(cfg)
    assert DecoderOnlyTransformer.parameter_count(cfg) == count_parameters(model)
    counts = parameter_counts(cfg)
    assert counts["encoder-decoder"] == count_parameters(Transformer(cfg))
    assert counts["decoder-only"] < counts["encoder-decoder"]  # no encoder, no cross-attention
    data = model_config_dict(make_model(prefix_lm=True))
    assert data["arch"] == "decoder-only" and data["prefix_lm"] is True
    rebuilt = build_model(data)
    assert isinstance(rebuilt, DecoderOnlyTransformer) and rebuilt.prefix_lm
    assert isinstance(build_model(cfg.to_dict()), Transformer)  # old checkpoints: no "arch"
    assert "arch" not in model_config_dict(Transformer(cfg))
    with pytest.raises(ValueError, match="arch must be one of"):
        build_model({**cfg.to_dict(), "arch": "encoder-only"})


# ---- masks -------------------------------------------------------------------------------
def test_masks_are_boolean_true_may_attend_and_batch_first():
    model = make_model()
    ids = random_ids(2, 5)
    ids[1, 3:] = PAD
    mask = model.attention_mask(ids)
    assert mask.dtype == torch.bool and mask.shape == (2, 1, 5, 5)
    assert mask[0, 0, 2, 1] and not mask[0, 0, 1, 2]  # earlier key visible, later not
    assert not mask[1, 0, 4, 3]  # padding is never attended to
    pm = prefix_lm_mask(torch.tensor([3, 0]), 5)
    assert pm.dtype == torch.bool and pm.shape == (2, 1, 5, 5)
    want = causal_mask(5)[0].clone()
    want[..., :3, :3] = True
    assert torch.equal(pm[0], want)
    assert torch.equal(pm[1], causal_mask(5)[0])  # prefix 0: plain causal
    cached = prefix_lm_mask(torch.tensor([3]), 2, 5)  # the last 2 queries of 5 positions
    assert torch.equal(cached[0, 0], want[0, 3:])
    with pytest.raises(ValueError, match="one prefix length per row"):
        prefix_lm_mask(torch.tensor(3), 5)


def test_causality_changing_token_t_changes_nothing_before_t():
    model = make_model(norm_first=True)
    ids = random_ids(2, 10)
    base = model(ids)
    for t in (0, 4, 9):
        changed = ids.clone()
        changed[:, t] = (changed[:, t] + 7) % (V - 5) + 5
        out = model(changed)
        assert_close(out[:, :t], base[:, :t])
        assert not torch.allclose(out[:, t], base[:, t])


def test_prefix_lm_prefix_sees_both_ways_but_never_later_tokens():
    model = make_model()
    ids = random_ids(2, 10)
    P = torch.tensor([4, 6])
    base = model(ids, prefix_len=P)
    # A token inside the prefix changes the *earlier* prefix positions too.
    changed = ids.clone()
    changed[:, 3] = (changed[:, 3] + 7) % (V - 5) + 5
    out = model(changed, prefix_len=P)
    assert not torch.allclose(out[:, 0], base[:, 0])
    # A token after the prefix changes no earlier position, prefix or not.
    for t in (6, 8):
        changed = ids.clone()
        changed[:, t] = (changed[:, t] + 7) % (V - 5) + 5
        out = model(changed, prefix_len=P)
        assert_close(out[:, :t], base[:, :t])
    with pytest.raises(ValueError, match="either mask or prefix_len"):
        model(ids, mask=causal_mask(10), prefix_len=P)


# ---- the KV cache --------------------------------------------------------------------------
@pytest.mark.parametrize("positional", ["sinusoidal", "learned"])
@pytest.mark.parametrize("prefix_lm", [False, True], ids=["causal", "prefix-LM"])
def test_cached_forward_and_generation_equal_full_recomputation(positional, prefix_lm):
    model = make_model(positional=positional, norm_first=True)
    ids = random_ids(2, 8)
    P = torch.tensor([5, 5]) if prefix_lm else None
    full = model(ids, prefix_len=P)
    cache = model.new_cache()
    steps = [model(ids[:, :5], prefix_len=P, cache=cache)]  # the prompt, then one at a time
    for t in range(5, 8):
        steps.append(model(ids[:, t : t + 1], prefix_len=P, cache=cache))
    assert cache.length == 8
    assert_close(torch.cat(steps, dim=1), full, atol=1e-5, rtol=1e-4)
    prompt = ids[:, :5]
    for kw in (dict(greedy=True), dict(top_k=10, temperature=1.3, seed=3)):
        fast = generate(model, prompt, 12, use_cache=True, prefix_lm=prefix_lm, **kw)
        slow = generate(model, prompt, 12, use_cache=False, prefix_lm=prefix_lm, **kw)
        assert torch.equal(fast, slow)
        assert fast.shape == (2, 5 + 12) and torch.equal(fast[:, :5], prompt)


def test_generation_stops_at_eos_and_at_the_context():
    model = make_model()
    with torch.no_grad():
        model.generator.bias[EOS] = 100.0  # <eos> is always the most likely token
    out = generate(model, random_ids(2, 3), 10, greedy=True, eos_id=EOS)
    assert out.shape == (2, 4) and (out[:, -1] == EOS).all()
    out = generate(model, random_ids(1, 20)[0], 100, greedy=True)  # 1-D prompt, max_len 24
    assert out.shape == (25,)  # positions 0..23 are fed; the last one predicts token 25


# ---- sampling ------------------------------------------------------------------------------
def test_temperature_to_zero_and_top_k_one_equal_greedy():
    model = make_model()
    prompt = random_ids(3, 4)
    greedy = generate(model, prompt, 10, greedy=True)
    assert torch.equal(generate(model, prompt, 10, temperature=1e-6, seed=0), greedy)
    assert torch.equal(generate(model, prompt, 10, top_k=1, seed=1), greedy)


def test_seeded_sampling_is_reproducible_and_leaves_global_rng_alone():
    model = make_model()
    prompt = random_ids(2, 3)
    torch.manual_seed(123)
    state = torch.get_rng_state()
    a = generate(model, prompt, 15, seed=7)
    assert torch.equal(torch.get_rng_state(), state)
    assert torch.equal(a, generate(model, prompt, 15, seed=7))
    assert not torch.equal(a, generate(model, prompt, 15, seed=8))


LOGITS = torch.tensor([2.0, 1.5, 1.0, 0.5, 0.0, -0.5, -1.0, -3.0])


def test_sampled_frequencies_match_the_softmax():
    """Chi-square over 20,000 draws from a fixed distribution (fixed seed)."""
    probs = next_token_distribution(LOGITS, temperature=0.8)
    assert_close(probs, (LOGITS / 0.8).softmax(-1))
    n = 20_000
    g = torch.Generator().manual_seed(0)
    draws = torch.multinomial(probs.expand(n, -1), 1, generator=g).squeeze(1)
    counts = torch.bincount(draws, minlength=len(LOGITS)).double()
    expected = probs.double() * n
    chi2 = float(((counts - expected) ** 2 / expected).sum())
    assert chi2 < 24.3  # 99.9% quantile of chi-square with 7 degrees of freedom


def test_sampled_frequencies_through_generate():
    """generate samples from next_token_distribution: per-bin z-scores over 2,000 draws."""
    torch.manual_seed(0)
    model = make_model(n_decoder_layers=1)
    prompt = random_ids(1, 2).expand(2000, -1)
    out = generate(model, prompt, 1, top_k=6, temperature=2.0, seed=11)[:, -1]
    probs = next_token_distribution(model(prompt[:1])[0, -1], 2.0, top_k=6).double()
    counts = torch.bincount(out, minlength=V).double()
    assert counts[probs == 0].sum() == 0  # nothing outside the top 6
    kept = probs > 0
    z = (counts[kept] - 2000 * probs[kept]) / (2000 * probs[kept] * (1 - probs[kept])).sqrt()
    assert z.abs().max() < 4.0


def test_top_k_zeroes_the_rest_and_top_p_keeps_the_smallest_set():
    p = next_token_distribution(LOGITS, top_k=3)
    assert (p[3:] == 0).all() and (p[:3] > 0).all()
    assert_close(p[:3], LOGITS[:3].softmax(-1))
    full = LOGITS.softmax(-1)
    cum = full.cumsum(-1)
    for top_p in (0.1, 0.5, float(cum[2]) + 1e-4, 0.9, 0.99):
        p = next_token_distribution(LOGITS, top_p=top_p)
        n_kept = int((p > 0).sum())
        assert cum[n_kept - 1] >= top_p - 1e-6  # enough mass ...
        assert n_kept == 1 or cum[n_kept - 2] < top_p  # ... and no smaller set has it
        assert_close(p[:n_kept], full[:n_kept] / full[:n_kept].sum())
    assert torch.equal(next_token_distribution(LOGITS, top_p=1.0), full)
    both = next_token_distribution(LOGITS, top_k=2, top_p=0.99)  # top-k first, then top-p
    assert int((both > 0).sum()) == 2
    batch = next_token_distribution(torch.stack([LOGITS, LOGITS.flip(0)]), top_k=1)
    assert batch[0, 0] == 1 and batch[1, -1] == 1  # row-wise on (B, V)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(temperature=0.0), "temperature must be > 0.*greedy=True"),
        (dict(temperature=-1.0), "temperature must be > 0"),
        (dict(top_p=0.0), "top_p must be in \\(0, 1\\]"),
        (dict(top_p=1.5), "top_p must be in \\(0, 1\\]"),
        (dict(top_k=0), "top_k must be an integer >= 1"),
    ],
)
def test_bad_sampling_arguments_get_clear_errors(kwargs, match):
    model = make_model()
    with pytest.raises(ValueError, match=match):
        generate(model, random_ids(1, 3), 2, **kwargs)
    with pytest.raises(ValueError, match=match):
        next_token_distribution(LOGITS, **kwargs)


def test_bad_prompts_get_clear_errors():
    model = make_model()  # max_len 24
    with pytest.raises(ValueError, match="max_len=24"):
        generate(model, random_ids(1, 25), 1, greedy=True)
    with pytest.raises(ValueError, match="empty"):
        generate(model, [], 3, greedy=True)
    with pytest.raises(ValueError, match="padding id"):
        generate(model, torch.tensor([[5, 6, PAD]]), 3, greedy=True)
    assert generate(model, random_ids(1, 3), 4, greedy=True, temperature=0).shape == (1, 7)


# ---- translation decoding --------------------------------------------------------------------
def test_translate_greedy_and_beam():
    model = make_model()
    sources = [[5, 6, 7], [8, 9], [10, 11, 12], [13]]
    greedy = translate_decoder_only(model, sources, SEP, EOS, beam=1, max_len=6)
    for src, out in zip(sources, greedy):  # the same as generate on each prompt alone
        alone = generate(
            model, [*src, SEP], 6, greedy=True, eos_id=EOS, never=(PAD, model.config.bos_id, SEP)
        )[len(src) + 1 :].tolist()
        assert out == (alone[: alone.index(EOS)] if EOS in alone else alone)
        assert SEP not in out and PAD not in out
    assert translate_decoder_only(model, sources, SEP, EOS, beam=1, max_len=6, batch_size=1) == (
        greedy
    )
    beam = translate_decoder_only(model, sources, SEP, EOS, beam=3, alpha=0.6, max_len=6)
    assert len(beam) == 4 and all(len(b) <= 6 for b in beam)


def test_beam_finds_at_least_the_greedy_score():
    """Beam search ranks by log P / length_penalty; its best is never below greedy's."""
    model = make_model(seed=3, prefix_lm=True)
    src = [5, 9, 14, 20]
    prompt = [*src, SEP]

    def score(tokens):  # length-normalised log-probability of a continuation
        ids = torch.tensor([prompt + tokens])
        never = [PAD, model.config.bos_id, SEP]
        logp = model(ids[:, :-1], prefix_len=len(prompt))[0]
        logp[:, never] = float("-inf")
        logp = logp.log_softmax(-1)
        lp = sum(float(logp[len(prompt) - 1 + i, t]) for i, t in enumerate(tokens))
        return Hypothesis(tokens, lp, lp / length_penalty(len(tokens), 0.6)).score

    with torch.no_grad():
        g = translate_decoder_only(model, [src], SEP, EOS, beam=1, max_len=5)[0]
        b = translate_decoder_only(model, [src], SEP, EOS, beam=4, max_len=5)[0]
        g_full = g + [EOS] if len(g) < 5 else g
        b_full = b + [EOS] if len(b) < 5 else b
        assert score(b_full) >= score(g_full) - 1e-5


def test_translate_texts_with_a_tokenizer_and_mode_is_restored():
    class Tok:  # the few methods translation uses
        def token_to_id(self, token):
            return SEP if token == "<sep>" else None

        def encode_batch(self, texts):
            return [[5 + len(w) for w in t.split()] for t in texts]

        def decode(self, ids):
            return " ".join(map(str, ids))

    model = make_model().train()
    texts = ["a bb", "ccc d ee"]
    out = translate_texts_decoder_only(model, Tok(), texts)
    assert model.training  # put back in training mode
    ids = translate_decoder_only(model, Tok().encode_batch(texts), SEP, EOS)
    assert out == [" ".join(map(str, t)) for t in ids]
    with pytest.raises(ValueError, match="empty"):
        translate_texts_decoder_only(model, Tok(), [" "])


def test_translate_rejects_sources_that_fill_the_context():
    model = make_model()
    with pytest.raises(ValueError, match="leaves no room"):
        translate_decoder_only(model, [list(range(5, 28))], SEP, EOS)
    with pytest.raises(ValueError, match="empty"):
        translate_decoder_only(model, [[]], SEP, EOS)


# ---- the data format -------------------------------------------------------------------------
def make_dataset():
    src = [[5, 6, 7], [8, 9], [10], [11, 12, 13, 14, 15]]
    tgt = [[20, 21], [22, 23, 24, 25], [26], []]
    return DecoderOnlyDataset.from_ids(src, tgt, sep_id=SEP, eos_id=EOS, pad_id=PAD), src, tgt


def test_sequences_loss_mask_and_prefix_length():
    ds, src, tgt = make_dataset()
    assert join_pair([5, 6], [7], SEP, EOS) == ([5, 6, SEP, 7, EOS], 3)
    assert ds.lengths == [len(s) + len(t) + 2 for s, t in zip(src, tgt)]
    assert batch_indices(ds.lengths, max_tokens=16, shuffle=False)  # usable by the batcher
    batch = collate_decoder_only([ds[i] for i in range(len(ds))], PAD)
    ids, loss_mask, prefix_len = batch
    assert ids.shape == (4, 8) and loss_mask.shape == (4, 7) and loss_mask.dtype == torch.bool
    assert prefix_len.tolist() == [len(s) + 1 for s in src]
    for b, (s, t) in enumerate(zip(src, tgt)):
        assert ids[b, : len(s) + len(t) + 2].tolist() == [*s, SEP, *t, EOS]
        counted = ids[b, 1:][loss_mask[b]].tolist()
        assert counted == [*t, EOS]  # exactly the German tokens and <eos>
    assert batch.n_target_tokens == sum(len(t) + 1 for t in tgt)
    dropped = DecoderOnlyDataset.from_ids([[5] * 10, [], [6]], [[7], [8], [9]], SEP, EOS, 0, 8)
    assert len(dropped) == 1 and dropped.n_dropped == 2  # too long, and an empty source


def test_dataset_from_a_tokenizer_uses_its_sep_token():
    class Tok:  # the few methods the dataset uses
        pad_id, eos_id = PAD, EOS

        def token_to_id(self, token):
            return SEP if token == "<sep>" else None

        def encode_batch(self, texts):
            return [[5 + len(w) for w in t.split()] for t in texts]

    ds = DecoderOnlyDataset([("a bb", "ccc"), ("", "d")], Tok())
    assert len(ds) == 1 and ds.pairs == [("a bb", "ccc")]
    assert ds[0][0].tolist() == [6, 7, SEP, 8, EOS] and ds[0][1] == 3

    class NoSep(Tok):
        def token_to_id(self, token):
            return None

    with pytest.raises(ValueError, match="no <sep> token"):
        DecoderOnlyDataset([("a", "b")], NoSep())


@pytest.mark.parametrize("prefix_lm", [False, True])
def test_loss_ignores_the_english_part(prefix_lm):
    ds, _, _ = make_dataset()
    batch = collate_decoder_only([ds[i] for i in range(len(ds))], PAD)
    criterion = LabelSmoothingLoss(V, 0.1, PAD)
    model = make_model()
    loss = decoder_only_loss(model, batch, criterion, prefix_lm)
    assert loss.ndim == 0 and loss > 0
    loss.backward()  # trains end to end

    class Perturbed(nn.Module):  # the model's logits, changed at every uncounted position
        config = model.config

        def forward(self, ids, prefix_len=None):
            logits = model(ids, prefix_len=prefix_len)
            noise = 10 * torch.randn_like(logits)
            return torch.where(batch.loss_mask[..., None], logits, noise)

    assert_close(decoder_only_loss(Perturbed(), batch, criterion, prefix_lm), loss)
    with pytest.raises(ValueError, match="pad_id"):
        decoder_only_loss(model, batch, LabelSmoothingLoss(V, 0.1, pad_id=None), prefix_lm)


class _StandIn(nn.Module):
    """Fixed logits in place of the model, with what the loss functions read of a model."""

    config = TransformerConfig.tiny(V)  # pad_id 0 = PAD

    def __init__(self, fn):
        super().__init__()
        self.fn = fn
        self.anchor = nn.Parameter(torch.zeros(1))  # for next(model.parameters()).device

    def forward(self, ids, prefix_len=None, **ignored):
        return self.fn(ids)


@pytest.mark.parametrize("prefix_lm", [False, True])
def test_training_and_validation_losses_score_the_next_token(prefix_lm):
    """Position t predicts token t + 1: a model that copies the token it reads scores badly
    and a next-token oracle scores ~0, in the training loss and in both validation numbers.
    (With ids[:, :-1] as the targets it would be the other way round: the copier at 0.)"""
    ds, _, _ = make_dataset()
    items = [ds[i] for i in range(len(ds))]
    batch = collate_decoder_only(items, PAD)
    full = {int(seq[0]): seq.tolist() for seq, _ in items}  # rows are known by their first id
    assert len(full) == len(items)

    def copy(ids):
        return 20.0 * nn.functional.one_hot(ids, V).float()

    def oracle(ids):
        out = torch.zeros(*ids.shape, V)
        for b, row in enumerate(ids.tolist()):
            seq = full[row[0]]
            for t in range(min(len(row), len(seq) - 1)):
                out[b, t, seq[t + 1]] = 20.0
        return out

    criterion = LabelSmoothingLoss(V, 0.0, PAD)
    task = DecoderOnlyTask(prefix_lm)
    losses = {}
    for name, fn in (("oracle", oracle), ("copy", copy)):
        trained, _, _ = task.batch_loss(_StandIn(fn), items, criterion, "cpu")
        valid = task.evaluate_loss(_StandIn(fn), ds, max_tokens=64, smoothing=0.0)
        direct = decoder_only_loss(_StandIn(fn), batch, criterion, prefix_lm)
        losses[name] = [float(trained), valid["val_loss"], valid["val_nll"], float(direct)]
    assert max(losses["oracle"]) < 1e-3, losses
    assert min(losses["copy"]) > 5.0, losses
