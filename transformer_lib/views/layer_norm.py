"""What LayerNorm does to each position's vector, which entries it pools, and where it sits
around a residual sub-layer (chapter 7)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Ellipse, Patch, Rectangle

from .architecture import _ARCH_STYLE, _LINE, _path, _rounded_box
from .style import OKABE_ITO, _new_figure, _squeeze_to, _styled, _token_labels

__all__ = ["plot_layer_norm_effect", "plot_norm_axes", "norm_group", "plot_residual_sublayers"]


def _padded_ylim(ax, low: float, high: float, frac: float = 0.06) -> None:
    """Y limits ``frac`` of the axis beyond the data on either side, in the axis's own scale
    (linear or symlog), so no dot at the extremes is cut by the frame."""
    scale = ax.yaxis.get_transform()
    a, b = scale.transform([low, high])
    pad = frac * (b - a if b > a else 1.0)
    ax.set_ylim(*scale.inverted().transform([a - pad, b + pad]))


@_styled
def plot_layer_norm_effect(
    before: Any,
    after: Any,
    tokens: Sequence[Any] | None = None,
    title: str = "LayerNorm rescales every position's vector on its own",
    symlog_before: bool = False,
) -> Figure:
    """The feature values of each position before and after LayerNorm (chapter 7).

    Two panels, one above the other: each column is one position, its ``D`` feature values
    drawn as dots,
    with the mean (white diamond) and mean ± one standard deviation (bar). After
    LayerNorm (with its initial gain 1 and bias 0) every column has mean 0 and
    standard deviation 1, whatever it had before.

    Args:
        before, after: ``(L, D)`` vectors of ``L`` positions (a batch of one works too).
        tokens: ``L`` labels for the positions.
        title: the figure's title.
        symlog_before: draw the upper panel on a symmetric log scale (linear within ±1),
            for inputs whose positions differ in size by orders of magnitude.

    Returns:
        The figure: the upper axes "before LayerNorm", the lower "after LayerNorm".

    Example:
        >>> x = torch.randn(5, 64) * torch.tensor([[1.0], [10], [1], [1], [3]])
        >>> plot_layer_norm_effect(x, torch.nn.functional.layer_norm(x, (64,)))
    """
    func = "plot_layer_norm_effect"
    panels = [
        _squeeze_to(before, 2, "before", func, "(L, D)").astype(float),
        _squeeze_to(after, 2, "after", func, "(L, D)").astype(float),
    ]
    if panels[0].shape != panels[1].shape:
        raise ValueError(
            f"{func}: before {panels[0].shape} and after {panels[1].shape} differ in shape."
        )
    length, d_model = panels[0].shape
    labels = _token_labels(tokens, length, "tokens", func)
    # Stacked and at most 8.6 inches wide: readable at the book's page width.
    width = float(np.clip(0.7 * length + 2.5, 6.5, 8.6))
    fig, axes = _new_figure((width, 5.4), 2, 1, sharex=True)
    rng = np.random.default_rng(0)
    jitter = rng.uniform(-0.22, 0.22, size=d_model)
    names = ("before LayerNorm", "after LayerNorm")
    for ax, data, name in zip(axes, panels, names):
        for pos in range(length):
            ax.scatter(
                pos + jitter, data[pos], s=5, color=OKABE_ITO[0], alpha=0.35, linewidths=0, zorder=2
            )
            mean, std = data[pos].mean(), data[pos].std()
            ax.errorbar(pos, mean, yerr=std, color=OKABE_ITO[1], capsize=5, linewidth=2, zorder=3)
            ax.scatter(
                [pos],
                [mean],
                marker="D",
                s=36,
                color="white",
                edgecolors=OKABE_ITO[1],
                linewidths=1.5,
                zorder=4,
            )
        ax.axhline(0, color="#999999", linewidth=0.8, zorder=0)
        if symlog_before and data is panels[0]:
            ax.set_yscale("symlog", linthresh=1.0)
        _padded_ylim(ax, float(data.min()), float(data.max()))
        ax.set_title(name)
        ax.set_xticks(np.arange(length))
        if labels is not None:
            ax.set_xticklabels(labels, rotation=45, ha="right", rotation_mode="anchor")
        ax.set_ylabel(f"feature value\n({d_model} per position)")
        ax.grid(axis="y", alpha=0.3)
    handles = [
        Line2D(
            [], [], marker="o", linestyle="", color=OKABE_ITO[0], alpha=0.6, label="one feature"
        ),
        Line2D(
            [],
            [],
            marker="D",
            linestyle="",
            markerfacecolor="white",
            markeredgecolor=OKABE_ITO[1],
            label="mean of the position",
        ),
        Line2D([], [], color=OKABE_ITO[1], linewidth=2, label="± one standard deviation"),
    ]
    axes[1].set_xlabel("position (token)" if labels is not None else "position")
    fig.legend(handles=handles, loc="outside lower center", ncols=3, frameon=False)
    fig.suptitle(title)
    return fig


def norm_group(kind: str, shape: tuple[int, int, int], entry: tuple[int, int, int]) -> np.ndarray:
    """Which entries of a ``(B, L, D)`` batch share one mean and variance with ``entry``.

    LayerNorm (§3.1 of the paper; Ba et al. 2016) standardises each token's vector over its
    ``D`` features; BatchNorm (Ioffe and Szegedy 2015), applied to a sequence batch as
    ``nn.BatchNorm1d(D)`` on ``(B, D, L)``, standardises each feature over all ``B × L``
    positions of the batch, padding included.

    Args:
        kind: ``"layer"`` or ``"batch"``.
        shape: ``(B, L, D)``: sentences, positions (padded length), features.
        entry: ``(b, t, f)``: the entry whose statistics are asked for.

    Returns:
        A boolean array of ``shape``: True where an entry is pooled with ``entry``.

    Example:
        >>> norm_group("layer", (2, 3, 4), (0, 1, 2))[0, 1].all()
        True
    """
    if kind not in ("layer", "batch"):
        raise ValueError(f'norm_group: kind must be "layer" or "batch", got {kind!r}.')
    if len(shape) != 3 or len(entry) != 3:
        raise ValueError(
            f"norm_group: shape {tuple(shape)} and entry {tuple(entry)} must both have three "
            "numbers, (B, L, D) and (b, t, f)."
        )
    if not all(0 <= i < n for i, n in zip(entry, shape)):
        raise ValueError(f"norm_group: entry {tuple(entry)} lies outside shape {tuple(shape)}.")
    b, t, f = entry
    group = np.zeros(shape, dtype=bool)
    if kind == "layer":
        group[b, t, :] = True
    else:
        group[:, :, f] = True
    return group


@_styled
def plot_norm_axes(
    lengths: Sequence[int] = (5, 3, 4),
    n_features: int = 8,
    entry: tuple[int, int, int] = (0, 2, 5),
    title: str = "Which entries share one mean and variance",
) -> Figure:
    """A padded batch of sentences, and the entries LayerNorm and BatchNorm pool (chapter 7).

    Two panels of the same ``(B, L, D)`` batch, every sentence drawn as a block of rows
    (its positions, padding hatched) by ``D`` columns (its features). One entry is framed;
    the coloured cells are those whose mean and variance it is standardised with
    (:func:`norm_group`): for LayerNorm its own token's row, for BatchNorm its feature's
    column through every sentence and position of the batch, padding included.

    Args:
        lengths: the real length of each sentence; the batch is padded to the longest.
        n_features: ``D``, the features per token.
        entry: ``(b, t, f)``, the framed entry; ``t`` must be a real position of ``b``.
        title: the figure's title.

    Returns:
        The figure: axes 0 LayerNorm, axes 1 BatchNorm. Every cell is a ``Rectangle`` with
        ``gid`` ``"b t f"``; pooled cells have the face colour ``OKABE_ITO[3]``.

    Example:
        >>> plot_norm_axes(lengths=(6, 4), n_features=8, entry=(1, 3, 2))
    """
    func = "plot_norm_axes"
    lengths = [int(n) for n in lengths]
    if not lengths or min(lengths) < 1:
        raise ValueError(f"{func}: lengths must be one or more positive lengths, got {lengths}.")
    if n_features < 1:
        raise ValueError(f"{func}: n_features must be positive, got {n_features}.")
    n_sentences, padded = len(lengths), max(lengths)
    shape = (n_sentences, padded, int(n_features))
    b0, t0, f0 = entry
    if not (0 <= b0 < n_sentences and 0 <= t0 < lengths[b0] and 0 <= f0 < n_features):
        raise ValueError(
            f"{func}: entry {tuple(entry)} must be a real token of the batch: sentence "
            f"< {n_sentences}, position < its length, feature < {n_features}."
        )
    pooled_colour, plain_colour, hatch_colour = OKABE_ITO[3], "#E4E4E4", "#666666"
    gap = 0.6  # rows of white space between two sentences
    height = 1.2 + 0.19 * (n_sentences * (padded + gap))
    fig, axes = _new_figure((8.6, max(height, 3.2)), 1, 2, sharey=True)
    panels = (
        ("layer", "LayerNorm: one token,\nall its features"),
        ("batch", "BatchNorm: one feature,\nevery token of the batch"),
    )
    centres = []
    for ax, (kind, name) in zip(axes, panels):
        group = norm_group(kind, shape, (b0, t0, f0))
        centres = []
        for b in range(n_sentences):
            top = b * (padded + gap)
            centres.append(top + padded / 2)
            for t in range(padded):
                pad = t >= lengths[b]
                for f in range(n_features):
                    cell = Rectangle(
                        (f, top + t),
                        1,
                        1,
                        facecolor=pooled_colour if group[b, t, f] else plain_colour,
                        edgecolor=hatch_colour if pad else "white",
                        hatch="///" if pad else None,
                        linewidth=0.8,
                        gid=f"{b} {t} {f}",
                    )
                    ax.add_patch(cell)
        frame_y = b0 * (padded + gap) + t0
        ax.add_patch(
            Rectangle((f0, frame_y), 1, 1, fill=False, edgecolor="black", linewidth=2.2, zorder=5)
        )
        ax.set_xlim(0, n_features)
        ax.set_ylim(n_sentences * (padded + gap) - gap, 0)  # sentence 0 on top
        ax.set_aspect("auto")
        ax.set_xticks(np.arange(n_features) + 0.5, [str(f) for f in range(n_features)])
        ax.set_xlabel(f"feature (D = {n_features})")
        ax.set_title(name)
        for side in ("top", "right", "left", "bottom"):
            ax.spines[side].set_visible(False)
        ax.tick_params(length=0)
    axes[0].set_yticks(centres, [f"sentence {b}\n({n} tokens)" for b, n in enumerate(lengths)])
    axes[0].set_ylabel(f"positions 0–{padded - 1} of each sentence")
    handles = [
        Patch(facecolor="white", edgecolor="black", linewidth=2, label="the entry normalised"),
        Patch(facecolor=pooled_colour, label="pooled into its mean and variance"),
        Patch(facecolor=plain_colour, edgecolor=hatch_colour, hatch="///", label="padding"),
    ]
    fig.legend(handles=handles, loc="outside lower center", ncols=3, frameon=False)
    fig.suptitle(title)
    return fig


# The blocks of one residual sub-layer, in the order the input meets them, as
# SublayerConnection.forward runs them (norm_first=False: post-LN; True: pre-LN).
RESIDUAL_ORDER = {
    "post-LN": ("sublayer", "dropout", "+", "LayerNorm"),
    "pre-LN": ("LayerNorm", "sublayer", "dropout", "+"),
}
_BLOCK_TEXT = {
    "sublayer": ("F (attention or FFN)", "attention"),
    "dropout": ("dropout", "linear"),
    "LayerNorm": ("LayerNorm", "addnorm"),
}


@_styled
def plot_residual_sublayers(
    titles: tuple[str, str] = (
        "post-LN\n(the paper, the library's default)",
        "pre-LN\n(norm_first=True)",
    ),
) -> Figure:
    """Post-LN and pre-LN side by side: one residual sub-layer each, input at the bottom.

    Left, the paper's ``LayerNorm(x + Dropout(F(x)))``; right, pre-LN's
    ``x + Dropout(F(LayerNorm(x)))``, with the one extra LayerNorm a pre-LN stack adds after
    its last layer. In both the residual path carries ``x`` past the sub-layer to the ⊕.

    Args:
        titles: the two column headings (post-LN, pre-LN).

    Returns:
        The figure. Every block is a patch with ``gid`` ``"<column> <block>"``, column
        ``"post-LN"`` or ``"pre-LN"``, block one of :data:`RESIDUAL_ORDER`'s names (the ⊕ is
        ``"+"``) or ``"final LayerNorm"``; the residual path is a line with ``gid``
        ``"<column> residual"``.

    Example:
        >>> plot_residual_sublayers()
    """
    width, height = 8.2, 3.0  # inches; wide and short, to cost little page height
    # Two panels that abut, x 0-5 and 5-10: a phone shows them one under the other
    # (phone_layout stacks the panels of a grid) at about the desktop scale.
    fig, axes = _new_figure((width, height), 1, 2)
    fig.get_layout_engine().set(w_pad=0.01, wspace=0.0)  # the drawing keeps its own gaps
    y_low, y_high = -0.15, 7.6
    for panel, span in zip(axes, ((0, 5), (5, 10))):
        panel.set_axis_off()
        panel.set_xlim(*span)
        panel.set_ylim(y_low, y_high)
    box_w, box_h, radius = 2.9, 0.52, 0.25
    levels = [1.55, 2.5, 3.45, 4.4]  # y of the four blocks, bottom to top
    # a unit of x is drawn this much wider than a unit of y: keeps the ⊕ round
    sx = (width / 10) / (height / (y_high - y_low))
    for ax, xc, column, title in zip(axes, (2.6, 7.4), RESIDUAL_ORDER, titles):
        ax.text(xc, y_high - 0.05, title, ha="center", va="top", fontsize=11, fontweight="bold")
        ax.text(xc, 0.05, "x", ha="center", va="bottom", fontsize=11, style="italic")
        split = 0.75
        _path(ax, [(xc, 0.45), (xc, levels[0] - box_h / 2)])
        for i, (block, y) in enumerate(zip(RESIDUAL_ORDER[column], levels)):
            if block == "+":
                ax.add_patch(
                    Ellipse(
                        (xc, y),
                        2 * radius / sx,
                        2 * radius,
                        facecolor="white",
                        edgecolor=_LINE,
                        linewidth=1.3,
                        zorder=3,
                        gid=f"{column} +",
                    )
                )
                for dx, dy in ((0.6 * radius / sx, 0), (0, 0.6 * radius)):
                    ax.plot([xc - dx, xc + dx], [y - dy, y + dy], color=_LINE, lw=1.3, zorder=4)
                high = y + radius
                # the residual path: from below the first block, round the left, into the ⊕
                left = xc - box_w / 2 - 0.45
                (line,) = ax.plot(
                    [xc, left, left], [split, split, y], color=_LINE, linewidth=1.4, zorder=2
                )
                line.set_gid(f"{column} residual")
                _path(ax, [(left, y), (xc - radius / sx, y)])
                ax.text(
                    left - 0.12,
                    (split + y) / 2,
                    "residual: x",
                    rotation=90,
                    ha="right",
                    va="center",
                    fontsize=9.5,
                    color=_LINE,
                )
            else:
                text, kind = _BLOCK_TEXT[block]
                _rounded_box(ax, xc, y, box_w, box_h, _ARCH_STYLE[kind], gid=f"{column} {block}")
                ax.text(xc, y, text, ha="center", va="center", fontsize=10, zorder=4)
                high = y + box_h / 2
            if i + 1 < len(levels):
                nxt = RESIDUAL_ORDER[column][i + 1]
                top = levels[i + 1] - (radius if nxt == "+" else box_h / 2)
                _path(ax, [(xc, high), (xc, top)])
        _path(ax, [(xc, high), (xc, 5.05)])
        ax.text(xc + 0.12, 4.85, "to the next sub-layer", ha="left", va="center", fontsize=10)
        if column == "pre-LN":
            ax.plot([xc, xc], [5.1, 5.45], color=_LINE, linewidth=1.2, linestyle=":")
            _rounded_box(
                ax,
                xc,
                5.9,
                box_w + 0.3,
                0.9,
                _ARCH_STYLE["addnorm"],
                linestyle="--",
                gid=f"{column} final LayerNorm",
            )
            ax.text(
                xc,
                5.9,
                "final LayerNorm\n(once, after the last layer)",
                ha="center",
                va="center",
                fontsize=10,
                zorder=4,
            )
        else:
            ax.text(
                xc,
                5.9,
                "no final LayerNorm:\neach sub-layer ends in one",
                ha="center",
                va="center",
                fontsize=10,
                color="#555555",
            )
    return fig
