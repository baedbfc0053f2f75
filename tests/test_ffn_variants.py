"""The FFN activations and the RMSNorm option of chapter 7: the paper's defaults unchanged,
each variant computing its published formula."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from transformer_lib import (
    PositionwiseFeedForward,
    SublayerConnection,
    Transformer,
    TransformerConfig,
)
from transformer_lib.components.feedforward import ACTIVATIONS, NORMS, make_norm


def test_default_is_the_papers_relu_ffn():
    torch.manual_seed(0)
    ffn = PositionwiseFeedForward(16, 64)
    assert ffn.activation == "relu"
    assert set(dict(ffn.named_parameters())) == {
        "linear1.weight",
        "linear1.bias",
        "linear2.weight",
        "linear2.bias",
    }
    x = torch.randn(2, 3, 16)
    want = F.linear(
        F.linear(x, ffn.linear1.weight, ffn.linear1.bias).clamp(min=0),
        ffn.linear2.weight,
        ffn.linear2.bias,
    )  # Eq. 2
    torch.testing.assert_close(ffn(x), want)


def test_gelu_ffn_is_exact_gelu():
    torch.manual_seed(1)
    ffn = PositionwiseFeedForward(16, 64, activation="gelu")
    x = torch.randn(2, 3, 16)
    h = ffn.linear1(x)
    gelu = 0.5 * h * (1 + torch.erf(h / 2**0.5))  # x Φ(x)
    torch.testing.assert_close(ffn(x), ffn.linear2(gelu))
    relu = PositionwiseFeedForward(16, 64)
    relu.load_state_dict(ffn.state_dict())
    assert not torch.allclose(relu(x), ffn(x))  # the activation is really used


def test_swiglu_ffn_is_the_gated_product_without_biases():
    torch.manual_seed(2)
    ffn = PositionwiseFeedForward(16, 40, activation="swiglu")
    names = dict(ffn.named_parameters())
    assert set(names) == {"linear1.weight", "gate.weight", "linear2.weight"}
    x = torch.randn(2, 3, 16)
    g = x @ ffn.gate.weight.T
    want = (g * torch.sigmoid(g) * (x @ ffn.linear1.weight.T)) @ ffn.linear2.weight.T
    torch.testing.assert_close(ffn(x), want)
    # d_ff = 2/3 of 4 d_model keeps about the parameter count of the ReLU FFN
    relu = sum(p.numel() for p in PositionwiseFeedForward(96, 384).parameters())
    swiglu = sum(
        p.numel() for p in PositionwiseFeedForward(96, 256, activation="swiglu").parameters()
    )
    assert abs(swiglu - relu) / relu < 0.01


@pytest.mark.parametrize("activation", ACTIVATIONS)
def test_every_activation_is_position_wise(activation):
    torch.manual_seed(3)
    ffn = PositionwiseFeedForward(8, 24, activation=activation).eval()
    x = torch.randn(1, 5, 8)
    one_by_one = torch.cat([ffn(x[:, t : t + 1]) for t in range(5)], dim=1)
    torch.testing.assert_close(ffn(x), one_by_one)


def test_unknown_activation_and_norm_say_what_is_allowed():
    with pytest.raises(ValueError, match="relu"):
        PositionwiseFeedForward(8, 16, activation="tanh")
    with pytest.raises(ValueError, match="layer"):
        make_norm(8, "batch")


def test_rmsnorm_formula_and_default_layernorm():
    assert NORMS[0] == "layer"
    assert isinstance(SublayerConnection(8).norm, nn.LayerNorm)
    block = SublayerConnection(8, norm="rms", eps=1e-6)
    torch.manual_seed(4)
    with torch.no_grad():
        block.norm.weight.normal_()
    x = torch.randn(2, 3, 8) * 3 + 1
    want = x / (x.pow(2).mean(-1, keepdim=True) + 1e-6).sqrt() * block.norm.weight
    torch.testing.assert_close(block.norm(x), want)
    assert sum(p.numel() for p in block.parameters()) == 8  # a gain, no bias
    # unlike LayerNorm, RMSNorm keeps the mean: x + 3 gives another output
    assert not torch.allclose(block.norm(x + 3), block.norm(x), atol=1e-3)
    out, _ = block(x, lambda h: h * 0)  # post-LN with a zero sub-layer: RMSNorm(x)
    torch.testing.assert_close(out, want)


def test_the_shipped_architecture_is_unchanged():
    model = Transformer(TransformerConfig.tiny(100))
    for layer in [*model.encoder.layers, *model.decoder.layers]:
        assert layer.ffn.activation == "relu"
        assert not hasattr(layer.ffn, "gate")
    assert all(
        isinstance(m, nn.LayerNorm) for n, m in model.named_modules() if n.endswith("block.norm")
    )


@pytest.mark.parametrize("arch", ["encoder-decoder", "decoder-only"])
@pytest.mark.parametrize("norm_first", [False, True], ids=["post-LN", "pre-LN"])
def test_config_switches_every_layer_to_swiglu_and_rmsnorm(arch, norm_first):
    from transformer_lib import DecoderOnlyTransformer

    cfg = TransformerConfig.tiny(60, d_model=32, n_heads=4, d_ff=48, max_len=16)
    cfg = cfg.replace(activation="swiglu", norm="rms", norm_first=norm_first)
    torch.manual_seed(5)
    model = (Transformer if arch == "encoder-decoder" else DecoderOnlyTransformer)(cfg)
    ffns = [m for m in model.modules() if isinstance(m, PositionwiseFeedForward)]
    norms = [m for m in model.modules() if isinstance(m, (nn.LayerNorm, nn.RMSNorm))]
    assert ffns and all(f.activation == "swiglu" for f in ffns)
    assert norms and all(isinstance(m, nn.RMSNorm) for m in norms)
    # pre-LN ends each stack with a norm of the same kind
    stacks = [model.encoder, model.decoder] if arch == "encoder-decoder" else [model.blocks]
    for stack in stacks:
        assert isinstance(stack.norm, nn.RMSNorm if norm_first else nn.Identity)
    # the config survives a checkpoint's round trip and trains (gradients reach every weight)
    assert TransformerConfig.from_dict(cfg.to_dict()) == cfg
    ids = torch.randint(4, 60, (2, 7))
    out = model(ids, ids) if arch == "encoder-decoder" else model(ids)
    out.float().sum().backward()
    assert all(p.grad is not None for p in model.parameters() if p.requires_grad)


def test_config_rejects_an_unknown_activation_or_norm_naming_the_choices():
    with pytest.raises(ValueError, match=r"activation='tanh' must be one of .*'relu' is the"):
        TransformerConfig.tiny(60, activation="tanh")
    with pytest.raises(ValueError, match=r"norm='batch' must be one of .*'layer' is the"):
        TransformerConfig.tiny(60, norm="batch")


def test_old_checkpoint_configs_load_as_the_papers_architecture():
    old = TransformerConfig.tiny(60).to_dict()
    del old["activation"], old["norm"]  # written before the two fields existed
    cfg = TransformerConfig.from_dict(old)
    assert (cfg.activation, cfg.norm) == ("relu", "layer")


def test_torch_mirror_takes_gelu_and_refuses_what_it_cannot_hold():
    from transformer_lib.components.reference import (
        torch_encoder_from,
        torch_reference_logits,
        torch_transformer_from,
    )

    cfg = TransformerConfig.tiny(60, d_model=32, n_heads=4, d_ff=48, max_len=16, dropout=0.0)
    torch.manual_seed(6)
    model = Transformer(cfg.replace(activation="gelu")).eval()
    src, tgt = torch.randint(4, 60, (2, 7)), torch.randint(4, 60, (2, 5))
    with torch.no_grad():
        ref = torch_transformer_from(model).eval()
        torch.testing.assert_close(
            model(src, tgt), torch_reference_logits(model, ref, src, tgt), atol=2e-5, rtol=1e-4
        )
    for change in ({"activation": "swiglu"}, {"norm": "rms"}):
        other = Transformer(cfg.replace(**change))
        with pytest.raises(ValueError, match="cannot mirror"):
            torch_transformer_from(other)
        with pytest.raises(ValueError, match="cannot mirror"):
            torch_encoder_from(other.encoder)
