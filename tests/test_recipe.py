"""The budget recipe of ``train``: what it chooses, what it prints, what it records."""

from __future__ import annotations

import pytest

from transformer_lib.__main__ import main
from transformer_lib.pipeline.checkpoints import load_checkpoint
from transformer_lib.pipeline.recipe import (
    RECIPE_KEYS,
    choose_recipe,
    describe,
    describe_budget,
)


@pytest.mark.parametrize(
    "budget, name",
    [
        ({"cpu_minutes": 5}, "short budget"),
        ({"minutes": 20}, "short budget"),
        ({"max_steps": 2000}, "short budget"),
        ({"cpu_minutes": 60}, "long budget"),
        ({"max_steps": 20000}, "long budget"),
        ({"max_steps": 20000, "minutes": 10}, "short budget"),  # the earlier limit decides
    ],
)
def test_the_budget_decides_the_recipe(budget, name):
    assert choose_recipe(**budget).name == name


def test_short_and_long_recipes():
    short, long = choose_recipe(cpu_minutes=10), choose_recipe(cpu_minutes=60)
    assert short.schedule == "linear" and long.schedule == "noam"
    assert short.max_tokens < long.max_tokens
    assert set(short.settings()) == set(RECIPE_KEYS)
    # The decoder-only model reads both sides in one sequence: twice the token budget.
    assert choose_recipe("decoder-only", cpu_minutes=10).max_tokens == 2 * short.max_tokens
    assert choose_recipe(preset="base", max_steps=100_000).warmup == 4000  # §5.3


def test_describe_names_the_budget_the_choice_and_the_flags():
    recipe = choose_recipe(cpu_minutes=10)
    assert describe_budget(cpu_minutes=10) == "10 CPU-minutes"
    assert describe_budget(max_steps=2000, minutes=5) == "2,000 steps or 5 minutes"
    line = describe(recipe, 128, {"warmup": 800}, "10 CPU-minutes")
    assert line.startswith("recipe for 10 CPU-minutes (short budget): batches of 1,024")
    assert "rises for the first 800 steps" in line and "As given: --warmup 800." in line
    assert "Why:" in line
    noam = describe(choose_recipe(max_steps=100_000), 128, {}, "100,000 steps")
    assert "noam schedule, warm-up 400 steps to a peak of" in noam


def test_the_linear_schedule_is_as_described():
    """The rate rises over the warm-up, tops out a little under the scale that the
    description names, then falls in a straight line to 0 at the end of the budget."""
    from transformer_lib.pipeline.objectives import linear_decay_lr, noam_lr

    total, warmup, d_model = 1000, 68, 128
    rates = [linear_decay_lr(s, s / total, d_model, warmup) for s in range(1, total + 1)]
    scale = noam_lr(warmup, d_model, warmup)
    top = max(rates)
    assert rates.index(top) + 1 == warmup and 0.9 * scale < top < scale
    falling = rates[warmup:]
    steps = [b - a for a, b in zip(falling, falling[1:], strict=False)]
    assert max(steps) - min(steps) < 1e-12 and rates[-1] == 0.0  # a straight line to 0


def test_describe_gives_the_linear_rate_its_real_top():
    """The printed top is the rate linear_decay_lr reaches in a run of the planned steps,
    not the ramp's end value (the 67 updates before the 68th use a quarter of a 270-step
    budget, and leave 75 % of the scale)."""
    from transformer_lib.pipeline.objectives import linear_decay_lr, noam_lr
    from transformer_lib.pipeline.recipe import planned_steps

    budget = {"max_steps": 300, "minutes": 0.75}
    recipe = choose_recipe(**budget)
    planned = planned_steps(300, 0.75, None, recipe.max_tokens)
    assert (planned, recipe.warmup) == (270, 68)  # a quarter of the expected steps
    line = describe(recipe, 128, {}, describe_budget(**budget), planned)
    rates = [  # update s runs with the share of the budget its s - 1 forerunners left
        linear_decay_lr(s, (s - 1) / planned, 128, recipe.warmup, recipe.lr_factor)
        for s in range(1, int(planned) + 1)
    ]
    scale = noam_lr(recipe.warmup, 128, recipe.warmup, recipe.lr_factor)
    assert max(rates) < 0.8 * scale  # far below the ramp's end value
    assert f"rises for the first 68 steps (to about {max(rates):.1e} at update 68," in line
    assert f"{scale:.1e}," not in line.split("(to about")[1].split(")")[0]
    # Without the planned steps the line names no top it cannot know.
    assert "times the share of the budget still left" in describe(
        recipe, 128, {}, describe_budget(**budget)
    )


def test_the_printed_top_is_the_rate_the_trainer_runs(tokenizer):
    """What the recipe line says of the linear schedule (its formula, its top and the update
    that gets it) is what the trainer does: update s runs at min(1, s/warmup) x (1 - (s - 1)
    / budget) of the scale, so the first update gets the whole ramp value, the last 1/budget
    of it, and the rate after the budget is 0. Fails if either side changes alone."""
    import torch

    from transformer_lib import Transformer, TransformerConfig
    from transformer_lib.pipeline.batching import TranslationDataset
    from transformer_lib.pipeline.objectives import noam_lr
    from transformer_lib.pipeline.recipe import linear_top, planned_steps
    from transformer_lib.pipeline.training import Trainer, TrainingConfig

    steps, d_model, given = 16, 32, {"warmup": 6}
    recipe = choose_recipe(max_steps=steps)
    torch.manual_seed(0)
    config = TransformerConfig.tiny(
        tokenizer.vocab_size, d_model=d_model, n_heads=2, d_ff=64, n_encoder_layers=1,
        n_decoder_layers=1,
    )  # fmt: skip
    settings = {**recipe.trainer_settings(), **given, "max_tokens": 64}
    cfg = TrainingConfig(**settings, max_steps=steps, device="cpu", progress=False, eval_every=0)
    pairs = [("Tom is lazy.", "Tom ist faul."), ("I am tired.", "Ich bin müde."), ("Go!", "Geh!")]
    trainer = Trainer(Transformer(config), TranslationDataset(pairs * 4, tokenizer), None, cfg)
    used = []  # the rate of every update, as it is made
    trainer.optimizer.register_step_pre_hook(lambda opt, *_: used.append(opt.param_groups[0]["lr"]))
    trainer.fit()
    assert len(used) == steps

    warmup, scale = given["warmup"], noam_lr(6, d_model, 6, recipe.lr_factor)
    formula = [scale * min(1, s / warmup) * (1 - (s - 1) / steps) for s in range(1, steps + 1)]
    assert used == pytest.approx(formula, rel=1e-12)
    at, top = linear_top(d_model, warmup, recipe.lr_factor, steps)
    assert (at, top) == (used.index(max(used)) + 1, pytest.approx(max(used), rel=1e-12))
    planned = planned_steps(steps, None, None, settings["max_tokens"])
    line = describe(recipe, d_model, given, describe_budget(max_steps=steps), planned)
    assert f"runs at {scale:.1e} x min(1, s/{warmup}) x (1 - the share of the budget " in line
    assert "used by the s - 1 updates before it)" in line
    assert f"(to about {max(used):.1e} at update {at}, as the {at - 1} before it use " in line
    assert f"use {(at - 1) / steps:.0%} of a budget of about {steps} steps)" in line
    assert used[0] == pytest.approx(scale / warmup) and used[-1] == pytest.approx(scale / steps)
    assert trainer.scheduler.get_last_lr()[0] == 0.0  # after the budget


def _train(tmp_path, *extra, pairs: int = 30):
    corpus = tmp_path / "deu.txt"
    corpus.write_text("".join(f"Tom is {i}.\tTom ist {i}.\n" for i in range(pairs)))
    out = tmp_path / "run"
    args = ["train", "--corpus", str(corpus), "--out", str(out), "--no-progress"]
    args += ["--final-bleu", "none", "--eval-every", "0", "--max-steps", "2", *extra]
    return main(args), out


def test_train_prints_and_records_the_recipe(tmp_path, capsys):
    code, out = _train(tmp_path)
    assert code == 0
    printed = capsys.readouterr().out
    assert "recipe for 2 steps (short budget)" in printed
    state = load_checkpoint(out / "checkpoint.pt")["state"]
    chosen = state["run"]["recipe"]["chosen"]
    assert state["run"]["recipe"]["given"] == {}
    for key in RECIPE_KEYS:  # what the run used is what the recipe chose
        used = state["run"][key] if key == "average" else state["training_config"][key]
        assert used == chosen[key], key


def test_flags_override_the_recipe_and_are_recorded(tmp_path, capsys):
    code, out = _train(tmp_path, "--schedule", "noam", "--max-tokens", "256")
    assert code == 0
    assert "As given: --max-tokens 256, --schedule noam." in capsys.readouterr().out
    state = load_checkpoint(out / "checkpoint.pt")["state"]
    assert state["training_config"]["schedule"] == "noam"
    assert state["training_config"]["max_tokens"] == 256
    assert state["run"]["recipe"]["given"] == {"max_tokens": 256, "schedule": "noam"}


def test_a_resumed_run_keeps_its_schedule(tmp_path, capsys):
    code, out = _train(tmp_path, "--schedule", "linear")
    assert code == 0
    assert main(["train", "--out", str(out), "--resume", "--max-steps", "3", "--no-progress",
                 "--final-bleu", "none"]) == 0  # fmt: skip
    assert load_checkpoint(out / "checkpoint.pt")["state"]["training_config"]["schedule"] == (
        "linear"
    )
    code = main(["train", "--out", str(out), "--resume", "--max-steps", "4", "--schedule", "noam"])
    assert code == 2
    assert "--schedule noam conflicts" in capsys.readouterr().err


def test_unknown_schedule_is_a_usage_error(tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["train", "--out", str(tmp_path / "r"), "--max-steps", "2", "--schedule", "cosine"])
    assert exc.value.code == 2
    assert "invalid choice: 'cosine'" in capsys.readouterr().err


@pytest.mark.parametrize(
    "budget, warmup",
    [({"cpu_minutes": 5}, 400), ({"max_steps": 2000}, 400), ({"max_steps": 400}, 100),
     ({"minutes": 0.75}, 68), ({"max_steps": 20}, 10)],
)  # fmt: skip
def test_short_runs_warm_up_for_at_most_a_quarter_and_keep_the_peak(budget, warmup):
    from transformer_lib.pipeline.objectives import noam_lr
    from transformer_lib.pipeline.recipe import SHORT_PEAK_LR

    recipe = choose_recipe(**budget)
    assert recipe.warmup == warmup
    peak = noam_lr(recipe.warmup, 128, recipe.warmup, recipe.lr_factor)
    assert peak == pytest.approx(SHORT_PEAK_LR, rel=1e-3)


def test_long_budgets_average_the_last_five_checkpoints():
    long = choose_recipe(max_steps=7000)
    assert (long.average, long.checkpoint_every) == (5, 250)  # the shipped run's spacing
    assert choose_recipe(cpu_minutes=10).average == 0


def test_train_average_writes_and_scores_the_averaged_model(tmp_path, capsys):
    code, out = _train(
        tmp_path, "--max-steps", "4", "--average", "2", "--checkpoint-every", "1",
        "--final-bleu", "valid", pairs=300,
    )  # fmt: skip
    assert code == 0
    printed = capsys.readouterr().out
    assert "the last 2 checkpoints averaged into averaged.pt" in printed
    assert "averaged the last 2 checkpoints (steps 3-4)" in printed
    averaged = load_checkpoint(out / "averaged.pt")
    assert [e["step"] for e in averaged["state"]["averaged_from"]] == [3, 4]
    import json

    summary = json.loads((out / "summary.json").read_text())
    assert summary["averaged"] == {"file": "averaged.pt", "steps": [3, 4]}


def test_average_needs_enough_kept_checkpoints(tmp_path, capsys):
    code, _ = _train(tmp_path, "--average", "5", "--keep-checkpoints", "2")
    assert code == 2
    assert "--average 5 averages the last 5 step checkpoints" in capsys.readouterr().err


def test_trainer_settings_build_a_training_config():
    from transformer_lib.pipeline.training import TrainingConfig

    short = TrainingConfig(**choose_recipe(cpu_minutes=5).trainer_settings(), cpu_minutes=5)
    assert (short.schedule, short.max_tokens, short.keep_checkpoints) == ("linear", 1024, 0)
    long = TrainingConfig(**choose_recipe(max_steps=7000).trainer_settings(), max_steps=7000)
    assert (long.schedule, long.keep_checkpoints, long.checkpoint_every) == ("noam", 5, 250)
