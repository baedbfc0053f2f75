"""data/debugging_runs.json (chapter 13's symptoms of every planted bug) belongs to this code.

The file is written by ``scripts/debugging_runs.py``. These tests check that it has a row for
every planted bug and only for those, that it was made with the script's settings and the
shipped tokenizer and corpus, that re-training the first steps of stored runs gives their
stored losses, and that the chapter's figures draw what the rows hold.
"""

from __future__ import annotations

import io
import math
import sys
from pathlib import Path

import matplotlib
import pytest
import torch

matplotlib.use("Agg")

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import debugging_runs as script  # noqa: E402

from transformer_lib.pipeline.check_kit import CHECKS, PLANTED_BUGS  # noqa: E402
from transformer_lib.pipeline.corpus import find_corpus  # noqa: E402
from transformer_lib.pipeline.tokenizer import DEFAULT_TOKENIZER_PATH  # noqa: E402
from transformer_lib.views import debugging  # noqa: E402

torch.set_num_threads(1)


@pytest.fixture(scope="module")
def stored():
    return debugging.load_runs()


@pytest.fixture(scope="module")
def runs(stored):
    return stored["runs"]


def test_one_row_per_run_and_every_bug_id_is_a_planted_bug(runs):
    assert list(runs) == script.run_names()
    assert set(runs) - {script.HEALTHY, script.HEALTHY_DO} == set(PLANTED_BUGS)
    for name, run in runs.items():
        if name in (script.HEALTHY, script.HEALTHY_DO):
            assert run["bug"] is None, name
        else:
            assert run["bug"] == name and run["bug"] in PLANTED_BUGS, name
        assert run["arch"] == script.arch_of(name), name
        assert run["trained"] == (name not in script.DECODE_ONLY), name
        assert run["model_of"] == script.DECODE_ONLY.get(name, name), name


def test_the_file_was_made_with_the_scripts_settings_and_the_shipped_data(stored):
    s = stored["settings"]
    assert {k: s[k] for k in script.SETTINGS} == script.SETTINGS
    assert s["subset"] == script.SUBSET and s["beam"] == script.BEAM
    assert s["decoder_only"] == script.DECODER_ONLY
    assert s["adam"] == {"betas": [0.9, 0.98], "eps": 1e-9}  # the paper's, as make_optimizer
    assert s["map_sentence"] == list(script.MAP_SENTENCE)
    assert s["tokenizer_sha256"] == script.sha256(Path(DEFAULT_TOKENIZER_PATH)), (
        "the tokenizer changed since the runs: run `python scripts/debugging_runs.py`"
    )
    assert s["corpus_sha256"] == script.sha256(Path(find_corpus()))
    assert s["cpu_minutes"] > 0 and s["wall_minutes"] > 0


def test_every_run_has_its_whole_curve_scores_and_maps(stored, runs):
    s = stored["settings"]
    steps = list(range(s["log_every"], s["max_steps"] + 1, s["log_every"]))
    for name, run in runs.items():
        assert [step for step, _ in run["loss"]] == steps, name
        assert run["steps"] == s["max_steps"], name
        assert all(math.isfinite(loss) for _, loss in run["loss"]), name
        every = s["eval_every"]
        assert [v[0] for v in run["val"]] == list(range(every, s["max_steps"] + 1, every))
        assert 0 <= run["bleu"] <= 100 and 0 <= run["chrf"] <= 100, name
        assert [e["source"] for e in run["examples"]] == [
            script.MAP_SENTENCE[0],
            script.EXTRA_EXAMPLE,
        ]
        kinds = (
            ("encoder", "decoder", "cross") if run["arch"] == "encoder-decoder" else ("decoder",)
        )
        for kind in kinds:
            m = run["attention"][kind]
            w = torch.tensor(m["weights"])
            assert w.shape == (len(m["queries"]), len(m["keys"])), (name, kind)
    assert {n for n, r in runs.items() if "beam_bleu" in r} == script.BEAM_RUNS


def test_the_healthy_maps_are_attention_weights_that_ignore_padding(runs):
    maps = runs[script.HEALTHY]["attention"]
    for kind in ("encoder", "decoder", "cross"):
        m = maps[kind]
        w = torch.tensor(m["weights"])  # (Tq, Tk), rounded to 3 decimals
        assert torch.allclose(w.sum(-1), torch.ones(w.size(0)), atol=0.01), kind
        pads = [j for j, t in enumerate(m["keys"]) if t == "<pad>"]
        assert len(pads) == (script.MAP_PADS if kind != "decoder" else 0), kind
        assert w[:, pads].abs().max().item() == 0 if pads else True, kind
    assert maps["decoder"]["keys"][0] == "<bos>"
    assert torch.tensor(maps["decoder"]["weights"]).triu(1).abs().max() == 0  # causal


def test_decode_only_bugs_share_their_healthy_runs_training(runs):
    for bug, base in script.DECODE_ONLY.items():
        row, healthy = runs[bug], runs[base]
        for key in ("loss", "val", "val_loss", "val_nll", "steps", "train_cpu_s"):
            assert row[key] == healthy[key], (bug, key)


def test_the_kit_fails_on_each_trained_bug_and_passes_on_the_healthy_models(runs):
    for name, run in runs.items():
        kit = run["kit"]
        assert set(kit["failed"]) <= set(CHECKS), name
        if run["bug"] is None:
            assert kit["failed"] == [] and kit["passed"] == len(CHECKS) - len(kit["skipped"])
            continue
        check, cause = PLANTED_BUGS[name].caught_by[0]
        assert check in kit["failed"], f"{name}: the trained model passes {check}"
        assert cause in kit["causes"][check] or check in ("causality", "padding_invariance"), name


def test_the_bugs_that_cheat_lower_the_training_loss_but_not_bleu(runs):
    """What the chapter says about them, measured: copying the answer makes the training
    loss fall below the healthy model's, and the translations fall apart."""
    healthy = runs[script.HEALTHY]
    for name in ("causal_mask_off_by_one", "unshifted_target"):
        assert runs[name]["loss"][-1][1] < healthy["loss"][-1][1], name
        assert runs[name]["bleu"] < healthy["bleu"] / 2, name
    # The unshifted target is scored honestly by the library's validation loss.
    assert runs["unshifted_target"]["val_loss"] > healthy["val_loss"]


@pytest.mark.slow
@pytest.mark.parametrize("name", [script.HEALTHY, "causal_mask_off_by_one"])
def test_the_stored_losses_come_from_this_code(stored, runs, name):
    """Re-train the first logged steps of a run: the same mean loss as the stored curve."""
    made_with = stored["settings"]["torch"]
    if torch.__version__.split("+")[0] != made_with.split("+")[0]:
        pytest.skip(f"the runs were made with torch {made_with}; float results differ by version")
    every = stored["settings"]["log_every"]
    trainer = script.train(name, steps=every)
    (first,) = [e for e in trainer.log if "loss" in e]
    step, loss = runs[name]["loss"][0]
    assert first["step"] == step == every
    assert first["loss"] == pytest.approx(loss, abs=2e-3), (first["loss"], loss)


# ---- the chapter's figures read the rows ------------------------------------------------------
def test_the_symptom_figure_draws_the_stored_curves_and_maps(runs):
    fig = debugging.plot_symptoms(runs, "causal_mask_off_by_one", "decoder")
    curves, healthy_map, buggy_map = fig.axes[:3]
    stored = runs["causal_mask_off_by_one"]["loss"]
    lines = {ln.get_label(): ln for ln in curves.lines}
    assert list(lines["with the bug"].get_ydata()) == [loss for _, loss in stored]
    healthy = runs["healthy"]["loss"]
    assert list(lines["healthy"].get_ydata()) == [loss for _, loss in healthy]
    assert curves.get_xlabel() == "training step" and "loss" in curves.get_ylabel()
    m = runs["causal_mask_off_by_one"]["attention"]["decoder"]
    # rows = queries; the two maps have the same, labelled once, on the healthy map
    assert m["queries"] == runs["healthy"]["attention"]["decoder"]["queries"]
    assert [t.get_text() for t in healthy_map.get_yticklabels()] == m["queries"]
    assert [t.get_text() for t in buggy_map.get_xticklabels()] == m["keys"]
    assert healthy_map.get_title() == "healthy" and buggy_map.get_title() == "with the bug"
    assert "causal_mask_off_by_one" in fig.get_suptitle()


def test_the_scoreboard_sorts_the_runs_by_bleu(runs):
    fig = debugging.plot_scoreboard(runs)
    labels = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert len(labels) == len(runs)
    names = [n for n in runs]
    order = sorted(names, key=lambda n: runs[n]["bleu"])
    assert labels[order.index(script.HEALTHY)].startswith("healthy (no bug)")
    assert all(ax.get_xlabel() for ax in fig.axes[:2])


def test_describe_symptoms_quotes_the_stored_numbers(runs):
    text = debugging.describe_symptoms(runs, "unshifted_target")
    run, healthy = runs["unshifted_target"], runs[script.HEALTHY]
    assert f"**{run['loss'][-1][1]:.2f}**" in text and f"{healthy['bleu']:.1f}" in text
    decode = debugging.describe_symptoms(runs, "cache_not_reordered")
    assert "acts only when the model decodes" in decode and "beam search" in decode
    assert debugging.baseline_of(runs, "unshifted_target_decoder_only") == script.HEALTHY_DO


def test_the_symptom_figure_is_readable_in_the_text_column(runs):
    """At 1280 px the three panels share a column of about 630 CSS px: the smallest text,
    scaled down with the image, stays near 12 px (the browser test asks for 9)."""
    from transformer_lib.views.text_size import recording_text_sizes

    fig = debugging.plot_symptoms(runs, "padding_mask_inverted", "encoder")
    png = io.BytesIO()
    with recording_text_sizes() as sizes:
        fig.savefig(png, format="png", dpi=100, bbox_inches="tight")  # as the page's
    width = int.from_bytes(png.getvalue()[16:20], "big")  # the PNG's width in pixels
    assert min(sizes) * 630 / width >= 11
    healthy_map, buggy_map = fig.axes[1:3]  # the same queries: labelled once, on the left
    assert healthy_map.get_ylabel() and not buggy_map.get_ylabel()


def test_the_loss_curves_fit_a_phone_column(runs):
    """One panel gets no stacked phone version, so Figure 13.1 is drawn narrow enough for
    a phone's column to show it whole with its smallest text at 9 CSS px."""
    from transformer_lib.views.phone_layout import MIN_TEXT_PX, PHONE_COLUMN_PX
    from transformer_lib.views.text_size import recording_text_sizes

    fig = debugging.plot_loss_curves(
        runs, ["single_frequency_pe"], title="Training loss, single-frequency positional encoding"
    )  # the chapter's title
    png = io.BytesIO()
    with recording_text_sizes() as sizes:
        fig.savefig(png, format="png", dpi=100, bbox_inches="tight")  # as the page's
    width = int.from_bytes(png.getvalue()[16:20], "big")
    assert min(sizes) * PHONE_COLUMN_PX / width >= MIN_TEXT_PX
