"""The warm-up-then-decay learning-rate schedule of §5.3 against the paper's (ch. 9)."""

from __future__ import annotations

import numpy as np

from .frames import (
    LayoutMemo,
    book_style,
    figure_to_png,
    live_explorer,
    load_ipywidgets,
    new_figure,
    static_explorer,
    use_static,
)

__all__ = ["lr_schedule_explorer"]


# Button labels short enough for their buttons; the description says what they stand for.
_LR_SIZES = ((128, "128 (tiny)"), (512, "512 (base)"), (1024, "1024 (big)"))
_LR_WARMUPS = (100, 200, 400, 1000, 2000, 4000, 8000)


def _noam(step: int, d_model: int, warmup: int, factor: float) -> float:
    from ...pipeline.objectives import noam_lr

    return noam_lr(step, d_model, warmup, factor)


def _lr_figure(d_model: int, warmup: int, factor: float, max_steps: int):
    from ..phone_layout import set_phone_narrow
    from ..style import OKABE_ITO
    from ..training_curves import plot_lr_schedule

    steps = np.unique(np.concatenate([np.linspace(1, max_steps, 800).astype(int), [warmup, 4000]]))
    steps = steps[steps <= max_steps]
    ours = np.array([_noam(s, d_model, warmup, factor) for s in steps])
    paper = np.array([_noam(s, 512, 4000, 1.0) for s in steps])
    label = f"d_model = {d_model}, warm-up = {warmup:,}, factor = {factor:g}"
    with book_style():
        fig = new_figure((8.2, 4.4), layout="constrained")
        ax = fig.subplots()
        fig.suptitle("lr = factor · d_model^−0.5 · min(step^−0.5, step · warmup^−1.5)  (§5.3)")
        # Limits, title and the peak's label first: plot_lr_schedule then puts its warm-up
        # label where neither a curve nor this label is. The headroom keeps the legend clear.
        ax.set_ylim(0, max(ours.max(), paper.max()) * 1.4)
        peak = _noam(warmup, d_model, warmup, factor)
        if warmup <= max_steps:
            ax.annotate(
                f"peak {peak:.2e}",
                (warmup, peak),
                xytext=(8, 4),
                textcoords="offset points",
                fontsize=9,
            )
        plot_lr_schedule(
            {
                "paper, base model: d_model = 512, warm-up = 4,000": (steps, paper),
                label: (steps, ours),
            },
            ax=ax,
            warmup_steps=warmup if warmup <= max_steps else None,
            title="",
        )
        ax.lines[0].set(color="#888888", linestyle="--", linewidth=1.6)
        ax.lines[1].set(color=OKABE_ITO[1], linewidth=2.2)
        if warmup <= max_steps:
            ax.plot([warmup], [peak], "o", color=OKABE_ITO[1])
        ax.legend(loc="upper right")  # again: the restyled lines need new legend handles
    # On a phone (static build): the panel drawn narrower, the legend under it.
    set_phone_narrow(fig, 0.8)
    return fig


def lr_schedule_explorer(*, static: bool | None = None):
    """The warm-up-then-decay learning-rate schedule of §5.3 (Eq. 3) against the paper's.

    Chapter 9. Uses :func:`transformer_lib.pipeline.objectives.noam_lr`; the paper's base model
    (``d_model`` 512, 4,000 warm-up steps, factor 1) is drawn dashed for reference.

    Returns:
        The explorer. Live: ``d_model``, warm-up steps, factor and the number of steps
        shown. Static: ``d_model`` ∈ {128 (this book), 512, 1024} × seven warm-up lengths
        (21 frames, factor 1, 20,000 steps).
    """
    widgets = load_ipywidgets()
    title = "Learning-rate schedule"
    if use_static(static):
        sizes, warmups = _LR_SIZES, _LR_WARMUPS
        dm = widgets.ToggleButtons(
            options=[label for _, label in sizes],
            index=0,
            description="d_model",
            tooltip="model width of the schedule",
            style={"button_width": "130px"},
        )
        wu = widgets.SelectionSlider(
            options=[f"{w:,}" for w in warmups],
            index=warmups.index(400) if 400 in warmups else 0,  # this book's warm-up
            description="warm-up",
            tooltip="warm-up steps of the schedule",
            layout=widgets.Layout(width="420px"),
        )
        frames = [[figure_to_png(_lr_figure(d, w, 1.0, 20_000)) for w in warmups] for d, _ in sizes]
        return static_explorer(
            title,
            "Choose d_model (128: this book's tiny model; 512 and 1024: the paper's base and "
            "big models) and the warm-up length (factor 1). The peak is at step = warm-up.",
            [dm, wu],
            {"d_model": dm, "warmup": wu},
            [dm, wu],
            frames,
            alt="Line plot of the learning rate against the training step for the chosen "
            "d_model and warm-up: it rises linearly during warm-up, peaks at step = "
            "warm-up, then falls as one over the square root of the step.",
            describe=lambda i, j: (
                f"d_model {sizes[i][0]}, warm-up {warmups[j]:,}: the rate peaks at "
                f"{_noam(warmups[j], sizes[i][0], warmups[j], 1.0):.2e} at step {warmups[j]:,}"
            ),
        )
    dm = widgets.Dropdown(
        options=[64, 128, 256, 512, 1024],
        value=128,
        description="d_model",
        tooltip="model width of the schedule",
        layout=widgets.Layout(width="180px"),
    )
    wu = widgets.IntSlider(
        value=400,
        min=50,
        max=16_000,
        step=50,
        description="warm-up",
        tooltip="warm-up steps of the schedule",
        continuous_update=False,
    )
    factor = widgets.FloatSlider(
        value=1.0,
        min=0.1,
        max=5.0,
        step=0.1,
        description="factor",
        continuous_update=False,
    )
    span = widgets.SelectionSlider(
        options=[("2,000", 2000), ("5,000", 5000), ("20,000", 20_000), ("100,000", 100_000)],
        value=20_000,
        description="steps shown",
        style={"description_width": "initial"},
    )

    memo = LayoutMemo()

    def draw() -> tuple[bytes, str]:
        fig = _lr_figure(dm.value, wu.value, factor.value, span.value)
        return memo.png(fig, key=(dm.value, span.value)), ""

    return live_explorer(
        title,
        "The rate rises linearly during warm-up, then decays as 1/√step.",
        [widgets.HBox([dm, wu]), widgets.HBox([factor, span])],
        {"d_model": dm, "warmup": wu, "factor": factor, "steps": span},
        draw,
        [dm, wu, factor, span],
    )
