"""``scripts/run_tests.py``: the suites that ``make test`` runs side by side."""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

from _pytest.mark.expression import Expression

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import run_tests  # noqa: E402


def _expression(select: list[str]) -> str:
    assert select[0] == "-m" and len(select) == 2, select
    return select[1]


def test_the_suites_run_every_test_exactly_once():
    markers = ("browser", "phone", "slow", "timing")
    for marks in itertools.product([False, True], repeat=len(markers)):
        has = dict(zip(markers, marks, strict=True))
        chosen = [
            name
            for name, select in run_tests.SUITES + run_tests.LAST
            if Expression.compile(_expression(select)).evaluate(
                lambda mark, has=has, **_: has.get(mark, False)
            )
        ]
        assert len(chosen) == 1, f"a test marked {has} runs in {chosen or 'no suite'}"


def _run_suites(tmp_path, monkeypatch, tests: str, suites) -> int:
    """``run_tests.main`` on a test file of its own, with the given suites."""
    path = tmp_path / "test_sample.py"
    path.write_text(tests)
    monkeypatch.setattr(run_tests, "ROOT", tmp_path)
    monkeypatch.setattr(run_tests, "LOGS", tmp_path / "logs")
    monkeypatch.setattr(run_tests, "TEMP", tmp_path / "tmp")
    monkeypatch.setattr(run_tests, "SUITES", suites)
    monkeypatch.setattr(run_tests, "LAST", ())
    return run_tests.main([str(path), "-p", "no:cacheprovider", "-q"])


def test_a_failing_suite_fails_the_run_and_every_report_is_printed(tmp_path, monkeypatch, capsys):
    tests = "def test_good():\n    pass\n\ndef test_bad():\n    assert 1 == 2\n"
    suites = (("good", ["-k", "good"]), ("bad", ["-k", "bad"]))
    code = _run_suites(tmp_path, monkeypatch, tests, suites)
    out = capsys.readouterr().out
    assert code == 1
    assert "good tests (logs/good.log)" in out and "bad tests (logs/bad.log)" in out
    assert "1 passed" in out and "1 failed" in out and "assert 1 == 2" in out
    last = out.splitlines()[-1]
    assert "good" in last and "(passed)" in last and "bad" in last and "(FAILED)" in last
    assert "assert 1 == 2" in (tmp_path / "logs" / "bad.log").read_text()


def test_passing_suites_pass(tmp_path, monkeypatch, capsys):
    tests = "def test_one():\n    pass\n\ndef test_two():\n    pass\n"
    suites = (("a", ["-k", "one"]), ("b", ["-k", "two"]))
    assert _run_suites(tmp_path, monkeypatch, tests, suites) == 0
    assert capsys.readouterr().out.splitlines()[-1].count("(passed)") == 2


def test_the_timing_tests_run_alone_after_the_others(tmp_path, monkeypatch, capsys):
    """A suite of LAST starts only once every suite of SUITES has ended."""
    tests = (
        "import pathlib, time\n"
        "def test_slow_first():\n"
        "    time.sleep(1)\n"
        "    pathlib.Path(__file__).with_name('first.done').write_text('')\n\n"
        "def test_after():\n"
        "    assert pathlib.Path(__file__).with_name('first.done').exists()\n"
    )
    path = tmp_path / "test_sample.py"
    path.write_text(tests)
    monkeypatch.setattr(run_tests, "ROOT", tmp_path)
    monkeypatch.setattr(run_tests, "LOGS", tmp_path / "logs")
    monkeypatch.setattr(run_tests, "TEMP", tmp_path / "tmp")
    monkeypatch.setattr(run_tests, "SUITES", (("first", ["-k", "slow_first"]),))
    monkeypatch.setattr(run_tests, "LAST", (("after", ["-k", "after"]),))
    code = run_tests.main([str(path), "-p", "no:cacheprovider", "-q"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert out.index("first tests (logs/first.log)") < out.index("after tests (logs/after.log)")
