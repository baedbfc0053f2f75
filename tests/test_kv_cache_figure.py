"""The key/value-cache figure of chapter 10: it draws what the library's cache holds."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from figure_text import smallest_text_css_px  # noqa: E402
from matplotlib.patches import Rectangle  # noqa: E402

from transformer_lib import Transformer, TransformerConfig  # noqa: E402
from transformer_lib.views.kv_cache import plot_kv_cache  # noqa: E402

DEC = ["<bos>", "▁Wo", "▁ist", "▁die"]
SRC = ["▁Where", "▁is", "▁the", "▁st", "ation", "?"]


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _cells(fig):
    """{(kind, step): number of k/v columns} from the patches' ids."""
    counts = {}
    for patch in fig.axes[0].findobj(Rectangle):
        gid = patch.get_gid()
        if gid and gid.endswith(":k"):
            kind, step, _, _ = gid.split(":")
            counts[kind, int(step)] = counts.get((kind, int(step)), 0) + 1
    return counts


def _record_cache(steps=4):
    """Decode one token at a time with a real KVCache and record, after every step, the
    self-attention length of layer 0 and whether its cross-attention k is a new tensor."""
    torch.manual_seed(0)
    cfg = TransformerConfig(
        vocab_size=20, d_model=16, n_heads=2, d_ff=32,
        n_encoder_layers=1, n_decoder_layers=2, max_len=16, dropout=0.0,
    )  # fmt: skip
    model = Transformer(cfg).eval()
    src = torch.randint(4, 20, (1, len(SRC)))
    tgt = torch.randint(4, 20, (1, steps))
    cache = model.new_cache()
    lengths, computed, previous = [], [], None
    with torch.no_grad():
        memory, mask = model.encode(src)
        for t in range(steps):
            model.decode(tgt[:, t : t + 1], memory, mask, cache=cache)
            layer = cache.layers[0]
            lengths.append(layer["self"]["k"].size(2))
            computed.append(layer["cross"]["k"] is not previous)
            previous = layer["cross"]["k"]
    return lengths, computed


def test_self_attention_grows_by_one_column_and_cross_attention_is_computed_once():
    lengths, computed = _record_cache()
    assert lengths == [1, 2, 3, 4] and computed == [True, False, False, False]
    fig = plot_kv_cache(DEC, SRC, lengths, computed, heads=2, d_k=8)
    cells = _cells(fig)
    for step in range(4):  # numbered from 0, as everywhere in the book
        assert cells.get(("self-new", step)) == 1  # one new column per step
        assert cells.get(("self-stored", step), 0) == step  # the earlier ones kept
        cross = "cross-new" if step == 0 else "cross-stored"
        assert cells.get((cross, step)) == len(SRC)
    assert ("cross-new", 1) not in cells
    texts = {t.get_text() for t in fig.findobj(matplotlib.text.Text)}
    assert "▁Wo" in texts and "_Wo" not in texts  # the SentencePiece marker as drawn
    assert any("(B, 2, t, 8)" in t for t in texts)
    assert any(f"S = {len(SRC)}" in t for t in texts)
    assert fig.axes[0].get_title() and fig.axes[0].get_xlabel() and fig.axes[0].get_ylabel()


def test_a_prefill_step_appends_several_columns():
    fig = plot_kv_cache(DEC, SRC, [3, 4], [True, False])
    cells = _cells(fig)
    assert cells["self-new", 0] == 3 and cells["self-new", 1] == 1
    assert cells["self-stored", 1] == 3
    rows = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert rows == ["step 0\nreads <bos> … ▁ist", "step 1\nreads ▁die"]


def test_readable_at_page_width_and_under_one_screen():
    fig = plot_kv_cache(DEC, SRC, [1, 2, 3, 4], [True, False, False, False], heads=4, d_k=32)
    assert smallest_text_css_px(fig) >= 9
    box = fig.get_tightbbox()
    scale = min(1.0, 672 / (box.width * 100))
    assert box.height * 100 * scale < 600


@pytest.mark.parametrize(
    "args, match",
    [
        ((DEC, SRC, [], []), "one entry per decoding step"),
        ((DEC, SRC, [1, 2], [True]), "one entry per decoding step"),
        ((DEC, SRC, [2, 1], [True, False]), "never decrease"),
        ((DEC, SRC, [1, 5], [True, False]), "decoder_tokens"),
        ((DEC, [], [1], [True]), "source_tokens is empty"),
    ],
)
def test_rejects_inconsistent_steps(args, match):
    with pytest.raises(ValueError, match=match):
        plot_kv_cache(*args)
