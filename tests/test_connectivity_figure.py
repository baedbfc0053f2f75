"""The connectivity figure of chapter 1: its drawn graphs match the paper's Table 1."""

import math

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
from figure_text import smallest_text_css_px  # noqa: E402

from transformer_lib.views.connectivity import (  # noqa: E402
    connectivity_graphs,
    plot_connectivity,
    shortest_path,
)


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _drawn(fig, what, kind):
    return sum(
        1 for line in fig.findobj(matplotlib.lines.Line2D) if line.get_gid() == f"{what}:{kind}"
    )


@pytest.mark.parametrize("n,k", [(8, 2), (9, 3), (16, 2), (5, 2)])
def test_path_lengths_follow_table_1(n, k):
    graphs = connectivity_graphs(n, k)
    assert len(shortest_path(graphs["recurrent"])) - 1 == n  # x_0 -> h_0 -> ... -> h_{n-1}
    assert len(shortest_path(graphs["convolution"])) - 1 == math.ceil(math.log(n, k) - 1e-9)
    assert len(shortest_path(graphs["self-attention"])) - 1 == 1


def test_the_last_convolution_output_sees_every_input():
    g = connectivity_graphs(8, 2)["convolution"]
    seen = {(g.rows - 1, 7)}
    for row in range(g.rows - 1, 0, -1):
        seen |= {a for a, b in g.edges if b in seen and b[0] == row}
    assert {pos for row, pos in seen if row == 0} == set(range(8))


@pytest.mark.parametrize("n,k", [(8, 2), (9, 3)])
def test_the_figure_draws_every_connection_and_marks_the_path(n, k):
    fig = plot_connectivity(n, k)
    graphs = connectivity_graphs(n, k)
    for kind, graph in graphs.items():
        path = len(shortest_path(graph)) - 1
        assert _drawn(fig, "path", kind) == path, kind
        assert _drawn(fig, "edge", kind) + path == len(graph.edges), kind
    assert len(graphs["self-attention"].edges) == n * n
    assert len(graphs["recurrent"].edges) == 2 * n - 1
    titles = [ax.get_title() for ax in fig.axes]
    assert f"path = n = {n}" in titles[0] and "path = 1" in titles[2]
    assert smallest_text_css_px(fig) >= 9


def test_bad_sizes_are_refused():
    with pytest.raises(ValueError, match="n >= 2"):
        connectivity_graphs(1)
