"""The head-split figure of chapter 4: d_model cut into H groups of d_k and merged back."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
from figure_text import smallest_text_css_px  # noqa: E402
from matplotlib.patches import Rectangle  # noqa: E402
from matplotlib.text import Text  # noqa: E402

from transformer_lib import MultiHeadAttention  # noqa: E402
from transformer_lib.views.head_split import plot_head_split  # noqa: E402

CASES = [(8, 2), (12, 3), (512, 8)]


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _patches(fig, kind):
    """{head: patch} for the patches whose id is ``kind:{head}``."""
    found = {}
    for patch in fig.axes[0].findobj(Rectangle):
        gid = patch.get_gid() or ""
        if gid.startswith(f"{kind}:"):
            found[int(gid.split(":")[1])] = patch
    return found


def _texts(fig):
    return [t.get_text() for t in fig.findobj(Text) if t.get_visible() and t.get_text()]


@pytest.mark.parametrize("d_model, heads", CASES)
def test_columns_fall_into_one_group_of_d_k_per_head(d_model, heads):
    d_k = d_model // heads
    fig = plot_head_split(d_model, heads, seq_len=3)
    groups = _patches(fig, "group")
    assert sorted(groups) == list(range(heads))
    x0 = groups[0].get_x()
    for i, patch in groups.items():  # side by side, in head order, d_k columns each
        assert patch.get_width() == pytest.approx(d_k)
        assert patch.get_x() - x0 == pytest.approx(i * d_k)
    for kind in ("head_in", "head_out", "concat"):
        patches = _patches(fig, kind)
        assert sorted(patches) == list(range(heads)), kind
        assert all(p.get_width() == pytest.approx(d_k) for p in patches.values()), kind
    # the concatenation puts every head's output back into its own group of columns
    concat = _patches(fig, "concat")
    assert all(concat[i].get_x() == pytest.approx(groups[i].get_x()) for i in range(heads))
    # pulled apart in between: each head's input lies right of the previous one's, with a gap
    inputs = _patches(fig, "head_in")
    for i in range(1, heads):
        assert inputs[i].get_x() > inputs[i - 1].get_x() + d_k
    # same colour for a head from its columns to its place in the concatenation
    for kind in ("head_in", "head_out", "concat"):
        for i, patch in _patches(fig, kind).items():
            assert patch.get_facecolor() == groups[i].get_facecolor()
    assert [p.get_gid() for p in fig.axes[0].findobj(Rectangle)].count("output") == 1


@pytest.mark.parametrize("d_model, heads", CASES)
def test_heads_are_labelled_from_0_and_shapes_written_on_the_matrices(d_model, heads):
    d_k = d_model // heads
    texts = _texts(fig := plot_head_split(d_model, heads, seq_len=3))
    assert [t for t in texts if t.startswith("head ")] == [f"head {i}" for i in range(heads)]
    assert f"head {heads}" not in texts
    assert texts.count(f"3 × {d_k}") == 2 * heads  # every head's input and output
    assert texts.count(f"3 × {d_model}") == 3  # the projection, the concatenation, W^O's output
    assert any("3 tokens" in t for t in texts)  # rows are tokens
    assert fig.axes[0].get_title()


def test_drawn_from_the_layer_the_chapter_traces():
    mha = MultiHeadAttention(d_model=8, n_heads=2)
    fig = plot_head_split(mha.d_model, mha.n_heads, seq_len=3)
    assert all(p.get_width() == mha.d_head for p in _patches(fig, "head_in").values())


@pytest.mark.parametrize("d_model, heads", CASES)
def test_readable_at_page_width_and_short(d_model, heads):
    fig = plot_head_split(d_model, heads, seq_len=3)
    assert smallest_text_css_px(fig) >= 9
    box = fig.get_tightbbox()
    assert box.height <= 3.5  # inches


def test_d_model_not_divisible_by_heads_is_refused_clearly():
    with pytest.raises(ValueError, match=r"d_model = 10 is not divisible by n_heads = 3"):
        plot_head_split(10, 3)


@pytest.mark.parametrize("args", [(0, 2), (8, 0), (8, 2, 0), (8.0, 2)])
def test_sizes_must_be_positive_ints(args):
    with pytest.raises(ValueError, match="must be a positive int"):
        plot_head_split(*args)
