"""Execute the book's chapters in parallel into the build's execution cache.

    python scripts/execute_chapters.py            # as many at once as there are cores (2 here)
    python scripts/execute_chapters.py --jobs 1

``make book`` runs this before ``jupyter-book build``. Jupyter Book executes the notebooks
one after another; most of a chapter's time is its own single-threaded Python, so on a
machine with two cores two chapters at once take about half as long. Each notebook is
executed exactly as the build would execute it (myst-nb's ``cache`` mode with the book's
``_config.yml``: a fresh temporary working directory, the same timeout, errors not
allowed, and ``TRANSFORMER_BOOK_STATIC=1`` as the book's Sphinx extension sets it) and
stored in ``_build/.jupyter_cache``, where the build then finds it and does not run it
again. A notebook already in the cache (unchanged since it was executed) is
skipped. A notebook that fails is reported with its error and left out of the cache, so
the build runs it again and fails on it with its usual message.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "scripts"))

from vendor_js import STATIC_ENV_VAR  # noqa: E402  (the book's Sphinx extension)


def _settings(book: Path) -> dict:
    import yaml

    config = yaml.safe_load((book / "_config.yml").read_text(encoding="utf-8"))
    execute = config.get("execute", {})
    if execute.get("execute_notebooks") != "cache":
        raise SystemExit("_config.yml does not execute notebooks in 'cache' mode: nothing to do")
    return {
        "timeout": int(execute.get("timeout", 30)),
        "allow_errors": bool(execute.get("allow_errors", False)),
        "in_temp": bool(execute.get("run_in_temp", False)),
    }


def _execute(path: str, timeout: int, allow_errors: bool, in_temp: bool) -> tuple:
    """In a worker process: run one notebook; return (path, notebook, seconds, error)."""
    import nbformat
    from jupyter_cache.executors.utils import single_nb_execution

    nb = nbformat.read(path, as_version=4)
    with tempfile.TemporaryDirectory() as tmp:
        cwd = tmp if in_temp else str(Path(path).parent)
        result = single_nb_execution(
            nb, cwd=cwd, allow_errors=allow_errors, timeout=timeout, meta_override=True
        )
    error = None if result.err is None else f"{type(result.err).__name__}\n{result.exc_string}"
    return path, nbformat.writes(nb), result.time, error


def in_starting_order(paths: list[str]) -> list[str]:
    """The notebooks in the order they start: the book's order, reversed.

    Two workers finish soonest when the longest notebooks start first and the short ones
    fill the gaps at the end. The book's later chapters train, decode and measure models
    (each takes one to a few minutes); its first chapters take seconds. In the book's own
    order the longest chapter started last and ran alone while the other core was idle.
    """
    return list(reversed(paths))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--book-dir", type=Path, default=ROOT, help="the book (its _toc.yml)")
    parser.add_argument(
        "--jobs", type=int, default=os.cpu_count() or 1, help="notebooks executed at once"
    )
    args = parser.parse_args(argv)
    if args.jobs < 1:
        parser.error(f"--jobs must be at least 1, not {args.jobs}")

    import nbformat
    from book_pages import toc_pages
    from jupyter_cache import get_cache
    from jupyter_cache.base import CacheBundleIn

    book = args.book_dir.resolve()
    settings = _settings(book)
    # The kernels see what the build's own kernels see: the book's Sphinx extension sets
    # this for them, and the explorers then build their precomputed, kernel-free versions.
    os.environ.setdefault(STATIC_ENV_VAR, "1")
    cache = get_cache(str(book / "_build" / ".jupyter_cache"))
    todo = []
    for name in toc_pages(book):
        path = book / f"{name}.ipynb"
        if not path.is_file():
            continue  # a Markdown page: nothing to execute
        try:
            cache.match_cache_notebook(nbformat.read(path, as_version=4))
        except KeyError:
            todo.append(str(path))
    if not todo:
        print("every chapter is already in the execution cache")
        return 0
    todo = in_starting_order(todo)
    jobs = min(args.jobs, len(todo))
    print(f"executing {len(todo)} notebook(s), {jobs} at a time")
    start, failed = time.perf_counter(), []
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        futures = [
            pool.submit(
                _execute, p, settings["timeout"], settings["allow_errors"], settings["in_temp"]
            )
            for p in todo
        ]
        for future in as_completed(futures):
            path, text, seconds, error = future.result()
            name = Path(path).relative_to(book)
            if error:
                failed.append(name)
                print(f"FAILED {name} after {seconds:.0f} s: {error}", file=sys.stderr)
                continue
            record = cache.add_nb_to_project(path)
            cache.cache_notebook_bundle(
                CacheBundleIn(
                    nbformat.reads(text, as_version=4),
                    record.uri,
                    data={"execution_seconds": seconds},
                ),
                check_validity=False,
                overwrite=True,
            )
            print(f"executed {name} in {seconds:.0f} s")
    print(f"done in {time.perf_counter() - start:.0f} s")
    if failed:
        print(
            f"{len(failed)} notebook(s) failed ({', '.join(map(str, failed))}); the build "
            "runs them again and reports the error",
            file=sys.stderr,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
