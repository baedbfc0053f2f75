"""The decoder-only diagram of chapter 12: what it keeps of the encoder-decoder."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402

from transformer_lib import TransformerConfig  # noqa: E402
from transformer_lib.views.decoder_only import plot_decoder_only_diagram  # noqa: E402


def _texts(fig):
    return [t.get_text() for ax in fig.axes for t in ax.texts]


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


def test_two_panels_that_a_phone_stacks_with_text_of_9_css_px():
    """The encoder-decoder and the decoder-only model are two panels of one grid, so
    the static build's phone version shows them one under the other, readable."""
    import io

    from transformer_lib.views.phone_layout import PHONE_COLUMN_PX, phone_version
    from transformer_lib.views.text_size import png_text_size, recording_text_sizes, with_text_size

    c = TransformerConfig.tiny(100)
    fig = plot_decoder_only_diagram(c, c)
    try:
        assert len(fig.axes) == 2 and not fig.texts[1:] and not fig.lines
        assert "cross-attention" in [t.get_text() for t in fig.axes[0].texts]
        assert "block ×2" in [t.get_text() for t in fig.axes[1].texts]
        buf = io.BytesIO()
        with recording_text_sizes() as sizes:
            fig.savefig(buf, format="png", dpi=100, bbox_inches="tight")
        png = with_text_size(buf.getvalue(), sizes)
        phone = phone_version(fig, png, png_text_size(png))
        assert phone is not None
        width = int.from_bytes(phone[16:20], "big")
        assert png_text_size(phone) * min(1.0, PHONE_COLUMN_PX / width) >= 9
    finally:
        plt.close(fig)
