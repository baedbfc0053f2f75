"""The decoder-only diagram of chapter 12: what it keeps of the encoder-decoder."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402

from transformer_lib import TransformerConfig  # noqa: E402
from transformer_lib.views.decoder_only import plot_decoder_only_diagram  # noqa: E402


def _texts(fig):
    return [t.get_text() for t in fig.axes[0].texts]


def test_diagram_names_the_parts_and_the_layer_counts():
    ed = TransformerConfig.tiny(100)
    do = TransformerConfig.tiny(100)
    do.n_decoder_layers = 5
    fig = plot_decoder_only_diagram(ed, do)
    try:
        texts = _texts(fig)
        assert "English <sep> German" in texts and "<bos> German" in texts
        assert f"encoder layer ×{ed.n_encoder_layers}" in texts
        assert f"decoder layer ×{ed.n_decoder_layers}" in texts
        assert "block ×5" in texts
        assert texts.count("masked self-attention") == 2  # kept
        assert texts.count("cross-attention") == 1  # only on the left: dropped
        assert any("causal mask" in t for t in texts)
    finally:
        plt.close(fig)


def test_dropped_parts_are_grey_and_dashed():
    c = TransformerConfig.tiny(100)
    fig = plot_decoder_only_diagram(c, c)
    try:
        ax = fig.axes[0]
        cross = next(t for t in ax.texts if t.get_text() == "cross-attention")
        assert cross.get_color() == "#777777"
        dashed = [p for p in ax.patches if p.get_linestyle() == "--"]
        # encoder frame, its two sub-layers and its embedding, and the cross-attention
        assert len(dashed) == 5
    finally:
        plt.close(fig)
