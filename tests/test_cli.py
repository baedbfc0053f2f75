"""The command line: python -m transformer_lib train | translate | evaluate."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from transformer_lib.__main__ import main
from transformer_lib.pipeline.checkpoints import load_checkpoint
from transformer_lib.pipeline.pretrained import DEFAULT_CHECKPOINT

REPO_ROOT = Path(__file__).resolve().parents[1]

BAD_LINES_FILE = (
    "Tom is lazy.\tTom ist faul.\n"
    "Tom is lazy.\tTom ist träge.\n"
    "this line has no tab\n"
    "\n"
    "I am tired.\tIch bin müde.\n"
    "Empty German.\t\n"
    "Where is Tom?\tWo ist Tom?\n"
)


@pytest.fixture(scope="module", autouse=True)
def shipped_model():
    if not DEFAULT_CHECKPOINT.is_file():
        pytest.fail("data/model.pt is missing; it ships with the repository (data/MODEL_CARD.md).")


@pytest.mark.parametrize("command", [[], ["train"], ["translate"], ["evaluate"]])
def test_help(command, capsys):
    with pytest.raises(SystemExit) as exc:
        main([*command, "--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert "usage:" in out
    if command == ["train"]:
        for option in ("--minutes", "--max-steps", "--max-tokens", "--lr-factor", "--resume"):
            assert option in out


def test_translate_prints_german():
    # Through a real `python -m` process, as a reader would type it.
    sentences = ["Tom is lazy.", "我喜欢你。", "I like 🍕 very much.", "?!..."]
    result = subprocess.run(
        [sys.executable, "-m", "transformer_lib", "translate", *sentences],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        timeout=600,  # seconds when the machine is idle; minutes when it is shared
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.strip().splitlines()
    assert len(lines) == 4 and lines[0].startswith("Tom ist")
    # Each sentence is translated anyway; each doubtful one gets one warning line (no
    # source excerpt): unknown characters, however few, and input without a letter.
    warned = result.stderr.splitlines()
    assert len(warned) == 3 and result.stderr.endswith("\n")
    assert warned[0].startswith(
        "warning: sentence 1 ('我喜欢你。') has 5 characters the model has never seen"
    )
    assert "only English in Latin script" in warned[0] and "meaningless" in warned[0]
    assert warned[1].startswith("warning: sentence 2 ('I like 🍕 very much.') has 1 character")
    assert "'🍕' (SLICE OF PIZZA)" in warned[1]
    assert warned[2].startswith("warning: sentence 3 ('?!...') has no letter")


def test_translate_several_with_beam(capsys):
    assert main(["translate", "I am tired.", "We won.", "--beam", "3"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 2 and lines[0].startswith("Ich")


def test_translate_empty_sentence_fails_cleanly(capsys):
    assert main(["translate", ""]) == 1
    assert "empty" in capsys.readouterr().err


def test_translate_with_corrupted_checkpoint_fails_cleanly(tmp_path, capsys):
    bad = tmp_path / "broken.pt"
    bad.write_bytes(b"PK\x03\x04 definitely not a whole checkpoint")
    assert main(["translate", "Hi.", "--checkpoint", str(bad)]) == 1
    err = capsys.readouterr().err
    assert "broken.pt" in err and "Traceback" not in err


def test_evaluate_pairs_file_with_bad_lines(tmp_path, capsys):
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text(BAD_LINES_FILE, encoding="utf-8")
    out_json = tmp_path / "scores.json"
    assert main(["evaluate", "--pairs", str(pairs), "--json", str(out_json)]) == 0
    out = capsys.readouterr().out
    # blank, no tab, empty German
    assert "read 4 pairs from 7 lines (3 skipped: 1 blank, 2 without English<TAB>German)" in out
    bleu = re.search(r"^BLEU = ([0-9.]+)$", out, re.M)
    assert bleu and 0 <= float(bleu.group(1)) <= 100
    assert re.search(r"^chrF = [0-9.]+$", out, re.M)
    assert "3 source sentences, 4 references" in out  # grouped by source
    data = json.loads(out_json.read_text())
    assert data["n_sources"] == 3 and data["bleu"] == pytest.approx(float(bleu.group(1)), 0.01)


def test_evaluate_split_with_limit(corpus_path, capsys):
    assert main(["evaluate", "--split", "test", "--limit", "20", "--corpus", str(corpus_path)]) == 0
    out = capsys.readouterr().out
    assert re.search(r"^BLEU = [0-9.]+$", out, re.M) and "20 source sentences" in out


def test_evaluate_missing_file(capsys, tmp_path):
    assert main(["evaluate", "--pairs", str(tmp_path / "nope.tsv")]) == 2
    assert "nope.tsv" in capsys.readouterr().err


def test_train_and_resume(tmp_path, capsys):
    corpus = tmp_path / "deu.txt"
    corpus.write_text(
        "".join(f"Tom is {w}.\tTom ist {w}.\n" for w in "abcdefghijklmnopqrstuvwxyz" * 2)
    )
    out = tmp_path / "run"
    args = ["train", "--corpus", str(corpus), "--out", str(out), "--no-progress"]
    args += ["--max-tokens", "256", "--final-bleu", "none", "--eval-every", "0", "--seed", "1"]
    assert main([*args, "--max-steps", "2"]) == 0
    for name in ("checkpoint.pt", "model.pt", "training_log.json"):
        assert (out / name).is_file()
    assert load_checkpoint(out / "checkpoint.pt")["state"]["step"] == 2
    resume = ["--resume", str(out / "checkpoint.pt"), "--max-steps", "3"]
    assert main([*args, *resume]) == 0
    assert f"resumed {out / 'checkpoint.pt'} at step 2" in capsys.readouterr().out
    assert load_checkpoint(out / "checkpoint.pt")["state"]["step"] == 3


def test_train_needs_a_budget(tmp_path, capsys):
    assert main(["train", "--out", str(tmp_path / "r")]) == 2
    assert "--minutes, --max-steps or --cpu-minutes" in capsys.readouterr().err


def test_check_command_is_wired_in(capsys):
    assert (
        main(["check", "transformer_lib.pipeline.check_kit:tiny_model", "--only", "causality"]) == 0
    )
    assert "PASS  causality" in capsys.readouterr().out
    assert main(["check", "no_such_module_here:build"]) == 2
    assert "no module named 'no_such_module_here'" in capsys.readouterr().err
