"""Tests for the figures of transformer_lib.views: every helper draws a labelled figure, and the
conventions the book relies on hold (rows are queries, True = may attend)."""

import math

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from figure_text import smallest_text_css_px  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from transformer_lib import TransformerConfig  # noqa: E402
from transformer_lib.views import (  # noqa: E402
    architecture,
    attention_diagrams,
    attention_maps,
    beam_search,
    curves,
    embeddings,
    families,
    layer_norm,
    masks,
    positions,
    training_curves,
)
from transformer_lib.views.architecture import plot_architecture, plot_data_flow  # noqa: E402
from transformer_lib.views.attention_diagrams import plot_attention_diagram  # noqa: E402
from transformer_lib.views.attention_maps import (  # noqa: E402
    plot_attention,
    plot_attention_alignment,
    plot_attention_heads,
    plot_attention_layers_heads,
    plot_head_importance,
    plot_head_statistics,
)
from transformer_lib.views.beam_search import plot_beam_search  # noqa: E402
from transformer_lib.views.curves import (  # noqa: E402
    plot_curves,
    plot_dot_product_variance,
    plot_recurrence_vs_attention,
    plot_softmax_saturation,
)
from transformer_lib.views.embeddings import (  # noqa: E402
    plot_embedding_norms,
    plot_length_histogram,
    plot_vocab_sizes,
)
from transformer_lib.views.families import (  # noqa: E402
    plot_family_masks,
    plot_paper_vs_modern_layer,
)
from transformer_lib.views.layer_norm import (  # noqa: E402
    plot_layer_norm_effect,
    plot_norm_axes,
    plot_residual_sublayers,
)
from transformer_lib.views.masks import plot_mask  # noqa: E402
from transformer_lib.views.positions import (  # noqa: E402
    plot_position_rotation,
    plot_position_similarity,
    plot_positional_encoding,
    plot_sinusoids,
)
from transformer_lib.views.style import _styled, _to_numpy  # noqa: E402
from transformer_lib.views.training_curves import (  # noqa: E402
    plot_label_smoothing,
    plot_lr_schedule,
    plot_quality_per_minute,
    plot_training_log,
)

FIGURE_MODULES = (
    architecture,
    attention_diagrams,
    attention_maps,
    beam_search,
    curves,
    embeddings,
    families,
    layer_norm,
    masks,
    positions,
    training_curves,
)

SRC = ["▁Tom", "▁is", "▁la", "zy", "."]
TGT = ["<bos>", "▁Tom", "▁ist", "▁faul"]


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _weights(*shape: int, seed: int = 0) -> np.ndarray:
    return _softmax(np.random.default_rng(seed).normal(size=shape) * 2)


def _pe(length: int, d_model: int) -> np.ndarray:
    pos = np.arange(length)[:, None]
    angle = pos / 10000 ** (np.arange(0, d_model, 2)[None, :] / d_model)
    pe = np.zeros((length, d_model))
    pe[:, 0::2], pe[:, 1::2] = np.sin(angle), np.cos(angle)
    return pe


#: Rows as in data/vocab_sizes.json (chapter 2), three sizes.
_VOCAB_SIZES = [
    {"vocab_size": v, "tokens_per_sentence_english": e, "tokens_per_sentence_german": g}
    for v, e, g in [(500, 8.9, 9.8), (4000, 6.2, 6.3), (16000, 5.6, 5.6)]
]


def _beam_steps():
    return [
        [(["▁Tom"], -0.1), (["▁He"], -2.3)],
        [(["▁Tom", "▁is"], -0.4), (["▁He", "▁is"], -2.9)],
        [(["▁Tom", "▁is", "<eos>"], -0.6), (["▁Tom", "▁was"], -2.7)],
    ]


def _title(fig: Figure) -> str:
    sup = fig._suptitle.get_text() if fig._suptitle is not None else ""
    return sup or " ".join(ax.get_title() for ax in fig.axes).strip()


def _labels(fig: Figure) -> tuple[str, str]:
    """Any x label and any y label in the figure (axes labels or figure-level ones)."""
    xs = [ax.get_xlabel() for ax in fig.axes if ax.get_xlabel()]
    ys = [ax.get_ylabel() for ax in fig.axes if ax.get_ylabel()]
    if fig._supxlabel is not None:
        xs.append(fig._supxlabel.get_text())
    if fig._supylabel is not None:
        ys.append(fig._supylabel.get_text())
    return (xs[0] if xs else ""), (ys[0] if ys else "")


def _heatmap_axes(fig: Figure):
    return [ax for ax in fig.axes if ax.images and ax.get_label() != "<colorbar>"]


def _texts(fig: Figure) -> list[str]:
    return [t.get_text() for ax in fig.axes for t in ax.texts]


CASES = {
    "attention": lambda: plot_attention(_weights(4, 5), TGT, SRC),
    "attention_heads": lambda: plot_attention_heads(_weights(4, 4, 5), TGT, SRC),
    "attention_layers_heads": lambda: plot_attention_layers_heads(
        [_weights(2, 4, 5, seed=s) for s in range(2)], TGT, SRC
    ),
    "head_importance": lambda: plot_head_importance(np.array([[1.0, -2.0], [0.5, 0.0]])),
    "head_statistics": lambda: plot_head_statistics(
        np.array([[0.5, 0.2], [0.1, np.nan]]), ["enc h0", "dec h0"], ["previous", "next"]
    ),
    "attention_alignment": lambda: plot_attention_alignment(
        _weights(4, 5), TGT, SRC, [(1, 0), (2, 1), (3, 2)]
    ),
    "mask": lambda: plot_mask(np.tril(np.ones((4, 4), bool)), TGT, TGT),
    "positional_encoding": lambda: plot_positional_encoding(_pe(20, 16)),
    "sinusoids": lambda: plot_sinusoids(_pe(20, 16)),
    "sinusoids_overlay": lambda: plot_sinusoids(_pe(20, 16), dims=(0, 1), stacked=False),
    "position_similarity": lambda: plot_position_similarity(_pe(20, 16)),
    "lr_schedule": lambda: plot_lr_schedule(np.arange(1, 101), np.linspace(0, 1e-3, 100)),
    "label_smoothing": lambda: plot_label_smoothing(
        np.array([0.025, 0.9, 0.025, 0.025, 0.025]), SRC, epsilon=0.1
    ),
    "training_log": lambda: plot_training_log(
        [{"step": s, "loss": 5 / s, "lr": 1e-3} for s in range(1, 11)]
    ),
    "quality_per_minute": lambda: plot_quality_per_minute(
        [
            {
                "library": {"cpu_minutes": b, "bleu": 40 + b / 2},
                "plain": {"cpu_minutes": b, "bleu": 35 + b / 2},
            }
            for b in (5, 10, 20)
        ],
        {"cpu_minutes": 40, "bleu": 52, "label": "shipped"},
    ),
    "dot_product_variance": lambda: plot_dot_product_variance([1, 4, 16], [1.1, 3.9, 16.5]),
    "softmax_saturation": lambda: plot_softmax_saturation([1, 4, 16], n_samples=50),
    "embedding_norms": lambda: plot_embedding_norms(np.random.default_rng(0).normal(size=(30, 8))),
    "architecture": lambda: plot_architecture(),
    "data_flow": lambda: plot_data_flow(TransformerConfig.tiny(50)),
    "attention_diagram": lambda: plot_attention_diagram(),
    "recurrence_vs_attention": lambda: plot_recurrence_vs_attention(),
    "beam_search": lambda: plot_beam_search(_beam_steps()),
    "curves": lambda: plot_curves(
        [1, 2, 4], {"a": [1, 2, 3], "b": [3, 2, 1]}, xlabel="n", ylabel="t", title="demo"
    ),
    "length_histogram": lambda: plot_length_histogram({"en": [3, 4, 4, 7], "de": [2, 5]}),
    "vocab_sizes": lambda: plot_vocab_sizes(_VOCAB_SIZES, 128, shipped=4000, rest=900_000),
    "position_rotation": lambda: plot_position_rotation(_pe(20, 16)),
    "layer_norm_effect": lambda: plot_layer_norm_effect(
        np.random.default_rng(0).normal(2.0, 3.0, size=(4, 16)),
        np.random.default_rng(1).normal(size=(4, 16)),
        TGT,
    ),
    "norm_axes": lambda: plot_norm_axes(),
    "residual_sublayers": lambda: plot_residual_sublayers(),
    "family_masks": lambda: plot_family_masks(_FamilyTokenizer(), "a b c", "d e"),
    "paper_vs_modern_layer": lambda: plot_paper_vs_modern_layer(),
}


class _FamilyTokenizer:
    """What plot_family_masks needs of a tokenizer: one id per letter, <bos> = 2."""

    pad_id = 0

    def encode(self, text, add_bos=False):
        return ([2] if add_bos else []) + [ord(c) for c in text.split()]

    def id_to_token(self, i):
        return "<bos>" if i == 2 else "▁" + chr(i)


@pytest.mark.parametrize("name", sorted(CASES))
def test_returns_titled_labelled_figure(name):
    fig = CASES[name]()
    assert isinstance(fig, Figure)
    if name == "residual_sublayers":  # two columns, each headed by what it draws
        texts = [t.get_text() for ax in fig.axes for t in ax.texts]
        assert any(t.startswith("post-LN") for t in texts), texts
        assert any(t.startswith("pre-LN") for t in texts), texts
    elif name == "paper_vs_modern_layer":  # two columns, headed 2017 and 2024–2026
        texts = [t.get_text() for ax in fig.axes for t in ax.texts]
        assert any(t.startswith("2017") for t in texts), texts
        assert any(t.startswith("2024") for t in texts), texts
    else:
        assert _title(fig).strip(), f"{name}: no title"
    diagrams = (
        "architecture",
        "attention_diagram",
        "data_flow",
        "residual_sublayers",
        "paper_vs_modern_layer",
    )
    if name not in diagrams:  # diagrams: no axes
        xlabel, ylabel = _labels(fig)
        assert xlabel.strip() and ylabel.strip(), f"{name}: missing axis label"
    fig.canvas.draw()  # layout and text rendering must not fail


def test_every_public_helper_is_exercised():
    public = {
        n.removeprefix("plot_")
        for module in FIGURE_MODULES
        for n in module.__all__
        if n.startswith("plot_")
    }
    assert public <= set(CASES)


# --- attention --------------------------------------------------------------------------------
def test_attention_rows_are_queries_and_columns_are_keys():
    w = _weights(4, 5)  # Tq = 4 != Tk = 5 catches a transposed plot
    fig = plot_attention(w, TGT, SRC)
    (ax,) = _heatmap_axes(fig)
    assert [t.get_text() for t in ax.get_yticklabels()] == TGT
    assert [t.get_text() for t in ax.get_xticklabels()] == SRC
    assert "query" in ax.get_ylabel() and "key" in ax.get_xlabel()
    np.testing.assert_allclose(ax.images[0].get_array(), w)
    cbar = [a for a in fig.axes if a.get_label() == "<colorbar>"]
    assert cbar and "attention weight" in cbar[0].get_ylabel()


@pytest.mark.parametrize(
    "q, k, match",
    [(SRC, SRC, "query_tokens"), (TGT, TGT, "key_tokens"), (SRC, TGT, "swap")],
)
def test_attention_rejects_token_count_mismatch(q, k, match):
    with pytest.raises(ValueError, match=match):
        plot_attention(_weights(4, 5), q, k)


def test_attention_rejects_scores_and_bad_rank():
    with pytest.raises(ValueError, match="vmin=None"):
        plot_attention(np.random.default_rng(0).normal(size=(3, 3)) * 5)
    plot_attention(np.random.default_rng(0).normal(size=(3, 3)), vmin=None, vmax=None)
    with pytest.raises(ValueError, match="shape"):
        plot_attention(_weights(2, 3, 3))
    with pytest.raises(ValueError, match="list of tokens"):
        plot_attention(_weights(3, 3), "abc", None)


def test_attention_annotation_and_awkward_tokens():
    fig = plot_attention(_weights(3, 3), ["$5", "a$b$c", " "], None, annotate=True)
    (ax,) = _heatmap_axes(fig)
    assert len(ax.texts) == 9
    fig.canvas.draw()  # '$' must not be parsed as mathtext
    assert [t.get_text() for t in ax.get_yticklabels()] == [r"\$5", r"a\$b\$c", "␣"]


def test_attention_accepts_torch_tensors():
    torch = pytest.importorskip("torch")
    w = torch.softmax(torch.randn(1, 1, 3, 4, requires_grad=True), dim=-1)
    fig = plot_attention(w, ["a", "b", "c"], ["w", "x", "y", "z"])
    assert _heatmap_axes(fig)[0].images[0].get_array().shape == (3, 4)
    half = _to_numpy(torch.ones(2, dtype=torch.bfloat16))
    assert half.dtype == np.float32


def test_attention_draws_into_given_axes():
    fig, (a, b) = plt.subplots(1, 2)
    assert plot_attention(_weights(3, 3), ax=b) is fig
    assert b.images and not a.images


def test_attention_heads_grid_has_one_panel_per_head_and_one_colour_bar():
    fig = plot_attention_heads(_weights(1, 5, 4, 5), TGT, SRC, ncols=3)
    heads = _heatmap_axes(fig)
    assert [ax.get_title() for ax in heads] == [f"head {h}" for h in range(5)]
    assert sum(ax.get_label() == "<colorbar>" for ax in fig.axes) == 1
    assert [t.get_text() for t in heads[0].get_yticklabels()] == TGT
    with pytest.raises(ValueError, match=r"\(H, Tq, Tk\)"):
        plot_attention_heads(_weights(4, 5))


def test_attention_layers_heads_grid():
    fig = plot_attention_layers_heads(_weights(3, 2, 4, 5), TGT, SRC)
    panels = _heatmap_axes(fig)
    assert len(panels) == 6
    assert [panels[i].get_ylabel() for i in (0, 2, 4)] == ["layer 0", "layer 1", "layer 2"]
    assert "query" in fig._supylabel.get_text() and "key" in fig._supxlabel.get_text()
    with pytest.raises(ValueError, match="same shape"):
        plot_attention_layers_heads([_weights(2, 4, 5), _weights(2, 4, 4)])


def test_head_importance_is_centred_at_zero():
    fig = plot_head_importance(np.array([[1.0, -3.0], [0.5, 2.0]]))
    lo, hi = _heatmap_axes(fig)[0].images[0].get_clim()
    assert lo == -hi == -3.0


# --- masks ------------------------------------------------------------------------------------
def test_mask_colours_true_and_false_differently():
    mask = np.tril(np.ones((4, 4), bool))
    fig = plot_mask(mask, TGT, TGT)
    (ax,) = _heatmap_axes(fig)
    im = ax.images[0]
    rgba = im.cmap(im.norm(im.get_array()))
    assert not np.allclose(rgba[1, 0], rgba[0, 1])  # (1, 0) may attend, (0, 1) is blocked
    np.testing.assert_allclose(rgba[0, 0], rgba[3, 2])
    legend = [t.get_text() for t in fig.legends[0].get_texts()]  # under the mask
    assert any("may attend" in t for t in legend) and any("blocked" in t for t in legend)
    assert ax.get_legend() is None
    assert [t.get_text() for t in ax.get_yticklabels()] == TGT


def test_mask_accepts_broadcast_shapes():
    causal = np.tril(np.ones((3, 3), bool))[None, None]  # (1, 1, T, T)
    assert _heatmap_axes(plot_mask(causal))[0].images[0].get_array().shape == (3, 3)
    padding = np.array([[[[True, True, False]]]])  # (B=1, 1, 1, S)
    fig = plot_mask(padding, ["a", "b"], ["x", "y", "<pad>"])
    assert _heatmap_axes(fig)[0].images[0].get_array().shape == (2, 3)
    with pytest.raises(ValueError, match="boolean"):
        plot_mask(np.array([[0.0, -np.inf]]))


def test_mask_key_labels_upright_where_they_fit_never_turned_90_degrees():
    """Figs 6.3/6.4: turned by 90 degrees, the "▁" of "▁Danke" reads as a stray bar."""
    tokens = ["<bos>", "▁Danke", ".", "<eos>", "<pad>", "<pad>"]
    mask = np.tril(np.ones((6, 6), bool))

    def keys(ax):
        labels = ax.get_xticklabels()
        return [t.get_text() for t in labels], {t.get_rotation() for t in labels}

    texts, angles = keys(plot_mask(mask, tokens, tokens).axes[0])  # wide cells
    assert texts == tokens and angles == {0.0}
    _, axes = plt.subplots(1, 2, figsize=(6.8, 3.6))  # two narrower panels
    plot_mask(mask, tokens, tokens, ax=axes[0])
    texts, angles = keys(axes[0])
    assert angles == {0.0} and [t.lstrip("\n") for t in texts] == tokens
    assert [t.startswith("\n") for t in texts] == [False, True] * 3  # staggered
    _, axes = plt.subplots(1, 3, figsize=(6.8, 3.6))  # three: too narrow for upright
    plot_mask(mask, tokens, tokens, ax=axes[0])
    assert keys(axes[0]) == (tokens, {45.0})
    for style, angle in (("upright", 0.0), ("slanted", 45.0), ("staggered", 0.0)):
        assert keys(plot_mask(mask, tokens, tokens, key_labels=style).axes[0])[1] == {angle}
    with pytest.raises(ValueError, match="key_labels"):
        plot_mask(mask, tokens, tokens, key_labels="vertical")


# --- positional encoding ----------------------------------------------------------------------
def test_positional_encoding_heatmap_axes_and_range():
    fig = plot_positional_encoding(_pe(30, 16)[None])
    (ax,) = _heatmap_axes(fig)
    assert ax.images[0].get_array().shape == (30, 16)  # x = dimension, y = position
    assert "dimension" in ax.get_xlabel() and "position" in ax.get_ylabel()
    assert ax.images[0].get_clim() == (-1.0, 1.0)


def test_sinusoids_label_wavelengths():
    fig = plot_sinusoids(_pe(30, 16), dims=(0, 1, 4), stacked=False)
    ax = fig.axes[0]
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels[0].startswith("dim 0 (sin)") and labels[1].startswith("dim 1 (cos)")
    assert f"{2 * math.pi:.3g}" in labels[0]
    assert f"{2 * math.pi * 10000 ** (4 / 16):.3g}" in labels[2]
    stacked = plot_sinusoids(_pe(30, 16), dims=(0, 1, 4)).axes[0]
    assert len(stacked.get_yticklabels()) == 3


def test_sinusoid_pairs_get_clearly_different_colours_also_when_colour_blind():
    """Fig 5.2 (dims 0, 1, 16, 32, 64 of d_model = 128): no two pairs look alike, with
    normal vision or simulated deuteranopia / protanopia (Machado et al. 2009, full)."""
    from matplotlib.colors import to_rgb

    simulations = [
        np.eye(3),
        np.array([[0.367, 0.861, -0.228], [0.280, 0.673, 0.047], [-0.012, 0.043, 0.969]]),
        np.array([[0.152, 1.053, -0.205], [0.115, 0.786, 0.099], [-0.004, -0.048, 1.052]]),
    ]
    ax = plot_sinusoids(_pe(100, 128), dims=[0, 1, 16, 32, 64]).axes[0]
    curves = [line for line in ax.lines if line.get_label().startswith("dim")]
    colours = list(dict.fromkeys(line.get_color() for line in curves))
    assert len(colours) == 4  # dims 0 and 1 are one pair, one colour
    linear = np.array([to_rgb(c) for c in colours]) ** 2.2  # (4, 3), roughly linear RGB
    for matrix in simulations:
        seen = np.clip(linear @ matrix.T, 0, 1) ** (1 / 2.2)
        gaps = [np.linalg.norm(a - b) for i, a in enumerate(seen) for b in seen[i + 1 :]]
        assert min(gaps) > 0.28, f"two pairs look alike: {colours}"
    with pytest.raises(ValueError, match="dims"):
        plot_sinusoids(_pe(30, 16), dims=(16,))


def test_position_similarity_depends_on_offset_only():
    fig = plot_position_similarity(_pe(20, 32), reference=10)
    (ax_line,) = [ax for ax in fig.axes if ax.get_title().startswith("Along row")]
    line = ax_line.lines[0]
    offsets, sims = line.get_data()
    assert offsets[10] == 0 and sims.argmax() == 10
    np.testing.assert_allclose(sims[9], sims[11])  # symmetric in k
    with pytest.raises(ValueError, match="reference"):
        plot_position_similarity(_pe(20, 32), reference=25)


def test_signed_similarity_is_diverging_and_colour_blind_safe():
    """Fig 5.5 (a fresh learned table): signed dot products get a diverging map centred
    at 0 and a labelled colour bar. Under normal vision and simulated deuteranopia /
    protanopia (Machado et al. 2009, full) the two signs stay on opposite sides of the
    blue-yellow axis, which red-green colour blindness keeps, and 0 is the lightest."""
    from matplotlib.colors import to_rgb

    pe = np.random.default_rng(0).normal(0.0, 0.02, (64, 128))  # as nn.init.normal_
    fig = plot_position_similarity(pe, reference=32)
    (ax,) = [a for a in _heatmap_axes(fig) if a.get_title().startswith("PE(p)")]
    image = ax.images[0]
    low, high = image.get_clim()
    assert low == -high < 0  # centred at 0
    assert "dot product" in image.colorbar.ax.get_ylabel()
    points = np.linspace(0.0, 1.0, 11)  # blue end, ..., centre (0.5), ..., red end
    linear = np.array([to_rgb(image.get_cmap()(x)) for x in points]) ** 2.2
    simulations = [
        np.eye(3),
        np.array([[0.367, 0.861, -0.228], [0.280, 0.673, 0.047], [-0.012, 0.043, 0.969]]),
        np.array([[0.152, 1.053, -0.205], [0.115, 0.786, 0.099], [-0.004, -0.048, 1.052]]),
    ]
    for matrix in simulations:
        seen = np.clip(linear @ matrix.T, 0, 1) ** (1 / 2.2)  # (11, 3)
        blue_yellow = seen[:, 2] - seen[:, :2].mean(axis=1)
        assert (blue_yellow[:5] > 0.03).all() and (blue_yellow[6:] < -0.03).all()
        assert seen.mean(axis=1).argmax() == 5  # the centre, 0, is the lightest


# --- training ---------------------------------------------------------------------------------
def test_lr_schedule_call_forms():
    steps = np.arange(1, 51)
    a, b = np.linspace(0, 1, 50) * 1e-3, np.linspace(0, 2, 50) * 1e-3
    assert len(plot_lr_schedule(steps, a).axes[0].lines) == 1
    fig = plot_lr_schedule(steps, base=a, big=b, warmup_steps=10)
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["base", "big"]
    assert ax.get_xlabel() == "training step" and ax.get_ylabel() == "learning rate"
    fig = plot_lr_schedule({"x": (steps, a), "y": b})
    assert len(fig.axes[0].get_legend().get_texts()) == 2
    with pytest.raises(ValueError, match="steps"):
        plot_lr_schedule(steps[:10], a)
    with pytest.raises(ValueError, match="plot_lr_schedule"):
        plot_lr_schedule(steps)


def test_label_smoothing_bars():
    dist = np.array([0.0, 0.9, 0.05, 0.05])
    fig = plot_label_smoothing(dist, epsilon=0.1)
    ax = fig.axes[0]
    assert len(ax.patches) == 2 * dist.size
    assert "0.1" in ax.get_title()
    with pytest.raises(ValueError, match="sum to 1"):
        plot_label_smoothing(np.array([0.5, 0.2]))


def _noam(steps, d_model, warmup):
    return d_model**-0.5 * np.minimum(steps**-0.5, steps * warmup**-1.5)


def test_lr_schedule_warmup_labels_keep_clear_of_the_curves():
    steps = np.arange(1, 12_001)
    curves = {"paper": (steps, _noam(steps, 512, 4000)), "tiny": (steps, _noam(steps, 128, 400))}
    fig = plot_lr_schedule(curves, warmup_steps=[400, 4000])
    try:
        ax = fig.axes[0]
        fig.draw_without_rendering()
        labels = [t for t in ax.texts if t.get_text().startswith("warm-up ends")]
        assert [t.get_text() for t in labels] == [
            "warm-up ends\n(step 400)",
            "warm-up ends\n(step 4,000)",
        ]
        for text in labels:
            box = text.get_window_extent()
            for line in ax.get_lines()[:2]:  # the two schedules, not the dotted lines
                x, y = ax.transData.transform(line.get_xydata()).T
                hits = (x >= box.x0) & (x <= box.x1) & (y >= box.y0) & (y <= box.y1)
                assert not hits.any(), f"{text.get_text()!r} is drawn across a curve"
            assert not box.overlaps(ax.get_legend().get_window_extent())
        # no room beside a line at the very start of a steep curve: named in the legend
        fig2 = plot_lr_schedule({"steep": (steps, _noam(steps, 128, 10))}, warmup_steps=10)
        legend = [t.get_text() for t in fig2.axes[0].get_legend().get_texts()]
        assert legend == ["steep", "warm-up ends (step 10)"]
        assert not fig2.axes[0].texts
    finally:
        plt.close("all")


def test_label_smoothing_values_keep_clear_of_the_bars():
    dist = np.full(8, 0.0125)
    dist[4] = 0.9125
    fig = plot_label_smoothing(dist, list("abcdefgh"), epsilon=0.1)
    try:
        ax = fig.axes[0]
        fig.draw_without_rendering()
        texts = [t for t in ax.texts if t.get_text()]
        assert sorted(t.get_text() for t in texts) == ["0.0125"] * 7 + ["0.9125"]
        bars = [p.get_window_extent() for p in ax.patches if p.get_height() > 0]
        for text in texts:  # the correct token's value beside its bar, not on the hatched one
            box = text.get_window_extent()
            assert not any(box.overlaps(bar) for bar in bars), text.get_text()
    finally:
        plt.close(fig)


def test_training_log_panels_and_missing_values():
    rows = [
        {"step": s, "loss": 5 / s, "lr": 1e-4 * s, "tokens_per_s": 1000.0}
        | ({"val_loss": 6 / s} if s % 5 == 0 else {})
        for s in range(1, 21)
    ]
    fig = plot_training_log(rows, smooth=0.5)
    assert len(fig.axes) == 3
    assert fig.axes[-1].get_xlabel() == "training step"
    assert [a.get_ylabel() for a in fig.axes] == [
        "loss (nats per token)",
        "learning rate",
        "tokens per second",
    ]
    val = [ln for ln in fig.axes[0].lines if ln.get_label() == "validation"]
    assert len(val[0].get_xdata()) == 4
    cols = {"loss": [3.0, 2.0, None], "val_loss": [None, None, 2.5]}
    assert len(plot_training_log(cols).axes) == 1
    with pytest.raises(ValueError, match="no loss"):
        plot_training_log([{"step": 1, "lr": 0.1}])


# --- scaling (ch. 3) --------------------------------------------------------------------------
def test_dot_product_variance_simulation_matches_theory():
    fig = plot_dot_product_variance([4, 64], n_samples=4000)
    by_label = {ln.get_label(): ln.get_ydata() for ln in fig.axes[0].lines}
    np.testing.assert_allclose(by_label["q · k (unscaled)"], [4, 64], rtol=0.15)
    np.testing.assert_allclose(by_label["q · k / √d_k (scaled)"], [1, 1], rtol=0.15)
    assert fig.axes[0].get_yscale() == "log"


def test_softmax_saturates_without_scaling():
    fig = plot_softmax_saturation([1, 256], n_samples=200)
    by_label = {ln.get_label(): ln.get_ydata() for ln in fig.axes[0].lines}
    raw, scaled = by_label["softmax(q · k)"], by_label["softmax(q · k / √d_k)"]
    assert raw[1] > 0.8 > scaled[1] and raw[1] > raw[0]


def test_embedding_norms_scale_by_sqrt_d_model():
    emb = np.random.default_rng(0).normal(size=(50, 16)) / 4
    fig = plot_embedding_norms(emb)
    heights = [p.get_height() for p in fig.axes[0].patches]
    assert heights[1] == pytest.approx(heights[0] * 4)
    assert heights[2] == pytest.approx(math.sqrt(16 / 2))  # every sinusoidal PE row
    with pytest.raises(ValueError, match="D = 16"):
        plot_embedding_norms(emb, pe=np.zeros((5, 8)))


# --- diagrams ---------------------------------------------------------------------------------
def test_architecture_has_the_papers_blocks():
    texts = _texts(plot_architecture("6×"))
    assert texts.count("Add & Norm") == 5
    assert texts.count("6×") == 2
    for block in ("Masked\nMulti-Head\nAttention", "Feed\nForward", "Linear", "Softmax"):
        assert block in texts
    assert "Input\nEmbedding" in texts and "Output\nEmbedding" in texts


def test_compact_architecture_fits_a_page_column_unshrunk():
    def labels(fig):
        return sorted((t.get_text(), t.get_fontsize()) for t in fig.axes[0].texts)

    wide, compact = plot_architecture(), plot_architecture(compact=True)
    assert labels(compact) == labels(wide)  # the same labels at the same sizes
    widths = []
    for fig in (wide, compact):
        fig.set_dpi(100)
        fig.canvas.draw()
        widths.append(fig.get_tightbbox().width * 100)
    assert widths[0] > 672 >= widths[1]


def test_attention_diagram_panels():
    both = plot_attention_diagram()
    assert len(both.axes) == 2
    texts = _texts(both)
    for block in ("SoftMax", "Mask (opt.)", "Concat", "Scaled dot-product\nattention"):
        assert block in texts
    assert texts.count("Linear") == 3  # V, K and Q (the stacked copies behind are blank)
    scaled = plot_attention_diagram("scaled")
    assert len(scaled.axes) == 1 and "Concat" not in _texts(scaled)
    with pytest.raises(ValueError, match="panel"):
        plot_attention_diagram("additive")


def test_curves_take_a_style_per_series():
    from transformer_lib.views.style import LAYER_STYLES

    fig = plot_curves(
        [1, 2, 4],
        {"rnn": [3, 2, 1], "attention": [1, 1, 1]},
        xlabel="n",
        ylabel="t",
        title="demo",
        styles={"attention": LAYER_STYLES["self-attention"]},
    )
    rnn, attention = fig.axes[0].lines
    assert attention.get_color() == LAYER_STYLES["self-attention"]["color"]
    assert attention.get_marker() == LAYER_STYLES["self-attention"]["marker"]
    assert rnn.get_color() == "#0072B2"  # not listed: the first colour of the default order


def test_recurrence_vs_attention_panels():
    fig = plot_recurrence_vs_attention(include_convolution=False)
    axes = [ax for ax in fig.axes if ax.lines]
    assert [ax.get_title() for ax in axes] == [
        "Sequential operations",
        "Maximum path length",
        "Operations per layer",
    ]
    rnn, attn = axes[0].lines[:2]
    assert rnn.get_ydata()[-1] > 1 and set(attn.get_ydata()) == {1}
    from transformer_lib.views.style import LAYER_STYLES

    assert rnn.get_color() == LAYER_STYLES["recurrent"]["color"]
    assert attn.get_color() == LAYER_STYLES["self-attention"]["color"]


# Figures of chapters 1-4, as the chapters call them (the default figure dpi is 100).
CHAPTER_FIGURES = {
    "ch1 gradient reach": lambda: plot_curves(
        np.arange(1, 64),
        {"RNN (tanh)": np.ones(63), "LSTM": np.ones(63), "self-attention": np.ones(63)},
        xlabel="distance",
        ylabel=r"gradient norm $\|\partial(u \cdot y_n) / \partial x_{n-j}\|$",
        title="How strongly the last output depends on earlier inputs",
        logy=True,
    ),
    "ch1 table 1": lambda: plot_recurrence_vs_attention(d_model=512),
    "ch1 architecture": lambda: plot_architecture(compact=True),
    "ch2 lengths": lambda: plot_length_histogram({"English": [3, 4, 18], "German": [2, 29]}),
    "ch2 norms": lambda: plot_embedding_norms(np.random.default_rng(0).normal(size=(30, 128))),
    "ch2 vocabulary sizes": lambda: plot_vocab_sizes(_VOCAB_SIZES, 128, 4000, rest=900_000),
    "ch3 figure 2": lambda: plot_attention_diagram("scaled"),
    "ch3 toy map": lambda: plot_attention(
        _weights(3, 4),
        ["furry?", "engine?", "no idea"],
        ["cat", "dog", "car", "bus"],
        annotate=True,
    ),
    "ch3 variance": lambda: plot_dot_product_variance(n_samples=200),
    "ch3 saturation": lambda: plot_softmax_saturation(n_samples=50),
    "ch4 figure 2": lambda: plot_attention_diagram(),
    "ch4 hand-built heads": lambda: plot_attention_heads(
        _weights(4, 6, 6), ["the", "cat", "sat", "on", "the", "mat"], ncols=2
    ),
}


@pytest.mark.parametrize("name", sorted(CHAPTER_FIGURES))
def test_chapter_1_to_4_figures_are_readable_at_page_width(name):
    """Shown in a 672-px text column (a 1280-px window), no text is under 9 CSS px."""

    fig = CHAPTER_FIGURES[name]()
    smallest = smallest_text_css_px(fig)  # the inline backend saves tight, at 100 dpi
    assert smallest >= 9, f"{name}: smallest text {smallest:.1f} CSS px"


def test_beam_search_tree():
    fig = plot_beam_search(_beam_steps())
    texts = _texts(fig)
    assert "<eos>\n-0.60" in texts and "▁was\n-2.70" in texts
    assert "beam size 2" in fig.axes[0].get_title()
    with pytest.raises(ValueError, match="empty"):
        plot_beam_search([])


def test_beam_search_tree_names_its_node_kinds():
    steps = [
        [(["▁Tom"], -0.1), (["▁He"], -2.3)],
        [(["▁Tom", "▁is"], -0.4), (["▁He", "▁is"], -2.9), (["▁Tom", "<eos>"], -1.0)],
        [(["▁Tom", "▁is", "."], -0.5), (["▁Tom", "▁is", "<eos>"], -0.9)],
    ]
    fig = plot_beam_search(steps, best=["▁Tom", "▁is", "<eos>"])
    assert [t.get_text() for t in fig.legends[0].get_texts()] == [
        "chosen output (its path thick)",
        "finished: ended with <eos>",
        "in the beam, extended at the next step",
        "in the beam, then dropped",
        "in the beam when the search stopped",
    ]
    # the rows are no scale of log-probability (the scores are in the nodes)
    assert "log" not in fig.axes[0].get_ylabel()
    assert "beam size 2" in fig.axes[0].get_title()  # live hypotheses per step


def test_self_vs_cross_attention_averaged_over_heads_fits_one_screen():

    from transformer_lib.views.decoder_only import plot_self_vs_cross_attention

    tokens = ["▁The", "▁boy", ".", "<sep>", "▁Der", "▁Junge", "."]  # L = 7
    rng = np.random.default_rng(0)
    square = rng.random((4, 7, 7))
    square /= square.sum(-1, keepdims=True)
    cross = _weights(4, 4, 3)  # (H, T, S)
    args = (square, tokens, cross, ["<bos>", "▁Der", "▁Junge", "."], tokens[:3])
    per_head = plot_self_vs_cross_attention(*args, block=(3, 3))
    fig = plot_self_vs_cross_attention(*args, block=(3, 3), average_heads=True)
    maps = [ax for ax in fig.axes if ax.images and ax.get_label() != "<colorbar>"]
    assert len(maps) == 2 and len(per_head.axes) > len(fig.axes)
    np.testing.assert_allclose(maps[0].images[0].get_array(), square.mean(0))
    np.testing.assert_allclose(maps[1].images[0].get_array().sum(-1), 1.0, rtol=1e-6)
    assert "mean of 4 heads" in maps[0].get_title()
    fig.set_dpi(100)
    fig.canvas.draw()
    box = fig.get_tightbbox()
    scale = min(1.0, 672 / (box.width * 100))
    assert box.height * 100 * scale < 800  # about one screen at page width
    assert smallest_text_css_px(fig) >= 9


# --- Jupyter integration ----------------------------------------------------------------------
def test_display_hook_shows_the_figure_once(monkeypatch):
    display_mod = pytest.importorskip("IPython.display")
    shown = []
    monkeypatch.setattr(display_mod, "display", lambda obj, **kw: shown.append(obj))
    fig = plot_mask(np.eye(2, dtype=bool))
    assert fig.number in plt.get_fignums()
    fig._ipython_display_()
    assert shown == [fig]
    assert fig.number not in plt.get_fignums()  # the end-of-cell flush will not repeat it
    assert "_ipython_display_" in fig.__dict__


def test_style_context_keeps_interactive_mode_switched_on_inside():
    @_styled
    def switches_on():
        matplotlib.interactive(True)  # what Jupyter's backend does on first use
        return plt.figure()

    before = matplotlib.is_interactive()
    try:
        matplotlib.interactive(False)
        switches_on()
        assert matplotlib.is_interactive()
    finally:
        matplotlib.interactive(before)


# --- chapters 5 and 7 helpers -----------------------------------------------------------------
def test_position_rotation_points_lie_on_the_unit_circle():
    pe = _pe(40, 32)
    fig = plot_position_rotation(pe, pairs=(0, 2), offset=3, starts=(1, 10))
    panels = [ax for ax in fig.axes if ax.collections and ax.get_label() != "<colorbar>"]
    assert len(panels) == 2
    for ax, i in zip(panels, (0, 2)):
        points = ax.collections[0].get_offsets()
        np.testing.assert_allclose(np.hypot(points[:, 0], points[:, 1]), 1.0, atol=1e-9)
        np.testing.assert_allclose(points, pe[:, [2 * i, 2 * i + 1]])
        assert "sin" in ax.get_xlabel() and "cos" in ax.get_ylabel()
    with pytest.raises(ValueError, match="pairs"):
        plot_position_rotation(pe, pairs=(16,))
    with pytest.raises(ValueError, match="offset"):
        plot_position_rotation(pe, offset=5, starts=(38,))


def test_layer_norm_effect_marks_each_positions_mean():
    rng = np.random.default_rng(0)
    before = rng.normal(size=(3, 16)) * np.array([[1.0], [4.0], [0.5]]) + np.array([[0], [3], [-2]])
    after = (before - before.mean(1, keepdims=True)) / before.std(1, keepdims=True)
    fig = plot_layer_norm_effect(before, after, ["a", "b", "c"])
    top, bottom = fig.axes[:2]  # before and after, stacked; the tokens label the shared x axis
    assert [t.get_text() for t in bottom.get_xticklabels()] == ["a", "b", "c"]
    assert top.get_title() == "before LayerNorm" and bottom.get_title() == "after LayerNorm"
    means = [c.get_offsets()[0, 1] for c in bottom.collections if len(c.get_offsets()) == 1]
    np.testing.assert_allclose(means, 0.0, atol=1e-9)
    with pytest.raises(ValueError, match="shape"):
        plot_layer_norm_effect(before, after[:2])


# --- chapter 11 helpers ----------------------------------------------------------------------
def test_head_importance_takes_row_labels():
    labels = ["encoder · 0", "cross · 1"]
    fig = plot_head_importance(np.array([[1.0, -3.0], [0.5, 2.0]]), layer_labels=labels)
    (ax,) = _heatmap_axes(fig)
    assert [t.get_text() for t in ax.get_yticklabels()] == labels
    with pytest.raises(ValueError, match="layer_labels"):
        plot_head_importance(np.zeros((3, 2)), layer_labels=labels)


def test_head_statistics_rows_are_heads_and_nan_cells_stay_blank():
    values = np.array([[0.5, 0.25, 0.9], [0.1, np.nan, 0.3]])
    fig = plot_head_statistics(
        values, ["enc h0", "dec h0"], ["previous", "next", "spread"], row_groups=[1, 1]
    )
    (ax,) = _heatmap_axes(fig)
    assert [t.get_text() for t in ax.get_yticklabels()] == ["enc h0", "dec h0"]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["previous", "next", "spread"]
    assert _texts(fig) == ["0.50", "0.25", "0.90", "0.10", "0.30"]  # NaN left blank
    with pytest.raises(ValueError, match="row_groups"):
        plot_head_statistics(values, ["a", "b"], ["x", "y", "z"], row_groups=[1, 2])
    with pytest.raises(ValueError, match="head_labels"):
        plot_head_statistics(values, ["a"], ["x", "y", "z"])


def test_head_statistics_column_groups_are_set_apart():
    values = np.array([[0.5, 0.25, 0.9], [0.1, 0.2, 0.3]])
    fig = plot_head_statistics(values, ["a", "b"], ["x", "y", "spread"], col_groups=[2, 1])
    (ax,) = _heatmap_axes(fig)
    # one white vertical line, between column 1 and the set-apart column 2
    xs = [line.get_xdata()[0] for line in ax.lines if line.get_color() == "white"]
    assert xs == [1.5]
    with pytest.raises(ValueError, match="col_groups"):
        plot_head_statistics(values, ["a", "b"], ["x", "y", "z"], col_groups=[1, 1])


def test_head_statistics_column_labels_stay_apart():
    """Chapter 11's six statistics: no rotated label runs into its neighbour."""
    stats = ["previous", "same", "next", "first token", "punctuation", "spread"]
    labels = [f"enc L{i // 4} h{i % 4}" for i in range(16)] + ["uniform (encoder)", "u"]
    fig = plot_head_statistics(np.full((18, 6), 0.5), labels, stats, row_groups=[8, 8, 2])
    assert fig.get_size_inches()[0] <= 6.6
    fig.canvas.draw()
    (ax,) = _heatmap_axes(fig)
    boxes = {t.get_text(): t.get_window_extent() for t in ax.get_xticklabels()}
    # A long label hangs down to the left of its tick: at 30° "first token" began where
    # "next" ended and the two read as one phrase.
    assert boxes["next"].x1 + 2 < boxes["first token"].x0


def test_attention_alignment_outlines_cells_and_marks_row_maxima():
    w = np.array([[0.7, 0.1, 0.1, 0.1, 0.0], [0.0, 0.2, 0.8, 0.0, 0.0]])
    fig = plot_attention_alignment(w, TGT[:2], SRC, [(0, 0), (1, 1)])
    (ax,) = _heatmap_axes(fig)
    outlined = [(p.get_x() + 0.5, p.get_y() + 0.5) for p in ax.patches]
    assert outlined == [(0.0, 0.0), (1.0, 1.0)]  # (column, row) of each reference cell
    dots = ax.collections[-1].get_offsets()
    np.testing.assert_allclose(dots, [[0, 0], [2, 1]])  # the maximum of each row
    assert [t.get_text() for t in ax.get_yticklabels()] == TGT[:2]
    with pytest.raises(ValueError, match="outside"):
        plot_attention_alignment(w, TGT[:2], SRC, [(2, 0)])


def test_quality_per_minute_leaves_room_above_the_highest_point():
    rows = [
        {"library": {"cpu_minutes": 5, "bleu": 42.0}, "plain": {"cpu_minutes": 5, "bleu": 35.0}}
    ]
    fig = plot_quality_per_minute(rows, {"cpu_minutes": 40, "bleu": 52.3, "label": "shipped"})
    assert fig.axes[0].get_ylim()[1] >= 52.3 * 1.1
    plt.close(fig)


def test_self_vs_cross_attention_names_both_maps_rows_by_the_token_read():
    from transformer_lib.views.decoder_only import plot_self_vs_cross_attention

    tokens = ["▁The", "▁boy", ".", "<sep>", "▁Der", "▁Junge", "."]  # L = 7
    square = np.full((1, 7, 7), 1 / 7)
    cross = _weights(1, 4, 3)  # (H, T, S)
    read = ["<bos>", "▁Der", "▁Junge", "."]  # as the left rows from <sep> on
    fig = plot_self_vs_cross_attention(square, tokens, cross, read, tokens[:3], block=(3, 3))
    left, right = [ax for ax in fig.axes if ax.images and ax.get_label() != "<colorbar>"]
    rows = [[t.get_text() for t in ax.get_yticklabels()] for ax in (left, right)]
    assert rows[1][1:] == rows[0][4:] and left.get_ylabel() == right.get_ylabel()
    assert "reads" in right.get_ylabel()
    written = ["▁Der", "▁Junge", ".", "<eos>"]  # one row off: refused
    with pytest.raises(ValueError, match="the token each position reads"):
        plot_self_vs_cross_attention(square, tokens, cross, written, tokens[:3], block=(3, 3))


def test_loss_mask_of_a_fifteen_token_pair_reads_on_a_phone_column():
    from transformer_lib.views.decoder_only import plot_loss_mask

    tokens = ["▁He", "▁took", "▁a", "▁week", "▁off", ".", "<sep>"]
    tokens += ["▁Er", "▁nahm", "▁sich", "▁eine", "▁Woche", "▁frei", ".", "<eos>"]
    mask = np.arange(14) >= 6  # from <sep> on
    fig = plot_loss_mask(tokens, mask)
    assert smallest_text_css_px(fig, column_px=350) >= 9  # no sideways scrolling either
    plt.close(fig)


def test_mask_of_a_short_sentence_with_its_legend_reads_on_a_phone_column():
    tokens = ["<bos>", "▁Danke", ".", "<pad>", "<pad>"]
    fig = plot_mask(np.tril(np.ones((5, 5), bool)), tokens, tokens, title="Causal mask")
    fig.set_dpi(100)
    fig.canvas.draw()
    legend, box = fig.legends[0].get_window_extent(), fig.axes[0].get_window_extent()
    assert legend.y1 < box.y0  # under the mask, not beside it
    assert smallest_text_css_px(fig, column_px=350) >= 9
    plt.close(fig)
