"""How one head's queries, keys and values are made, and how the values are used (chapter 3).

The paper's Eq. (1) starts from ``Q``, ``K`` and ``V``; §3.2.2 makes them by multiplying
the layer's input ``X`` (one row per token, ``T × d_model``) by three learned matrices
``W^Q``, ``W^K`` and ``W^V`` (``d_model × d_k`` each). The figure draws the three products
in the layout of a matrix multiplication: ``X`` on the left, each ``W`` above its result,
so that row ``i`` of ``X`` meets a ``W`` in row ``i`` of ``Q``, ``K`` or ``V``: every
token's query, key and value come from that token's vector alone.

:func:`plot_weighted_sum` draws the other end of Eq. (1) for one query: each value row
``v_j`` scaled by its weight ``w_j``, and the output row ``sum_j w_j v_j``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from matplotlib.colors import to_rgb
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from .phone_layout import set_phone_figure
from .style import DIVERGING_CMAP, OKABE_ITO, _label_text, _new_figure, _styled, _to_numpy

__all__ = ["plot_projections", "plot_weighted_sum"]

_MAX_TOKENS = 16  # more rows than this cannot be labelled at a readable size
_ROW_IN = 0.15  # inches per token row
_W_IN = 0.72  # height of every weight matrix, whatever d_model is
_X_IN = 3.0  # width of X, standing for d_model columns
_LABEL_IN = 0.8  # room left of X for the token labels
_GAP_IN, _OUT_GAP_IN, _TITLE_IN = 0.3, 0.16, 0.3
_OUTPUTS = (("Q", OKABE_ITO[0]), ("K", OKABE_ITO[1]), ("V", OKABE_ITO[2]))
_HIGHLIGHT = OKABE_ITO[3]  # orange


def _tint(color: str, amount: float = 0.35) -> tuple[float, float, float]:
    """``color`` mixed with white: a fill light enough for black text on it."""
    return tuple(amount * c + (1 - amount) for c in to_rgb(color))  # type: ignore[return-value]


def _positive_int(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"plot_projections: {name} must be a positive int, got {value!r}.")
    return value


@_styled
def plot_projections(
    tokens: Sequence[str],
    d_model: int,
    d_k: int,
    highlight: int | None = None,
    title: str | None = None,
    *,
    fontsize: float = 10.0,
    narrow: bool = False,
) -> Figure:
    """Draw ``Q = X W^Q``, ``K = X W^K`` and ``V = X W^V`` for one head (chapter 3, §3.2.2).

    ``X`` (``T × d_model``, one row per token, labelled with the tokens) is drawn on the
    left; above the three results ``Q``, ``K`` and ``V`` (``T × d_k`` each, their rows
    level with ``X``'s) stand ``W^Q``, ``W^K`` and ``W^V`` (``d_model × d_k``). Every
    matrix has its shape written on it. Widths are to scale where that leaves ``Q``, ``K``
    and ``V`` at least 0.75 inches wide (for the book's model, ``d_k / d_model = 1/4``);
    heights are not: a token row is 0.15 inches (more for under five tokens), a weight matrix 0.72.

    The patches carry ids for tests: ``X``, ``W:Q``, ``W:K``, ``W:V``, ``out:Q``,
    ``out:K``, ``out:V``, and ``row:{name}:{i}`` for the highlighted row; the token
    labels are texts with ids ``token:{i}``.

    Args:
        tokens: the ``T`` tokens of the sentence, one per row (1 to 16 of them).
        d_model: the width of the token vectors.
        d_k: the width of one head's queries, keys and values; must divide ``d_model``
            (``d_k = d_model / H`` for ``H`` heads).
        highlight: the index of a token whose row is coloured in ``X``, ``Q``, ``K`` and
            ``V`` (default: none).
        title: the figure title (default: "One head's queries, keys and values from the
            same T token vectors", with the number).
        fontsize: size of the labels (points); at a 672-pixel page column no text is
            under 9 CSS pixels.
        narrow: the layout for a phone's column, 4.7 inches wide: ``X`` narrower (not
            to scale), the note on how to read it and the title over the matrices. The
            figure carries it as its phone version in the static build.

    Returns:
        The figure.

    Example:
        >>> fig = plot_projections(["▁The", "▁dog", "."], d_model=128, d_k=32)
    """
    if isinstance(tokens, str):
        raise ValueError(
            f"plot_projections: tokens must be a list of tokens, not one string {tokens!r}."
        )
    labels = [_label_text(t) for t in (tokens.tolist() if hasattr(tokens, "tolist") else tokens)]
    T = len(labels)
    if not 1 <= T <= _MAX_TOKENS:
        raise ValueError(
            f"plot_projections: got {T} tokens; the figure draws one labelled row per token "
            f"and needs 1 to {_MAX_TOKENS} of them. Pass a shorter sentence's tokens."
        )
    D, dk = _positive_int("d_model", d_model), _positive_int("d_k", d_k)
    if D % dk:
        raise ValueError(
            f"plot_projections: d_k = {dk} does not divide d_model = {D}. A head's width is "
            f"d_k = d_model / n_heads; take it from the model, e.g. "
            f"config.d_model // config.n_heads."
        )
    if highlight is not None and not (
        isinstance(highlight, int) and not isinstance(highlight, bool) and 0 <= highlight < T
    ):
        raise ValueError(
            f"plot_projections: highlight must be a token index from 0 to {T - 1}, "
            f"got {highlight!r}."
        )

    if narrow:  # X not to scale: a phone's column has no room for it
        x_w, label_w, gap, out_gap = 1.25, 0.7, 0.2, 0.12
    else:
        x_w, label_w, gap, out_gap = _X_IN, _LABEL_IN, _GAP_IN, _OUT_GAP_IN
    out_w = 0.75 if narrow else min(max(_X_IN * dk / D, 0.75), 1.1)  # to scale if it fits
    row_in = max(_ROW_IN, 0.7 / T)  # a short sentence still leaves room for the shape
    x_h = T * row_in
    x0 = label_w
    out_x = [x0 + x_w + gap + n * (out_w + out_gap) for n in range(3)]
    width = out_x[-1] + out_w + 0.1
    w_bottom = x_h + 0.12  # the weight matrices sit just above the results
    # On a phone the note on how to read it stands over the matrices, not beside them.
    note_h = (0.72 if highlight is not None else 0.4) if narrow else 0.0
    height = w_bottom + _W_IN + note_h + (0.5 if narrow else _TITLE_IN)
    fig, ax = _new_figure((width, height))
    fig.set_layout_engine("none")  # axes in inches fill the figure
    ax.set_position([0, 0, 1, 1])
    ax.set_xlim(0, width)
    ax.set_ylim(0, height)
    ax.axis("off")

    def matrix(x: float, y: float, w: float, h: float, face, edge, gid: str, rows: int = 0):
        ax.add_patch(Rectangle((x, y), w, h, fc=face, ec=edge, lw=1.3, gid=gid, zorder=1))
        for r in range(1, rows):  # one row per token
            ax.plot([x, x + w], [y + r * h / rows] * 2, color="white", lw=0.9, zorder=2)

    def write(x: float, y: float, name: str, shape: str) -> None:
        ax.text(x, y + 0.1, name, ha="center", va="bottom", fontsize=fontsize + 2, zorder=4)
        ax.text(
            x, y - 0.02, shape, ha="center", va="top", fontsize=fontsize, zorder=4,
            bbox={"boxstyle": "round,pad=0.12", "fc": "white", "ec": "none", "alpha": 0.85},
        )  # fmt: skip

    def row(x: float, w: float, i: int, gid: str) -> None:
        y = x_h - (i + 1) * row_in
        ax.add_patch(
            Rectangle(
                (x, y), w, row_in, fc=_tint(_HIGHLIGHT, 0.6), ec="black", lw=1.0,
                gid=gid, zorder=3,
            )
        )  # fmt: skip

    # X, rows labelled with the tokens (top row = token 0, as in an attention map).
    matrix(x0, 0, x_w, x_h, "#E3E3E3", "#333333", "X", rows=T)
    for i, label in enumerate(labels):
        ax.text(
            x0 - 0.06, x_h - (i + 0.5) * row_in, label, ha="right", va="center",
            fontsize=fontsize - 1, gid=f"token:{i}",
        )  # fmt: skip
    write(x0 + x_w / 2, x_h / 2, "$X$", f"{T} × {D}")
    for (name, color), x in zip(_OUTPUTS, out_x):
        matrix(x, w_bottom, out_w, _W_IN, _tint(color, 0.2), color, f"W:{name}")
        write(x + out_w / 2, w_bottom + _W_IN / 2, f"$W^{name}$", f"{D} × {dk}")
        matrix(x, 0, out_w, x_h, _tint(color), color, f"out:{name}", rows=T)
        write(x + out_w / 2, x_h / 2, f"${name}$", f"{T} × {dk}")
    if highlight is not None:
        row(x0, x_w, highlight, f"row:X:{highlight}")
        for (name, _), x in zip(_OUTPUTS, out_x):
            row(x, out_w, highlight, f"row:{name}:{highlight}")

    # The corner above X says how to read the layout.
    how = "Each result is $X$ times the matrix above it:\n$Q = XW^Q$,  $K = XW^K$,  $V = XW^V$."
    if highlight is not None:
        how += (
            f"\nRow {highlight} of $X$ ({labels[highlight]}) gives row {highlight} of each:"
            "\nthat token's query, key and value."
        )
    if narrow:
        hx, hy, va = width / 2, w_bottom + _W_IN + 0.06, "bottom"
    else:
        hx, hy, va = x0 + x_w / 2 - 0.1, w_bottom + _W_IN / 2, "center"
    ax.text(hx, hy, how, ha="center", va=va, fontsize=fontsize - 1, linespacing=1.25)
    heading = (
        title
        if title is not None
        else f"One head's queries, keys and values from the same {T} token vectors"
    )
    if narrow and " from " in heading:
        heading = heading.replace(" from ", "\nfrom ", 1)
    ax.text(width / 2, height - 0.06, heading, ha="center", va="top", fontsize=fontsize + 1)
    if not narrow:  # on a phone, the narrow layout (drawn only in the static build)
        set_phone_figure(
            fig,
            lambda: plot_projections(
                tokens, d_model, d_k, highlight, title, fontsize=fontsize, narrow=True
            ),
        )
    return fig


@_styled
def plot_weighted_sum(
    weights: object,
    values: object,
    tokens: Sequence[str],
    query: int,
    title: str | None = None,
) -> Figure:
    """Draw one query's output as the weighted sum of the value rows (chapter 3, Eq. (1)).

    Three panels share one row per key token: the query's weights ``w_j`` as bars, the
    value rows ``v_j`` of ``V`` and the weighted rows ``w_j v_j``; under the last panel,
    the output row ``sum_j w_j v_j``. The three matrices share one diverging colour scale,
    so a row with a small weight fades to white and the output resembles the rows that
    carry the weight.

    Args:
        weights: the query's ``T`` attention weights (one row of the weight matrix).
        values: ``(T, d_v)``, the value rows.
        tokens: the ``T`` key tokens (1 to 16).
        query: the index of the query token (for the title).
        title: the figure title (default: names the query).

    Returns:
        The figure; its axes are, in order, the weights, ``V``, the weighted rows, the
        formula, the output row and the two colour bars.

    Example:
        >>> fig = plot_weighted_sum(w[1], V, tokens, query=1)  # doctest: +SKIP
    """
    w = _to_numpy(weights).astype(float).reshape(-1)
    v = _to_numpy(values).astype(float)
    labels = [_label_text(t) for t in (tokens.tolist() if hasattr(tokens, "tolist") else tokens)]
    T = len(labels)
    if v.ndim != 2 or v.shape[0] != T or w.shape[0] != T or not 1 <= T <= _MAX_TOKENS:
        raise ValueError(
            f"plot_weighted_sum: need T weights, a (T, d_v) value matrix and T tokens "
            f"(1 <= T <= {_MAX_TOKENS}); got {w.shape[0]} weights, values of shape "
            f"{v.shape} and {T} tokens."
        )
    if not 0 <= query < T:
        raise ValueError(f"plot_weighted_sum: query must be 0 to {T - 1}, got {query!r}.")
    weighted = w[:, None] * v
    out = weighted.sum(axis=0, keepdims=True)
    limit_v = float(np.abs(v).max()) or 1.0
    limit_w = float(max(np.abs(weighted).max(), np.abs(out).max())) or 1.0
    fig, axes = _new_figure(
        (8.6, 0.25 * T + 2.3),
        nrows=2,
        ncols=3,
        gridspec_kw={"height_ratios": [T, 1.5], "width_ratios": [0.8, 2, 2]},
    )
    bar, val, wval = axes[0]
    note, spare, total = axes[1]
    bar.barh(np.arange(T), w, color=OKABE_ITO[0], height=0.7)
    bar.set_ylim(T - 0.5, -0.5)
    bar.set_yticks(np.arange(T), labels)
    bar.set_xlim(0, 1.0)
    bar.set_xlabel("weight $w_j$")
    bar.set_ylabel("key token $j$")
    bar.set_title(f"query {query}'s weights")
    bar.grid(axis="x", alpha=0.3)
    images = []
    for ax, data, name, limit in (
        (val, v, "value rows $v_j$", limit_v),
        (wval, weighted, "weighted rows $w_j\\, v_j$", limit_w),
    ):
        images.append(
            ax.imshow(
                data, cmap=DIVERGING_CMAP, vmin=-limit, vmax=limit, aspect="auto",
                interpolation="nearest",
            )
        )  # fmt: skip
        ax.set_title(name)
        ax.set_yticks(np.arange(T), [])
        ax.set_xticks([])
        ax.set_xlabel(f"{v.shape[1]} components")
    total.imshow(
        out, cmap=DIVERGING_CMAP, vmin=-limit_w, vmax=limit_w, aspect="auto",
        interpolation="nearest",
    )  # fmt: skip
    total.set_yticks([])
    total.set_xticks([])
    total.set_title("output: the column sums", fontsize=11)
    note.axis("off")
    spare.remove()
    note.text(
        0.0, 0.45, "output $= \\sum_j w_j\\, v_j$", ha="left", va="center", fontsize=12,
        transform=note.transAxes,
    )  # fmt: skip
    fig.colorbar(images[0], ax=val, shrink=0.9)
    fig.colorbar(images[1], ax=[wval, total], shrink=0.9, label="component value")
    fig.suptitle(
        title
        if title is not None
        else f"Query {query} ({labels[query]}): its output is its weights times the value rows"
    )
    return fig
