"""The chapter 7 diagram of the position-wise FFN: every position drawn to scale with the
sizes it is given, and one band per weight matrix across all the positions."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
from figure_text import smallest_text_css_px  # noqa: E402

from transformer_lib.views.ffn_diagram import plot_ffn_block  # noqa: E402


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _patches(fig, gid):
    return [p for p in fig.axes[0].patches if p.get_gid() == gid]


@pytest.mark.parametrize(("d_model", "d_ff", "n"), [(128, 512, 3), (64, 256, 2)])
def test_vectors_to_scale_and_weights_shared(d_model, d_ff, n):
    fig = plot_ffn_block(d_model=d_model, d_ff=d_ff, n_positions=n)
    for t in range(n):
        ins, hidden, outs = (
            _patches(fig, f"position {t} {w}") for w in ("input", "hidden", "output")
        )
        assert len(hidden) == 4 * len(ins) == 4 * len(outs)  # d_ff / d_model cells
        assert len(hidden) * 16 == d_ff
    fig.draw_without_rendering()
    columns = [_patches(fig, f"position {t} hidden") for t in range(n)]
    left = min(c.get_x() for c in columns[0])
    right = max(c.get_x() + c.get_width() for c in columns[-1])
    for gid in ("W1", "ReLU", "W2"):  # one band over every position
        (band,) = _patches(fig, gid)
        box = band.get_bbox()
        assert box.x0 <= left and box.x1 >= right, gid
    texts = " ".join(t.get_text() for t in fig.axes[0].texts)
    assert f"({d_model} × {d_ff})" in texts and f"({d_ff} × {d_model})" in texts
    assert f"= {d_model}" in texts and f"= {d_ff}" in texts


def test_readable_at_page_width_and_on_a_phone():
    fig = plot_ffn_block()
    assert smallest_text_css_px(fig) >= 12
    assert smallest_text_css_px(fig, column_px=350) >= 9  # a phone's column


def test_rejects_sizes_it_cannot_draw():
    with pytest.raises(ValueError, match="n_positions"):
        plot_ffn_block(n_positions=7)
    with pytest.raises(ValueError, match="d_ff >= d_model"):
        plot_ffn_block(d_model=128, d_ff=64)
