"""``python -m transformer_lib check MODULE:FACTORY``: run the check kit on a reader's model.

    python -m transformer_lib check my_model:build            # my_model.py in this folder
    python -m transformer_lib check path/to/my_model.py:build
    python -m transformer_lib check transformer_lib.pipeline.check_kit:tiny_model
    python -m transformer_lib check my_model:build --only causality,kv_cache --json

The factory contract: ``MODULE`` is an importable module name or a ``.py`` file, and
``FACTORY`` names a function (or class) in it that takes no arguments and returns either

* a model the kit has an adapter for — this library's ``Transformer`` or
  ``DecoderOnlyTransformer``, or ``check_kit.TorchTransformerModel`` — or
* a :class:`~transformer_lib.pipeline.check_kit.ModelAdapter` around any other model
  (its ``forward`` is the one required part; see :mod:`.check_kit.adapter`).

The command prints the report and exits with status 0 when no check failed (skipped checks
do not fail), 1 when one did, and 2 with one line on stderr for a factory that cannot be
found or called or that returns something else, or an unknown check or bug name.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import importlib.util
import inspect
import sys
from pathlib import Path
from typing import Any

__all__ = ["FactoryError", "add_parser", "load_factory", "run"]

PROG = "python -m transformer_lib check"


class FactoryError(Exception):
    """The factory named on the command line cannot be found, called or used."""


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Add the ``check`` command to an ``argparse`` sub-parser collection."""
    p = subparsers.add_parser(
        "check",
        help="run the check kit on your own Transformer (MODULE:FACTORY)",
        description=(
            "Run the check kit on a model: causality, padding, positional encoding, attention, "
            "parity with torch.nn.Transformer, the KV cache, beam search, teacher forcing, "
            "label smoothing, the schedule and Adam. FACTORY is a function in MODULE (a "
            "module name or a .py file) that takes no arguments and returns a model of this "
            "library, a check_kit.TorchTransformerModel, or a check_kit.ModelAdapter around "
            "any model. Exit status: 0 all checks passed or were skipped, 1 a check failed, "
            "2 the factory cannot be used."
        ),
    )
    p.add_argument("factory", metavar="MODULE:FACTORY", help="e.g. my_model:build")
    p.add_argument("--only", help="comma-separated check names to run (default: all)")
    p.add_argument("--skip", help="comma-separated check names to leave out")
    p.add_argument("--seed", type=int, default=0, help="seed of the random inputs (default: 0)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.add_argument(
        "--plant",
        action="append",
        default=[],
        metavar="BUG",
        help="plant a tutorial bug in the library first (repeatable; see check_kit.planting)",
    )
    return p


@contextlib.contextmanager
def _on_path(folder: Path):
    sys.path.insert(0, str(folder))
    try:
        yield
    finally:
        with contextlib.suppress(ValueError):
            sys.path.remove(str(folder))


def _import(module: str):
    path = Path(module)
    if module.endswith(".py") or path.is_file():
        if not path.is_file():
            raise FactoryError(f"no file {module!r}")
        spec = importlib.util.spec_from_file_location(path.stem, path)
        if spec is None or spec.loader is None:
            raise FactoryError(f"cannot load {module!r} as a Python file")
        mod = importlib.util.module_from_spec(spec)
        with _on_path(path.resolve().parent):
            try:
                spec.loader.exec_module(mod)
            except Exception as exc:
                raise FactoryError(f"importing {module!r} raised {_one_line(exc)}") from exc
        return mod
    with _on_path(Path.cwd()):
        try:
            return importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name and module.split(".")[: len(exc.name.split("."))] == exc.name.split("."):
                raise FactoryError(
                    f"no module named {module!r} (run from the folder that holds it, or give "
                    "the path of its .py file)"
                ) from exc
            raise FactoryError(f"importing {module!r} raised {_one_line(exc)}") from exc
        except Exception as exc:
            raise FactoryError(f"importing {module!r} raised {_one_line(exc)}") from exc


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def load_factory(spec: str):
    """The callable named by ``MODULE:FACTORY``.

    Raises:
        FactoryError: a malformed spec, a module that cannot be imported, a missing
            attribute, or one that is not callable without arguments.
    """
    module, sep, name = spec.rpartition(":")
    if not sep or not module or not name:
        raise FactoryError(f"expected MODULE:FACTORY (e.g. my_model:build), got {spec!r}")
    mod = _import(module)
    obj: Any = mod
    for part in name.split("."):
        if not hasattr(obj, part):
            own = [
                n
                for n, v in vars(mod).items()
                if not n.startswith("_")
                and callable(v)
                and getattr(v, "__module__", None) == mod.__name__
            ]
            hint = f" (its functions: {', '.join(sorted(own)[:8])})" if own else ""
            raise FactoryError(f"module {module!r} has no attribute {name!r}{hint}")
        obj = getattr(obj, part)
    if not callable(obj):
        raise FactoryError(
            f"{spec} is a {type(obj).__name__}, not a function: FACTORY must be callable"
        )
    try:
        required = [
            p
            for p in inspect.signature(obj).parameters.values()
            if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        ]
    except (TypeError, ValueError):  # builtins without a signature: try calling it
        required = []
    if required:
        names = ", ".join(p.name for p in required)
        raise FactoryError(f"{spec} needs arguments ({names}); FACTORY must take none")
    return obj


def _names(text: str | None, known: list[str], what: str) -> list[str] | None:
    if text is None:
        return None
    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in known]
    if unknown:
        raise FactoryError(f"unknown {what} {', '.join(unknown)}; known: {', '.join(known)}")
    return names


def run(args: argparse.Namespace) -> int:
    """Run the ``check`` command: 0 all passed, 1 a check failed, 2 a usage error."""
    from .check_kit import PLANTED_BUGS, adapt, check_names, plant, run_checks

    try:
        only = _names(args.only, check_names(), "check")
        skip = _names(args.skip, check_names(), "check") or []
        bugs = _names(",".join(args.plant) if args.plant else None, list(PLANTED_BUGS), "bug")
        factory = load_factory(args.factory)
        with plant(*(bugs or [])):
            try:
                made = factory()
            except Exception as exc:
                raise FactoryError(f"{args.factory}() raised {_one_line(exc)}") from exc
            try:
                adapter = adapt(made)
            except (TypeError, ValueError) as exc:
                raise FactoryError(
                    f"{args.factory}() returned a {type(made).__name__}: it must return a "
                    "Transformer, DecoderOnlyTransformer, TorchTransformerModel or ModelAdapter"
                ) from exc
            report = run_checks(adapter, only=only, skip=skip, seed=args.seed)
    except FactoryError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    print(report.to_json() if args.json else report)
    return 0 if report.passed else 1
