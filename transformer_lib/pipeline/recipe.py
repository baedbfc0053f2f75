"""The training recipe the command line picks from the budget it is given (chapter 9).

The paper's recipe (§5.3: the Noam schedule, 4,000 warm-up steps, 100k steps of 25k-token
batches) is made for runs of hours on eight GPUs. A reader's run on a laptop or in Colab
lasts minutes, and there the same ingredients are wasteful: the step^-0.5 decay leaves the
learning rate high when the budget ends, and large batches mean few steps. So
``python -m transformer_lib train`` chooses the batch size, the schedule, the warm-up and
its peak, and whether to average checkpoints, from the budget (``--max-steps``,
``--cpu-minutes`` or ``--minutes``), prints what it chose and why, and records the choice
in the checkpoint. Every value stays a flag (``--max-tokens``, ``--schedule``,
``--warmup``, ``--lr-factor``, ``--average``) that overrides the choice.

* **Short budgets** (up to 30 minutes or 6,000 steps): batches of 1,024 padded tokens, a
  linear schedule (§5.3's warm-up to the shipped model's peak, then a straight line to
  zero when the budget runs out), no averaging.
* **Long budgets**: the shipped model's recipe, the paper's schedule with a 400-step
  warm-up and 2,048-token batches, and the last 5 checkpoints averaged (§6.1).

The recipes were chosen by ``benchmarks/quality_per_minute.py --sweep`` on the validation
split and checked against a plain ``torch.nn.Transformer`` training loop on the test split
(``benchmarks/README.md``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from .objectives import linear_decay_lr, noam_lr

__all__ = [
    "RECIPE_KEYS",
    "Recipe",
    "checkpoint_spacing",
    "choose_recipe",
    "describe",
    "describe_budget",
    "linear_top",
    "planned_steps",
]

#: The settings a recipe chooses; each has a flag of the same name that overrides it.
RECIPE_KEYS = ("max_tokens", "schedule", "warmup", "lr_factor", "average")

#: Up to this many CPU-minutes (or steps, or wall-clock minutes) a run counts as short.
SHORT_CPU_MINUTES = 30.0
SHORT_STEPS = 6000
#: The short recipe's peak learning rate: the shipped model's (Noam, factor 1, warm-up 400
#: at d_model 128), which measured best among the candidates (benchmarks/README.md).
SHORT_PEAK_LR = (128 * 400) ** -0.5
#: Steps per CPU-second of the tiny preset with 1,024-token batches on one core of the
#: book's 2-core machine (measured: 1,745 steps in 297 CPU-seconds), about half that with
#: 2,048-token batches. Used only to guess how many steps a time budget allows: to keep the
#: warm-up short in very short runs and to space the checkpoints that are averaged.
STEPS_PER_CPU_SECOND = 6.0
#: Checkpoints averaged at the end of a long run (§6.1 averages the last 5) and how much of
#: the run they span: one every 1/28 of the run, as in the shipped run (250 of 7,000 steps).
AVERAGE_LAST, AVERAGE_SPACING = 5, 1 / 28


@dataclass(frozen=True)
class Recipe:
    """What the command line trains with, and why.

    Attributes:
        max_tokens: Padded tokens per batch (§5.1 counts about 25k source + 25k target).
        schedule: ``"noam"`` (§5.3) or ``"linear"`` (:func:`~.objectives.linear_decay_lr`).
        warmup: Warm-up steps.
        lr_factor: Scale of the peak, ``lr_factor · (d_model · warmup)^-0.5``.
        average: Average the last this many step checkpoints into ``averaged.pt`` at the
            end (§6.1); 0 = no averaging.
        checkpoint_every: Steps between the checkpoints to average (used when averaging).
        name: A short name for the log ("short budget", ...).
        why: One sentence: why this recipe for this budget.
    """

    max_tokens: int
    schedule: str
    warmup: int
    lr_factor: float
    average: int
    checkpoint_every: int | None
    name: str
    why: str

    def settings(self) -> dict:
        """The chosen values of :data:`RECIPE_KEYS`."""
        return {k: getattr(self, k) for k in RECIPE_KEYS}

    def trainer_settings(self) -> dict:
        """Keyword arguments of :class:`~.training.TrainingConfig` for this recipe (the
        averaging itself is a separate step after training: :func:`~.checkpoints.
        average_checkpoints` of the kept step checkpoints)."""
        settings = {k: getattr(self, k) for k in RECIPE_KEYS if k != "average"}
        if self.average:
            settings.update(keep_checkpoints=self.average, checkpoint_every=self.checkpoint_every)
        return settings

    def to_dict(self) -> dict:
        return asdict(self)


def describe_budget(
    max_steps: int | None = None, minutes: float | None = None, cpu_minutes: float | None = None
) -> str:
    """The budget in words, e.g. ``"10 CPU-minutes"`` or ``"2,000 steps or 5 minutes"``."""
    parts = []
    if max_steps is not None:
        parts.append(f"{max_steps:,} steps")
    if cpu_minutes is not None:
        parts.append(f"{cpu_minutes:g} CPU-minutes")
    if minutes is not None:
        parts.append(f"{minutes:g} minutes")
    return " or ".join(parts) or "no budget"


def _is_short(max_steps: int | None, minutes: float | None, cpu_minutes: float | None) -> bool:
    """A run is short when whichever budget ends first ends early."""
    limits = []
    if max_steps is not None:
        limits.append(max_steps <= SHORT_STEPS)
    if cpu_minutes is not None:
        limits.append(cpu_minutes <= SHORT_CPU_MINUTES)
    if minutes is not None:
        limits.append(minutes <= SHORT_CPU_MINUTES)
    return any(limits)


def planned_steps(
    max_steps: int | None, minutes: float | None, cpu_minutes: float | None, max_tokens: int
) -> float:
    """The steps the budget allows: exact for ``max_steps``, a guess for a time budget."""
    per_second = STEPS_PER_CPU_SECOND * 1024 / max_tokens
    expected = [float(max_steps)] if max_steps is not None else []
    expected += [b * 60 * per_second for b in (minutes, cpu_minutes) if b is not None]
    return min(expected) if expected else float("inf")


def checkpoint_spacing(
    max_steps: int | None, minutes: float | None, cpu_minutes: float | None, max_tokens: int
) -> int | None:
    """Steps between the checkpoints to average: 1/28 of the run the budget allows (the
    shipped run: 250 of 7,000 steps), so that the last 5 span its final seventh."""
    planned = planned_steps(max_steps, minutes, cpu_minutes, max_tokens)
    return None if planned == float("inf") else max(1, round(planned * AVERAGE_SPACING))


def choose_recipe(
    arch: str = "encoder-decoder",
    preset: str = "tiny",
    *,
    max_steps: int | None = None,
    minutes: float | None = None,
    cpu_minutes: float | None = None,
    d_model: int = 128,
) -> Recipe:
    """The recipe for a run of ``preset`` and ``arch`` with the given budget.

    Args:
        arch: ``"encoder-decoder"`` or ``"decoder-only"`` (whose batches hold both sides
            of a pair in one sequence, so they get twice the token budget).
        preset: ``"tiny"`` (measured here), ``"base"`` or ``"big"`` (the paper's sizes).
        max_steps, minutes, cpu_minutes: The budget, as given to ``train``.
        d_model: The model width (the peak rate depends on it through Eq. 3).

    Returns:
        A :class:`Recipe`.
    """
    per_sequence = 2 if arch == "decoder-only" else 1
    if preset == "tiny" and _is_short(max_steps, minutes, cpu_minutes):
        planned = planned_steps(max_steps, minutes, cpu_minutes, 1024)
        # 400 steps, or a quarter of a run expected to have fewer than 1,600.
        warmup = 400 if planned >= 1600 else max(10, round(planned / 4))
        # Keep the peak at SHORT_PEAK_LR whatever the warm-up: factor · (d · w)^-0.5.
        factor = round(SHORT_PEAK_LR * (d_model * warmup) ** 0.5, 4)
        every = checkpoint_spacing(max_steps, minutes, cpu_minutes, 1024 * per_sequence)
        return Recipe(
            1024 * per_sequence, "linear", warmup, factor, 0, every, "short budget",
            "in a short run more, smaller steps and a rate that falls to zero at the end "
            "of the budget train a better model than the paper's schedule, and averaging "
            "checkpoints adds little once the rate ends at zero (measured in "
            "benchmarks/README.md)",
        )  # fmt: skip
    max_tokens = 2048 * per_sequence
    every = checkpoint_spacing(max_steps, minutes, cpu_minutes, max_tokens)
    if preset != "tiny":
        return Recipe(
            max_tokens, "noam", 4000, 1.0, AVERAGE_LAST, every, "the paper's",
            f"the {preset} preset is the paper's size, so the paper's schedule (§5.3, Noam "
            "with 4,000 warm-up steps) and its averaging of the last 5 checkpoints (§6.1); "
            "give --max-tokens for your hardware",
        )  # fmt: skip
    return Recipe(
        max_tokens, "noam", 400, 1.0, AVERAGE_LAST, every, "long budget",
        "the shipped model's recipe, which reached its test BLEU in about 40 CPU-minutes "
        "this way: the paper's schedule, and the last 5 checkpoints averaged (§6.1)",
    )  # fmt: skip


def linear_top(d_model: int, warmup: int, lr_factor: float, planned: float) -> tuple[int, float]:
    """The update at which the linear schedule peaks in a run of ``planned`` steps, and its
    rate, as the trainer runs it.

    Update ``s`` (counted from 1; step ``s`` is the model after it) runs at
    ``linear_decay_lr(s, (s - 1) / planned, ...)``: the ramp's value at ``s`` times the
    share of the budget the ``s - 1`` updates before it left. So the first update gets the
    whole ramp value, the last ``1 / planned`` of it, and the rate after the budget is 0.
    """
    updates = range(1, max(1, min(warmup, int(planned))) + 1)
    rates = [linear_decay_lr(s, (s - 1) / planned, d_model, warmup, lr_factor) for s in updates]
    top = max(range(len(rates)), key=rates.__getitem__)
    return top + 1, rates[top]


def describe(
    recipe: Recipe, d_model: int, given: dict, budget: str, planned: float | None = None
) -> str:
    """The line ``train`` prints: the budget, what was chosen, the values given as flags.

    ``planned`` is the number of steps the budget is expected to allow
    (:func:`planned_steps`); with it the line of a linear schedule gives the rate's actual
    top (:func:`linear_top`), which lies below the ramp's end value.
    """
    values = {**recipe.settings(), **given}
    warmup = values["warmup"]
    peak = noam_lr(warmup, d_model, warmup, values["lr_factor"])
    if values["schedule"] == "linear":
        # linear_decay_lr multiplies the warm-up ramp by the share of the budget left from
        # the first update on, so the rate tops out below the ramp's end value; say what is run.
        if planned is not None and planned != float("inf"):
            at, top = linear_top(d_model, warmup, values["lr_factor"], planned)
            rise = (
                f"to about {top:.1e} at update {at:,}, as the {at - 1:,} before it use "
                f"{(at - 1) / planned:.0%} of a budget of about {planned:,.0f} steps"
            )
        else:
            rise = f"to {peak:.1e} times the share of the budget still left by then"
        shape = (
            f"linear schedule: update s runs at {peak:.1e} x min(1, s/{warmup:,}) x (1 - "
            "the share of the budget used by the s - 1 updates before it), so the rate "
            f"rises for the first {warmup:,} steps ({rise}) and then falls in a "
            "straight line to 0 at the end of the budget"
        )
    else:
        shape = (
            f"noam schedule, warm-up {warmup:,} steps to a peak of {peak:.1e}, "
            "then decaying as step^-0.5 (Noam, §5.3)"
        )
    average = (
        f"the last {values['average']} checkpoints averaged into averaged.pt"
        if values["average"]
        else "no checkpoint averaging"
    )
    text = (
        f"recipe for {budget} ({recipe.name}): batches of {values['max_tokens']:,} padded "
        f"tokens; {shape}; {average}. Why: {recipe.why}."
    )
    if given:
        flags = ", ".join(f"--{k.replace('_', '-')} {v}" for k, v in given.items())
        text += f" As given: {flags}."
    return text
