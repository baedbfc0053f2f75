"""Chapter 13's figures: the planted bugs' symptoms next to the healthy model, and mysteries.

The runs are read from ``data/debugging_runs.json``, written by ``scripts/debugging_runs.py``
(the tiny translator trained for the same short budget with each planted bug of
:mod:`transformer_lib.pipeline.check_kit.planting`; see that script for what is stored).

* :func:`load_runs` reads the file; :func:`run_label` names a run.
* :func:`plot_loss_curves` draws training-loss curves of several runs against the healthy one.
* :func:`plot_symptoms` draws one bug's loss curve and one kind of attention map beside the
  healthy model's; :func:`plot_scoreboard` the final training loss and the validation BLEU
  of every run, sorted by BLEU.
* :func:`mystery` turns a run into a :class:`~transformer_lib.views.spot_the_bug.Mystery`:
  its figures as small PNGs, its evidence, and the suspects with verdicts built from the
  planted bugs and the kit's findings on the trained model.

Attention maps follow the book's rule: rows are queries, columns are keys, labelled with
the real tokens (``<pad>`` included: the stored maps have two padding columns after the
source so that weight on padding shows).
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import matplotlib as mpl
import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from ..pipeline.check_kit import CHECKS, PLANTED_BUGS
from ..pipeline.check_kit.causes import ALL_CAUSES
from ..pipeline.corpus import shipped_data_dir
from .attention_maps import plot_attention
from .notebook import _escape_markdown
from .phone_layout import set_phone_aspect
from .style import _RC, OKABE_ITO, _new_figure, _styled

__all__ = [
    "HEALTHY",
    "KIND_TITLES",
    "LOSS_CURVES_SIZE",
    "baseline_of",
    "describe_symptoms",
    "load_runs",
    "mystery",
    "plot_loss_curves",
    "plot_scoreboard",
    "plot_symptoms",
    "run_label",
]

HEALTHY = "healthy"
KIND_TITLES = {
    "cross": "cross-attention",
    "decoder": "decoder self-attention",
    "encoder": "encoder self-attention",
}
_LINE_STYLES = ("-", "--", "-.", ":")


def load_runs(path: str | os.PathLike | None = None) -> dict[str, Any]:
    """The stored runs: ``{"settings": {...}, "runs": {name: run}}``.

    Args:
        path: the JSON file (default: ``debugging_runs.json`` beside the shipped model).

    Raises:
        FileNotFoundError: no such file, with the command that writes it.
    """
    path = Path(path) if path is not None else shipped_data_dir() / "debugging_runs.json"
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing: run `python scripts/debugging_runs.py`")
    return json.loads(path.read_text(encoding="utf-8"))


def run_label(name: str) -> str:
    """How a run is named in figures: the bug's id, or "healthy (no bug)"."""
    if name == HEALTHY:
        return "healthy (no bug)"
    if name == "healthy-decoder-only":
        return "healthy decoder-only"
    return name


def baseline_of(runs: dict[str, Any], name: str) -> str:
    """The healthy run that ``name`` is compared with: the one of its architecture."""
    arch = runs[name]["arch"]
    return next(n for n, r in runs.items() if r["bug"] is None and r["arch"] == arch)


def _quote(text: str) -> str:
    return "“" + (_escape_markdown(text) if text.strip() else "(nothing)") + "”"


def describe_symptoms(runs: dict[str, Any], name: str) -> str:
    """One paragraph of Markdown: the run's losses, BLEU and translation beside the healthy
    model's, every number read from the stored run."""
    run = runs[name]
    healthy = runs[baseline_of(runs, name)]
    loss, h_loss = run["loss"][-1][1], healthy["loss"][-1][1]
    ex, h_ex = run["examples"][0], healthy["examples"][0]
    if run["trained"]:
        text = (
            f"After {run['steps']} steps the training loss with the bug is **{loss:.2f}** "
            f"(healthy model: {h_loss:.2f}) and the validation loss {run['val_loss']:.2f} "
            f"({healthy['val_loss']:.2f}). "
        )
    else:
        text = (
            "Training is the healthy run itself, because the bug acts only when the model "
            f"decodes: training loss {loss:.2f}, validation loss {run['val_loss']:.2f}. "
        )
    text += f"Greedy validation BLEU is **{run['bleu']:.1f}** against {healthy['bleu']:.1f}"
    if "beam_bleu" in run and "beam_bleu" in healthy:
        text += f", with beam search {run['beam_bleu']:.1f} against {healthy['beam_bleu']:.1f}"
    text += (
        f". The model translates {_quote(ex['source'])} as {_quote(ex['output'])} "
        f"(healthy: {_quote(h_ex['output'])})"
    )
    if "beam_output" in ex and "beam_output" in h_ex:
        text += (
            f", and with beam search as {_quote(ex['beam_output'])} "
            f"(healthy: {_quote(h_ex['beam_output'])})"
        )
    return text + "."


def _curve(run: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    steps, loss = np.array(run["loss"], dtype=float).reshape(-1, 2).T
    return steps, loss


def _draw_curves(
    ax: Axes,
    runs: dict[str, Any],
    names: Sequence[str],
    baseline: str,
    labels: Sequence[str] | None = None,
) -> None:
    """The baseline's curve (thick, black) and those of ``names``, labelled by ``labels``
    (default: the runs' names)."""
    names = [n for n in names if n != baseline]
    labels = list(labels) if labels is not None else [run_label(n) for n in [baseline, *names]]
    steps, loss = _curve(runs[baseline])
    ax.plot(steps, loss, color="black", lw=2.2, label=labels[0], zorder=3)
    for i, name in enumerate(names):
        s, y = _curve(runs[name])
        style = _LINE_STYLES[i % len(_LINE_STYLES)]
        # Above the baseline: a curve equal to it stays visible.
        ax.plot(s, y, color=OKABE_ITO[i % 6], ls=style, lw=1.8, label=labels[i + 1], zorder=4)
    ax.set_xlabel("training step")
    ax.set_ylabel("training loss (nats per token)")
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)


#: Size (inches) of :func:`plot_loss_curves`' figure: at 100 dpi its image is about 510 px
#: wide, which a 350-px phone column shows whole with its smallest text (10 pt) at 9 px.
LOSS_CURVES_SIZE = (5.0, 2.9)


@_styled
def plot_loss_curves(
    runs: dict[str, Any],
    names: Sequence[str],
    *,
    baseline: str = HEALTHY,
    title: str = "Training loss with and without the bug",
    ax: Axes | None = None,
) -> Figure:
    """Training-loss curves of ``names`` (from :func:`load_runs`' ``"runs"``) and the baseline.

    The baseline (the healthy model) is the thick black line; the others get the Okabe-Ito
    colours and distinct dash patterns, named in the legend. The loss is the label-smoothed
    training objective (§5.4), each point the mean over the steps since the previous one.

    The figure is :data:`LOSS_CURVES_SIZE`: one panel gets no stacked phone version
    (:mod:`~transformer_lib.views.phone_layout`), so it is drawn narrow enough for a phone's
    column to show it whole with its 10-point text at 9 CSS px (keep the title as short).
    """
    if ax is None:
        fig, ax = _new_figure(LOSS_CURVES_SIZE)
    else:
        fig = ax.get_figure()
    _draw_curves(ax, runs, names, baseline)
    ax.legend(loc="upper right", frameon=False)
    ax.set_title(title)
    return fig


def _map(run: dict[str, Any], kind: str) -> dict[str, Any]:
    maps = run["attention"]
    if kind not in maps:
        raise KeyError(f"the run stores {sorted(k for k in maps if k in KIND_TITLES)}, not {kind}")
    return maps[kind]


def _draw_map(ax: Axes, run: dict[str, Any], kind: str, title: str, colorbar: bool) -> None:
    m = _map(run, kind)
    plot_attention(
        np.array(m["weights"]), m["queries"], m["keys"], ax=ax, title=title, colorbar=colorbar
    )


#: Text sizes (points) of :func:`plot_symptoms`: its three panels share the text column
#: (about 630 CSS px of a 970-pixel image at 1280 px), so its text is drawn larger than the
#: book's default to be read at about 12 px there.
SYMPTOM_TEXT_PT, SYMPTOM_TITLE_PT = 13, 14


@_styled
def plot_symptoms(runs: dict[str, Any], name: str, kind: str = "cross") -> Figure:
    """One bug beside the healthy model: training loss, and the last layer's ``kind`` map
    (averaged over heads) for the stored sentence, healthy left, with the bug right.

    When both maps have the same queries, the right map's rows are labelled once, by the
    healthy map beside it, which leaves room for text of :data:`SYMPTOM_TEXT_PT` points.
    """
    baseline = baseline_of(runs, name)
    fig, axes = _new_figure((9.6, 3.6), 1, 3)
    _draw_curves(axes[0], runs, [name], baseline, ["healthy", "with the bug"])
    axes[0].legend(loc="upper right", frameon=False, handlelength=1.5)
    axes[0].set_title("training loss")
    axes[0].set_ylabel("loss (nats/token)")
    what = KIND_TITLES[kind]
    _draw_map(axes[1], runs[baseline], kind, "healthy", colorbar=False)
    _draw_map(axes[2], runs[name], kind, "with the bug", colorbar=True)
    if _map(runs[baseline], kind)["queries"] == _map(runs[name], kind)["queries"]:
        axes[2].tick_params(labelleft=False)  # the rows of the healthy map, beside it
        axes[2].set_ylabel("")
    for ax in fig.axes:  # the colour bar's too
        ax.tick_params(labelsize=SYMPTOM_TEXT_PT)
        ax.xaxis.label.set_size(SYMPTOM_TEXT_PT)
        ax.yaxis.label.set_size(SYMPTOM_TEXT_PT)
        ax.title.set_size(SYMPTOM_TITLE_PT)
    for text in axes[0].get_legend().get_texts():
        text.set_fontsize(SYMPTOM_TEXT_PT)
    fig.suptitle(f"{run_label(name)}: loss, and the last layer's {what}", fontsize=SYMPTOM_TITLE_PT)
    return fig


@_styled
def plot_scoreboard(
    runs: dict[str, Any], names: Sequence[str] | None = None, *, baseline: str = HEALTHY
) -> Figure:
    """Final training loss and greedy validation BLEU of every run, sorted by BLEU.

    The healthy model's values are drawn as dashed lines across each panel, so every bar
    reads against them; its own row is marked in its label, not by colour alone. Each bar
    carries its value at its end (loss to two decimals, BLEU to one, as the text quotes
    them).
    """
    names = [n for n in (names or runs) if n in runs]
    names.sort(key=lambda n: runs[n]["bleu"])
    labels = [run_label(n) + (" ◀" if n == baseline else "") for n in names]
    loss = [runs[n]["loss"][-1][1] for n in names]
    bleu = [runs[n]["bleu"] for n in names]
    fig, (a, b) = _new_figure((8.6, 0.3 * len(names) + 1.6), 1, 2, sharey=True)
    y = np.arange(len(names))
    colour = [("black" if n == baseline else OKABE_ITO[0]) for n in names]
    a.barh(y, loss, color=colour)
    b.barh(y, bleu, color=[("black" if n == baseline else OKABE_ITO[2]) for n in names])
    panels = ((a, loss, "final training loss", "{:.2f}"), (b, bleu, "validation BLEU", "{:.1f}"))
    for ax, values, what, fmt in panels:
        ax.axvline(values[names.index(baseline)], color="black", ls="--", lw=1)
        for text in ax.bar_label(
            ax.containers[0], labels=[fmt.format(v) for v in values], padding=2, fontsize=9
        ):  # on white, so that a dashed line behind does not cross the digits
            text.set_bbox({"facecolor": "white", "edgecolor": "none", "pad": 0.4})
        ax.set_xlim(0, max(values) * 1.16)  # room for the longest bar's value
        ax.set_xlabel(what)
        ax.grid(axis="x", alpha=0.3)
    a.set_yticks(y, labels)
    a.set_title("training loss (lower looks better)")
    b.set_title("greedy BLEU (higher is better)")
    fig.suptitle("Every run after the same budget, sorted by BLEU")
    # A phone stacks the two panels, each with the runs' names: a line of text a row.
    set_phone_aspect(fig, height_in=0.23 * len(names) + 0.2)
    return fig


# ---- spot the bug ---------------------------------------------------------------------------
def _png(draw, size: tuple[float, float]) -> bytes:
    """Draw into a figure pyplot never sees (so Jupyter shows nothing) and encode it."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from .explorers.frames import figure_to_png

    with mpl.rc_context(_RC):
        fig = Figure(figsize=size, layout="constrained")
        FigureCanvasAgg(fig)
        draw(fig)
        return figure_to_png(fig)


def _plain(text: str) -> str:
    """A translation as self-check text: its `$` and backticks stay literal."""
    return text.replace("$", "\\$").replace("`", "\\`") if text.strip() else "(nothing)"


def _caught(bug_id: str) -> str:
    """The check that catches a planted bug (the first it names)."""
    return PLANTED_BUGS[bug_id].caught_by[0][0]


def _verdict(true_id: str, suspect: str, kit: dict[str, Any]) -> str:
    """What the page says when ``suspect`` is chosen for the mystery whose bug is
    ``true_id``, from the kit's findings on the trained mystery model (``kit``)."""
    check = _caught(true_id)
    causes = kit["causes"].get(check, []) if check in kit["failed"] else []
    # the bug's own diagnosis where the check lists it, not only the first of them
    key = next((k for _, k in PLANTED_BUGS[true_id].caught_by if k in causes), None)
    key = key or (causes[0] if causes else None)
    which = "first diagnosis is" if causes and key == causes[0] else "diagnoses include"
    cause = ALL_CAUSES[key].text if key else None
    tells = f"The check that would have told you: `{check}`, {CHECKS[check].title}" + (
        f"; on this model it fails, and its {which} that {cause}." if cause else "."
    )
    if suspect == true_id:
        return f"Yes: {PLANTED_BUGS[true_id].mistake}. {tells}"
    own = _caught(suspect)
    verdict = "fails here too, but its diagnosis is another" if own in kit["failed"] else "passes"
    return (
        f"Not this one. That bug ({PLANTED_BUGS[suspect].mistake}) is caught by `{own}`, "
        f"which {verdict} on this model. {tells}"
    )


def mystery(
    runs: dict[str, Any],
    name: str,
    suspects: Sequence[str],
    *,
    title: str,
    kind: str = "cross",
):
    """A :class:`~transformer_lib.views.spot_the_bug.Mystery` for the run ``name``.

    Args:
        runs: the ``"runs"`` of :func:`load_runs`.
        name: the run whose bug is the answer (a planted bug's id).
        suspects: the bug ids offered, the answer among them, in the order shown.
        title: e.g. ``"Mystery model A"`` (the bug is not named before the answer).
        kind: which attention map to show: ``"cross"``, ``"decoder"`` or ``"encoder"``.

    Returns:
        A ``Mystery`` with three figures (the mystery's map; the healthy map; training
        loss against the healthy model), its BLEU, validation loss and a translation.
    """
    from .self_check import Choice, Question
    from .spot_the_bug import Mystery

    if name not in suspects:
        raise ValueError(f"the answer {name!r} must be among the suspects {list(suspects)}")
    baseline = baseline_of(runs, name)
    run, healthy = runs[name], runs[baseline]
    choices = [
        Choice(PLANTED_BUGS[s].mistake, correct=s == name, why=_verdict(name, s, run["kit"]))
        for s in suspects
    ]
    what = KIND_TITLES[kind]

    def curves(fig):
        ax = fig.subplots()
        _draw_curves(ax, runs, [name], baseline, ["healthy", "mystery model"])
        ax.legend(loc="upper right", frameon=False)
        ax.set_title("training loss")

    def attention(source, label):
        def draw(fig):
            ax = fig.subplots()
            _draw_map(ax, source, kind, f"{what}, {label}", colorbar=True)

        return draw

    m = _map(run, kind)
    loss = (
        f"Training loss after {run['steps']} steps: the mystery model's is "
        f"{run['loss'][-1][1]:.2f}, the healthy model's {healthy['loss'][-1][1]:.2f}."
    )
    maps_alt = (
        f"Heat map of the last layer's {what}, averaged over heads: rows are the "
        f"queries {' '.join(m['queries'])}, columns the keys {' '.join(m['keys'])}."
    )
    # Sized so that the two maps sit side by side in the page's column (the loss below).
    figures = [
        (_png(attention(run, "mystery"), (3.6, 3.0)), "Mystery model. " + maps_alt,
         f"The mystery model's {what}"),
        (_png(attention(healthy, "healthy"), (3.6, 3.0)), "Healthy model. " + maps_alt,
         f"The healthy model's {what}, for comparison"),
        (_png(curves, (3.8, 3.0)), loss, "Training loss, mystery model against the healthy one"),
    ]  # fmt: skip
    example = run["examples"][0]
    evidence = [
        f"Greedy validation BLEU {run['bleu']:.1f} (healthy model: {healthy['bleu']:.1f}); "
        f"validation loss {run['val_loss']:.2f} (healthy: {healthy['val_loss']:.2f}).",
        f"It translates “{_plain(example['source'])}” as “{_plain(example['output'])}” "
        f"(healthy: “{_plain(healthy['examples'][0]['output'])}”).",
    ]
    if "beam_bleu" in run and "beam_bleu" in healthy:
        evidence.append(
            f"With beam search (k = 4): BLEU {run['beam_bleu']:.1f} (healthy: "
            f"{healthy['beam_bleu']:.1f})."
        )
    question = Question(f"Which bug does {title[:1].lower()}{title[1:]} have?", choices=choices)
    return Mystery(title, question=question, figures=figures, evidence=evidence)
