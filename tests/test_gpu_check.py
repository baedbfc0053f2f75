"""scripts/gpu_check.py: what can be checked without a GPU (arguments, the table, the
no-CUDA exit, and the parity checks run against the CPU itself)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def gpu_check():
    spec = importlib.util.spec_from_file_location("gpu_check", ROOT / "scripts" / "gpu_check.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["gpu_check"] = module
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--steps", "0"], "must be at least 1"),
        (["--sentences", "many"], "is not a whole number"),
        (["--logit-tol", "inf"], "finite number > 0"),
        (["--only", "logits,warp"], "unknown check warp"),
        (["--only", ","], "unknown check (none given)"),
    ],
)
def test_bad_arguments_exit_2_with_one_line(gpu_check, capsys, argv, message):
    with pytest.raises(SystemExit) as exc:
        gpu_check.main(argv)
    assert exc.value.code == 2
    assert message in capsys.readouterr().err


def test_json_into_missing_folder_is_refused_first(gpu_check, capsys, tmp_path):
    argv = ["--device", "cpu", "--json", str(tmp_path / "nope" / "x.json")]
    assert gpu_check.main(argv) == 2
    assert "no folder" in capsys.readouterr().err


def test_unknown_device_is_refused(gpu_check, capsys):
    assert gpu_check.main(["--device", "tpu"]) == 2
    assert "use cuda, cuda:N or cpu" in capsys.readouterr().err


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA")
def test_without_cuda_it_says_so_and_exits_0(gpu_check, capsys):
    assert gpu_check.main([]) == 0
    assert "No CUDA device here" in capsys.readouterr().out


def test_table_lists_rows_and_details(gpu_check):
    rows = [
        gpu_check.Row("logits", "pass", "max |Δ| 1.0e-06", "≤ 0.001", 0.25),
        gpu_check.Row("greedy", "FAIL", "99/100 identical", "margin < 0.001", 3.0, ["x → y"]),
    ]
    lines = gpu_check.format_table(rows).splitlines()
    assert lines[0].split() == ["check", "result", "measured", "limit", "s"]
    assert lines[2].split()[:2] == ["logits", "pass"] and lines[2].endswith("0.2")
    assert lines[3].split()[:2] == ["greedy", "FAIL"]
    assert lines[4] == "    x → y"
    assert len({len(line) for line in lines[:2]}) == 1  # header and rule line up


def test_margins_tell_near_ties_from_real_differences(gpu_check):
    assert gpu_check.classify_margins([1e-5, -2e-4, 0.5, -3.0], 1e-3) == (2, 2)
    assert gpu_check.classify_margins([], 1e-3) == (0, 0)


def test_parity_checks_pass_against_the_cpu_itself(gpu_check, tmp_path, capsys):
    out = tmp_path / "rows.json"
    argv = ["--device", "cpu", "--only", "logits,greedy,beam,cache", "--sentences", "4"]
    assert gpu_check.main([*argv, "--json", str(out)]) == 0
    rows = json.loads(out.read_text())
    assert [r["check"] for r in rows] == ["logits", "greedy", "beam 4", "kv cache"]
    assert all(r["status"] == "pass" for r in rows)
    assert "4 of 4 checks passed" in capsys.readouterr().out


def test_a_crashing_check_is_a_failed_row(gpu_check, monkeypatch, capsys):
    def boom(*args, **kwargs):
        raise RuntimeError("CUDA error: device-side assert triggered")

    monkeypatch.setattr(gpu_check, "check_logits", boom)
    argv = ["--device", "cpu", "--only", "logits", "--sentences", "2"]
    assert gpu_check.main(argv) == 1
    out = capsys.readouterr().out
    assert "RuntimeError: CUDA error" in out and "failed: logits" in out
