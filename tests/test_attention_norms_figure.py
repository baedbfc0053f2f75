"""The value-norm view of attention (Kobayashi et al. 2020) used in chapter 11: the norms
are what each key really adds to a query's output, and the figure is readable."""

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from figure_text import smallest_text_css_px  # noqa: E402

from transformer_lib.components.config import TransformerConfig  # noqa: E402
from transformer_lib.components.model import Transformer  # noqa: E402
from transformer_lib.components.multihead import MultiHeadAttention  # noqa: E402
from transformer_lib.views.attention_norms import (  # noqa: E402
    layer_value_norms,
    plot_norm_weighted_attention,
    weighted_value_norms,
)


def _module(seed=0, d=12, h=3):
    torch.manual_seed(seed)
    return MultiHeadAttention(d, h).eval()


def test_norms_match_a_loop_over_heads_and_keys():
    mha = _module()
    q, x = torch.randn(2, 4, 12), torch.randn(2, 5, 12)
    _, w = mha(q, x, x, need_weights=True)
    got = weighted_value_norms(mha, x, w)
    d, dk = 12, 4
    w_v, b_v = mha.in_proj.weight[2 * d :], mha.in_proj.bias[2 * d :]
    w_o = mha.out_proj.weight
    want = torch.zeros(2, 4, 5)
    for b in range(2):
        for i in range(4):
            for j in range(5):
                vec = torch.zeros(d)
                for head in range(3):
                    rows = slice(head * dk, (head + 1) * dk)
                    v = x[b, j] @ w_v[rows].T + b_v[rows]  # (Dk,)
                    vec += w[b, head, i, j] * (v @ w_o[:, rows].T)
                want[b, i, j] = vec.norm()
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)


def test_a_key_that_takes_all_the_weight_gives_the_norm_of_the_output():
    # With every query allowed to see key j only, the layer's output minus the bias of
    # W^O is exactly what key j adds: its norm is the value-norm of (i, j).
    mha = _module(1)
    q, x = torch.randn(1, 3, 12), torch.randn(1, 4, 12)
    for j in range(4):
        mask = torch.zeros(1, 1, 3, 4, dtype=torch.bool)
        mask[..., j] = True
        out, w = mha(q, x, x, mask=mask, need_weights=True)
        norms = weighted_value_norms(mha, x, w)
        torch.testing.assert_close(norms[0, :, j], (out[0] - mha.out_proj.bias).norm(dim=-1))
        assert norms[0, :, [k for k in range(4) if k != j]].eq(0).all()


def test_longer_values_get_larger_norms_and_gated_heads_none():
    mha = _module(2)
    x = torch.randn(1, 4, 12)
    w = torch.full((1, 3, 2, 4), 0.25)  # every key the same weight
    base = weighted_value_norms(mha, x, w)
    mha.head_gate = torch.zeros(3)
    assert weighted_value_norms(mha, x, w).eq(0).all()
    mha.head_gate = None
    # doubling a key's value (bias removed) doubles what it adds, whatever its weight
    mha.in_proj.bias.data.zero_()
    before = weighted_value_norms(mha, x, w)
    x2 = x.clone()
    x2[0, 2] *= 2
    after = weighted_value_norms(mha, x2, w)
    torch.testing.assert_close(after[..., 2], 2 * before[..., 2])
    assert not torch.equal(base, before)


def test_shape_errors_say_what_to_pass():
    mha = _module()
    x = torch.randn(1, 4, 12)
    with pytest.raises(ValueError, match="d_model=12"):
        weighted_value_norms(mha, torch.randn(1, 4, 10), torch.rand(1, 3, 2, 4))
    with pytest.raises(ValueError, match="same call"):
        weighted_value_norms(mha, x, torch.rand(1, 3, 2, 5))
    with pytest.raises(ValueError, match="H=3"):
        weighted_value_norms(mha, x, torch.rand(1, 2, 2, 4))


@pytest.fixture(scope="module")
def model():
    torch.manual_seed(0)
    return Transformer(
        TransformerConfig.tiny(40, d_model=16, n_heads=4, d_ff=32, max_len=16)
    ).eval()


@pytest.mark.parametrize("kind, index", [("encoder", 0), ("decoder", 1), ("cross", 1)])
def test_layer_value_norms_reads_the_layer_of_the_forward_pass(model, kind, index):
    src = torch.randint(4, 40, (2, 6))
    tgt = torch.randint(4, 40, (2, 5))
    with torch.no_grad():
        _, attn = model(src, tgt, return_attention=True)
    w, n = layer_value_norms(model, src, tgt, kind, index)
    torch.testing.assert_close(w, attn[kind][index])
    keys = src.size(1) if kind != "decoder" else tgt.size(1)
    assert n.shape == (2, tgt.size(1) if kind != "encoder" else 6, keys)
    if kind == "decoder":  # causal: later keys add nothing
        assert n[0].triu(1).eq(0).all()
    assert all(not m._forward_hooks for m in model.attention_modules(kind))
    with pytest.raises(ValueError, match="layers 0 to"):
        layer_value_norms(model, src, tgt, kind, 5)
    with pytest.raises(ValueError, match="kind must be"):
        layer_value_norms(model, src, tgt, "self", 0)


def test_figure_is_labelled_and_readable():
    torch.manual_seed(3)
    toks = ["▁I", "▁have", "▁never", "▁seen", "▁this", "▁f", "il", "m", "."]
    w = torch.rand(1, 4, 9, 9).softmax(-1)
    n = torch.rand(1, 9, 9)
    fig = plot_norm_weighted_attention(w, n, toks, toks, title="one layer")
    panels = [ax for ax in fig.axes if ax.images and ax.get_label() != "<colorbar>"]
    assert len(panels) == 2
    assert fig._suptitle.get_text() == "one layer"
    assert "query" in panels[0].get_ylabel() and "key" in panels[1].get_xlabel()
    assert [t.get_text() for t in panels[0].get_xticklabels()] == toks
    share = np.asarray(panels[1].images[0].get_array())
    np.testing.assert_allclose(share.sum(-1), np.ones(9), rtol=1e-5)
    np.testing.assert_allclose(panels[0].images[0].get_array(), w[0].mean(0).numpy(), rtol=1e-5)
    assert smallest_text_css_px(fig) >= 9
    with pytest.raises(ValueError, match="norms"):
        plot_norm_weighted_attention(w, torch.rand(9, 8), toks, toks)


def test_small_panels_keep_the_layer_grid_readable():
    # Chapter 11 draws 2 layers x 4 heads of a 9-token sentence in one row of the page.
    from transformer_lib.views.attention_maps import plot_attention_layers_heads

    toks = ["▁I", "▁have", "▁never", "▁seen", "▁this", "▁f", "il", "m", "."]
    w = torch.rand(2, 4, 9, 9).softmax(-1)
    wide = plot_attention_layers_heads(w, toks, toks)
    small = plot_attention_layers_heads(w, toks, toks, panel_inches=1.6)
    assert small.get_figheight() < 0.7 * wide.get_figheight()
    panels = [ax for ax in small.axes if ax.images and ax.get_label() != "<colorbar>"]
    assert len(panels) == 8
    assert all(t.get_rotation() == 90 for ax in panels for t in ax.get_xticklabels())
    assert smallest_text_css_px(small) >= 9
    with pytest.raises(ValueError, match="panel_inches"):
        plot_attention_layers_heads(w, toks, toks, panel_inches=0.5)
