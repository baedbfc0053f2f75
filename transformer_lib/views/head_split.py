"""How multi-head attention cuts d_model into heads and glues them back (chapter 4, §3.2.2).

One projected matrix of shape ``(T, d_model)``, rows are tokens, is drawn with its columns
coloured in ``H`` groups of ``d_k = d_model / H``. Group ``i`` is pulled out as head
``i``'s ``(T, d_k)`` input (``view`` + ``transpose``), each head attends on its own and
returns a ``(T, d_k)`` output, and the outputs are laid side by side again (``transpose``
+ ``reshape``) into ``(T, d_model)`` before ``W^O`` mixes them.
"""

from __future__ import annotations

from matplotlib.colors import to_rgb
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from .style import OKABE_ITO, _new_figure, _styled

__all__ = ["plot_head_split"]

_GREY = "#555555"
_MAX_CELL_COLUMNS = 32  # up to this width every column of a matrix is outlined
_MAX_CELL_ROWS = 12  # up to this many tokens every row is outlined
_MH = 3.0  # the height of every matrix, in the units of the vertical axis, whatever T is
_SIZE = (7.0, 3.1)  # inches; the figure fits a page column at full size
_LEFT_IN, _DRAWING_IN, _RIGHT_IN, _TITLE_IN = 2.05, 4.25, 0.65, 0.32  # inches of it


def _tint(color: str) -> tuple[float, float, float]:
    """``color`` mixed with white: a fill light enough for black text on it."""
    amount = 0.25 if color == "#000000" else 0.42  # black becomes a light grey
    return tuple(amount * c + (1 - amount) for c in to_rgb(color))  # type: ignore[return-value]


def _edge(color: str) -> str:
    return "#B8A800" if color == "#F0E442" else color  # yellow edges vanish on white


@_styled
def plot_head_split(
    d_model: int = 8,
    n_heads: int = 2,
    seq_len: int = 3,
    title: str | None = None,
    *,
    fontsize: float = 10.0,
) -> Figure:
    """Draw how ``d_model`` is split into heads and merged back (chapter 4, §3.2.2).

    Five tiers, top to bottom, one matrix per tier with one row per token: the projected
    queries ``x W^Q`` (T × d_model) with their columns in ``n_heads`` coloured groups of
    ``d_k``; the groups pulled apart into the heads' inputs (T × d_k each, ``head 0`` to
    ``head H-1``); the heads' outputs (T × d_k, hatched); the outputs side by side again
    (T × d_model); and ``W^O``'s output, where every column mixes all heads. Keys and
    values are split the same way. Up to 32 columns (12 tokens), every column (row) is
    outlined.

    The patches carry ids for tests: ``group:{i}`` (columns of head ``i`` in the
    projection), ``head_in:{i}``, ``head_out:{i}``, ``concat:{i}`` and ``output``. Their
    x coordinates are in columns, so group ``i`` spans ``i * d_k`` to ``(i + 1) * d_k``.

    Args:
        d_model: the model width; must be divisible by ``n_heads``.
        n_heads: the number of heads ``H``.
        seq_len: the number of tokens ``T`` (rows).
        title: the figure title (default: "Splitting d_model = … into … heads of d_k = …
            and merging them back", with the numbers).
        fontsize: size of the labels (points); at a 672-pixel page column no text is
            under 9 CSS pixels.

    Returns:
        The figure.

    Example:
        >>> fig = plot_head_split(d_model=8, n_heads=2, seq_len=3)
    """
    for name, value in (("d_model", d_model), ("n_heads", n_heads), ("seq_len", seq_len)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"plot_head_split: {name} must be a positive int, got {value!r}.")
    if d_model % n_heads:
        raise ValueError(
            f"plot_head_split: d_model = {d_model} is not divisible by n_heads = {n_heads}, "
            f"so the columns cannot be cut into {n_heads} heads of equal width d_k = "
            f"d_model / n_heads. Choose n_heads among the divisors of d_model "
            f"(MultiHeadAttention refuses such a layer too)."
        )
    H, D, T = n_heads, d_model, seq_len
    dk = D // H
    gap = dk * (0.6 if H <= 4 else 0.32)  # between pulled-apart heads, in columns
    width = H * dk + (H - 1) * gap  # of the split tiers; the full matrices are centred
    x_full = (width - D) / 2
    head_x = [i * (dk + gap) for i in range(H)]
    colors = [OKABE_ITO[i % len(OKABE_ITO)] for i in range(H)]
    # Space below each tier (a matrix is _MH = 3 units tall): the first gap also holds
    # the head labels.
    gaps = [2.9, 1.7, 1.7, 1.7]
    fig, ax = _new_figure(_SIZE)
    fig.set_layout_engine("none")  # the axes fill the figure; its limits leave the margins
    ax.set_position([0.0, 0.0, 1.0, 1.0 - _TITLE_IN / _SIZE[1]])
    ax.axis("off")
    per_inch = width / _DRAWING_IN  # columns per inch
    tops = [0.0]  # y of each tier's top edge
    for g in gaps:
        tops.append(tops[-1] - _MH - g)

    def matrix(x0: float, top: float, cols: int, fc, ec, gid: str, hatch: str = "") -> None:
        ax.add_patch(
            Rectangle((x0, top - _MH), cols, _MH, fc=fc, ec=ec, lw=1.3, hatch=hatch, gid=gid)
        )
        grid = {"color": "white", "lw": 0.8, "zorder": 2}
        if T <= _MAX_CELL_ROWS:
            for r in range(1, T):  # one row per token
                ax.plot([x0, x0 + cols], [top - r * _MH / T] * 2, **grid)
        if D <= _MAX_CELL_COLUMNS:
            for c in range(1, cols):
                ax.plot([x0 + c, x0 + c], [top - _MH, top], **grid)

    def shape(x: float, top: float, text: str) -> None:
        ax.text(
            x, top - _MH / 2, text, ha="center", va="center", fontsize=fontsize, zorder=4,
            bbox={"boxstyle": "round,pad=0.15", "fc": "white", "ec": "none", "alpha": 0.85},
        )  # fmt: skip

    def arrow(x0: float, y0: float, x1: float, y1: float) -> None:
        ax.annotate(
            "", (x1, y1 + 0.15), (x0, y0 - 0.15),
            arrowprops={"arrowstyle": "-|>", "color": _GREY, "lw": 1.1, "shrinkA": 0,
                        "shrinkB": 0},
        )  # fmt: skip

    # 0: the projection, columns in H groups; 3: the same groups, now the heads' outputs.
    for tier, kind, hatch in ((0, "group", ""), (3, "concat", "////")):
        for i in range(H):
            matrix(
                x_full + i * dk, tops[tier], dk, _tint(colors[i]), _edge(colors[i]),
                f"{kind}:{i}", hatch,
            )  # fmt: skip
        ax.add_patch(
            Rectangle((x_full, tops[tier] - _MH), D, _MH, fc="none", ec="black", lw=1.4, zorder=3)
        )
        shape(width / 2, tops[tier], f"{T} × {D}")
    for i, x in enumerate(head_x):
        matrix(x, tops[1], dk, _tint(colors[i]), _edge(colors[i]), f"head_in:{i}")
        matrix(x, tops[2], dk, _tint(colors[i]), _edge(colors[i]), f"head_out:{i}", "////")
        shape(x + dk / 2, tops[1], f"{T} × {dk}")
        shape(x + dk / 2, tops[2], f"{T} × {dk}")
        ax.text(
            x + dk / 2, tops[1] + 0.25, f"head {i}", ha="center", va="bottom",
            fontsize=fontsize, color="black",
        )  # fmt: skip
        group_mid, head_mid = x_full + (i + 0.5) * dk, x + dk / 2
        arrow(group_mid, tops[0] - _MH, head_mid, tops[1] + 1.55)
        arrow(head_mid, tops[1] - _MH, head_mid, tops[2])
        arrow(head_mid, tops[2] - _MH, group_mid, tops[3])
    matrix(x_full, tops[4], D, "#E3E3E3", "#333333", "output")
    shape(width / 2, tops[4], f"{T} × {D}")
    arrow(width / 2, tops[3] - _MH, width / 2, tops[4])

    # Left column: what each tier holds, and (between tiers) the step that makes the next.
    left = -0.12 * per_inch
    labels = [
        "$q = xW^Q$  (T × $d_\\mathrm{model}$)",
        "heads' inputs  (T × $d_k$)",
        "heads' outputs  (T × $d_k$)",
        "Concat  (T × $d_\\mathrm{model}$)",
        "output  (T × $d_\\mathrm{model}$)",
    ]
    steps = [
        "view + transpose (k, v alike)",
        "each head attends alone",
        "transpose + reshape",
        "$\\times\\, W^O$: mixes the heads",
    ]
    for top, label in zip(tops, labels):
        ax.text(left, top - _MH / 2, label, ha="right", va="center", fontsize=fontsize)
    for top, gap, step in zip(tops, gaps, steps):
        ax.text(
            left, top - _MH - gap / 2, step, ha="right", va="center", fontsize=fontsize,
            color=_GREY, style="italic",
        )  # fmt: skip
    # The rows of the projection (and of every matrix below it) are the tokens.
    xb = x_full + D + 0.08 * per_inch
    ax.plot([xb, xb + 0.04 * per_inch, xb + 0.04 * per_inch, xb],
            [tops[0], tops[0], tops[0] - _MH, tops[0] - _MH], color="black", lw=1.0)  # fmt: skip
    ax.text(
        xb + 0.1 * per_inch, tops[0] - _MH / 2, f"{T} tokens,\none per row", ha="left",
        va="center", fontsize=fontsize - 1, linespacing=1.0,
    )  # fmt: skip
    ax.set_xlim(-_LEFT_IN * per_inch, width + _RIGHT_IN * per_inch)
    ax.set_ylim(tops[-1] - _MH - 0.3, tops[0] + 1.6)
    ax.set_title(
        title
        if title is not None
        else f"Splitting $d_\\mathrm{{model}}$ = {D} into {H} heads of $d_k$ = {dk} "
        "and merging them back",
        fontsize=fontsize + 1,
    )
    return fig
