"""Messages that must be right: help examples, where to get a missing file, what is wrong
with a bad checkpoint, and what `average` did."""

from __future__ import annotations

import importlib
import importlib.util
import os
import pickle
import re
from pathlib import Path

import pytest
import torch

from transformer_lib import Transformer, TransformerConfig
from transformer_lib.__main__ import main
from transformer_lib.pipeline import cli, corpus
from transformer_lib.pipeline.checkpoints import (
    CheckpointError,
    load_checkpoint,
    restore_hint,
    save_checkpoint,
)
from transformer_lib.pipeline.pretrained import load_pretrained
from transformer_lib.pipeline.tokenizer import Tokenizer

QUIET = ["--no-progress", "--final-bleu", "none", "--max-tokens", "256", "--eval-every", "0"]


def test_top_level_help_shows_every_command(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    examples = capsys.readouterr().out.split("examples:", 1)[1]
    for command in ("train", "translate", "evaluate", "average", "generate"):
        assert f"python -m transformer_lib {command} " in examples, command
    assert "--arch decoder-only" in examples and "--resume" in examples


def test_missing_tokenizer_names_modules_that_exist(tmp_path):
    with pytest.raises(FileNotFoundError) as exc:
        Tokenizer.load(tmp_path / "gone.json")
    message = str(exc.value)
    names = set(re.findall(r"transformer_lib(?:\.\w+)+", message))
    assert names, message
    for name in names:  # a module, or a function of one
        assert _resolves(name), name
    for module in re.findall(r"python -m ([\w.]+)", message):  # runnable as given
        assert importlib.util.find_spec(module) is not None, module


def _resolves(name: str) -> bool:
    try:
        importlib.import_module(name)
        return True
    except ImportError:
        module, _, attr = name.rpartition(".")
        try:
            return hasattr(importlib.import_module(module), attr)
        except ImportError:
            return False


def test_missing_tokenizer_flag_is_a_usage_error(tmp_path, capsys):
    args = ["train", "--out", str(tmp_path / "r"), "--max-steps", "1"]
    assert main([*args, "--tokenizer", str(tmp_path / "gone.json")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--tokenizer: no file at" in err
    assert "python -m transformer_lib.pipeline.tokenizer" in err


# ---- bad checkpoints --------------------------------------------------------------------


class Evil:
    def __reduce__(self):
        return (os.system, ("echo this would run",))


def _bad_files(folder: Path) -> dict[str, Path]:
    files = {
        "random": folder / "random.pt",
        "hostile": folder / "hostile.pt",
        "module": folder / "module.pt",
        "pickle": folder / "pickle.pt",
        "empty": folder / "empty.pt",
    }
    files["random"].write_bytes(bytes(range(256)) * 16)
    torch.save({"x": Evil()}, files["hostile"])
    torch.save(torch.nn.Linear(2, 2), files["module"])
    files["pickle"].write_bytes(pickle.dumps({"a": 1}, protocol=4))
    files["empty"].write_bytes(b"")
    return files


@pytest.mark.parametrize(
    "kind, why",
    [
        ("random", "not a PyTorch file at all"),
        ("hostile", "Python objects other than tensors"),
        ("module", "Python objects other than tensors"),
        ("pickle", "a plain pickle"),
        ("empty", "the file is empty"),
    ],
)
def test_bad_checkpoints_never_advise_unsafe_loading(tmp_path, capsys, kind, why):
    path = _bad_files(tmp_path)[kind]
    with pytest.raises(CheckpointError) as exc:
        load_checkpoint(path)
    message = str(exc.value)
    assert str(path) in message and why in message
    for advice in ("weights_only", "trusted source", "Re-running", "two options"):
        assert advice not in message, advice
    assert main(["translate", "Hi.", "--checkpoint", str(path)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and why in err  # no torch warning line either


def test_pip_users_are_not_told_to_git_checkout(tmp_path, monkeypatch):
    installed = tmp_path / "prefix"
    share = installed / "share" / "transformer-book"
    share.mkdir(parents=True)
    (share / "tokenizer.json").write_text("{}")
    site = tmp_path / "site-packages"  # the package's folder: no data/, no .git
    site.mkdir()
    monkeypatch.setattr(corpus, "REPO_ROOT", site)
    monkeypatch.setattr("sys.prefix", str(installed))
    hint = restore_hint("model.pt")
    assert "git" not in hint and "reinstall" in hint and str(share) in hint
    missing = share / "model.pt"
    with pytest.raises(CheckpointError) as exc:
        load_checkpoint(missing)
    assert "git checkout" not in str(exc.value) and "reinstall" in str(exc.value)
    with pytest.raises(FileNotFoundError) as exc:
        load_pretrained(missing.parent / "gone.pt")
    assert "git checkout" not in str(exc.value)


def test_a_checkout_is_told_to_git_checkout(tmp_path, monkeypatch):
    repo = tmp_path / "book"
    (repo / ".git").mkdir(parents=True)
    (repo / "data").mkdir()
    (repo / "data" / "tokenizer.json").write_text("{}")
    monkeypatch.setattr(corpus, "REPO_ROOT", repo)
    assert restore_hint("model.pt") == "restore it with `git checkout -- data/model.pt`"
    bad = repo / "data" / "model.pt"
    bad.write_bytes(b"PK\x03\x04 cut short")
    with pytest.raises(CheckpointError, match="git checkout -- data/model.pt"):
        load_checkpoint(bad)


def test_a_users_own_bad_checkpoint_gets_no_restore_advice(tmp_path):
    bad = tmp_path / "mine.pt"
    bad.write_bytes(b"PK\x03\x04 cut short")
    with pytest.raises(CheckpointError) as exc:
        load_checkpoint(bad)
    assert "truncated" in str(exc.value) and "git" not in str(exc.value)


# ---- evaluate --json --------------------------------------------------------------------


def test_evaluate_json_in_a_missing_folder_fails_before_any_work(tmp_path, capsys, monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("work started before --json was checked")

    monkeypatch.setattr(cli, "_corpus_splits", refuse)
    monkeypatch.setattr(cli, "_load_translator", refuse)
    target = tmp_path / "missing" / "dir" / "x.json"
    assert main(["evaluate", "--split", "test", "--json", str(target)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert f"--json: the folder {target.parent} does not exist" in err
    assert not (tmp_path / "missing").exists()


# ---- average ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    """Two runs of three kept step checkpoints each, with seeds 1 and 2."""
    tmp = tmp_path_factory.mktemp("average")
    pairs = tmp / "tiny.tsv"
    pairs.write_text(
        "".join(f"Tom is {w}x.\tTom ist {w}x.\n" for w in "abcdefghijklmnopqrstuvwxyz"),
        encoding="utf-8",
    )
    runs = []
    for seed in (1, 2):
        out = tmp / f"seed{seed}"
        args = ["train", "--out", str(out), "--corpus", str(pairs), "--max-steps", "3"]
        args += ["--keep-checkpoints", "5", "--checkpoint-every", "1", "--seed", str(seed)]
        assert main([*args, *QUIET]) == 0
        runs.append(out)
    return runs


def test_average_says_when_it_found_fewer_than_asked(two_runs, tmp_path, capsys):
    run = two_runs[0]
    out = tmp_path / "avg.pt"
    assert main(["average", str(run), "--last", "10", "--out", str(out)]) == 0
    captured = capsys.readouterr()
    assert captured.err == (
        f"warning: --last 10 asked for 10 checkpoints, but only 3 were found ({run}); "
        f"averaging those 3 (keep more with train --keep-checkpoints K)\n"
    )
    assert "averaged 3 checkpoints" in captured.out
    assert len(load_checkpoint(out)["state"]["averaged_from"]) == 3


def test_average_of_one_run_is_quiet(two_runs, tmp_path, capsys):
    assert main(["average", str(two_runs[0]), "--last", "3", "--out", str(tmp_path / "a.pt")]) == 0
    assert capsys.readouterr().err == ""


def test_averaging_different_runs_warns_loudly(two_runs, tmp_path, capsys, recwarn):
    a, b = (run / "step-000003.pt" for run in two_runs)
    out = tmp_path / "mixed.pt"
    assert main(["average", str(a), str(b), "--out", str(out)]) == 0
    messages = [str(w.message) for w in recwarn if issubclass(w.category, UserWarning)]
    assert len(messages) == 1
    assert messages[0].startswith(f"AVERAGING CHECKPOINTS OF DIFFERENT RUNS: {a} and {b}")
    assert "seed 1 vs 2" in messages[0] and "BLEU near 0" in messages[0]
    assert "averaged 2 checkpoints" in capsys.readouterr().out  # still done: it is a warning


def test_averaging_different_models_is_a_usage_error(tokenizer, tmp_path, capsys):
    paths = []
    for d_ff in (64, 128):
        torch.manual_seed(0)
        config = TransformerConfig.tiny(tokenizer.vocab_size, d_model=32, n_heads=2, d_ff=d_ff)
        path = tmp_path / f"ff{d_ff}.pt"
        paths.append(save_checkpoint(path, Transformer(config), tokenizer=tokenizer))
    assert main(["average", *map(str, paths), "--out", str(tmp_path / "x.pt")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is a different model" in err
    assert not (tmp_path / "x.pt").exists()


def test_readme_says_how_to_install_the_cpu_build_first():
    root = Path(__file__).resolve().parents[1]
    readme = (root / "README.md").read_text(encoding="utf-8")
    cpu = readme.find("pip install torch --index-url https://download.pytorch.org/whl/cpu")
    assert cpu != -1
    assert readme.find("pip install -e .\n", cpu) != -1  # the package comes after it
    requirements = (root / "requirements.txt").read_text(encoding="utf-8").splitlines()
    assert "torch==2.13.0" in requirements  # `make book` keeps its pinned build
    pyproject = (root / "pyproject.toml").read_text(encoding="utf-8")
    assert '"torch>=' in pyproject  # a lower bound: an installed CPU build is kept
