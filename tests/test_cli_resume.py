"""Resuming a run from the command line: the corpus it trained on, settings it used, a
budget already spent, and the speed line of a short session."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from transformer_lib.__main__ import main
from transformer_lib.pipeline import cli, cli_checks
from transformer_lib.pipeline.checkpoints import load_checkpoint
from transformer_lib.pipeline.corpus import SHIPPED_CORPUS, corpus_sha256

QUIET = ["--no-progress", "--final-bleu", "none", "--max-tokens", "256", "--eval-every", "0"]


def write_pairs(path: Path, english: str, german: str) -> Path:
    """78 short pairs with the given sentence frames (the shipped tokenizer covers them)."""
    path.write_text(
        "".join(
            f"{english} {w}{v}.\t{german} {w}{v}.\n"
            for w in "abcdefghijklmnopqrstuvwxyz"
            for v in "xyz"
        ),
        encoding="utf-8",
    )
    return path


@pytest.fixture(scope="module")
def good_run(tmp_path_factory):
    """A two-step run trained with --corpus good.tsv (trained once for this module)."""
    tmp = tmp_path_factory.mktemp("resume")
    corpus = write_pairs(tmp / "good.tsv", "Tom is", "Tom ist")
    out = tmp / "run"
    args = ["train", "--out", str(out), "--corpus", str(corpus), "--max-steps", "2", *QUIET]
    assert main([*args, "--dropout", "0.2"]) == 0
    return out, corpus


@pytest.fixture
def run_copy(good_run, tmp_path):
    out, corpus = good_run
    shutil.copytree(out, tmp_path / "run")
    return tmp_path / "run", corpus


@pytest.fixture
def corpus_reads(monkeypatch):
    """The corpus files the command reads, in order."""
    seen: list[Path] = []
    splits = cli._corpus_splits

    def spy(path):
        seen.append(Path(path))
        return splits(path)

    monkeypatch.setattr(cli, "_corpus_splits", spy)
    return seen


@pytest.fixture
def no_corpus_read(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("the corpus was read before the arguments were checked")

    monkeypatch.setattr(cli, "_corpus_splits", refuse)


def one_line_error(capsys) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert err.startswith("python -m transformer_lib train: error: "), err
    return err.strip()


# ---- the corpus --------------------------------------------------------------------------


def test_a_run_records_its_corpus(good_run):
    out, corpus = good_run
    recorded = load_checkpoint(out / "checkpoint.pt")["state"]["run"]["corpus"]
    assert recorded == {
        "given": str(corpus),
        "path": str(corpus.absolute()),
        "sha256": corpus_sha256(corpus),
    }


def test_resume_trains_on_the_runs_own_corpus(run_copy, corpus_reads, capsys, monkeypatch):
    out, corpus = run_copy
    monkeypatch.delenv("TRANSFORMER_BOOK_CORPUS", raising=False)
    # the command the tool prints, without --corpus: the run's corpus, not the shipped one
    assert main(["train", "--out", str(out), "--resume", "--max-steps", "3", *QUIET]) == 0
    assert corpus_reads == [corpus.absolute()]
    assert "train 69 pairs" in capsys.readouterr().out  # the 78 pairs of good.tsv, split
    assert load_checkpoint(out / "checkpoint.pt")["state"]["run"]["corpus"]["path"] == str(
        corpus.absolute()
    )


def test_resume_with_another_corpus_is_refused(run_copy, capsys, no_corpus_read, tmp_path):
    out, corpus = run_copy
    other = write_pairs(tmp_path / "other.tsv", "I see", "Ich sehe")
    args = ["train", "--out", str(out), "--resume", "--max-steps", "3", "--corpus", str(other)]
    assert main([*args, *QUIET]) == 2
    err = one_line_error(capsys)
    assert f"--corpus {other} conflicts with the run being resumed" in err
    assert f"which trained on {corpus}" in err  # the run's corpus, as it was given
    assert load_checkpoint(out / "checkpoint.pt")["state"]["step"] == 2  # nothing trained


def test_resume_with_a_copy_of_the_same_corpus_is_accepted(run_copy, corpus_reads, tmp_path):
    out, corpus = run_copy
    copy = shutil.copy(corpus, tmp_path / "moved.tsv")
    args = ["train", "--out", str(out), "--resume", "--max-steps", "3", "--corpus", str(copy)]
    assert main([*args, *QUIET]) == 0
    assert corpus_reads == [Path(copy)]
    recorded = load_checkpoint(out / "checkpoint.pt")["state"]["run"]["corpus"]
    assert recorded["path"] == str(Path(copy).absolute())  # found there next time
    assert recorded["sha256"] == corpus_sha256(corpus)


def test_missing_or_changed_corpus_of_a_resumed_run(run_copy, capsys, monkeypatch):
    out, corpus = run_copy
    ckpt_path = out / "checkpoint.pt"
    ckpt = load_checkpoint(ckpt_path)
    elsewhere = out.parent / "elsewhere.tsv"
    ckpt["state"]["run"]["corpus"] = {**ckpt["state"]["run"]["corpus"], "path": str(elsewhere)}
    _resave(ckpt, ckpt_path)

    def refuse(*args, **kwargs):
        raise AssertionError("a refused resume read its corpus")

    monkeypatch.setattr(cli, "_corpus_splits", refuse)
    args = ["train", "--out", str(out), "--resume", "--max-steps", "3", *QUIET]
    assert main(args) == 2
    err = one_line_error(capsys)
    assert f"{elsewhere} is missing" in err and "--corpus PATH" in err

    elsewhere.write_text(corpus.read_text(encoding="utf-8") + "Go.\tGeh.\n", encoding="utf-8")
    assert main(args) == 2
    err = one_line_error(capsys)
    assert f"{elsewhere} has changed since" in err and "restore the file" in err


def _resave(ckpt: dict, path: Path) -> None:
    import torch

    torch.save(ckpt, path)


def test_checkpoints_without_a_recorded_corpus_resume_on_the_shipped_one(tmp_path, monkeypatch):
    monkeypatch.delenv("TRANSFORMER_BOOK_CORPUS", raising=False)
    path, record, note = cli_checks.resume_corpus(None, {}, tmp_path / "old.pt", tmp_path)
    assert path == SHIPPED_CORPUS
    assert record["given"] == "shipped" and record["sha256"] == corpus_sha256(SHIPPED_CORPUS)
    assert note.startswith(f"note: {tmp_path / 'old.pt'} does not record which corpus")
    assert "\n" not in note and str(SHIPPED_CORPUS) in note


def test_old_checkpoint_resumes_with_a_note(run_copy, corpus_reads, capsys, monkeypatch):
    """Through the command line (the shipped corpus replaced by the tiny one, for speed)."""
    out, corpus = run_copy
    ckpt = load_checkpoint(out / "checkpoint.pt")
    del ckpt["state"]["run"]["corpus"]  # as checkpoints were written before
    _resave(ckpt, out / "checkpoint.pt")
    monkeypatch.setenv("TRANSFORMER_BOOK_CORPUS", str(corpus))  # find_corpus() finds it
    assert main(["train", "--out", str(out), "--resume", "--max-steps", "3", *QUIET]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith(f"note: {out / 'checkpoint.pt'} does not record which corpus")
    assert corpus_reads == [corpus]
    assert load_checkpoint(out / "checkpoint.pt")["state"]["run"]["corpus"]["sha256"] == (
        corpus_sha256(corpus)
    )


# ---- settings ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "flags",
    [
        ["--dropout", "0.2"],
        ["--tokenizer", "data/tokenizer.json"],
        ["--clip-norm", "1"],
        ["--activation", "relu"],
        ["--norm", "layer"],
    ],
)
def test_resume_accepts_the_runs_own_values(run_copy, flags, monkeypatch):
    out, _ = run_copy
    ckpt = load_checkpoint(out / "checkpoint.pt")
    if flags[0] == "--tokenizer":  # the file the run embedded, wherever the shipped one is now
        tok = out.parent / "own_tokenizer.json"
        tok.write_text(ckpt["tokenizer"]["json"], encoding="utf-8")
        flags = ["--tokenizer", str(tok)]
    args = ["train", "--out", str(out), "--resume", "--max-steps", "3", *flags, *QUIET]
    assert main(args) == 0
    assert load_checkpoint(out / "checkpoint.pt")["state"]["step"] == 3


@pytest.mark.parametrize(
    "flags, used",
    [
        (["--dropout", "0.3"], "which used 0.2"),
        (["--amp"], "which used no --amp"),
        (["--warmup", "9"], "which used 10"),  # the budget recipe's shortest warm-up
        (["--checkpoint-every", "5"], "which used none (the default)"),
        (["--preset", "base"], "which used tiny"),
        (["--norm-first"], "which used no --norm-first"),
        (["--activation", "swiglu"], "which used relu"),
        (["--norm", "rms"], "which used layer"),
        (["--d-ff", "344"], "which used 512"),
    ],
)
def test_resume_conflicts_name_the_runs_value(run_copy, capsys, no_corpus_read, flags, used):
    out, _ = run_copy
    args = ["train", "--out", str(out), "--resume", "--max-steps", "3", *flags, *QUIET]
    assert main(args) == 2
    err = one_line_error(capsys)
    assert f"error: {' '.join(flags)} conflicts with the run being resumed" in err
    assert used in err


def test_train_builds_the_variant_the_flags_ask_for_and_resume_keeps_it(tmp_path, capsys):
    from torch import nn

    from transformer_lib.pipeline.checkpoints import load_model

    corpus = write_pairs(tmp_path / "pairs.tsv", "Tom is", "Tom ist")
    out = tmp_path / "variant"
    flags = ["--norm-first", "--activation", "swiglu", "--norm", "rms", "--d-ff", "344"]
    args = ["train", "--out", str(out), "--corpus", str(corpus), *QUIET]
    assert main([*args, "--max-steps", "2", *flags]) == 0
    assert "tiny preset, pre-LN, swiglu FFN, RMSNorm, " in capsys.readouterr().out
    config = load_checkpoint(out / "checkpoint.pt")["config"]
    assert (config["norm_first"], config["activation"], config["norm"]) == (True, "swiglu", "rms")
    assert config["d_ff"] == 344
    model, _ = load_model(out / "checkpoint.pt")
    assert isinstance(model.encoder.norm, nn.RMSNorm)  # pre-LN's final norm, of the kind asked
    assert model.decoder.layers[0].ffn.activation == "swiglu"
    resume = ["train", "--out", str(out), "--resume", *QUIET[:1], "--max-steps", "3"]
    assert main([*resume, *flags]) == 0  # the run's own values are accepted
    assert main([*resume[:-1], "4", "--norm", "layer"]) == 2
    assert "--norm layer conflicts with the run being resumed" in one_line_error(capsys)


def test_resume_with_another_tokenizer_is_refused(run_copy, capsys, no_corpus_read, tmp_path):
    from transformer_lib.pipeline.tokenizer import Tokenizer

    out, _ = run_copy
    other = Tokenizer.train(["Tom ist faul.", "Tom is lazy."] * 5, vocab_size=60)
    path = other.save(tmp_path / "other.json")
    args = ["train", "--out", str(out), "--resume", "--max-steps", "3"]
    assert main([*args, "--tokenizer", str(path), *QUIET]) == 2
    assert f"--tokenizer {path} conflicts" in one_line_error(capsys)


# ---- nothing left to do -----------------------------------------------------------------


def test_resume_with_nothing_left_to_do_says_why(run_copy, capsys, no_corpus_read):
    out, _ = run_copy
    assert main(["train", "--out", str(out), "--resume", *QUIET]) == 2  # max_steps 2 reached
    err = one_line_error(capsys)
    assert "is at step 2 and its --max-steps is 2, so there is nothing left to do" in err
    assert "--max-steps 4" in err
    assert main(["train", "--out", str(out), "--resume", "--minutes", "5", *QUIET]) == 2
    assert "--minutes limits this session only" in one_line_error(capsys)


def test_resume_with_its_cpu_budget_spent_says_why(run_copy, capsys, no_corpus_read):
    out, _ = run_copy
    ckpt = load_checkpoint(out / "checkpoint.pt")
    ckpt["state"]["training_config"].update(max_steps=None, cpu_minutes=0.001)
    ckpt["state"]["cpu_s"] = 1.0
    _resave(ckpt, out / "checkpoint.pt")
    assert main(["train", "--out", str(out), "--resume", *QUIET]) == 2
    assert "its --cpu-minutes is 0.001, so there is nothing left to do" in one_line_error(capsys)


# ---- the speed line ---------------------------------------------------------------------


def test_a_run_shorter_than_log_every_reports_its_speed(tmp_path, capsys):
    corpus = write_pairs(tmp_path / "c.tsv", "Tom is", "Tom ist")
    args = ["train", "--out", str(tmp_path / "r"), "--corpus", str(corpus), "--max-steps", "2"]
    assert main([*args, "--log-every", "25", *QUIET]) == 0
    done = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("done"))
    speed = re.search(r", ([0-9,]+) tokens/s", done)
    assert speed and int(speed.group(1).replace(",", "")) > 0, done
    assert "median 0 tokens/s" not in done
