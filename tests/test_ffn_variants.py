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
