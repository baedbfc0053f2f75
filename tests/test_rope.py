"""Rotary positions (``TransformerConfig(positional="rope")``, chapter 14): the rotation,
its relative-position property measured in the real attention layer, the KV cache, the
paper's sinusoidal models left as they were, checkpoints, the command line and the
``nn.Transformer`` mirror that cannot hold it."""

from __future__ import annotations

import pytest
import torch
from torch.testing import assert_close

from transformer_lib import (
    DecoderOnlyTransformer,
    MultiHeadAttention,
    RotaryPositionalEncoding,
    Transformer,
    TransformerConfig,
)
from transformer_lib.__main__ import main
from transformer_lib.components import positional as positional_module
from transformer_lib.components.decoder_only import build_model, model_config_dict
from transformer_lib.components.reference import (
    torch_decoder_only_from,
    torch_encoder_from,
    torch_transformer_from,
)
from transformer_lib.pipeline.checkpoints import load_checkpoint, load_model, save_checkpoint
from transformer_lib.pipeline.decoding import beam_search, greedy_decode
from transformer_lib.pipeline.generation import generate

ROPE = TransformerConfig.tiny(vocab_size=60, positional="rope")


def _scores(mha: MultiHeadAttention, x, past: int = 0):
    """Raw scores q·k (B, H, L, L) of ``x``'s positions in the layer's own projection, the
    L new steps placed after ``past`` cached ones (their keys left out of the scores)."""
    cache = None
    if past:
        B, H, Dk = x.size(0), mha.n_heads, mha.d_head
        cache = {"k": torch.zeros(B, H, past, Dk), "v": torch.zeros(B, H, past, Dk)}
    q, k, _ = mha._project(x, x, x, cache, False)  # (B, H, L, Dk), k (B, H, past + L, Dk)
    return q @ k[:, :, past:].transpose(-2, -1)


def _rope_attention(seed: int = 0) -> MultiHeadAttention:
    torch.manual_seed(seed)
    return MultiHeadAttention(32, 4, rotary=RotaryPositionalEncoding(64, 8)).eval()


def test_the_rotation_keeps_every_norm_and_rotates_by_m_omega():
    rope = RotaryPositionalEncoding(max_len=40, d_head=16)
    x = torch.randn(2, 3, 40, 16)  # (B, H, L, Dk)
    y = rope(x)
    assert_close(y.norm(dim=-1), x.norm(dim=-1))  # rotations keep lengths
    assert not torch.allclose(y[:, :, 1:], x[:, :, 1:])  # ... but move every vector after 0
    assert_close(y[:, :, 0], x[:, :, 0])  # position 0: angle 0
    # pair i of position m turns by m * 10000^(-2i/d): check pair 3 of position 7
    angle = torch.tensor(7 * 10000 ** (-6 / 16))
    c, s = angle.cos(), angle.sin()
    a, b = x[..., 7, 6], x[..., 7, 7]
    assert_close(y[..., 7, 6], a * c - b * s)
    assert_close(y[..., 7, 7], a * s + b * c)


def test_scores_depend_only_on_the_distance_between_positions():
    mha = _rope_attention()
    x = torch.randn(1, 12, 32)  # (B, L, D): different contents at every position
    with torch.no_grad():
        at_zero = _scores(mha, x)  # positions 0..11
        shifted = _scores(mha, x, past=9)  # the same tokens at positions 9..20
        keys_at_zero = mha._project(x, x, x, None, False)[1]
        past = {"k": torch.zeros(1, 4, 9, 8), "v": torch.zeros(1, 4, 9, 8)}
        keys_shifted = mha._project(x, x, x, past, False)[1]
    assert_close(shifted, at_zero, atol=1e-5, rtol=1e-5)  # every score the same ...
    assert not torch.allclose(keys_shifted[:, :, 9:], keys_at_zero, atol=1e-3)  # ... keys not
    # one content at every position: each diagonal (fixed m - n) is one value, and the
    # values vary with the distance (position matters, and only through m - n)
    same = torch.randn(1, 1, 32).expand(1, 16, 32)
    with torch.no_grad():
        s = _scores(mha, same)[0]  # (H, L, L)
    for offset in range(-15, 16):
        diagonal = torch.diagonal(s, offset, dim1=-2, dim2=-1)  # (H, 16 - |offset|)
        assert (diagonal.amax(-1) - diagonal.amin(-1)).max() < 1e-4, offset
    assert (s.amax((-2, -1)) - s.amin((-2, -1))).min() > 1e-2


def test_added_sinusoids_do_not_have_the_property():
    # the control: the same layer without rotation, fed the paper's added positions
    from transformer_lib import sinusoidal_positional_encoding

    torch.manual_seed(0)
    mha = MultiHeadAttention(32, 4).eval()
    content = torch.randn(1, 1, 32).expand(1, 16, 32)
    x = content + sinusoidal_positional_encoding(16, 32)
    with torch.no_grad():
        s = _scores(mha, x)[0]
    diagonal = torch.diagonal(s, 0, dim1=-2, dim2=-1)
    assert (diagonal.amax(-1) - diagonal.amin(-1)).max() > 1e-2


def test_values_and_cross_attention_are_not_rotated():
    torch.manual_seed(0)
    model = Transformer(ROPE).eval()
    assert all(m.rotary is not None for m in model.attention_modules("encoder"))
    assert all(m.rotary is not None for m in model.attention_modules("decoder"))
    assert all(m.rotary is None for m in model.attention_modules("cross"))
    mha = model.encoder.layers[0].self_attn
    x = torch.randn(2, 6, ROPE.d_model)
    with torch.no_grad():
        _, _, v = mha._project(x, x, x, None, False)
        plain = mha._split_heads(x @ mha.in_proj.weight[2 * ROPE.d_model :].T)
    assert_close(v, plain + mha._split_heads(mha.in_proj.bias[2 * ROPE.d_model :].expand(2, 6, -1)))
    with pytest.raises(ValueError, match="rotary positions are for self-attention"):
        mha(x, x, x, cache={}, static_kv=True)
    # nothing is added to the embeddings
    ids = torch.randint(4, 60, (2, 6))
    assert torch.equal(model._embed(model.src_embed, ids), model.src_embed(ids))


def test_rope_models_see_word_order():
    torch.manual_seed(0)
    model = DecoderOnlyTransformer(ROPE).eval()
    ids = torch.tensor([[5, 9, 17, 23, 31]])
    swapped = torch.tensor([[9, 5, 17, 23, 31]])
    with torch.no_grad():
        assert not torch.allclose(model(ids)[0, -1], model(swapped)[0, -1], atol=1e-4)


@pytest.mark.parametrize("arch", ["encoder-decoder", "decoder-only"])
def test_the_kv_cache_uses_the_absolute_positions(arch):
    torch.manual_seed(1)
    model = build_model(ROPE, arch).eval()
    if arch == "encoder-decoder":
        src = torch.randint(4, 60, (3, 9))
        with_cache = greedy_decode(model, src, 20, use_cache=True)
        assert torch.equal(with_cache, greedy_decode(model, src, 20, use_cache=False))
        beam_search(model, src[:1], beam_size=3, max_len=12)  # reorders a rope cache
        tgt = torch.randint(4, 60, (3, 10))
        with torch.no_grad():
            memory, src_mask = model.encode(src)
            cache = model.new_cache()
            steps = [model.decode(tgt[:, i : i + 1], memory, src_mask, cache) for i in range(10)]
            assert_close(torch.cat(steps, dim=1), model.decode(tgt, memory, src_mask))
        return
    prompt = [5, 17, 9, 12]
    cached = generate(model, prompt, 20, greedy=True)
    assert torch.equal(cached, generate(model, prompt, 20, greedy=True, use_cache=False))
    ids = torch.randint(4, 60, (2, 10))
    with torch.no_grad():
        cache = model.new_cache()
        steps = torch.cat([model(ids[:, i : i + 1], cache=cache) for i in range(10)], dim=1)
        assert_close(steps, model(ids), atol=1e-5, rtol=1e-5)


def test_sinusoidal_models_are_as_before(monkeypatch):
    """The default never reaches the rotation, and its outputs are those the library gave
    before rotary positions existed (recorded from that version, seed 0)."""

    def refuse(*args, **kwargs):
        raise AssertionError("a sinusoidal model must not rotate anything")

    monkeypatch.setattr(positional_module, "rotate_pairs", refuse)
    monkeypatch.setattr(RotaryPositionalEncoding, "forward", refuse)
    torch.manual_seed(0)
    config = TransformerConfig.tiny(vocab_size=50)
    assert config.positional == "sinusoidal"
    model, lm = Transformer(config).eval(), DecoderOnlyTransformer(config).eval()
    assert not any(isinstance(m, RotaryPositionalEncoding) for m in model.modules())
    src, tgt = torch.tensor([[5, 17, 9, 40, 33, 3]]), torch.tensor([[2, 8, 21, 44]])
    with torch.no_grad():
        logits, lm_logits = model(src, tgt), lm(src)
    before = torch.tensor([0.0, 1.674514889717102, 0.3990010619163513, 0.30797117948532104])
    lm_before = torch.tensor([0.0, 0.07400450110435486, -0.2179429531097412, 7.471657752990723])
    assert_close(logits[0, -1, :4], before, atol=1e-6, rtol=0)
    assert_close(lm_logits[0, -1, :4], lm_before, atol=1e-6, rtol=0)


def test_an_old_checkpoint_loads_as_sinusoidal():
    from transformer_lib import load_pretrained

    translator = load_pretrained()  # written before the option existed
    assert translator.model.config.positional == "sinusoidal"
    assert all(m.rotary is None for m in translator.model.attention_modules("encoder"))


@pytest.mark.parametrize("arch", ["encoder-decoder", "decoder-only"])
def test_checkpoint_round_trip_keeps_rope(tmp_path, arch):
    torch.manual_seed(2)
    model = build_model(ROPE, arch).eval()
    assert model_config_dict(model)["positional"] == "rope"
    path = save_checkpoint(tmp_path / "rope.pt", model)
    loaded, ckpt = load_model(path)
    assert ckpt["config"]["positional"] == "rope" and loaded.config.positional == "rope"
    ids = torch.randint(4, 60, (2, 7))
    with torch.no_grad():
        if arch == "encoder-decoder":
            assert torch.equal(loaded(ids, ids), model(ids, ids))
        else:
            assert torch.equal(loaded(ids), model(ids))


def test_config_refuses_what_rope_cannot_rotate():
    with pytest.raises(ValueError, match="must be even"):
        TransformerConfig.tiny(d_model=12, n_heads=4, positional="rope")  # d_head 3
    with pytest.raises(ValueError, match=r"positional='alibi' must be one of"):
        TransformerConfig.tiny(positional="alibi")
    with pytest.raises(ValueError, match="even head width"):
        RotaryPositionalEncoding(16, 7)
    with pytest.raises(ValueError, match="longer than the positional table"):
        RotaryPositionalEncoding(8, 4)(torch.randn(1, 1, 9, 4))


def test_the_nn_transformer_mirror_refuses_rope_by_name():
    model, lm = Transformer(ROPE), DecoderOnlyTransformer(ROPE)
    for build, arg in [
        (torch_transformer_from, model),
        (torch_encoder_from, model.encoder),
        (torch_decoder_only_from, lm),
    ]:
        with pytest.raises(ValueError, match=r"cannot mirror positional='rope'"):
            build(arg)


def test_train_position_rope_and_resume_refuses_another(tmp_path, capsys):
    from test_cli_resume import QUIET, one_line_error, write_pairs

    corpus = write_pairs(tmp_path / "pairs.tsv", "Tom is", "Tom ist")
    out = tmp_path / "rope"
    args = ["train", "--out", str(out), "--corpus", str(corpus), *QUIET]
    assert main([*args, "--max-steps", "2", "--position", "rope"]) == 0
    assert "tiny preset, rope positions, " in capsys.readouterr().out
    assert load_checkpoint(out / "checkpoint.pt")["config"]["positional"] == "rope"
    model, _ = load_model(out / "checkpoint.pt")
    assert model.decoder.layers[0].self_attn.rotary is not None
    resume = ["train", "--out", str(out), "--resume", *QUIET[:1], "--max-steps", "3"]
    assert main([*resume, "--position", "rope"]) == 0  # the run's own value is accepted
    assert main([*resume[:-1], "4", "--position", "sinusoidal"]) == 2
    err = one_line_error(capsys)
    assert "--position sinusoidal conflicts with the run being resumed" in err
    assert "which used rope" in err
