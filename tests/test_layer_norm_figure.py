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


def _forward_order(norm_first: bool) -> list[str]:
    """The blocks ``SublayerConnection.forward`` applies to its input, in order, with "+"
    where the residual ``x`` is added back: recorded by running the library's own code."""
    from transformer_lib import SublayerConnection

    torch.manual_seed(0)
    wrapper = SublayerConnection(8, dropout=0.0, norm_first=norm_first)
    events = []

    class Recorded(nn.Module):
        def __init__(self, name, inner):
            super().__init__()
            self.name, self.inner = name, inner

        def forward(self, v):
            out = self.inner(v)
            events.append((self.name, v, out))
            return out

    wrapper.norm = Recorded("LayerNorm", wrapper.norm)
    wrapper.dropout = Recorded("dropout", wrapper.dropout)
    sublayer = Recorded("sublayer", nn.Linear(8, 8))
    x = torch.randn(2, 3, 8)  # (B, L, D)
    with torch.no_grad():
        out, _ = wrapper(x, sublayer)
    names = [name for name, _, _ in events]
    summed = x + next(o for name, _, o in events if name == "dropout")  # x + Dropout(F(.))
    later = [i for i, (_, v, _) in enumerate(events) if torch.equal(v, summed)]
    if later:  # the sum is the input of a later block
        names.insert(later[0], "+")
    else:  # the sum is the output
        assert torch.equal(out, summed)
        names.append("+")
    return names


def _column(fig, column):
    """The blocks of one column of the figure, bottom (the input) to top."""
    blocks = []
    for patch in (patch for ax in fig.axes for patch in ax.patches):
        gid = patch.get_gid() or ""
        if gid.startswith(column + " "):
            box = patch.get_window_extent()
            blocks.append((box.y0, box.y1, box.x0, box.x1, gid[len(column) + 1 :]))
    return sorted(blocks)


@pytest.mark.parametrize("column, norm_first", [("post-LN", False), ("pre-LN", True)])
def test_residual_diagram_draws_blocks_in_the_library_forward_order(column, norm_first):
    from transformer_lib.views.layer_norm import RESIDUAL_ORDER, plot_residual_sublayers

    fig = plot_residual_sublayers()
    fig.canvas.draw()
    order = [name for *_, name in _column(fig, column) if name != "final LayerNorm"]
    assert order == _forward_order(norm_first) == list(RESIDUAL_ORDER[column])


@pytest.mark.parametrize("column, norm_first", [("post-LN", False), ("pre-LN", True)])
def test_final_layer_norm_is_drawn_only_where_the_stack_has_one(column, norm_first):
    from transformer_lib import TransformerConfig
    from transformer_lib.components.layers import final_norm
    from transformer_lib.views.layer_norm import plot_residual_sublayers

    has_final = not isinstance(
        final_norm(TransformerConfig.tiny(norm_first=norm_first)), nn.Identity
    )
    blocks = _column(plot_residual_sublayers(), column)
    assert has_final == any(name == "final LayerNorm" for *_, name in blocks)
    if has_final:  # above every block of the sub-layer
        assert blocks[-1][-1] == "final LayerNorm"


@pytest.mark.parametrize("column", ["post-LN", "pre-LN"])
def test_residual_path_skips_the_sublayer_and_ends_at_the_sum(column):
    from transformer_lib.views.layer_norm import plot_residual_sublayers

    fig = plot_residual_sublayers()
    fig.canvas.draw()
    (line,) = [ln for ax in fig.axes for ln in ax.lines if ln.get_gid() == f"{column} residual"]
    ax = line.axes
    xs, ys = line.get_data()
    blocks = {name: (y0, y1, x0, x1) for y0, y1, x0, x1, name in _column(fig, column)}
    to_data = ax.transData.inverted()

    def in_data(name):  # (x0, y0, x1, y1) of a block in data units
        y0, y1, x0, x1 = blocks[name]
        (a0, b0), (a1, b1) = to_data.transform([(x0, y0), (x1, y1)])
        return a0, b0, a1, b1

    f_x0, f_y0, _, f_y1 = in_data("sublayer")
    _, plus_y0, _, plus_y1 = in_data("+")
    assert min(ys) < f_y0 and plus_y0 <= max(ys) <= plus_y1  # from below F up to the ⊕
    for (xa, ya), (xb, yb) in zip(zip(xs, ys), zip(xs[1:], ys[1:])):
        if max(ya, yb) > f_y0 and min(ya, yb) < f_y1:  # level with F: beside it
            assert max(xa, xb) < f_x0
    if column == "pre-LN":  # it also skips the LayerNorm that feeds F
        assert min(ys) < in_data("LayerNorm")[1]


def test_residual_diagram_is_readable_and_compact():
    from transformer_lib.views.layer_norm import plot_residual_sublayers

    fig = plot_residual_sublayers()
    assert smallest_text_css_px(fig) >= 9
    assert fig.get_figheight() <= 3.5
