"""What LayerNorm does to each position's vector (chapter 7)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from .style import OKABE_ITO, _new_figure, _squeeze_to, _styled, _token_labels

__all__ = ["plot_layer_norm_effect"]


@_styled
def plot_layer_norm_effect(
    before: Any,
    after: Any,
    tokens: Sequence[Any] | None = None,
    title: str = "LayerNorm rescales every position's vector on its own",
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
    fig, axes = _new_figure((width, 6.6), 2, 1, sharex=True)
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
