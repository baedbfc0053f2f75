"""Each component against PyTorch's own implementation, and its defining properties."""

import inspect
import math

import pytest
import torch
import torch.nn.functional as F
from torch.testing import assert_close

from transformer_lib import (
    MultiHeadAttention,
    TokenEmbedding,
    TransformerConfig,
    causal_mask,
    decoder_mask,
    padding_mask,
    scaled_dot_product_attention,
    sinusoidal_positional_encoding,
)
from transformer_lib.components.feedforward import SublayerConnection
from transformer_lib.components.layers import Decoder, DecoderLayer, Encoder, EncoderLayer
from transformer_lib.components.positional import (
    LearnedPositionalEncoding,
    SinusoidalPositionalEncoding,
)
from transformer_lib.components.reference import copy_attention, to_torch_mask, torch_attention_from

torch.set_num_threads(1)


def random_mask(*shape, seed=0):
    g = torch.Generator().manual_seed(seed)
    mask = torch.rand(*shape, generator=g) > 0.3
    mask[..., 0] = True  # at least one key per row, like any real padding mask
    return mask


# ---- scaled dot-product attention (Eq. 1) ----------------------------------------------
@pytest.mark.parametrize("mask_shape", [None, (2, 1, 1, 6), (1, 1, 5, 6), (2, 3, 5, 6)])
def test_attention_matches_torch_sdpa(mask_shape):
    torch.manual_seed(0)
    q, k, v = torch.randn(2, 3, 5, 8), torch.randn(2, 3, 6, 8), torch.randn(2, 3, 6, 4)
    mask = None if mask_shape is None else random_mask(*mask_shape)
    out, weights = scaled_dot_product_attention(q, k, v, mask)
    assert_close(out, F.scaled_dot_product_attention(q, k, v, attn_mask=mask))
    assert weights.shape == (2, 3, 5, 6)
    assert_close(weights.sum(-1), torch.ones(2, 3, 5))


def test_attention_formula_by_hand():
    q = torch.tensor([[[[1.0, 0.0]]]])  # one query
    k = torch.tensor([[[[1.0, 0.0], [0.0, 1.0]]]])
    v = torch.tensor([[[[10.0], [20.0]]]])
    out, w = scaled_dot_product_attention(q, k, v)
    s = torch.tensor([1.0, 0.0]) / math.sqrt(2)
    expected_w = s.softmax(-1)
    assert_close(w.flatten(), expected_w)
    assert_close(out.flatten(), (expected_w * torch.tensor([10.0, 20.0])).sum().view(1))


def test_fully_masked_row_gives_zeros_not_nan():
    q, k, v = torch.randn(1, 1, 3, 4), torch.randn(1, 1, 3, 4), torch.randn(1, 1, 3, 4)
    mask = torch.tensor([[True, True, False], [False, False, False], [True, False, False]])
    out, w = scaled_dot_product_attention(q, k, v, mask.view(1, 1, 3, 3))
    assert not torch.isnan(out).any() and not torch.isnan(w).any()
    assert torch.all(w[0, 0, 1] == 0) and torch.all(out[0, 0, 1] == 0)
    mha = MultiHeadAttention(8, 2).eval()
    x = torch.randn(1, 3, 8)
    outputs = []
    for need_weights in (False, True):  # fast and readable paths alike
        y, _ = mha(x, x, x, mask.view(1, 1, 3, 3), need_weights=need_weights)
        assert not torch.isnan(y).any()
        outputs.append(y)
    # The fast path (F.scaled_dot_product_attention) also gives the empty row zero heads:
    # what is left is out_proj's bias, as on the readable path.
    for y in outputs:
        assert_close(y[0, 1], mha.out_proj.bias)


def test_masked_scores_use_most_negative_finite_value_in_half_precision():
    q = k = v = torch.randn(1, 1, 4, 8, dtype=torch.bfloat16)
    mask = causal_mask(4)
    out, w = scaled_dot_product_attention(q, k, v, mask)
    assert torch.isfinite(out).all() and torch.all(w[0, 0].float().triu(1) == 0)


# ---- multi-head attention (§3.2.2) ---------------------------------------------------------
@pytest.mark.parametrize("cross", [False, True])
@pytest.mark.parametrize("need_weights", [False, True])
def test_multihead_matches_nn_multiheadattention(cross, need_weights):
    torch.manual_seed(0)
    mha = MultiHeadAttention(16, 4).eval()
    ref = torch_attention_from(mha).eval()
    x = torch.randn(2, 5, 16)
    mem = torch.randn(2, 7, 16) if cross else x
    keys = torch.randint(1, 9, (2, mem.size(1)))
    keys[0, -2:] = 0  # padding in the keys
    mask = padding_mask(keys)  # (B, 1, 1, Tk)  True = may attend
    if not cross:
        mask = mask & causal_mask(5)
    out, w = mha(x, mem, mem, mask, need_weights=need_weights)
    # Boundary with PyTorch: its masks mean True = blocked, and it wants (B*H, Tq, Tk).
    torch_mask = to_torch_mask(mask.expand(2, 4, 5, mem.size(1)).reshape(8, 5, mem.size(1)))
    ref_out, ref_w = ref(
        x, mem, mem, attn_mask=torch_mask, need_weights=True, average_attn_weights=False
    )
    assert_close(out, ref_out)
    if need_weights:
        assert_close(w, ref_w)
    else:
        assert w is None


def test_multihead_fast_and_readable_paths_agree():
    torch.manual_seed(1)
    mha = MultiHeadAttention(32, 4).eval()
    x, mem = torch.randn(3, 6, 32), torch.randn(3, 9, 32)
    mask = random_mask(3, 1, 6, 9, seed=3)
    fast, none = mha(x, mem, mem, mask)
    readable, w = mha(x, mem, mem, mask, need_weights=True)
    assert none is None and w.shape == (3, 4, 6, 9)
    assert_close(fast, readable)
    mha.fast = False
    assert_close(mha(x, mem, mem, mask)[0], fast)


def test_copy_attention_round_trip_and_mask_inversion():
    ours, ref = MultiHeadAttention(8, 2), torch.nn.MultiheadAttention(8, 2, batch_first=True)
    copy_attention(ours, ref)
    assert torch.equal(ref.in_proj_weight, ours.in_proj.weight)
    m = causal_mask(3)
    assert torch.equal(to_torch_mask(m)[0, 0], torch.ones(3, 3, dtype=torch.bool).triu(1))


def test_head_gate_switches_heads_off():
    torch.manual_seed(0)
    mha = MultiHeadAttention(16, 4).eval()
    x = torch.randn(1, 4, 16)
    full, _ = mha(x, x, x)
    mha.head_gate = torch.zeros(4)
    off, _ = mha(x, x, x)
    assert_close(off, mha.out_proj.bias.expand_as(off))  # nothing but W^O's bias is left
    mha.head_gate = torch.tensor([1.0, 1.0, 1.0, 0.0])
    assert not torch.allclose(mha(x, x, x)[0], full)


# ---- positional encoding (§3.5) ------------------------------------------------------------
def test_positional_encoding_matches_formula():
    pe = sinusoidal_positional_encoding(20, 12, dtype=torch.float64)
    for pos in (0, 3, 19):
        for i in range(6):
            angle = pos / 10000 ** (2 * i / 12)
            assert math.isclose(pe[pos, 2 * i].item(), math.sin(angle), abs_tol=1e-12)
            assert math.isclose(pe[pos, 2 * i + 1].item(), math.cos(angle), abs_tol=1e-12)


@pytest.mark.parametrize("d_model", [16, 64, 129])
def test_each_pair_has_its_own_frequency(d_model):
    """Catches an encoding that uses one frequency for every dimension."""
    L = 4096
    pe = sinusoidal_positional_encoding(L, d_model, dtype=torch.float64)
    pos = torch.arange(L, dtype=torch.float64)
    for i in range(0, d_model // 2):
        omega = 1.0 / 10000 ** (2 * i / d_model)
        # Fit the phase from the data: sin column equals sin(omega*pos), cos column cos(omega*pos).
        assert_close(pe[:, 2 * i], torch.sin(omega * pos))
        assert_close(pe[:, 2 * i + 1], torch.cos(omega * pos))
    # Frequencies estimated from zero crossings of the first few (fast) sin columns.
    for i in range(3):
        col = pe[:, 2 * i]
        crossings = ((col[:-1] * col[1:]) < 0).sum().item()
        estimated = crossings * math.pi / L
        assert estimated == pytest.approx(1.0 / 10000 ** (2 * i / d_model), rel=0.02)
    freqs = [1.0 / 10000 ** (2 * i / d_model) for i in range(d_model // 2)]
    assert len(set(freqs)) == d_model // 2


def test_positional_modules_add_table_with_offset():
    x = torch.zeros(2, 5, 8)
    sin = SinusoidalPositionalEncoding(10, 8)
    assert_close(sin(x)[0], sinusoidal_positional_encoding(10, 8)[:5])
    assert_close(sin(x[:, :1], offset=4)[0, 0], sinusoidal_positional_encoding(10, 8)[4])
    learned = LearnedPositionalEncoding(10, 8)
    assert_close(learned(x)[1], learned.pe[:5])
    assert sum(p.numel() for p in learned.parameters()) == 80
    assert sum(p.numel() for p in sin.parameters()) == 0


def test_relative_positions_are_a_rotation():
    """PE(pos + k) is a fixed linear function of PE(pos) for every pos (§3.5's motivation)."""
    d, k = 8, 3
    pe = sinusoidal_positional_encoding(40, d, dtype=torch.float64)
    M = torch.linalg.lstsq(pe[:-k], pe[k:]).solution  # one matrix for all positions
    assert_close(pe[:-k] @ M, pe[k:])


# ---- embeddings (§3.4) and masks (§3.2.3) ---------------------------------------------------
def test_embedding_is_scaled_by_sqrt_d_model():
    emb = TokenEmbedding(10, 16)
    ids = torch.tensor([[1, 2, 3]])
    assert_close(emb(ids), emb.embedding(ids) * 4.0)


def test_masks_shapes_and_meaning():
    tokens = torch.tensor([[5, 6, 0], [7, 0, 0]])
    pm = padding_mask(tokens)
    assert pm.shape == (2, 1, 1, 3) and pm.dtype == torch.bool
    assert pm[1, 0, 0].tolist() == [True, False, False]
    cm = causal_mask(3)
    assert cm.shape == (1, 1, 3, 3)
    assert cm[0, 0].tolist() == [[True, False, False], [True, True, False], [True, True, True]]
    dm = decoder_mask(tokens)
    assert dm.shape == (2, 1, 3, 3)
    assert dm[1, 0].tolist() == [[True, False, False]] * 3
    # With a cache: the last 2 of 4 positions query all earlier keys.
    assert causal_mask(2, 4)[0, 0].tolist() == [[True, True, True, False], [True] * 4]


def test_config_presets():
    base, big, tiny = TransformerConfig.base(), TransformerConfig.big(), TransformerConfig.tiny()
    assert (base.n_encoder_layers, base.d_model, base.d_ff, base.n_heads, base.dropout) == (
        6,
        512,
        2048,
        8,
        0.1,
    )
    assert (big.d_model, big.d_ff, big.n_heads, big.dropout) == (1024, 4096, 16, 0.3)
    assert tiny.d_model < base.d_model and base.d_head == 64
    assert TransformerConfig.from_dict(tiny.to_dict()) == tiny


def _presets():
    """Every classmethod of TransformerConfig that builds a config with its defaults."""
    out = {"TransformerConfig()": TransformerConfig()}
    for name, attr in vars(TransformerConfig).items():
        if isinstance(attr, classmethod) and name != "from_dict":
            out[f"TransformerConfig.{name}()"] = getattr(TransformerConfig, name)()
    return out


def test_every_preset_and_default_is_post_ln_as_in_the_paper():
    presets = _presets()
    names = {f"TransformerConfig.{name}()" for name in ("base", "big", "tiny")}
    assert names <= set(presets)
    pre_ln = [name for name, cfg in presets.items() if cfg.norm_first is not False]
    assert not pre_ln, f"pre-LN by default: {pre_ln}"
    # The defaults themselves, so that flipping one fails here.
    assert inspect.signature(TransformerConfig).parameters["norm_first"].default is False
    assert TransformerConfig.__dataclass_fields__["norm_first"].default is False
    sublayer = inspect.signature(SublayerConnection).parameters["norm_first"]
    assert sublayer.default is False
    for layer in (EncoderLayer, DecoderLayer, Encoder, Decoder):
        param = inspect.signature(layer).parameters.get("norm_first")
        assert param is None or param.default is False, layer.__name__
    # And what gets built from a default config: post-LN blocks, no final LayerNorm.
    cfg = TransformerConfig.tiny(50, d_model=16, n_heads=2, d_ff=32)
    blocks = [EncoderLayer(cfg).attn_block, DecoderLayer(cfg).cross_block]
    assert all(block.norm_first is False for block in blocks)
    assert isinstance(Encoder(cfg).norm, torch.nn.Identity)
    assert isinstance(Decoder(cfg).norm, torch.nn.Identity)
    assert SublayerConnection(16).norm_first is False


# ---- layers against PyTorch's, every LayerNorm distinct (§3.1, chapters 7 and 8) -----------
def _randomize_norms(module, seed=0):
    """Random gain and bias for every LayerNorm, so that a misplaced norm shows."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for m in module.modules():
            if isinstance(m, torch.nn.LayerNorm):
                m.weight.copy_(1 + 0.5 * torch.randn(m.weight.shape, generator=g))
                m.bias.copy_(0.5 * torch.randn(m.bias.shape, generator=g))
    return module


@pytest.mark.parametrize("norm_first", [False, True], ids=["post-LN", "pre-LN"])
def test_encoder_and_decoder_layers_match_pytorch_with_random_layer_norms(norm_first):
    from transformer_lib.components.reference import _copy_decoder_layer, _copy_encoder_layer

    torch.manual_seed(0)
    cfg = TransformerConfig.tiny(50, d_model=16, n_heads=4, d_ff=40, dropout=0.0)
    cfg = cfg.replace(norm_first=norm_first)
    kw = dict(dim_feedforward=40, dropout=0.0, batch_first=True, norm_first=norm_first)
    ours_enc, ours_dec = (
        _randomize_norms(EncoderLayer(cfg), 1),
        _randomize_norms(DecoderLayer(cfg), 2),
    )
    ref_enc = torch.nn.TransformerEncoderLayer(16, 4, **kw)
    ref_dec = torch.nn.TransformerDecoderLayer(16, 4, **kw)
    _copy_encoder_layer(ours_enc, ref_enc)
    _copy_decoder_layer(ours_dec, ref_dec)
    x, mem = torch.randn(2, 5, 16), torch.randn(2, 7, 16)
    keys = torch.ones(2, 7, dtype=torch.long)
    keys[1, 5:] = 0  # padding in the memory
    with torch.no_grad():
        ours, _ = ours_enc(x, causal_mask(5))
        assert_close(ours, ref_enc(x, src_mask=to_torch_mask(causal_mask(5)[0, 0])))
        ours, _, _ = ours_dec(x, mem, causal_mask(5), padding_mask(keys))
        theirs = ref_dec(
            x,
            mem,
            tgt_mask=to_torch_mask(causal_mask(5)[0, 0]),
            memory_key_padding_mask=keys == 0,
        )
        assert_close(ours, theirs)
        # The three norms of a decoder layer are not interchangeable once they differ.
        ref_dec.norm2, ref_dec.norm3 = ref_dec.norm3, ref_dec.norm2
        swapped = ref_dec(
            x,
            mem,
            tgt_mask=to_torch_mask(causal_mask(5)[0, 0]),
            memory_key_padding_mask=keys == 0,
        )
        assert (ours - swapped).abs().max() > 1e-2
