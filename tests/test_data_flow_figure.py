"""The data-flow figure of chapter 8: its layers, shapes and masks come from the model."""

import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402
import torch  # noqa: E402
from figure_text import smallest_text_css_px  # noqa: E402

from transformer_lib import Transformer, TransformerConfig, decoder_mask, padding_mask  # noqa: E402
from transformer_lib.pipeline.pretrained import load_pretrained  # noqa: E402
from transformer_lib.views.architecture import plot_data_flow  # noqa: E402

B, S, T = 2, 5, 3  # all different, so that each size names one symbol


def _texts(fig) -> list[str]:
    return [t.get_text() for t in fig.axes[0].texts]


def _symbolic(shape, **names: int) -> str:
    """``(2, 1, 1, 5)`` with B=2, S=5 -> ``"(B, 1, 1, S)"``."""
    by_size = {size: name for name, size in names.items()}
    return "(" + ", ".join(by_size.get(n, str(n)) for n in shape) + ")"


def test_the_shapes_drawn_are_the_models_shapes():
    config = TransformerConfig.tiny(50, n_encoder_layers=3, n_decoder_layers=1)
    model = Transformer(config).eval()
    src = torch.randint(4, 50, (B, S))
    tgt = torch.randint(4, 50, (B, T))
    sizes = {"B": B, "S": S, "T": T, "d_model": config.d_model, "V": config.vocab_size}
    with torch.no_grad():
        memory, _ = model.encode(src)
        logits = model(src, tgt)
    texts = _texts(plot_data_flow(config))
    src_mask = _symbolic(padding_mask(src).shape, **sizes)
    tgt_mask = _symbolic(decoder_mask(tgt).shape, **sizes)
    assert (src_mask, tgt_mask) == ("(B, 1, 1, S)", "(B, 1, T, T)")
    # the source padding mask in every encoder self-attention and decoder cross-attention
    assert texts.count(f"source padding mask {src_mask}") == 3 + 1
    assert texts.count(f"causal + padding mask {tgt_mask}") == 1
    assert f"memory {_symbolic(memory.shape, **sizes)}" in texts
    assert f"logits {_symbolic(logits.shape, **sizes)}" in texts
    assert f"source ids {_symbolic(src.shape, **sizes)}" in texts
    assert f"target ids, shifted right {_symbolic(tgt.shape, **sizes)}" in texts


def test_layers_are_numbered_from_zero_and_every_decoder_layer_reads_memory():
    config = TransformerConfig.tiny(50, n_encoder_layers=3, n_decoder_layers=2)
    texts = _texts(plot_data_flow(config))
    layers = sorted(t for t in texts if " layer " in t)
    assert layers == [
        "decoder layer 0",
        "decoder layer 1",
        "encoder layer 0",
        "encoder layer 1",
        "encoder layer 2",
    ]
    assert texts.count("cross-attention") == 2
    assert texts.count("K, V") == 2  # memory into every cross-attention
    assert "3 encoder and 2 decoder layers" in plot_data_flow(config).axes[0].get_title()


def test_deep_stacks_fold_their_middle_layers():
    config = TransformerConfig.base(37000, norm_first=True)
    texts = _texts(plot_data_flow(config))
    assert "encoder layers 1 to 4" in texts and "decoder layers 1 to 4" in texts
    assert "encoder layer 5" in texts and "decoder layer 0" in texts
    assert "encoder layer 3" not in texts
    assert texts.count("K, V") == 3  # layer 0, the middle ones, layer 5
    assert texts.count("final LayerNorm (pre-LN)") == 2  # one per stack
    assert any("(pre-LN)" in t and "residual" in t for t in texts)


def test_shipped_model_figure_is_readable_at_page_width():
    fig = plot_data_flow(load_pretrained().config)
    assert smallest_text_css_px(fig) >= 9
    fig.set_dpi(100)
    fig.canvas.draw()
    box = fig.get_tightbbox()
    assert box.height * 100 * min(1.0, 672 / (box.width * 100)) < 800  # under one screen


@pytest.mark.parametrize("shared", [True, False])
def test_the_output_projection_says_whether_it_is_tied(shared):
    config = TransformerConfig.tiny(50, share_embeddings=shared)
    tied = "linear (tied to the embedding, §3.4)" in _texts(plot_data_flow(config))
    assert tied == shared
