"""The tree of hypotheses a beam search explored (chapter 10)."""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from typing import Any

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from .style import OKABE_ITO, _figure_and_axes, _label_text, _styled

__all__ = ["plot_beam_search", "toy_beam_search"]


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
    legend_columns: int = 2,
    pruned: Collection[Sequence[str]] = (),
    greedy: Sequence[str] | None = None,
) -> Figure:
    """Draw the tree of hypotheses a beam search explored (chapter 10).

    Args:
        steps: one entry per decoding step; ``steps[t]`` lists hypotheses as
            ``(tokens, score)`` pairs, where ``tokens`` is the whole prefix generated so
            far (without the start token) and ``score`` its cumulative log-probability.
            For the library's search (``beam_steps``) entry ``t`` holds the live
            hypotheses in the beam after step ``t`` (steps numbered from 0, as the
            x-axis is) and those set aside as finished at that step; a finished
            hypothesis may be listed again later. For example::

                [[(["▁Tom"], -0.1), (["▁He"], -2.3)],
                 [(["▁Tom", "▁is"], -0.4), (["▁He", "▁is"], -2.9)],
                 [(["▁Tom", "▁is", "<eos>"], -0.6), (["▁Tom", "▁was"], -2.7)]]

        best: the hypothesis to highlight (default: best score in the last step).
        eos_token: marks finished hypotheses.
        root_label: label of the start node.
        fontsize: size of the node labels (points). The figure is about 0.95 inches
            per step wide, so that at page width its smallest text stays readable.
        legend_columns: columns of the legend under the tree (1 for a narrow figure).
        pruned: hypotheses listed in ``steps`` as candidates that did not stay in the beam
            (drawn as their own kind, "pruned"), e.g. from :func:`toy_beam_search`.
        greedy: greedy decoding's output, its path drawn dashed where it leaves ``best``.

    Nodes show the token and the cumulative log-probability. The vertical position
    carries no value: every leaf gets its own row and siblings are ordered by
    log-probability, best on top. Node kinds (the legend lists those present): the
    chosen output; finished (ends with ``eos_token``); a live hypothesis that was
    extended at the next step (it has children); one that was dropped (no child, so
    none of its extensions stayed among the best); and one of the deepest step without
    a child: still in the beam when the search stopped.
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
    greedy_prefix = tuple(str(t) for t in greedy) if greedy is not None else ()
    on_greedy = {greedy_prefix[:i] for i in range(1, len(greedy_prefix) + 1)}
    pruned_set = {tuple(str(t) for t in p) for p in pruned}
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
    fig, ax = _figure_and_axes(ax, (max(6.5, 0.95 * (depth + 1) + 0.4), 0.56 * n_rows + 2.2))
    for p, kids in children.items():
        for c in kids:
            strong = c in on_best
            dashed = c in on_greedy and not strong
            ax.plot(
                [len(p), len(c)],
                [ypos[p], ypos[c]],
                color=OKABE_ITO[0] if strong else OKABE_ITO[6] if dashed else "#AAAAAA",
                linewidth=2.6 if strong or dashed else 1.2,
                linestyle="--" if dashed else "-",
                zorder=1,
            )
    styles = {
        "best": dict(fc="#CCE3F0", ec=OKABE_ITO[0], lw=2.0, color="black"),
        "finished": dict(fc="#CCECE3", ec=OKABE_ITO[2], lw=1.4, color="black"),
        "live": dict(fc="#FBE3C8", ec=OKABE_ITO[1], lw=1.8, color="black"),
        "extended": dict(fc="white", ec="#555555", lw=1.0, color="black"),
        "dropped": dict(fc="#F0F0F0", ec="#BBBBBB", lw=1.0, color="#666666"),
        "pruned": dict(fc="white", ec="#BBBBBB", lw=1.0, color="#666666"),
    }
    kinds: dict[tuple[str, ...], str] = {}
    for p, y in ypos.items():
        if not p:
            kind, text = "best", _label_text(root_label)
        else:
            if p in on_best:
                kind = "best"
            elif p in pruned_set:
                kind = "pruned"
            elif p[-1] == eos_token:
                kind = "finished"
            elif children[p]:
                kind = "extended"
            elif len(p) == depth:
                kind = "live"
            else:
                kind = "dropped"
            kinds[p] = kind
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
    # Column t + 1 holds the prefixes after decoding step t (steps numbered from 0).
    ax.set_xticklabels(["start"] + [str(t) for t in range(depth)], fontsize=11)
    ax.set_yticks([])
    for side in ("left", "right", "top"):
        ax.spines[side].set_visible(False)
    ax.set_xlabel("decoding step (from 0; each adds one token)")
    # Not a scale: rows only separate the hypotheses (siblings best first).
    ax.set_ylabel("hypotheses (no vertical scale)")
    beam = max(sum(str(t[-1]) != eos_token for t, _ in h) for h in steps)  # live ones
    ax.set_title(title if title is not None else f"Beam search, beam size {beam}")
    labels = {
        "best": "chosen output (its path thick)",
        "finished": f"finished: ended with {eos_token}",
        "extended": "in the beam, extended at the next step",
        "dropped": "in the beam, then dropped",
        "live": "in the beam when the search stopped",
        "pruned": "pruned: not among the beam's best",
    }
    handles = [
        Patch(facecolor=styles[k]["fc"], edgecolor=styles[k]["ec"], label=lab)
        for k, lab in labels.items()
        if k == "best" or k in kinds.values()
    ]
    if on_greedy - on_best:
        handles.append(
            Line2D([], [], color=OKABE_ITO[6], lw=2.6, ls="--", label="greedy decoding's path")
        )
    # The legend goes under the tree: the figure stays narrow and is shown near full size.
    fig.legend(
        handles=handles,
        loc="outside lower center",
        ncol=legend_columns,
        fontsize=fontsize,
        frameon=False,
    )
    return fig


def toy_beam_search(
    next_probs: Mapping[tuple[str, ...], Mapping[str, float]],
    beam_size: int = 2,
    max_new_tokens: int = 4,
    eos_token: str = "<eos>",
) -> dict[str, Any]:
    """Run the library's search (``beam_search_loop``, ``alpha = 0``) on a hand-made model.

    Args:
        next_probs: the toy model: for a prefix (tuple of tokens, ``()`` at the start), the
            probabilities of the next tokens; a prefix it does not list ends (``<eos>``).
        beam_size: k (``1``: greedy decoding).
        max_new_tokens: most tokens to add, ``<eos>`` included.

    Returns:
        ``candidates``: per step, the extensions the search considered, as
        ``(tokens, log P)`` (the input of :func:`plot_beam_search`); ``kept``: per step,
        the hypotheses kept live; ``finished``: ``(tokens, log P)`` of every finished one;
        ``pruned``: candidates neither kept nor finished; ``best``: the finished hypothesis
        of highest log P, with ``log_p``.
    """
    import torch

    from ..pipeline.decoding import beam_search_loop

    words = sorted({t for d in next_probs.values() for t in d} - {eos_token})
    vocab = ["<pad>", "<bos>", eos_token, *words]
    index = {t: i for i, t in enumerate(vocab)}
    config = type("ToyConfig", (), dict(pad_id=0, bos_id=1, eos_id=2, vocab_size=len(vocab)))

    def step(ys):  # (k, t) ids -> (k, V) logits: log p of the toy model
        logits = torch.full((ys.size(0), len(vocab)), float("-inf"))
        for row, ids in enumerate(ys.tolist()):
            prefix = tuple(vocab[i] for i in ids[1:])
            for token, p in next_probs.get(prefix, {eos_token: 1.0}).items():
                logits[row, index[token]] = math.log(p)
        return logits

    trace: dict[str, list] = {"candidates": [], "kept": [], "finished": []}

    def record(b, t, candidates, live, finished):
        def named(hyps):
            return [([vocab[i] for i in ids[1:]], lp) for ids, lp in hyps]

        trace["candidates"].append(named(candidates))
        trace["kept"].append(named(live))
        trace["finished"] += named([(h.tokens, h.log_prob) for h in finished])

    start = torch.full((beam_size, 1), config.bos_id, dtype=torch.long)
    (done,) = beam_search_loop(
        step, lambda rows: None, start, 1, beam_size, max_new_tokens, 0.0, config, on_step=record
    )
    best = max(done, key=lambda h: h.log_prob)
    stayed = {tuple(h) for step_hyps in trace["kept"] for h, _ in step_hyps}
    stayed |= {tuple(h) for h, _ in trace["finished"]}
    trace["pruned"] = [h for hyps in trace["candidates"] for h, _ in hyps if tuple(h) not in stayed]
    trace["best"] = [vocab[i] for i in best.tokens[1:]]
    trace["log_p"] = best.log_prob
    return trace
