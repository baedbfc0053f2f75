"""The tree of hypotheses a beam search explored (chapter 10)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from .style import OKABE_ITO, _figure_and_axes, _label_text, _styled

__all__ = ["plot_beam_search"]


BeamSteps = Sequence[Sequence[tuple[Sequence[str], float]]]


@_styled
def plot_beam_search(
    steps: BeamSteps,
    best: Sequence[str] | None = None,
    title: str | None = None,
    *,
    ax: Axes | None = None,
    eos_token: str = "<eos>",
    root_label: str = "<bos>",
    fontsize: float = 11.0,
) -> Figure:
    """Draw the tree of hypotheses a beam search explored (chapter 10).

    Args:
        steps: one entry per decoding step; ``steps[t]`` lists the hypotheses kept
            after step ``t`` as ``(tokens, score)`` pairs, where ``tokens`` is the
            whole prefix generated so far (without the start token) and ``score``
            its cumulative log-probability. A finished hypothesis may be carried
            forward unchanged. For example::

                [[(["▁Tom"], -0.1), (["▁He"], -2.3)],
                 [(["▁Tom", "▁is"], -0.4), (["▁He", "▁is"], -2.9)],
                 [(["▁Tom", "▁is", "<eos>"], -0.6), (["▁Tom", "▁was"], -2.7)]]

        best: the hypothesis to highlight (default: best score in the last step).
        eos_token: marks finished hypotheses.
        root_label: label of the start node.
        fontsize: size of the node labels (points). The figure is about 0.95 inches
            per step wide, so that at page width its smallest text stays readable.

    Nodes show the token and the cumulative log-probability. Hypotheses that were
    kept at some step but never extended are drawn grey ("pruned").
    """
    if not steps or not any(steps):
        raise ValueError(
            "plot_beam_search: steps is empty; expected [[(tokens, score), ...], ...]."
        )
    score: dict[tuple[str, ...], float] = {(): 0.0}
    for hyps in steps:
        for tokens, s in hyps:
            prefix = tuple(str(t) for t in tokens)
            if not prefix:
                raise ValueError("plot_beam_search: a hypothesis has no tokens.")
            for i in range(1, len(prefix)):  # parents not listed explicitly
                score.setdefault(prefix[:i], float("nan"))
            score[prefix] = float(s)
    if best is None:
        last = [hyps for hyps in steps if hyps][-1]
        best_prefix = tuple(str(t) for t in max(last, key=lambda h: h[1])[0])
    else:
        best_prefix = tuple(str(t) for t in best)
    on_best = {best_prefix[:i] for i in range(len(best_prefix) + 1)}
    children: dict[tuple[str, ...], list[tuple[str, ...]]] = {p: [] for p in score}
    for p in score:
        if p:
            children[p[:-1]].append(p)
    for kids in children.values():
        kids.sort(key=lambda c: -np.nan_to_num(score[c], nan=-np.inf))

    # Tidy layout: leaves get consecutive rows in depth-first order, parents sit
    # at the mean of their children.
    ypos: dict[tuple[str, ...], float] = {}
    counter = [0]

    def place(p: tuple[str, ...]) -> float:
        if not children[p]:
            ypos[p] = -counter[0]
            counter[0] += 1
        else:
            ypos[p] = float(np.mean([place(c) for c in children[p]]))
        return ypos[p]

    place(())
    depth = max(len(p) for p in score)
    n_rows = counter[0]
    fig, ax = _figure_and_axes(ax, (max(6.5, 0.95 * (depth + 1) + 0.4), 0.6 * n_rows + 2.2))
    for p, kids in children.items():
        for c in kids:
            strong = c in on_best
            ax.plot(
                [len(p), len(c)],
                [ypos[p], ypos[c]],
                color=OKABE_ITO[0] if strong else "#AAAAAA",
                linewidth=2.6 if strong else 1.2,
                zorder=1,
            )
    styles = {
        "best": dict(fc="#CCE3F0", ec=OKABE_ITO[0], lw=2.0, color="black"),
        "finished": dict(fc="#CCECE3", ec=OKABE_ITO[2], lw=1.4, color="black"),
        "kept": dict(fc="white", ec="#555555", lw=1.0, color="black"),
        "pruned": dict(fc="#F0F0F0", ec="#BBBBBB", lw=1.0, color="#777777"),
    }
    for p, y in ypos.items():
        if not p:
            kind, text = "best", _label_text(root_label)
        else:
            if p in on_best:
                kind = "best"
            elif p[-1] == eos_token:
                kind = "finished"
            elif not children[p]:
                kind = "pruned"
            else:
                kind = "kept"
            s = score[p]
            text = _label_text(p[-1]) + ("" if math.isnan(s) else f"\n{s:.2f}")
        st = styles[kind]
        ax.text(
            len(p),
            y,
            text,
            ha="center",
            va="center",
            fontsize=fontsize,
            color=st["color"],
            zorder=3,
            bbox=dict(boxstyle="round,pad=0.35", fc=st["fc"], ec=st["ec"], lw=st["lw"]),
        )
    ax.set_xlim(-0.6, depth + 0.6)
    ax.set_ylim(-(n_rows - 1) - 0.7, 0.7)
    ax.set_xticks(range(depth + 1))
    ax.set_xticklabels(["start"] + [str(t) for t in range(1, depth + 1)], fontsize=11)
    ax.set_yticks([])
    for side in ("left", "right", "top"):
        ax.spines[side].set_visible(False)
    ax.set_xlabel("decoding step (tokens generated)")
    ax.set_ylabel("hypotheses (log-probability)")
    beam = max(len(h) for h in steps)
    ax.set_title(title if title is not None else f"Beam search, beam size {beam}")
    handles = [
        Patch(facecolor=styles[k]["fc"], edgecolor=styles[k]["ec"], label=lab)
        for k, lab in (
            ("best", "chosen output"),
            ("finished", f"finished ({eos_token})"),
            ("kept", "kept in the beam"),
            ("pruned", "pruned"),
        )
    ]
    handles.append(Line2D([], [], color=OKABE_ITO[0], linewidth=2.6, label="best path"))
    # The legend goes under the tree: the figure stays narrow and is shown near full size.
    fig.legend(handles=handles, loc="outside lower center", ncol=3, fontsize=11, frameon=False)
    return fig
