"""Who connects to whom in a recurrent, a convolutional and a self-attention layer (chapter 1).

The paper's Table 1 (§4) gives the *maximum path length* between two positions: ``O(n)``
for a recurrent layer, ``O(log_k n)`` for a stack of dilated convolutions and ``O(1)``
for self-attention. :func:`connectivity_graphs` builds the three graphs for ``n``
positions, :func:`shortest_path` finds the path between the first input and the last
output, and :func:`plot_connectivity` draws the three side by side with that path marked.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field

from matplotlib.figure import Figure

from .style import LAYER_STYLES, _new_figure, _styled

__all__ = ["Graph", "connectivity_graphs", "shortest_path", "plot_connectivity"]

Node = tuple[int, int]  # (row, position): row 0 holds the inputs


@dataclass
class Graph:
    """The connections of one kind of layer over ``n`` positions.

    Attributes:
        kind: ``"recurrent"``, ``"convolution"`` or ``"self-attention"``.
        n: number of positions.
        rows: rows of nodes, the inputs ``x_0 … x_{n-1}`` in row 0 and the outputs in the
            last row.
        edges: directed connections ``((row, pos), (row, pos))``: information flows from
            the first node to the second.
    """

    kind: str
    n: int
    rows: int
    edges: list[tuple[Node, Node]] = field(default_factory=list)


def connectivity_graphs(n: int = 8, k: int = 2) -> dict[str, Graph]:
    """The three layer types of Table 1 as graphs over ``n`` positions (paper §4).

    * recurrent: ``x_i -> h_i`` and ``h_{i-1} -> h_i`` (the states are the outputs);
    * convolution: ``ceil(log_k n)`` stacked causal convolutions of width ``k`` with
      dilation ``1, k, k², …`` (as in ByteNet), so the last output sees every input;
    * self-attention: every input to every output, ``n²`` connections.

    Args:
        n: number of positions (at least 2).
        k: the convolution's kernel width (at least 2).

    Returns:
        ``{kind: Graph}`` for the three kinds, in that order.

    Example:
        >>> g = connectivity_graphs(8, k=2)
        >>> g["convolution"].rows - 1, len(g["self-attention"].edges)
        (3, 64)
    """
    if n < 2 or k < 2:
        raise ValueError(f"connectivity_graphs: need n >= 2 and k >= 2, got n={n}, k={k}.")
    rnn = Graph("recurrent", n, 2)
    for i in range(n):
        rnn.edges.append(((0, i), (1, i)))
        if i > 0:
            rnn.edges.append(((1, i - 1), (1, i)))
    layers = math.ceil(math.log(n, k) - 1e-9)
    conv = Graph("convolution", n, layers + 1)
    for layer in range(layers):
        dilation = k**layer
        for i in range(n):
            for m in range(k):
                if i - m * dilation >= 0:
                    conv.edges.append(((layer, i - m * dilation), (layer + 1, i)))
    attention = Graph("self-attention", n, 2)
    attention.edges = [((0, j), (1, i)) for i in range(n) for j in range(n)]
    return {g.kind: g for g in (rnn, conv, attention)}


def shortest_path(graph: Graph) -> list[Node]:
    """The shortest path from the first input ``(0, 0)`` to the last output.

    Args:
        graph: one of :func:`connectivity_graphs`' graphs.

    Returns:
        The nodes on the path, from ``(0, 0)`` to ``(rows - 1, n - 1)``; its length in
        connections is ``len(path) - 1``.
    """
    start, goal = (0, 0), (graph.rows - 1, graph.n - 1)
    out: dict[Node, list[Node]] = {}
    for a, b in graph.edges:
        out.setdefault(a, []).append(b)
    previous: dict[Node, Node | None] = {start: None}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        for nxt in out.get(node, []):
            if nxt not in previous:
                previous[nxt] = node
                queue.append(nxt)
    if goal not in previous:
        raise ValueError(
            f"shortest_path: no path from the first input to the last output in {graph.kind}."
        )
    path = [goal]
    while previous[path[-1]] is not None:
        path.append(previous[path[-1]])  # type: ignore[arg-type]
    return path[::-1]


_TITLES = {
    "recurrent": "Recurrent",
    "convolution": "Dilated convolution, k = {k}",
    "self-attention": "Self-attention",
}
_FORMULAS = {
    "recurrent": "path = n = {p}",
    "convolution": "path = ⌈log{sub} n⌉ = {p}",
    "self-attention": "path = 1",
}
_SUBSCRIPTS = str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉")


@_styled
def plot_connectivity(n: int = 8, k: int = 2) -> Figure:
    """Draw who connects to whom in the three layer types of Table 1 (paper §4).

    Three panels over the same ``n`` positions, inputs at the bottom and outputs at the
    top. Grey lines are the connections; the coloured ones are the shortest path from the
    first input ``x_0`` to the last output, whose length is Table 1's maximum path length.
    Each line has the gid ``"edge:<kind>"`` or, on the path, ``"path:<kind>"``.

    Args:
        n: number of positions drawn.
        k: the convolution's kernel width.

    Returns:
        The figure.

    Example:
        >>> fig = plot_connectivity(8, k=2)
    """
    graphs = connectivity_graphs(n, k)
    fig, axes = _new_figure((10.0, 3.3), ncols=3)
    for ax, (kind, graph) in zip(axes, graphs.items(), strict=True):
        colour = LAYER_STYLES[kind]["color"]
        path = shortest_path(graph)
        on_path = set(zip(path[:-1], path[1:], strict=True))
        top = graph.rows - 1

        def y(row: int, top: int = top) -> float:
            return row / top

        for a, b in graph.edges:
            hit = (a, b) in on_path
            ax.plot(
                [a[1], b[1]],
                [y(a[0]), y(b[0])],
                color=colour if hit else "#B0B0B0",
                lw=2.6 if hit else 0.8,
                alpha=1.0 if hit else 0.8,
                zorder=3 if hit else 1,
                gid=f"{'path' if hit else 'edge'}:{kind}",
            )
        for row in range(graph.rows):
            ax.scatter(range(n), [y(row)] * n, s=28, color="white", edgecolor="#444444",
                       zorder=4)  # fmt: skip
        ax.scatter([0, n - 1], [0, 1], s=48, color=colour, edgecolor="black", zorder=5)
        steps = len(path) - 1
        sub = str(k).translate(_SUBSCRIPTS)
        ax.set_title(
            f"{_TITLES[kind].format(k=k)}\n{_FORMULAS[kind].format(p=steps, sub=sub)}, "
            f"{len(graph.edges)} connections",
            fontsize=11,
        )
        ax.set_xticks(range(n))
        ax.set_xlabel("position")
        ax.set_xlim(-0.5, n - 0.5)
        ax.set_ylim(-0.12, 1.22)
        ax.set_yticks([0, 1])
        ax.set_yticklabels(["inputs", "outputs"])
        for side in ("top", "right", "left"):
            ax.spines[side].set_visible(False)
        ax.tick_params(axis="y", length=0)
    fig.suptitle(
        f"Who connects to whom over n = {n} positions (path from $x_0$ to the last output)"
    )
    return fig
