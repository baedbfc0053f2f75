"""The chapter 7 picture of which entries LayerNorm and BatchNorm pool: the coloured cells
must be exactly the entries whose outputs a change of the framed entry moves in PyTorch's
own ``nn.LayerNorm`` and ``nn.BatchNorm1d``."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from figure_text import smallest_text_css_px  # noqa: E402
from matplotlib.colors import to_rgba  # noqa: E402
from matplotlib.patches import Rectangle  # noqa: E402
from torch import nn  # noqa: E402

from transformer_lib.views.layer_norm import norm_group, plot_norm_axes  # noqa: E402
from transformer_lib.views.style import OKABE_ITO  # noqa: E402


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _moved_by(kind: str, shape: tuple[int, int, int], entry: tuple[int, int, int]) -> np.ndarray:
    """Entries of the output that change when only the input at ``entry`` changes."""
    torch.manual_seed(0)
    x = torch.randn(*shape)  # (B, L, D)
    if kind == "layer":
        norm = nn.LayerNorm(shape[-1])
        run = norm
    else:
        norm = nn.BatchNorm1d(shape[-1]).train()  # batch statistics, as in training
        run = lambda v: norm(v.transpose(1, 2)).transpose(1, 2)  # noqa: E731
    with torch.no_grad():
        base = run(x)
        nudged = x.clone()
        nudged[entry] += 5.0
        return ((run(nudged) - base).abs() > 1e-6).numpy()


def _pooled_cells(ax, shape) -> np.ndarray:
    pooled = np.zeros(shape, dtype=bool)
    cells = [p for p in ax.patches if isinstance(p, Rectangle) and p.get_gid()]
    assert len(cells) == np.prod(shape)
    for cell in cells:
        b, t, f = map(int, cell.get_gid().split())
        pooled[b, t, f] = cell.get_facecolor() == to_rgba(OKABE_ITO[3])
    return pooled


@pytest.mark.parametrize("entry", [(0, 2, 5), (2, 1, 0)])
def test_coloured_cells_are_the_entries_each_norm_pools(entry):
    lengths, n_features = (5, 3, 4), 8
    shape = (len(lengths), max(lengths), n_features)
    fig = plot_norm_axes(lengths, n_features, entry)
    layer_ax, batch_ax = fig.axes[:2]
    assert layer_ax.get_title().startswith("LayerNorm")
    assert batch_ax.get_title().startswith("BatchNorm")
    for kind, ax in (("layer", layer_ax), ("batch", batch_ax)):
        moved = _moved_by(kind, shape, entry)
        np.testing.assert_array_equal(norm_group(kind, shape, entry), moved)
        np.testing.assert_array_equal(_pooled_cells(ax, shape), moved)


def test_padding_is_hatched_and_counted_by_batchnorm():
    lengths = (4, 2)
    fig = plot_norm_axes(lengths, 6, (0, 1, 3))
    batch_ax = fig.axes[1]
    hatched = {tuple(map(int, p.get_gid().split())) for p in batch_ax.patches if p.get_hatch()}
    assert hatched == {(1, t, f) for t in (2, 3) for f in range(6)}
    pooled = _pooled_cells(batch_ax, (2, 4, 6))
    assert pooled[1, 2:, 3].all()  # BatchNorm's statistics include the padded positions


def test_readable_at_page_width_and_labelled():
    fig = plot_norm_axes()
    assert smallest_text_css_px(fig) >= 9
    assert fig._suptitle.get_text()
    assert all(ax.get_xlabel() for ax in fig.axes[:2]) and fig.axes[0].get_ylabel()


def test_rejects_entries_outside_the_real_tokens():
    with pytest.raises(ValueError, match="real token"):
        plot_norm_axes((5, 3), 8, (1, 3, 0))  # position 3 of sentence 1 is padding
    with pytest.raises(ValueError, match="kind"):
        norm_group("group", (1, 2, 3), (0, 0, 0))


def test_layer_norm_effect_can_draw_the_input_on_a_symlog_scale():
    from transformer_lib.views.layer_norm import plot_layer_norm_effect

    before = np.random.default_rng(0).normal(size=(3, 16)) * np.array([[1.0], [30.0], [1.0]])
    after = (before - before.mean(1, keepdims=True)) / before.std(1, keepdims=True)
    top, bottom = plot_layer_norm_effect(before, after, symlog_before=True).axes[:2]
    assert (top.get_yscale(), bottom.get_yscale()) == ("symlog", "linear")
    top, _ = plot_layer_norm_effect(before, after).axes[:2]
    assert top.get_yscale() == "linear"
