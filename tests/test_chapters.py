"""The chapter notebooks as files: structure a reader (and Colab) relies on."""

from __future__ import annotations

import ast
import json
import re
import symtable
import sys
from pathlib import Path

import pytest

import transformer_lib

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import colab_setup  # noqa: E402

CHAPTERS = colab_setup.chapters()


def cells(path: Path) -> list[dict]:
    return json.loads(path.read_text(encoding="utf-8"))["cells"]


def tags(cell: dict) -> list[str]:
    return cell.get("metadata", {}).get("tags", [])


def test_fourteen_chapters_in_toc_order():
    toc = (ROOT / "_toc.yml").read_text(encoding="utf-8")
    names = [p.stem for p in CHAPTERS]
    assert len(names) == 14
    positions = [toc.index(f"chapters/{n}") for n in names]
    assert positions == sorted(positions), "chapter numbers must follow _toc.yml order"


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_colab_setup_cell_first_and_current(path):
    first = cells(path)[0]
    assert first["metadata"] == colab_setup.metadata(), (
        f"{path.name}: the Colab cell's tags or fold labels are stale; run "
        "`python scripts/colab_setup.py`"
    )
    assert "colab-setup" in tags(first) and "hide-cell" in tags(first)
    assert "".join(first["source"]) == colab_setup.setup_source(), (
        f"{path.name}: stale Colab cell; run `python scripts/colab_setup.py`"
    )
    assert colab_setup.repository_url() in "".join(first["source"])


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_committed_without_outputs(path):
    dirty = [i for i, c in enumerate(cells(path)) if c.get("outputs")]
    assert not dirty, f"{path.name}: cells {dirty} carry outputs; clear them before committing"


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_figure_metadata_is_where_myst_nb_reads_it(path):
    """myst-nb reads a figure's caption and alt text from ``metadata.mystnb``; the same
    keys at the top of a cell's metadata are silently ignored (the page then shows
    another alt text, or none)."""
    misplaced = [
        f"cell {i} ({cell.get('id')}): metadata.{key}"
        for i, cell in enumerate(cells(path))
        for key in ("image", "figure")
        if key in cell.get("metadata", {})
    ]
    assert not misplaced, f"{path.name}: move these under metadata.mystnb: {misplaced}"


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_learning_goals_and_checked_exercises(path):
    text = "\n".join("".join(c["source"]) for c in cells(path) if c["cell_type"] == "markdown")
    assert "Learning goals" in text
    assert "Exercise" in text
    code = [c for c in cells(path) if c["cell_type"] == "code"]
    stubs = [c for c in code if "exercise-stub" in tags(c)]
    assert stubs, "no cell left for the reader's answer (tag: exercise-stub)"
    for stub in stubs:
        assert "raise NotImplementedError" in "".join(stub["source"]), stub["source"]
    assert any("hide-cell" in tags(c) for c in code), "no hidden, executed solution"
    # The book runs every cell, stubs included, exactly as "Run all" in Colab does.
    skipped = [i for i, c in enumerate(cells(path)) if "skip-execution" in tags(c)]
    assert not skipped, f"{path.name}: cells {skipped} are skipped when the book is built"


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_chapters_do_not_redefine_library_components(path):
    """The book teaches the library's code: a chapter never defines a second copy."""
    public = set(transformer_lib.__all__)
    for cell in cells(path):
        if cell["cell_type"] != "code":
            continue
        source = "".join(cell["source"])
        lines = [ln for ln in source.splitlines() if not ln.lstrip().startswith(("%", "!"))]
        tree = ast.parse("\n".join(lines))
        defined = {n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
        assert not defined & public, f"{path.name} redefines {sorted(defined & public)}"


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_every_exercise_check_tolerates_an_unattempted_stub(path):
    """A check that is not an ``@exercise`` would stop "Run all" at the first stub."""
    bare = []
    for cell in cells(path):
        source = "".join(cell["source"])
        bare += re.findall(r"^(?<!@exercise\n)def (check_\w+)", source, re.M)
    assert not bare, f"{path.name}: checks without @exercise: {bare}"


#: Tags that keep a cell's code off the page: a reader never sees what it defines.
HIDDEN_CODE_TAGS = {"remove-input", "remove-cell"}


def _code(cell: dict) -> str:
    lines = "".join(cell["source"]).splitlines()
    return "\n".join(ln for ln in lines if not ln.lstrip().startswith(("%", "!")))


def _reads_and_binds(source: str) -> tuple[set[str], set[str]]:
    """The global names a cell reads without binding them itself, and those it binds.

    ``symtable`` resolves the scopes: a name read in a function, a class body or a
    comprehension counts when it refers to a global, not to a local of that scope.
    """
    top = symtable.symtable(source, "<cell>", "exec")
    symbols = top.get_symbols()
    binds = {
        s.get_name() for s in symbols if s.is_assigned() or s.is_imported() or s.is_namespace()
    }
    reads = {s.get_name() for s in symbols if s.is_referenced()}
    scopes = list(top.get_children())
    while scopes:
        scope = scopes.pop()
        scopes += scope.get_children()
        reads |= {s.get_name() for s in scope.get_symbols() if s.is_referenced() and s.is_global()}
    return reads - binds, binds


def _exercise_checks(source: str) -> set[str]:
    """Functions decorated ``@exercise``: the grader of an exercise, hidden on purpose."""
    tree = ast.parse(source)
    return {
        node.name
        for node in tree.body
        if isinstance(node, ast.FunctionDef)
        and any(isinstance(d, ast.Name) and d.id == "exercise" for d in node.decorator_list)
    }


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_shown_code_uses_no_name_from_hidden_cells(path):
    """Code on the page (a visible cell or a fold) runs when a reader copies it into a
    fresh kernel after the code shown above it: it reads no name that only a cell whose
    input is removed defines. An exercise's stub and solution may call its hidden
    ``@exercise`` check, which the notebook runs for them."""
    shown: set[str] = set()
    hidden: dict[str, str] = {}
    found = set()
    for cell in cells(path):
        if cell["cell_type"] != "code":
            continue
        source = _code(cell)
        reads, binds = _reads_and_binds(source)
        if HIDDEN_CODE_TAGS & set(tags(cell)):
            for name in binds - _exercise_checks(source):
                hidden.setdefault(name, cell.get("id"))
        else:
            found |= {(cell.get("id"), n) for n in reads - shown if n in hidden}
            shown |= binds
    new = sorted(found)
    where = [f"{cell} reads {name} (defined in {hidden[name]})" for cell, name in new]
    assert not new, (
        f"{path.name}: shown code reads names that only hidden cells define: {where}; "
        "define them where the reader sees them"
    )
