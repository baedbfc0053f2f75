"""scripts/execute_chapters.py: the chapters executed in parallel into the build's cache,
where Jupyter Book finds them (a small book of two notebooks, one of which fails)."""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

import execute_chapters  # noqa: E402

CONFIG = """\
title: t
execute:
  execute_notebooks: cache
  run_in_temp: true
  timeout: 60
  allow_errors: false
"""
TOC = """\
format: jb-book
root: intro
chapters:
  - file: good
  - file: bad
"""


def _book(tmp_path: Path) -> Path:
    (tmp_path / "_config.yml").write_text(CONFIG)
    (tmp_path / "_toc.yml").write_text(TOC)
    (tmp_path / "intro.md").write_text("# Intro\n")
    for name, code in (
        ("good", "import os\nprint(6 * 7, os.getcwd(), os.environ.get('TRANSFORMER_BOOK_STATIC'))"),
        ("bad", "1 / 0"),
    ):
        nb = nbformat.v4.new_notebook()
        nb.cells = [nbformat.v4.new_code_cell(code)]
        nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3"}
        nbformat.write(nb, tmp_path / f"{name}.ipynb")
    return tmp_path


def test_executes_into_the_cache_skips_what_is_there_and_reports_failures(tmp_path, capsys):
    from jupyter_cache import get_cache

    book = _book(tmp_path)
    assert execute_chapters.main(["--book-dir", str(book), "--jobs", "2"]) == 0
    out, err = capsys.readouterr()
    assert "executing 2 notebook(s), 2 at a time" in out and "executed good.ipynb" in out
    assert "FAILED bad.ipynb" in err and "ZeroDivisionError" in err
    assert "the build runs them again" in err
    cache = get_cache(str(book / "_build" / ".jupyter_cache"))
    record = cache.match_cache_notebook(nbformat.read(book / "good.ipynb", as_version=4))
    _, executed = cache.merge_match_into_notebook(nbformat.read(book / "good.ipynb", as_version=4))
    printed = executed.cells[0].outputs[0]["text"]
    assert printed.startswith("42 ") and str(book) not in printed  # a temporary folder
    assert printed.split()[-1] == "1"  # the explorers' static mode, as in the build
    assert record.data["execution_seconds"] > 0
    with pytest.raises(KeyError):  # the failed notebook is left to the build
        cache.match_cache_notebook(nbformat.read(book / "bad.ipynb", as_version=4))

    (book / "bad.ipynb").unlink()
    (book / "_toc.yml").write_text(TOC.replace("  - file: bad\n", ""))
    assert execute_chapters.main(["--book-dir", str(book)]) == 0
    assert "every chapter is already in the execution cache" in capsys.readouterr().out


def test_bad_jobs_is_refused(tmp_path):
    with pytest.raises(SystemExit):
        execute_chapters.main(["--book-dir", str(_book(tmp_path)), "--jobs", "0"])


def test_later_chapters_start_first():
    # The later chapters are the long ones: started first, the short ones fill the end.
    book = ["chapters/01_a.ipynb", "chapters/02_b.ipynb", "chapters/09_training.ipynb"]
    assert execute_chapters.in_starting_order(book) == book[::-1]
    assert book == ["chapters/01_a.ipynb", "chapters/02_b.ipynb", "chapters/09_training.ipynb"]
