"""Chapter 14's figures: the three families' masks and the paper's layer beside a modern one."""

import itertools

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from figure_text import smallest_text_css_px  # noqa: E402
from matplotlib.text import Text  # noqa: E402

from transformer_lib import TransformerConfig  # noqa: E402
from transformer_lib.components.masks import causal_mask, decoder_mask, padding_mask  # noqa: E402
from transformer_lib.views.families import (  # noqa: E402
    FAMILY_PANELS,
    MODERN_CHANGES,
    family_masks,
    plot_family_masks,
    plot_paper_vs_modern_layer,
)


class _Tokenizer:
    """A stand-in with the three things plot_family_masks uses."""

    pad_id = 0
    _words = {"Tom": 5, "is": 6, "lazy": 7, "ist": 8, "faul": 9, ".": 10}

    def encode(self, text, add_bos=False):
        return ([2] if add_bos else []) + [self._words[w] for w in text.split()]

    def id_to_token(self, i):
        return "<bos>" if i == 2 else "▁" + {v: k for k, v in self._words.items()}[i]


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _visible_texts(fig):
    fig.canvas.draw()
    return [t for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip()]


def _no_overlaps(fig):
    renderer = fig.canvas.get_renderer()
    boxes = []
    for t in _visible_texts(fig):
        box = t.get_window_extent(renderer)
        if t.get_text().startswith("\n"):  # a staggered key label: only its second line shows
            box.y1 = (box.y0 + box.y1) / 2
        boxes.append((t.get_text(), box))
    for (a, box_a), (b, box_b) in itertools.combinations(boxes, 2):
        inter_w = min(box_a.x1, box_b.x1) - max(box_a.x0, box_b.x0)
        inter_h = min(box_a.y1, box_b.y1) - max(box_a.y0, box_b.y0)
        assert inter_w <= 1 or inter_h <= 1, f"{a!r} overlaps {b!r}"


def test_family_masks_are_the_librarys():
    src, tgt = [5, 6, 7, 10], [2, 5, 8, 9, 10]
    masks = family_masks(src, tgt)
    s, t = torch.tensor([src]), torch.tensor([tgt])
    want = [
        padding_mask(s).expand(1, 1, 4, 4)[0, 0],
        causal_mask(4)[0, 0],
        decoder_mask(t)[0, 0],
        padding_mask(s).expand(1, 1, 5, 4)[0, 0],
    ]
    assert list(masks) == list(FAMILY_PANELS)
    for got, expected in zip(masks.values(), want):
        np.testing.assert_array_equal(got, expected.numpy())
    assert masks[FAMILY_PANELS[0]].all() and not masks[FAMILY_PANELS[1]].all()


def test_padding_is_blocked_in_every_family():
    masks = family_masks([5, 6, 0], [2, 8, 0])
    for mask in masks.values():
        assert not mask[:, -1].any()


def test_drawn_masks_match_the_library_and_are_labelled():
    fig = plot_family_masks(_Tokenizer(), "Tom is lazy .", "Tom ist faul .")
    masks = family_masks([5, 6, 7, 10], [2, 5, 8, 9, 10])
    axes = [ax for ax in fig.axes if ax.images]
    assert len(axes) == 4
    src = ["▁Tom", "▁is", "▁lazy", "▁."]
    tgt = ["<bos>", "▁Tom", "▁ist", "▁faul", "▁."]
    tokens = [(src, src), (src, src), (tgt, tgt), (tgt, src)]
    for ax, (family, kind), (queries, keys) in zip(axes, FAMILY_PANELS, tokens):
        np.testing.assert_array_equal(
            np.asarray(ax.images[0].get_array()).astype(bool), masks[(family, kind)]
        )
        assert family in ax.get_title() and kind in ax.get_title()
        assert [t.get_text() for t in ax.get_yticklabels()] == queries
        assert [t.get_text().strip() for t in ax.get_xticklabels()] == keys
        assert ax.get_xlabel() == "key" and ax.get_ylabel() == "query"
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert legend == ["True: may attend", "False: blocked"]
    _no_overlaps(fig)
    assert smallest_text_css_px(fig) >= 9


def test_layer_diagram_labels_every_change_with_a_real_option():
    fig = plot_paper_vs_modern_layer()
    texts = [t.get_text() for t in _visible_texts(fig)]
    for option in set(MODERN_CHANGES.values()):
        assert option in texts, option
        settings = dict(kv.split("=") for kv in option.replace('"', "").split(", "))
        values = {k: v == "True" if v in ("True", "False") else v for k, v in settings.items()}
        TransformerConfig.tiny(**values)  # every option is one the config accepts
    for words in ("LayerNorm", "RMSNorm", "ReLU", "SwiGLU", "sinusoidal", "RoPE", "grouped-query"):
        assert any(words in t for t in texts), words
    assert any(t.startswith("2017") for t in texts)
    gids = {p.get_gid() for p in fig.axes[0].patches}
    assert {f"modern {g}" for g in MODERN_CHANGES} <= gids
    assert {"paper embedding", "paper attention", "paper ffn"} <= gids
    lines = {line.get_gid() for line in fig.axes[0].lines}
    assert {
        "paper residual 1",
        "paper residual 2",
        "modern residual 1",
        "modern residual 2",
    } <= lines


def test_changed_blocks_are_outlined_and_the_papers_are_not():
    fig = plot_paper_vs_modern_layer()
    patches = {p.get_gid(): p for p in fig.axes[0].patches if p.get_gid()}
    changed = {patches[f"modern {g}"].get_edgecolor() for g in MODERN_CHANGES}
    assert len(changed) == 1
    for gid, patch in patches.items():
        if gid.startswith("paper"):
            assert patch.get_edgecolor() not in changed


def test_layer_diagram_text_stays_clear_and_readable():
    fig = plot_paper_vs_modern_layer()
    _no_overlaps(fig)
    assert smallest_text_css_px(fig) >= 9
    assert fig.get_figheight() <= 5.5  # inches
