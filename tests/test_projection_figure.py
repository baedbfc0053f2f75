"""The projection figure of chapter 3: Q = X W^Q, K = X W^K, V = X W^V for one head."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
from figure_text import smallest_text_css_px  # noqa: E402
from matplotlib.patches import Rectangle  # noqa: E402
from matplotlib.text import Text  # noqa: E402

from transformer_lib import MultiHeadAttention  # noqa: E402
from transformer_lib.views.projections import plot_projections  # noqa: E402

SENTENCE = ["▁The", "▁dog", "▁saw", "▁the", "▁cat", "▁and", "▁the", "▁cat", "▁saw", "▁the"]
SENTENCE += ["▁dog", "."]  # the chapter's sentence, as the shipped tokenizer cuts it
CASES = [
    (SENTENCE, 128, 32),
    (SENTENCE[:3], 512, 64),
    (["▁Hi", "!"], 64, 64),
]  # one head as wide as the model


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _texts(fig):
    return [t.get_text() for t in fig.findobj(Text) if t.get_visible() and t.get_text()]


def _patches(fig):
    return {p.get_gid(): p for p in fig.axes[0].findobj(Rectangle) if p.get_gid()}


@pytest.mark.parametrize("tokens, d_model, d_k", CASES)
def test_shapes_written_on_the_matrices_are_the_arguments(tokens, d_model, d_k):
    T = len(tokens)
    texts = _texts(plot_projections(tokens, d_model, d_k))
    expected = {}  # shape text: how many matrices carry it
    for shape, n in (((T, d_model), 1), ((d_model, d_k), 3), ((T, d_k), 3)):  # X, W's, Q K V
        expected[f"{shape[0]} × {shape[1]}"] = expected.get(f"{shape[0]} × {shape[1]}", 0) + n
    assert {s: texts.count(s) for s in expected} == expected
    assert not [t for t in texts if " × " in t and t not in expected]  # no other shape
    for name in "QKV":
        assert f"$W^{name}$" in texts and f"${name}$" in texts
    assert any(f"{T} token" in t for t in texts)  # the title counts them


@pytest.mark.parametrize("tokens, d_model, d_k", CASES)
def test_rows_are_the_tokens_and_line_up_across_x_q_k_v(tokens, d_model, d_k):
    fig = plot_projections(tokens, d_model, d_k, highlight=len(tokens) - 1)
    labels = {t.get_gid(): t for t in fig.findobj(Text) if (t.get_gid() or "").startswith("token:")}
    assert [labels[f"token:{i}"].get_text() for i in range(len(tokens))] == list(tokens)
    ys = [labels[f"token:{i}"].get_position()[1] for i in range(len(tokens))]
    assert ys == sorted(ys, reverse=True)  # token 0 on top, as in an attention map
    patches = _patches(fig)
    x = patches["X"]
    for name in "QKV":  # every result has X's rows: same height, same place
        out = patches[f"out:{name}"]
        assert out.get_height() == pytest.approx(x.get_height())
        assert out.get_y() == pytest.approx(x.get_y())
        assert out.get_x() > x.get_x() + x.get_width()
        w = patches[f"W:{name}"]  # W above its result, as wide
        assert (
            w.get_x() == pytest.approx(out.get_x()) and w.get_y() > out.get_y() + out.get_height()
        )
        assert w.get_width() == pytest.approx(out.get_width())
    # the highlighted row is the same row in X, Q, K and V, and it lies level with its label
    last = len(tokens) - 1
    rows = [patches[f"row:{m}:{last}"] for m in "XQKV"]
    assert len({round(r.get_y(), 9) for r in rows}) == 1
    y_mid = rows[0].get_y() + rows[0].get_height() / 2
    assert y_mid == pytest.approx(ys[last])


def test_drawn_with_the_widths_of_a_real_layer():
    mha = MultiHeadAttention(d_model=128, n_heads=4)
    fig = plot_projections(SENTENCE, mha.d_model, mha.d_head)
    patches = _patches(fig)  # for the book's model, widths are to scale
    assert patches["out:Q"].get_width() / patches["X"].get_width() == pytest.approx(32 / 128)
    assert f"128 × {mha.d_head}" in _texts(fig)


@pytest.mark.parametrize("tokens, d_model, d_k", CASES)
def test_readable_at_page_width_and_short(tokens, d_model, d_k):
    fig = plot_projections(tokens, d_model, d_k, highlight=0)
    assert smallest_text_css_px(fig) >= 9
    assert fig.get_tightbbox().height <= 3.5  # inches


@pytest.mark.parametrize(
    "args, kwargs, match",
    [
        ((SENTENCE, 128, 48), {}, r"d_k = 48 does not divide d_model = 128"),
        (([], 128, 32), {}, "got 0 tokens"),
        ((SENTENCE * 2, 128, 32), {}, "got 24 tokens"),
        (("The dog", 128, 32), {}, "not one string"),
        ((SENTENCE, 0, 32), {}, "d_model must be a positive int"),
        ((SENTENCE, 128, 32.0), {}, "d_k must be a positive int"),
        ((SENTENCE, 128, 32), {"highlight": 12}, "token index from 0 to 11"),
    ],
)
def test_inconsistent_arguments_are_refused_clearly(args, kwargs, match):
    with pytest.raises(ValueError, match=match):
        plot_projections(*args, **kwargs)


def test_weighted_sum_draws_the_weighted_rows_and_their_sum():
    import numpy as np
    import torch

    from transformer_lib.views.projections import plot_weighted_sum

    torch.manual_seed(0)
    T, d_v = len(SENTENCE), 32
    weights, values = torch.rand(T).softmax(0), torch.randn(T, d_v)
    fig = plot_weighted_sum(weights, values, SENTENCE, query=3)
    bars, val, wval, _, total = fig.axes[:5]
    np.testing.assert_allclose(val.images[0].get_array(), values.numpy(), rtol=1e-6)
    weighted = weights[:, None] * values
    np.testing.assert_allclose(wval.images[0].get_array(), weighted.numpy(), rtol=1e-5)
    np.testing.assert_allclose(
        total.images[0].get_array()[0], (weights @ values).numpy(), rtol=1e-5, atol=1e-6
    )
    assert [t.get_text() for t in bars.get_yticklabels()] == SENTENCE
    assert "Query 3 (▁the)" in fig.get_suptitle()
    assert smallest_text_css_px(fig) >= 9
    with pytest.raises(ValueError, match="T weights"):
        plot_weighted_sum(weights[:-1], values, SENTENCE, query=0)
    with pytest.raises(ValueError, match="query must be"):
        plot_weighted_sum(weights, values, SENTENCE, query=T)
