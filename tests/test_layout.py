"""The library's layout: three layers, no import cycles, modules that can be read at once.

* ``transformer_lib.components``: the paper's parts; imports only torch, the standard
  library and other components.
* ``transformer_lib.pipeline``: corpus, tokenizer, training, decoding, ...; never imports
  ``views``.
* ``transformer_lib.views``: the book's figures and explorers; the only layer that may
  import matplotlib, ipywidgets, bertviz, Pillow or IPython.

Imports are read from the source with :mod:`ast`, including those inside functions and
under ``if TYPE_CHECKING:``, so a lazy import cannot hide a dependency.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import transformer_lib

PACKAGE = "transformer_lib"
ROOT = Path(transformer_lib.__file__).resolve().parent
MAX_LINES = 600
PRESENTATION = {"matplotlib", "ipywidgets", "bertviz", "PIL", "IPython"}
STDLIB = set(sys.stdlib_module_names) if hasattr(sys, "stdlib_module_names") else None


def _module_name(path: Path) -> str:
    parts = [PACKAGE, *path.relative_to(ROOT).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for p in sorted(ROOT.rglob("*.py"))}


def _is_package(name: str) -> bool:
    return MODULES[name].name == "__init__.py"


def _imports(name: str) -> list[tuple[str, int, bool]]:
    """``(imported module, line, at module level)`` for every import statement of ``name``.

    Relative imports are resolved; ``from package import module`` names the module.
    "Module level" is everything outside a function body (``TYPE_CHECKING`` blocks too).
    """
    tree = ast.parse(MODULES[name].read_text(encoding="utf-8"))
    package = name if _is_package(name) else name.rpartition(".")[0]
    found: list[tuple[str, int, bool]] = []

    def visit(node: ast.AST, top: bool) -> None:
        for child in ast.iter_child_nodes(node):
            inner = top and not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef))
            if isinstance(child, ast.Import):
                found.extend((alias.name, child.lineno, top) for alias in child.names)
            elif isinstance(child, ast.ImportFrom):
                if child.level:
                    base = package.split(".")
                    base = base[: len(base) - (child.level - 1)]
                    target = ".".join(base + ([child.module] if child.module else []))
                else:
                    target = child.module or ""
                for alias in child.names:
                    sub = f"{target}.{alias.name}"
                    found.append((sub if sub in MODULES else target, child.lineno, top))
            visit(child, inner)

    visit(tree, True)
    return sorted(set(found), key=lambda item: (item[1], item[0]))


IMPORTS = {name: _imports(name) for name in MODULES}


def _layer(name: str) -> str | None:
    parts = name.split(".")
    return parts[1] if len(parts) > 1 else None


def _top(imported: str) -> str:
    return imported.split(".")[0]


def test_the_package_is_found():
    assert {"transformer_lib.components.model", "transformer_lib.pipeline.training"} <= set(MODULES)
    assert "transformer_lib.views.style" in MODULES


def test_no_import_cycles():
    graph = {
        name: sorted({m for m, _, top in IMPORTS[name] if top and m in MODULES and m != name})
        for name in MODULES
    }
    state: dict[str, str] = {}
    cycles: list[list[str]] = []

    def walk(node: str, path: list[str]) -> None:
        state[node] = "open"
        for nxt in graph[node]:
            if state.get(nxt) == "open":
                cycles.append(path[path.index(nxt) :] + [nxt])
            elif nxt not in state:
                walk(nxt, [*path, nxt])
        state[node] = "done"

    for name in graph:
        if name not in state:
            walk(name, [name])
    assert not cycles, "import cycles: " + "; ".join(" -> ".join(c) for c in cycles)


@pytest.mark.skipif(STDLIB is None, reason="sys.stdlib_module_names needs Python 3.10")
def test_components_import_only_torch_the_stdlib_and_each_other():
    allowed_third_party = {"torch", "__future__"}
    bad = []
    for name, imports in IMPORTS.items():
        if _layer(name) != "components":
            continue
        for imported, line, _ in imports:
            if imported.startswith(PACKAGE):
                if _layer(imported) != "components":
                    bad.append(f"{name}:{line} imports {imported}")
            elif _top(imported) not in allowed_third_party | STDLIB:
                bad.append(f"{name}:{line} imports {imported}")
    assert not bad, bad


def test_pipeline_never_imports_views():
    bad = [
        f"{name}:{line} imports {imported}"
        for name, imports in IMPORTS.items()
        if _layer(name) == "pipeline"
        for imported, line, _ in imports
        if imported.startswith(f"{PACKAGE}.views")
    ]
    assert not bad, bad


def test_only_views_use_presentation_libraries():
    bad = [
        f"{name}:{line} imports {imported}"
        for name, imports in IMPORTS.items()
        if _layer(name) != "views"
        for imported, line, _ in imports
        if _top(imported) in PRESENTATION
    ]
    assert not bad, bad


def test_the_top_level_package_does_not_import_views():
    for name in (PACKAGE, f"{PACKAGE}.__main__"):
        assert not [m for m, _, _ in IMPORTS[name] if m.startswith(f"{PACKAGE}.views")]


@pytest.fixture(scope="module")
def loaded_after_imports() -> list[list[str]]:
    """Which heavy libraries a fresh interpreter holds after ``import transformer_lib``,
    then after importing the views as well (one process: each start imports torch)."""
    code = (
        "import sys, transformer_lib\n"
        "heavy = ('matplotlib', 'ipywidgets', 'transformer_lib.views')\n"
        "print(sorted(m for m in heavy if m in sys.modules))\n"
        "import transformer_lib.views, transformer_lib.views.explorers\n"
        "print(sorted(m for m in heavy[:2] if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout.splitlines()


def test_import_loads_no_plotting_or_widget_library(loaded_after_imports):
    assert loaded_after_imports[0] == "[]", loaded_after_imports


def test_importing_views_loads_no_plotting_or_widget_library(loaded_after_imports):
    assert loaded_after_imports[1] == "[]", loaded_after_imports


def test_every_module_can_be_read_in_one_sitting():
    lengths = {
        name: len(path.read_text(encoding="utf-8").splitlines()) for name, path in MODULES.items()
    }
    too_long = {name: n for name, n in lengths.items() if n > MAX_LINES}
    assert not too_long, f"modules over {MAX_LINES} lines: {too_long}"


@pytest.mark.parametrize(
    "name",
    [
        "Transformer",
        "TransformerConfig",
        "MultiHeadAttention",
        "scaled_dot_product_attention",
        "sinusoidal_positional_encoding",
        "causal_mask",
        "padding_mask",
        "load_pretrained",
        "Translator",
    ],
)
def test_public_names_import_from_the_package(name):
    assert getattr(transformer_lib, name) is not None
    assert name in transformer_lib.__all__


def test_command_line_lists_its_commands():
    out = subprocess.run(
        [sys.executable, "-m", PACKAGE, "--help"], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    for command in ("train", "translate", "evaluate"):
        assert command in out.stdout, out.stdout
