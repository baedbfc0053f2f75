"""``python -m transformer_lib check MODULE:FACTORY``, through its own parser: exit 0 when the
checks pass, 1 when one fails, 2 with one line for a factory that cannot be used."""

import argparse
import json
import textwrap

import pytest
import torch

from transformer_lib.pipeline import check_command

torch.set_num_threads(1)

FAST = "--only=causality,tied_embeddings,noam_peak"


def run(*argv: str) -> int:
    parser = argparse.ArgumentParser(prog="python -m transformer_lib")
    check_command.add_parser(parser.add_subparsers(dest="command", required=True))
    return check_command.run(parser.parse_args(["check", *argv]))


@pytest.fixture
def factories(tmp_path, monkeypatch):
    """A folder with a reader's model file, made the working directory."""
    (tmp_path / "my_model.py").write_text(
        textwrap.dedent(
            """
            import torch
            from transformer_lib import Transformer
            from transformer_lib.pipeline.check_kit import ModelAdapter, tiny_model

            NOT_A_FUNCTION = 42

            def build():
                return tiny_model("encoder-decoder")

            def build_decoder_only():
                return tiny_model("decoder-only")

            def leaky():  # every logit sees the whole target: causality must fail
                model = tiny_model("encoder-decoder")
                def forward(src, tgt):
                    return model(src, tgt) + tgt.float().sum(1, keepdim=True)[..., None]
                return ModelAdapter(forward=forward, arch="encoder-decoder", vocab_size=48,
                                    d_model=32)

            def wrong_thing():
                return "a model"

            def needs_size(d_model):
                return tiny_model()

            def broken():
                raise RuntimeError("out of coffee")
            """
        )
    )
    (tmp_path / "broken_file.py").write_text("import no_such_package_xyz\n")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_a_healthy_model_exits_0_and_prints_the_report(factories, capsys):
    assert run("my_model:build") == 0
    out = capsys.readouterr().out
    assert "Check kit report" in out and "18 checks: 18 passed, 0 failed" in out
    assert run("my_model:build_decoder_only", FAST) == 0
    assert "SKIP" not in capsys.readouterr().out  # --only ran just the three


def test_a_file_path_and_a_library_factory_work_too(factories, capsys):
    assert run(f"{factories / 'my_model.py'}:build", FAST) == 0
    assert run("transformer_lib.pipeline.check_kit:tiny_model", FAST) == 0
    assert capsys.readouterr().err == ""


def test_a_failed_check_exits_1(factories, capsys):
    assert run("my_model:leaky", "--only=causality,padding_invariance") == 1
    out = capsys.readouterr().out
    assert "FAIL  causality" in out and "typical causes:" in out


def test_a_planted_bug_fails_and_json_is_machine_readable(factories, capsys):
    code = run("my_model:build", "--plant", "causal_mask_off_by_one", "--only=causality", "--json")
    assert code == 1
    data = json.loads(capsys.readouterr().out)
    assert data["passed"] is False
    assert data["results"][0]["causes"][0]["key"] == "causal-mask-off-by-one"
    assert run("my_model:build", "--only=causality") == 0  # the plant is gone again


@pytest.mark.parametrize(
    "spec, extra, message",
    [
        ("no_colon_here", (), "expected MODULE:FACTORY"),
        ("no_such_module_xyz:build", (), "no module named 'no_such_module_xyz'"),
        ("broken_file:anything", (), "importing 'broken_file' raised ModuleNotFoundError"),
        ("missing.py:build", (), "no file 'missing.py'"),
        ("my_model:nothing", (), "has no attribute 'nothing' (its functions: broken, build"),
        ("my_model:NOT_A_FUNCTION", (), "is a int, not a function"),
        ("my_model:needs_size", (), "needs arguments (d_model)"),
        ("my_model:broken", (), "my_model:broken() raised RuntimeError: out of coffee"),
        ("my_model:wrong_thing", (), "returned a str: it must return a Transformer"),
        ("my_model:build", ("--only=causality,telepathy",), "unknown check telepathy"),
        ("my_model:build", ("--plant=gremlins",), "unknown bug gremlins"),
    ],
)
def test_an_unusable_factory_exits_2_with_one_line(factories, capsys, spec, extra, message):
    assert run(spec, *extra) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1, captured.err
    assert lines[0].startswith("python -m transformer_lib check: error: ")
    assert message in lines[0], lines[0]


def test_the_help_states_the_contract(capsys):
    with pytest.raises(SystemExit):
        run("--help")
    text = capsys.readouterr().out
    assert "MODULE:FACTORY" in text and "Exit status" in text and "ModelAdapter" in text
