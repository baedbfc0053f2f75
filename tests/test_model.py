"""The whole encoder–decoder: parity with torch.nn.Transformer, properties, bad input."""

import random

import pytest
import torch
from torch import nn
from torch.testing import assert_close

from transformer_lib import (
    MultiHeadAttention,
    Transformer,
    TransformerConfig,
    count_parameters,
    paper_parameter_counts,
    scaled_dot_product_attention,
)
from transformer_lib.components.reference import torch_reference_logits, torch_transformer_from

torch.set_num_threads(1)
V = 50


def make_model(seed=0, **overrides):
    torch.manual_seed(seed)
    cfg = TransformerConfig.tiny(V, d_model=32, n_heads=4, d_ff=64, max_len=32, **overrides)
    return Transformer(cfg).eval()


def batch(seed=0):
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(4, V, (3, 9), generator=g)
    tgt = torch.randint(4, V, (3, 6), generator=g)
    src[0, 6:] = 0  # padding in the source ...
    tgt[1, 4:] = 0  # ... and in the target
    return src, tgt


def randomize_norms(model, seed=0):
    """Random gain and bias for every LayerNorm: at gamma=1, beta=0 all norms compute the
    same function, and a parity check could not tell them apart (or notice an extra one)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, nn.LayerNorm):
                module.weight.copy_(1 + 0.5 * torch.randn(module.weight.shape, generator=g))
                module.bias.copy_(0.5 * torch.randn(module.bias.shape, generator=g))
    return model


def random_configs(n=4, seed=1234):
    """``n`` random small configurations: widths, heads, FFN sizes and layer counts."""
    rng = random.Random(seed)
    configs = []
    for _ in range(n):
        n_heads = rng.choice([1, 2, 4, 8])
        d_model = n_heads * rng.choice([4, 8, 12])
        configs.append(
            dict(
                d_model=d_model,
                n_heads=n_heads,
                d_ff=rng.choice([16, 48, 96]),
                n_encoder_layers=rng.randint(1, 3),
                n_decoder_layers=rng.randint(1, 3),
                layer_norm_eps=rng.choice([1e-5, 1e-6]),
            )
        )
    return configs


RANDOM_CONFIGS = random_configs()


@pytest.mark.parametrize("norm_first", [False, True], ids=["post-LN", "pre-LN"])
@pytest.mark.parametrize("grad", [False, True], ids=["no_grad", "grad"])
def test_parity_with_torch_nn_transformer(norm_first, grad):
    model = randomize_norms(make_model(norm_first=norm_first))
    ref = torch_transformer_from(model).eval()
    src, tgt = batch()
    with torch.set_grad_enabled(grad):  # no_grad lets PyTorch take its fused fast path
        ours = model(src, tgt)
        theirs = torch_reference_logits(model, ref, src, tgt)
    real = tgt != 0
    assert_close(ours[real], theirs[real], atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("norm_first", [False, True], ids=["post-LN", "pre-LN"])
@pytest.mark.parametrize(
    "overrides", RANDOM_CONFIGS, ids=[f"config{i}" for i in range(len(RANDOM_CONFIGS))]
)
def test_parity_on_random_configurations(overrides, norm_first):
    torch.manual_seed(7)
    model = Transformer(TransformerConfig.tiny(V, max_len=32, norm_first=norm_first, **overrides))
    randomize_norms(model.eval(), seed=3)
    ref = torch_transformer_from(model).eval()
    src, tgt = batch(2)
    with torch.no_grad():
        ours, theirs = model(src, tgt), torch_reference_logits(model, ref, src, tgt)
    assert_close(ours, theirs, atol=2e-5, rtol=1e-4)


def _swap_norm2_norm3(ref):
    layer = ref.decoder.layers[0]
    layer.norm2, layer.norm3 = layer.norm3, layer.norm2


def _keep_torch_final_norms(ref):
    d_model = ref.d_model
    ref.encoder.norm, ref.decoder.norm = nn.LayerNorm(d_model), nn.LayerNorm(d_model)


@pytest.mark.parametrize("bug", [_swap_norm2_norm3, _keep_torch_final_norms])
def test_parity_check_catches_misplaced_layer_norms(bug):
    """A swapped or extra LayerNorm hides at gamma=1, beta=0 and shows with random ones."""
    src, tgt = batch()
    gaps = []
    for model in (make_model(), randomize_norms(make_model())):
        ref = torch_transformer_from(model).eval()
        bug(ref)
        with torch.no_grad():
            gap = (model(src, tgt) - torch_reference_logits(model, ref, src, tgt)).abs().max()
        gaps.append(gap.item())
    assert gaps[0] < 1e-3  # why the parity tests randomise the norms first
    assert gaps[1] > 1e-2


def test_torch_final_norms_identity_in_post_ln_copied_in_pre_ln():
    """nn.Transformer always ends each stack with a LayerNorm; the paper's post-LN has none."""
    plain = nn.Transformer(d_model=32, nhead=4, dim_feedforward=64, batch_first=True)
    assert isinstance(plain.encoder.norm, nn.LayerNorm)
    assert isinstance(plain.decoder.norm, nn.LayerNorm)
    post = torch_transformer_from(randomize_norms(make_model()))
    assert isinstance(post.encoder.norm, nn.Identity) and isinstance(post.decoder.norm, nn.Identity)
    pre_model = randomize_norms(make_model(norm_first=True))
    pre = torch_transformer_from(pre_model)
    for ours, theirs in (
        (pre_model.encoder.norm, pre.encoder.norm),
        (pre_model.decoder.norm, pre.decoder.norm),
    ):
        assert torch.equal(ours.weight, theirs.weight) and torch.equal(ours.bias, theirs.bias)


def test_parity_fails_when_a_weight_differs():
    model = make_model()
    ref = torch_transformer_from(model).eval()
    with torch.no_grad():
        ref.decoder.layers[1].multihead_attn.in_proj_weight[0, 0] += 0.5  # one entry of W^Q
    src, tgt = batch()
    with torch.no_grad():
        assert not torch.allclose(
            model(src, tgt), torch_reference_logits(model, ref, src, tgt), atol=1e-4
        )


def test_parity_in_training_mode_without_dropout():
    model = randomize_norms(make_model(dropout=0.0)).train()
    ref = torch_transformer_from(model).train()
    src, tgt = batch(1)
    real = tgt != 0
    assert_close(
        model(src, tgt)[real],
        torch_reference_logits(model, ref, src, tgt)[real],
        atol=1e-5,
        rtol=1e-4,
    )


@pytest.mark.parametrize("norm_first", [False, True])
def test_causality(norm_first):
    """Changing target token j leaves the outputs at positions < j unchanged."""
    model = make_model(norm_first=norm_first)
    src, tgt = batch()
    tgt = tgt.clamp(min=4)  # no target padding
    base = model(src, tgt)
    for j in range(tgt.size(1)):
        changed = tgt.clone()
        changed[:, j] = (changed[:, j] + 7) % (V - 4) + 4
        out = model(src, changed)
        assert_close(out[:, :j], base[:, :j])
        assert not torch.allclose(out[:, j:], base[:, j:])


def test_padding_invariance():
    """Extra source padding changes nothing in the output."""
    model = make_model()
    src, tgt = batch()
    padded = torch.cat([src, torch.zeros(3, 5, dtype=torch.long)], dim=1)
    assert_close(model(padded, tgt), model(src, tgt))
    tgt_padded = torch.cat([tgt, torch.zeros(3, 2, dtype=torch.long)], dim=1)
    assert_close(model(src, tgt_padded)[:, : tgt.size(1)], model(src, tgt))


def test_fully_masked_source_row_has_no_nan():
    model = make_model()
    src = torch.zeros(2, 5, dtype=torch.long)  # a source made only of padding
    src[1, :2] = 7
    tgt = torch.full((2, 3), 9)
    for fast in (True, False):
        model.set_fast_attention(fast)
        assert torch.isfinite(model(src, tgt)).all()


def test_deterministic_with_fixed_seed():
    src, tgt = batch()
    a, b = make_model(seed=3).train(), make_model(seed=3).train()
    torch.manual_seed(11)
    out_a = a(src, tgt)
    torch.manual_seed(11)
    out_b = b(src, tgt)
    assert torch.equal(out_a, out_b)
    assert not torch.equal(make_model(seed=4)(src, tgt), make_model(seed=3)(src, tgt))


def test_return_attention_shapes_and_rows_are_distributions():
    model = make_model()
    src, tgt = batch()
    logits, attn = model(src, tgt, return_attention=True)
    assert logits.shape == (3, 6, V)
    assert_close(logits, model(src, tgt))
    assert [w.shape for w in attn["encoder"]] == [(3, 4, 9, 9)] * 2
    assert [w.shape for w in attn["decoder"]] == [(3, 4, 6, 6)] * 2
    assert [w.shape for w in attn["cross"]] == [(3, 4, 6, 9)] * 2
    assert torch.all(attn["cross"][0][0, :, :, 6:] == 0)  # padded source keys get no weight
    assert torch.all(attn["decoder"][1][:, :, 0, 1:] == 0)  # first target step sees only itself


@pytest.mark.parametrize("positional", ["sinusoidal", "learned"])
def test_incremental_decoding_with_cache_matches_full_pass(positional):
    model = make_model(positional=positional)
    src, tgt = batch()
    tgt = tgt.clamp(min=4)
    memory, src_mask = model.encode(src)
    full = model.decode(tgt, memory, src_mask)
    cache = model.new_cache()
    steps = [
        model.decode(tgt[:, t : t + 1], memory, src_mask, cache=cache) for t in range(tgt.size(1))
    ]
    assert_close(torch.cat(steps, dim=1), full, atol=1e-5, rtol=1e-4)
    assert cache.length == tgt.size(1)


def test_weight_sharing_and_parameter_counts():
    shared, separate = make_model(), make_model(share_embeddings=False)
    assert shared.generator.weight is shared.src_embed.weight is shared.tgt_embed.weight
    assert count_parameters(separate) - count_parameters(shared) == 2 * V * 32
    counts = paper_parameter_counts(37000)
    assert 63e6 <= counts["base"] <= 65e6  # Table 3: 65M
    assert 210e6 <= counts["big"] <= 216e6  # Table 3: 213M


def test_learned_positions_and_head_gates():
    model = make_model(positional="learned")
    src, tgt = batch()
    base = model(src, tgt)
    model.set_head_gate("cross", 1, [1, 0, 1, 1])
    assert not torch.allclose(model(src, tgt), base)
    model.reset_head_gates()
    assert_close(model(src, tgt), base)


# ---- bad input: a clear error that names the problem and the fix ----------------------------
def test_d_model_not_divisible_by_heads():
    with pytest.raises(ValueError, match=r"d_model=30 is not divisible by n_heads=4"):
        TransformerConfig.tiny(V, d_model=30, n_heads=4)
    with pytest.raises(ValueError, match="Pick n_heads that divides d_model"):
        MultiHeadAttention(30, 4)


def test_mask_of_wrong_shape():
    mha = MultiHeadAttention(16, 4)
    x = torch.randn(2, 5, 16)
    with pytest.raises(ValueError, match=r"does not broadcast to \(B, H, Tq, Tk\)"):
        mha(x, x, x, torch.ones(2, 1, 1, 4, dtype=torch.bool))
    with pytest.raises(ValueError, match="does not broadcast"):
        scaled_dot_product_attention(
            torch.randn(1, 1, 3, 4),
            torch.randn(1, 1, 3, 4),
            torch.randn(1, 1, 3, 4),
            torch.ones(2, 1, 3, 3).bool(),
        )


def test_float_mask_where_bool_expected():
    mha = MultiHeadAttention(16, 4)
    x = torch.randn(2, 5, 16)
    with pytest.raises(TypeError, match=r"dtype torch.bool \(True = may attend\).*mask == 0"):
        mha(x, x, x, torch.zeros(1, 1, 5, 5))


def test_token_ids_outside_vocabulary():
    model = make_model()
    src, tgt = batch()
    src[0, 0] = V + 3
    with pytest.raises(ValueError, match=r"outside the vocabulary \[0, 50\).*tokenizer"):
        model(src, tgt)
    with pytest.raises(ValueError, match="outside the vocabulary"):
        model(batch()[0], tgt.clone().fill_(-1))
    with pytest.raises(TypeError, match="integer token ids"):
        model(src.float(), tgt)


def test_sequence_longer_than_positional_table():
    model = make_model()  # max_len=32
    src = torch.randint(4, V, (1, 40))
    with pytest.raises(ValueError, match=r"longer than the positional table \(max_len=32\)"):
        model(src, torch.randint(4, V, (1, 3)))


def test_wrong_rank_and_empty_inputs():
    model = make_model()
    with pytest.raises(ValueError, match=r"\(batch, length\).*unsqueeze\(0\)"):
        model(torch.randint(4, V, (7,)), torch.randint(4, V, (1, 3)))
    with pytest.raises(ValueError, match="empty"):
        model(torch.randint(4, V, (1, 0)), torch.randint(4, V, (1, 3)))
    with pytest.raises(ValueError, match="d_model=16"):
        MultiHeadAttention(16, 4)(torch.randn(2, 5, 8), torch.randn(2, 5, 8), torch.randn(2, 5, 8))


def test_source_and_target_batches_must_match():
    model = make_model()
    with pytest.raises(ValueError, match=r"different numbers of sentences \(2 vs 3\)"):
        model(torch.randint(4, V, (2, 7)), torch.randint(4, V, (3, 5)))


def test_invalid_config_values():
    with pytest.raises(ValueError, match="dropout"):
        TransformerConfig.tiny(V, dropout=1.5)
    with pytest.raises(ValueError, match="positional"):
        TransformerConfig.tiny(V, positional="rotary")
    with pytest.raises(ValueError, match="pad_id=60 is outside the vocabulary"):
        TransformerConfig.tiny(V, pad_id=60)
    with pytest.raises(ValueError, match="Unknown TransformerConfig fields"):
        TransformerConfig.from_dict({"d_model": 8, "colour": "red"})
