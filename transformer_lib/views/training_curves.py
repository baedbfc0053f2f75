"""Figures of training (chapter 9): the learning-rate schedule, label smoothing, the log.

:func:`plot_lr_schedule` draws the warm-up-then-decay schedule of §5.3,
:func:`plot_label_smoothing` the smoothed target of §5.4 next to the one-hot one, and
:func:`plot_training_log` loss, learning rate and throughput of a run against the step.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from .phone_layout import set_phone_narrow
from .style import (
    OKABE_ITO,
    _figure_and_axes,
    _integer_ticks,
    _new_figure,
    _squeeze_to,
    _styled,
    _to_numpy,
    _token_labels,
)

__all__ = [
    "plot_label_smoothing",
    "plot_lr_schedule",
    "plot_quality_per_minute",
    "plot_training_log",
]


@_styled
def plot_lr_schedule(
    curves: Mapping[str, Any] | Any,
    lrs: Any | None = None,
    /,
    *,
    ax: Axes | None = None,
    title: str = "Learning-rate schedule",
    warmup_steps: int | Sequence[int] | None = None,
    log_y: bool = False,
    **named_curves: Any,
) -> Figure:
    """Learning rate against training step for one or more schedules (chapter 9).

    Three call forms::

        plot_lr_schedule(steps, lrs)                                   # one curve
        plot_lr_schedule(steps, base=lrs512, tiny=lrs128)              # labelled curves
        plot_lr_schedule({"d_model = 512": (steps, lrs512), "d_model = 128": (steps, lrs128)})

    In the dict form a value may also be just the learning rates, for steps
    ``1, 2, ...``. Everything after the curves is keyword-only.

    Args:
        warmup_steps: draw a dotted vertical line where warm-up ends (one or several).
        log_y: logarithmic learning-rate axis.
    """
    func = "plot_lr_schedule"
    series: list[tuple[str, np.ndarray, np.ndarray]] = []
    if isinstance(curves, Mapping):
        if named_curves or lrs is not None:
            raise ValueError(f"{func}: give the curves as one dict or as keywords, not both.")
        for label, value in curves.items():
            if isinstance(value, tuple) and len(value) == 2:
                x, y = (_to_numpy(v).astype(float).ravel() for v in value)
            else:
                y = _to_numpy(value).astype(float).ravel()
                x = np.arange(1, y.size + 1, dtype=float)
            series.append((str(label), x, y))
    else:
        if lrs is None and not named_curves:
            raise ValueError(
                f"{func}: pass plot_lr_schedule(steps, lrs), plot_lr_schedule(steps, label=lrs) "
                "or plot_lr_schedule({label: (steps, lrs)})."
            )
        x = _to_numpy(curves).astype(float).ravel()
        if lrs is not None:
            series.append(("", x, _to_numpy(lrs).astype(float).ravel()))
        for label, value in named_curves.items():
            series.append((label, x, _to_numpy(value).astype(float).ravel()))
    for label, x, y in series:
        if x.shape != y.shape:
            raise ValueError(
                f"{func}: curve {label!r} has {x.size} steps but {y.size} learning rates."
            )

    made = ax is None
    fig, ax = _figure_and_axes(ax, (7.5, 4.2))
    for label, x, y in series:
        ax.plot(x, y, linewidth=2, label=label or None)
    lines = {}  # warm-up step -> its dotted line
    if warmup_steps is not None:
        ws = [warmup_steps] if np.isscalar(warmup_steps) else list(warmup_steps)
        for w in ws:
            lines[w] = ax.axvline(w, color="#666666", linestyle=":", linewidth=1.2)
    ax.set_xlabel("training step")
    ax.set_ylabel("learning rate")
    ax.set_title(title)
    if log_y:
        ax.set_yscale("log")
    else:
        ax.set_ylim(bottom=0)
        ax.ticklabel_format(axis="y", style="sci", scilimits=(-3, 3), useMathText=True)
    ax.set_xlim(left=0)
    ax.grid(alpha=0.3)
    if any(label for label, _, _ in series):
        ax.legend(loc="upper right")
    for w, line in lines.items():
        step = f"{int(w):,}" if float(w).is_integer() else f"{w}"
        curves = [(x, y) for _, x, y in series]
        if not _label_clear_of_curves(ax, w, f"warm-up ends\n(step {step})", curves):
            # no room beside the line: name it in the legend instead
            line.set_label(f"warm-up ends (step {step})")
            ax.legend(loc="upper right")
    if made:  # a phone shows the curves narrower, the legend under them
        set_phone_narrow(fig)
    return fig


def _label_clear_of_curves(
    ax: Axes, x: float, text: str, curves: Sequence[tuple[np.ndarray, np.ndarray]]
) -> bool:
    """Write ``text`` beside the vertical line at ``x`` where no curve, text or legend is.

    Tries right of the line, then left of it, inside the axes, at the lowest height where
    the curves leave a gap tall enough. The height is stored in data coordinates, so the
    label stays clear of the curves if the caller changes the y limits afterwards.

    Returns:
        Whether the label was placed (``False``: no room on either side).
    """
    from matplotlib.font_manager import FontProperties
    from matplotlib.textpath import TextToPath

    fontsize, gap_pt, pad = 9.0, 4.0, 0.03  # pad: axes fraction kept free around a curve
    fig = ax.get_figure()
    fig.draw_without_rendering()  # lay the figure out: the axes' final size in pixels
    box = ax.get_window_extent()
    px = fig.dpi / 72
    font = FontProperties(size=fontsize)
    rows = text.split("\n")
    width = max(TextToPath().get_text_width_height_descent(t, font, False)[0] for t in rows)
    need = (len(rows) * fontsize * 1.25 + gap_pt) * px / box.height  # axes fraction
    line_x = ax.transData.transform((x, ax.get_ylim()[0]))[0]
    others = [t.get_window_extent() for t in ax.texts]  # e.g. a label at a peak
    legend = ax.get_legend()
    if legend is not None:
        others.append(legend.get_window_extent())
    for side in (1, -1):  # right of the line, then left of it
        far = line_x + side * (gap_pt + width + 2) * px
        lo, hi = min(line_x, far), max(line_x, far)  # from the line itself: steep curves
        if lo < box.x0 or hi > box.x1:
            continue
        taken = []
        for cx, cy in curves:
            pts = ax.transData.transform(np.column_stack([cx, cy]))
            xs, ys = pts[:, 0], pts[:, 1]
            if xs.size == 0 or hi < xs.min() or lo > xs.max():
                continue
            inside = ys[(xs >= lo) & (xs <= hi)]
            edges = np.interp([max(lo, xs.min()), min(hi, xs.max())], xs, ys)
            fractions = (np.concatenate([inside, edges]) - box.y0) / box.height
            taken.append((fractions.min() - pad, fractions.max() + pad))
        for other in others:  # with a 2-point margin
            if other.x1 > lo and other.x0 < hi:
                y0, y1 = other.y0 - 2 * px, other.y1 + 2 * px
                taken.append(((y0 - box.y0) / box.height, (y1 - box.y0) / box.height))
        bottom = pad
        for start, end in sorted(taken) + [(1 - pad, 1.0)]:
            if start - bottom >= need:
                y_low, y_high = ax.get_ylim()
                if ax.get_yscale() == "log":
                    y = y_low * (y_high / y_low) ** bottom
                else:
                    y = y_low + bottom * (y_high - y_low)
                ax.annotate(
                    text,
                    xy=(x, y),
                    xytext=(side * gap_pt, 0),
                    textcoords="offset points",
                    ha="left" if side > 0 else "right",
                    va="bottom",
                    fontsize=fontsize,
                    color="#444444",
                )
                return True
            bottom = max(bottom, end)
    return False


@_styled
def plot_label_smoothing(
    target_dist: Any,
    tokens: Sequence[Any] | None = None,
    epsilon: float | None = None,
    title: str | None = None,
    *,
    ax: Axes | None = None,
    target: int | None = None,
) -> Figure:
    """Bars of the one-hot target next to the label-smoothed target distribution (ch. 9).

    Label smoothing (§5.4) moves probability ``ε`` from the correct token to the
    others; the chart shows both distributions over the vocabulary.

    Args:
        target_dist: ``(V,)`` smoothed target distribution (sums to 1).
        tokens: ``V`` labels for the bars (default: token ids).
        epsilon: shown in the title.
        target: index of the correct token (default: the largest entry).
    """
    func = "plot_label_smoothing"
    dist = _squeeze_to(target_dist, 1, "target_dist", func, "(V,)").astype(float)
    total = float(dist.sum())
    if not math.isclose(total, 1.0, abs_tol=1e-3):
        raise ValueError(f"{func}: target_dist must sum to 1 (a distribution), got {total:.4f}.")
    vocab = dist.size
    labels = _token_labels(tokens, vocab, "tokens", func)
    target = int(np.argmax(dist)) if target is None else int(target)
    one_hot = np.zeros(vocab)
    one_hot[target] = 1.0

    fig, ax = _figure_and_axes(ax, (float(np.clip(0.55 * vocab + 3, 5.5, 13)), 4.2))
    x = np.arange(vocab)
    ax.bar(
        x - 0.2,
        one_hot,
        width=0.4,
        facecolor="white",
        edgecolor=OKABE_ITO[6],
        hatch="///",
        linewidth=1.0,
        label="one-hot target",
    )
    bars = ax.bar(x + 0.2, dist, width=0.4, color=OKABE_ITO[0], label="smoothed target")
    if vocab <= 16:
        # Each value above its bar, but the correct token's beside it: above, it would run
        # into the taller one-hot bar on its left.
        values = [f"{v:.4g}" if i != target else "" for i, v in enumerate(dist)]
        ax.bar_label(bars, labels=values, fontsize=9, padding=2)
        ax.annotate(
            f"{dist[target]:.4g}",
            xy=(target + 0.4, dist[target]),
            xytext=(3, 0),
            textcoords="offset points",
            ha="left",
            va="center",
            fontsize=9,
        )
    if labels is not None:
        ax.set_xticks(x)
        ax.set_xticklabels(labels, rotation=45, ha="right", rotation_mode="anchor")
        ax.set_xlabel("vocabulary token")
    else:
        _integer_ticks(ax)
        ax.set_xlabel("vocabulary token id")
    ax.set_ylabel("target probability")
    ax.set_ylim(0, 1.12)
    if title is None:
        title = "Label smoothing" + (f" (ε = {epsilon:g})" if epsilon is not None else "")
    ax.set_title(title)
    ax.legend(loc="upper right")
    return fig


_LOG_KEYS = {
    "step": ("step", "steps", "global_step"),
    "loss": ("loss", "train_loss"),
    "val_loss": ("val_loss", "valid_loss", "dev_loss", "validation_loss"),
    "lr": ("lr", "learning_rate"),
    "tokens_per_s": ("tokens_per_s", "tokens_per_sec", "tok_per_s", "tokens_per_second"),
}


def _log_columns(log: Any) -> dict[str, np.ndarray]:
    """A training log (list of dicts, or dict of lists) as float columns, NaN where missing."""
    if isinstance(log, Mapping):
        cols = {k: list(v) for k, v in log.items()}
        n = max((len(v) for v in cols.values()), default=0)
        cols = {k: v + [None] * (n - len(v)) for k, v in cols.items()}
    else:
        rows = list(log)
        keys = list(dict.fromkeys(k for row in rows for k in row))
        cols = {k: [row.get(k) for row in rows] for k in keys}
    out = {}
    for k, v in cols.items():
        try:
            out[k] = np.array([np.nan if x is None else float(x) for x in v], dtype=float)
        except (TypeError, ValueError):
            continue  # non-numeric columns (timestamps, notes) are not plotted
    return out


def _find(cols: dict[str, np.ndarray], kind: str) -> np.ndarray | None:
    for key in _LOG_KEYS[kind]:
        if key in cols and np.isfinite(cols[key]).any():
            return cols[key]
    return None


def _ema(x: np.ndarray, weight: float) -> np.ndarray:
    out = np.empty_like(x)
    acc = np.nan
    for i, v in enumerate(x):
        if np.isfinite(v):
            acc = v if not np.isfinite(acc) else weight * acc + (1 - weight) * v
        out[i] = acc
    return out


def _draw_losses(
    ax: Axes,
    steps: np.ndarray,
    loss: np.ndarray | None,
    val: np.ndarray | None,
    smooth: float,
) -> None:
    """The training loss (faded as logged and an EMA when ``smooth``), the validation loss."""
    if loss is not None:
        ok = np.isfinite(loss)
        if smooth > 0:
            ax.plot(steps[ok], loss[ok], color=OKABE_ITO[0], alpha=0.3, linewidth=1)
            ax.plot(
                steps[ok],
                _ema(loss[ok], smooth),
                color=OKABE_ITO[0],
                linewidth=2,
                label=f"training (EMA {smooth:g})",
            )
        else:
            ax.plot(steps[ok], loss[ok], color=OKABE_ITO[0], linewidth=1.8, label="training")
    if val is not None:
        ok = np.isfinite(val)
        ax.plot(
            steps[ok],
            val[ok],
            color=OKABE_ITO[1],
            marker="o",
            markersize=4,
            linewidth=1.8,
            label="validation",
        )
    ax.grid(alpha=0.3)


@_styled
def plot_training_log(
    log: Sequence[Mapping[str, Any]] | Mapping[str, Sequence[Any]],
    title: str = "Training progress",
    *,
    smooth: float = 0.0,
    show_throughput: bool = True,
    zoom_from: float | None = None,
) -> Figure:
    """Loss (train and validation), learning rate and throughput against step (chapter 9).

    Panels, sharing the x axis "training step": loss in nats per token; with
    ``zoom_from``, the same losses again on a y axis fitted to the steps from
    ``zoom_from`` on; learning rate if the log has one; tokens per second if present.

    Args:
        log: a list of dicts (one per logging step) or a dict of lists. Recognised
            keys: ``step``, ``loss``/``train_loss``, ``val_loss``, ``lr``,
            ``tokens_per_s``. Entries may be missing or ``None`` (e.g. validation
            loss only every few steps).
        smooth: exponential-moving-average weight in ``[0, 1)`` for the training
            loss; the raw curve stays visible, faded.
        show_throughput: add the tokens-per-second panel when the log has it.
        zoom_from: add a panel under the loss whose y axis spans only the losses logged
            from this step on: a gap late in the run, small beside the first steps'
            losses, then fills the panel's height.
    """
    cols = _log_columns(log)
    loss, val = _find(cols, "loss"), _find(cols, "val_loss")
    if loss is None and val is None:
        raise ValueError(
            f"plot_training_log: no loss in the log; keys found: {sorted(cols)}. "
            "Expected 'loss' (or 'train_loss') and optionally 'val_loss'."
        )
    if not 0.0 <= smooth < 1.0:
        raise ValueError(f"plot_training_log: smooth must be in [0, 1), got {smooth}.")
    n = len(next(iter(cols.values())))
    steps = _find(cols, "step")
    if steps is None:
        steps = np.arange(1, n + 1, dtype=float)
    lr = _find(cols, "lr")
    tps = _find(cols, "tokens_per_s") if show_throughput else None
    extra = [c for c in (lr, tps) if c is not None]
    zoom = [] if zoom_from is None else [1.6]  # the zoomed panel's height ratio
    fig, axes = _new_figure(
        (8.0, 3.6 + 1.8 * len(extra) + 2.2 * len(zoom)),
        1 + len(zoom) + len(extra),
        1,
        sharex=True,
        squeeze=False,
        height_ratios=[2] + zoom + [1] * len(extra),
    )
    axes = axes[:, 0]
    for ax in axes[: 1 + len(zoom)]:
        _draw_losses(ax, steps, loss, val, smooth)
    axes[0].set_ylabel("loss (nats per token)")
    axes[0].legend(loc="upper right")
    if zoom_from is not None:
        late = [c[np.isfinite(c) & (steps >= zoom_from)] for c in (loss, val) if c is not None]
        late = np.concatenate(late)
        if late.size == 0:
            raise ValueError(f"plot_training_log: no loss logged from step {zoom_from} on.")
        low, high = float(late.min()), float(late.max())
        pad = 0.06 * ((high - low) or 1.0)
        axes[1].set_ylim(low - pad, high + pad)
        axes[1].set_ylabel(f"loss, zoomed\n(steps ≥ {zoom_from:,.0f})")
    panel = 1 + len(zoom)
    if lr is not None:
        ok = np.isfinite(lr)
        axes[panel].plot(steps[ok], lr[ok], color=OKABE_ITO[2], linewidth=1.8)
        axes[panel].set_ylabel("learning rate")
        axes[panel].ticklabel_format(axis="y", style="sci", scilimits=(-3, 3), useMathText=True)
        axes[panel].set_ylim(bottom=0)
        axes[panel].grid(alpha=0.3)
        panel += 1
    if tps is not None:
        ok = np.isfinite(tps)
        axes[panel].plot(steps[ok], tps[ok], color=OKABE_ITO[3], linewidth=1.8)
        axes[panel].set_ylabel("tokens per second")
        axes[panel].set_ylim(bottom=0)
        axes[panel].grid(alpha=0.3)
    axes[-1].set_xlabel("training step")
    fig.suptitle(title)
    return fig


@_styled
def plot_quality_per_minute(
    rows: Sequence[Mapping[str, Any]],
    shipped: Mapping[str, Any] | None = None,
    *,
    ax: Axes | None = None,
    title: str = "Test BLEU for the CPU time spent training",
) -> Figure:
    """Test BLEU against CPU-minutes of training, one curve per recipe (chapter 9).

    Args:
        rows: the ``rows`` of ``data/quality_per_minute.json``
            (``benchmarks/quality_per_minute.py``): per budget, a ``"library"`` and a
            ``"plain"`` result with ``cpu_minutes`` and ``bleu``.
        shipped: optionally ``{"cpu_minutes", "bleu", "label"}`` of the shipped model,
            drawn as a single point.
    """
    func = "plot_quality_per_minute"
    if not rows:
        raise ValueError(f"{func}: no rows to draw (run benchmarks/quality_per_minute.py).")
    made = ax is None
    fig, ax = _figure_and_axes(ax, (7.2, 4.4))
    # (key, legend, colour, marker, line style, where its values are written)
    sides = (
        ("library", "transformer_lib train, the recipe it chooses", OKABE_ITO[0], "o", "-", (0, 7)),
        ("plain", "plain nn.Transformer loop", OKABE_ITO[1], "s", "--", (0, -15)),
    )
    highest = 0.0  # the highest BLEU drawn
    for key, label, colour, marker, style, offset in sides:
        points = sorted((float(r[key]["cpu_minutes"]), float(r[key]["bleu"])) for r in rows)
        x, y = zip(*points)
        highest = max(highest, *y)
        ax.plot(x, y, style, marker=marker, color=colour, label=label, linewidth=1.8)
        for xi, yi in points:
            ax.annotate(f"{yi:.1f}", (xi, yi), textcoords="offset points", xytext=offset,
                        ha="center", fontsize=9, color=colour)  # fmt: skip
    if shipped is not None:
        highest = max(highest, float(shipped["bleu"]))
        label = shipped.get("label", "shipped")
        ax.plot([shipped["cpu_minutes"]], [shipped["bleu"]], marker="*", markersize=13,
                linestyle="none", color=OKABE_ITO[5], label=label)  # fmt: skip
    ax.set_xlabel("CPU-minutes of training (one thread)")
    ax.set_ylabel("test BLEU (greedy, all references)")
    ax.set_xlim(left=0)
    # Room above the highest point for its marker and value (the star was cut at the top).
    ax.set_ylim(0, highest * 1.12)
    ax.set_title(title)
    ax.legend(loc="lower right")
    ax.grid(alpha=0.3)
    if made:  # a phone shows the curves narrower, the legend under them
        set_phone_narrow(fig)
    return fig
