"""``scripts/run_tests.py``: the suites that ``make test`` runs side by side."""

from __future__ import annotations

import itertools
import re
import shlex
import sys
from pathlib import Path

import pytest
from _pytest.mark.expression import Expression

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import run_tests  # noqa: E402


def _expression(select: list[str]) -> str:
    assert select[0] == "-m" and not any(a == "-m" or a == "-k" for a in select[2:]), select
    return select[1]


def test_the_suites_run_every_test_exactly_once():
    markers = ("browser", "book", "phone", "slow", "timing", "part_2", "part_3")
    for marks in itertools.product([False, True], repeat=len(markers)):
        has = dict(zip(markers, marks, strict=True))
        chosen = [
            name
            for name, select, _ in run_tests.SUITES + run_tests.LAST
            if Expression.compile(_expression(select)).evaluate(
                lambda mark, has=has, **_: has.get(mark, False)
            )
        ]
        assert len(chosen) == 1, f"a test marked {has} runs in {chosen or 'no suite'}"


def _run_suites(tmp_path, monkeypatch, tests: str, suites, *options: str) -> int:
    """``run_tests.main`` on a test file of its own, with the given suites."""
    path = tmp_path / "test_sample.py"
    path.write_text(tests)
    monkeypatch.setattr(run_tests, "ROOT", tmp_path)
    monkeypatch.setattr(run_tests, "LOGS", tmp_path / "logs")
    monkeypatch.setattr(run_tests, "TEMP", tmp_path / "tmp")
    monkeypatch.setattr(run_tests, "SUITES", suites)
    monkeypatch.setattr(run_tests, "LAST", ())
    return run_tests.main([*options, str(path), "-p", "no:cacheprovider", "-q"])


def test_a_failing_suite_fails_the_run_and_every_report_is_printed(tmp_path, monkeypatch, capsys):
    tests = "def test_good():\n    pass\n\ndef test_bad():\n    assert 1 == 2\n"
    suites = (("good", ["-k", "good"], False), ("bad", ["-k", "bad"], False))
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
    suites = (("a", ["-k", "one"], False), ("b", ["-k", "two"], False))
    assert _run_suites(tmp_path, monkeypatch, tests, suites) == 0
    assert capsys.readouterr().out.splitlines()[-1].count("(passed)") == 2


def test_each_suite_reports_the_processor_time_of_its_processes(tmp_path, monkeypatch, capsys):
    # A test that keeps a child process busy for 1.5 CPU-s: the suite's count includes it.
    tests = (
        "import subprocess, sys\n\n"
        "def test_busy_child():\n"
        "    spin = 'import time\\nt = time.process_time()\\n'\n"
        "    spin += 'while time.process_time() - t < 1.5: pass'\n"
        "    subprocess.run([sys.executable, '-c', spin], check=True)\n"
    )
    assert _run_suites(tmp_path, monkeypatch, tests, (("busy", [], False),)) == 0
    last = capsys.readouterr().out.splitlines()[-1]
    (cpu,) = re.findall(r"busy \d+ s, (\d+) CPU-s \(passed\)", last)
    assert int(cpu) >= 2, last  # the child's 1.5 s and pytest's own start


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
    monkeypatch.setattr(run_tests, "SUITES", (("first", ["-k", "slow_first"], False),))
    monkeypatch.setattr(run_tests, "LAST", (("after", ["-k", "after"], False),))
    code = run_tests.main([str(path), "-p", "no:cacheprovider", "-q"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert out.index("first tests (logs/first.log)") < out.index("after tests (logs/after.log)")


# A "book" that is built only once the suite that does not need it has run (so the run
# fails unless that suite starts meanwhile), and a test that fails unless it starts after
# the build.
_BOOK = (
    "import pathlib, sys, time\n"
    "page, status = pathlib.Path(sys.argv[1]), int(sys.argv[2])\n"
    "deadline = time.monotonic() + 120\n"
    "while not page.with_name('meanwhile.done').exists():\n"
    "    if time.monotonic() > deadline:\n"
    "        sys.exit('the suite that does not need the book did not run meanwhile')\n"
    "    time.sleep(0.1)\n"
    "page.write_text('built')\n"
    "sys.exit(status)\n"
)
_NEEDS_BOOK = (
    "import pathlib\n"
    "def test_independent():\n"
    "    pathlib.Path(__file__).with_name('meanwhile.done').write_text('')\n\n"
    "def test_reads_the_book():\n"
    "    assert pathlib.Path(__file__).with_name('book.html').read_text() == 'built'\n"
)
_BOOK_SUITES = (
    ("meanwhile", ["-k", "independent"], False),
    ("after-book", ["-k", "reads_the_book"], True),
)


def _book_command(tmp_path, status: int) -> str:
    return shlex.join([sys.executable, "-c", _BOOK, str(tmp_path / "book.html"), str(status)])


def test_the_suites_that_need_the_book_start_once_it_is_built(tmp_path, monkeypatch, capsys):
    command = _book_command(tmp_path, 0)
    code = _run_suites(tmp_path, monkeypatch, _NEEDS_BOOK, _BOOK_SUITES, "--book-command", command)
    out = capsys.readouterr().out
    assert code == 0, out
    assert out.index("book build") < out.index("after-book tests")
    last = out.splitlines()[-1]
    assert "book" in last and "meanwhile" in last and "after-book" in last, last


def test_a_book_that_does_not_build_fails_the_run(tmp_path, monkeypatch, capsys):
    command = _book_command(tmp_path, 3)
    code = _run_suites(tmp_path, monkeypatch, _NEEDS_BOOK, _BOOK_SUITES, "--book-command", command)
    out = capsys.readouterr().out
    assert code == 3, out
    assert "after-book tests" not in out
    assert "not run, as the book did not build: after-book" in out.splitlines()[-1]


def test_book_command_without_a_command_is_explained(tmp_path, monkeypatch):
    with pytest.raises(SystemExit, match="--book-command needs a command"):
        _run_suites(tmp_path, monkeypatch, _NEEDS_BOOK, _BOOK_SUITES, "--book-command", " ")


def test_the_browser_parts_name_pages_and_files_of_the_book():
    """The parts of tests/browser/conftest.py: every page and file named there exists (a
    renamed page would otherwise fall silently into part 1), and all three have pages."""
    import importlib.util

    sys.path.insert(0, str(ROOT / "tests"))
    from book_pages import toc_pages

    spec = importlib.util.spec_from_file_location(
        "browser_conftest", ROOT / "tests" / "browser" / "conftest.py"
    )
    conftest = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = conftest  # its dataclasses look their module up there
    spec.loader.exec_module(conftest)
    pages = set(toc_pages())
    assert set(conftest.PAGE_PARTS) <= pages, set(conftest.PAGE_PARTS) - pages
    for name in conftest.FILE_PARTS:
        assert (ROOT / "tests" / "browser" / name).is_file(), name
    parts = [conftest.PAGE_PARTS.get(page, 1) for page in pages]
    assert {parts.count(n) > 0 for n in (1, 2, 3)} == {True}, parts


def test_the_suites_collect_from_the_files_their_markers_select():
    """The suites that need the book collect only tests/browser and BOOK_TEST_FILES, the
    others everything but tests/browser: so a test marked browser or book in another file
    would run in no suite."""
    tests = ROOT / "tests"
    marked = sorted(
        path.name
        for path in tests.glob("test_*.py")
        if re.search(r"mark\.(browser|book)\b", path.read_text(encoding="utf-8"))
    )
    assert set(marked) <= set(run_tests.BOOK_TEST_FILES), marked
    for name, select, needs_book in run_tests.SUITES:
        paths = [a for a in select[2:] if not a.startswith("--")]
        if needs_book:
            assert paths == ["tests/browser", *(f"tests/{f}" for f in run_tests.BOOK_TEST_FILES)]
        else:
            assert paths == ["tests"] and "--ignore=tests/browser" in select, (name, select)
        assert all((ROOT / p).exists() for p in paths), (name, paths)
