"""The command line checks every argument before any work, and says what is wrong in one line."""

from __future__ import annotations

import dataclasses
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from transformer_lib.__main__ import main
from transformer_lib.pipeline import cli
from transformer_lib.pipeline.training import TrainingConfig, _Progress

REPO_ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def no_work(monkeypatch):
    """Fail the test if a command reads the corpus or loads a model: checks come first."""

    def refuse(*args, **kwargs):
        raise AssertionError("work started before the arguments were checked")

    monkeypatch.setattr(cli, "_corpus_splits", refuse)
    monkeypatch.setattr(cli, "_load_translator", refuse)
    monkeypatch.setattr("transformer_lib.pipeline.corpus.read_pairs", refuse)


def _one_line_error(capsys, command: str) -> str:
    captured = capsys.readouterr()
    err = captured.err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert err.startswith(f"python -m transformer_lib {command}: error: "), err
    return err.strip()


def _bad_train_args(tmp_path: Path) -> list[tuple[list[str], str]]:
    a_file = tmp_path / "a_file"
    a_file.write_text("not a folder")
    run = str(tmp_path / "run")
    cases = [
        (["--out", run, "--minutes", "0"], "--minutes must be > 0"),
        (["--out", run, "--minutes", "-1"], "--minutes must be > 0"),
        (["--out", run, "--max-steps", "0"], "--max-steps must be >= 1"),
        (["--out", run, "--cpu-minutes", "0"], "--cpu-minutes must be > 0"),
        (["--out", str(a_file), "--max-steps", "5"], "--out"),
        (["--out", str(a_file / "run"), "--max-steps", "5"], "--out"),  # under a file
        (["--out", run, "--max-steps", "5", "--device", "banana"], "--device"),
        (["--out", run, "--max-steps", "5", "--label-smoothing", "1.5"], "--label-smoothing"),
        (["--out", run, "--max-steps", "5", "--prefix-lm"], "--prefix-lm"),
        (["--out", run, "--max-steps", "5", "--layers", "3"], "--layers"),
        (["--out", run, "--max-steps", "5", "--max-tokens", "2"], "--max-tokens"),
        (["--out", run, "--max-steps", "5", "--dropout", "1"], "--dropout"),
        (["--out", run, "--max-steps", "5", "--d-ff", "0"], "--d-ff"),
        (["--out", run, "--max-steps", "5", "--checkpoint-minutes", "-1"], "--checkpoint-minutes"),
        (["--out", run, "--max-steps", "5", "--keep-checkpoints", "-2"], "--keep-checkpoints"),
        (["--out", run], "--minutes, --max-steps or --cpu-minutes"),
    ]
    if Path("/proc/self").is_dir():  # not writable even for root
        cases.append((["--out", "/proc/transformer-book-test/run", "--max-steps", "5"], "--out"))
    return cases


def test_bad_train_arguments_fail_before_any_work(tmp_path, capsys, no_work):
    for args, expected in _bad_train_args(tmp_path):
        start = time.process_time()  # CPU time: independent of how busy the machine is
        assert main(["train", *args]) == 2, args
        err = _one_line_error(capsys, "train")
        assert expected in err, (args, err)
        assert time.process_time() - start < 3, args
    assert not (tmp_path / "run").exists()  # nothing was created


def test_cuda_without_gpu_is_refused(tmp_path, capsys, no_work):
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    assert (
        main(["train", "--out", str(tmp_path / "r"), "--max-steps", "5", "--device", "cuda"]) == 2
    )
    err = _one_line_error(capsys, "train")
    assert err.endswith("--device: CUDA was requested but no GPU is visible; use --device cpu")
    assert main(["translate", "Hi.", "--device", "cuda"]) == 2
    assert "--device cpu" in _one_line_error(capsys, "translate")


@pytest.mark.parametrize(
    "args, expected",
    [
        (["--json", "{dir}"], "--json: {dir} is a directory"),
        (["--json", "{file}/scores.json"], "--json"),
        (["--beam", "0"], "--beam must be >= 1"),
        (["--limit", "0"], "--limit must be >= 1"),
        (["--alpha", "-1"], "--alpha must be >= 0"),
        (["--checkpoint", "{dir}/missing.pt"], "--checkpoint: no file at"),
        (["--pairs", "{dir}/missing.tsv"], "--pairs: no file at"),
        (["--device", "banana"], "--device"),
    ],
)
def test_bad_evaluate_arguments_fail_before_any_work(tmp_path, capsys, no_work, args, expected):
    a_file = tmp_path / "a_file"
    a_file.write_text("x")
    fill = {"dir": str(tmp_path), "file": str(a_file)}
    args = [a.format(**fill) for a in args]
    assert main(["evaluate", *args]) == 2
    assert expected.format(**fill) in _one_line_error(capsys, "evaluate")


@pytest.mark.parametrize(
    "flag, value, choices",
    [("--activation", "tanh", "'relu', 'gelu', 'swiglu'"), ("--norm", "batch", "'layer', 'rms'")],
)
def test_an_unknown_architecture_choice_names_the_choices(tmp_path, capsys, flag, value, choices):
    with pytest.raises(SystemExit) as exc:
        main(["train", "--out", str(tmp_path / "r"), "--max-steps", "3", flag, value])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"argument {flag}: invalid choice: '{value}'" in err
    assert choices in err and not (tmp_path / "r").exists()


def test_bad_snapshot_steps_are_a_usage_error(tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["train", "--out", str(tmp_path / "r"), "--max-steps", "3", "--snapshot-at", "a,b"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--snapshot-at" in err and "0,100,500" in err


def test_a_bad_argument_in_a_real_process_is_one_line(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "transformer_lib", "train", "--out", str(tmp_path / "r"),
         "--minutes", "0"],
        capture_output=True, text=True, cwd=REPO_ROOT, timeout=600,
    )  # fmt: skip
    assert result.returncode == 2
    assert result.stderr == (
        "python -m transformer_lib train: error: --minutes must be > 0, got 0.0\n"
    )
    # Nothing was loaded: reading the corpus prints "corpus ...: read N pairs" first. (No
    # wall-clock bound: on a busy machine the import of torch alone can take a minute;
    # the in-process tests above check that no work starts.)
    assert result.stdout == ""
    assert not (tmp_path / "r").exists()


# --------------------------------------------------------------------------------------
# Messages that name their cause
# --------------------------------------------------------------------------------------


def test_missing_checkpoint_from_the_environment_names_the_variable(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("TRANSFORMER_BOOK_CHECKPOINT", str(tmp_path / "missing.pt"))
    assert main(["translate", "Tom is lazy."]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "TRANSFORMER_BOOK_CHECKPOINT" in err and "missing.pt" in err


def test_missing_corpus_names_the_flag(tmp_path, capsys):
    missing = tmp_path / "nope" / "deu.txt"
    code = main(["train", "--out", str(tmp_path / "r"), "--max-steps", "1"] + [
        "--corpus", str(missing), "--no-progress"
    ])  # fmt: skip
    assert code == 2  # a bad argument, found before any work
    err = _one_line_error(capsys, "train")
    assert "--corpus" in err and str(missing) in err
    assert not (tmp_path / "r").exists()


# --------------------------------------------------------------------------------------
# Help and progress
# --------------------------------------------------------------------------------------


def _help(command: str, capsys, monkeypatch) -> str:
    monkeypatch.setenv("COLUMNS", "200")  # no line wrapping inside "(default: ...)"
    with pytest.raises(SystemExit) as exc:
        main([command, "--help"])
    assert exc.value.code == 0
    return capsys.readouterr().out


def _option_entries(help_text: str) -> dict[str, str]:
    """``{"--warmup": "its help text", ...}`` from an argparse help page."""
    entries: dict[str, str] = {}
    current = None
    for line in help_text.split("options:", 1)[1].splitlines():
        m = re.match(r"  (-\w, )?(--[\w-]+)", line)
        if m:
            current = m.group(2)
            entries[current] = line
        elif current and line.startswith("    "):
            entries[current] += " " + line.strip()
    return entries


def test_train_help_states_each_default_once(capsys, monkeypatch):
    text = _help("train", capsys, monkeypatch)
    entries = _option_entries(text)
    assert {"--max-tokens", "--warmup", "--resume", "--force", "--snapshot-at"} <= set(entries)
    for entry in entries.values():
        assert entry.count("default") <= 1, entry
        assert "(default: None)" not in entry, entry
    # the defaults shown are the ones used; the recipe's settings come from the budget
    d = cli.TRAIN_DEFAULTS
    for option, key in [("--eval-every", "eval_every"), ("--log-every", "log_every"),
                        ("--label-smoothing", "label_smoothing"), ("--seed", "seed")]:  # fmt: skip
        assert f"(default: {d[key]})" in entries[option], option
    for option in ("--max-tokens", "--schedule", "--warmup", "--lr-factor"):
        assert "from the budget" in entries[option], option


def test_train_defaults_are_the_training_config_defaults():
    defaults = {f.name: f.default for f in dataclasses.fields(TrainingConfig)}
    shared = set(cli.TRAIN_DEFAULTS) & set(defaults)
    assert {"max_tokens", "warmup", "eval_every", "checkpoint_minutes", "snapshot_at"} <= shared
    for key in shared:
        assert cli.TRAIN_DEFAULTS[key] == defaults[key], key


def test_evaluate_help(capsys, monkeypatch):
    text = _help("evaluate", capsys, monkeypatch)
    assert "default: test" in text and "(default: None)" not in text
    for entry in _option_entries(text).values():
        assert entry.count("default") <= 1, entry


@pytest.mark.parametrize(
    "budget",
    [dict(max_steps=50), dict(minutes=2.0), dict(cpu_minutes=1.5), dict(minutes=1.0, max_steps=7)],
)
def test_progress_bar_always_has_a_total(budget):
    cfg = TrainingConfig(progress=True, **budget)
    bar = _Progress(cfg, 0)
    try:
        assert bar.bar.total and bar.bar.total > 0
        if "max_steps" in budget:
            assert bar.bar.total == budget["max_steps"]
        else:  # seconds of the budget
            assert bar.bar.total == round(60 * (budget.get("minutes") or budget["cpu_minutes"]))
        bar.update()
    finally:
        bar.close()
