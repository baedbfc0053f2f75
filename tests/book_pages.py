"""Where the built book is and which pages it has (shared by the book and browser tests)."""

from __future__ import annotations

import os
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
BOOK_DIR = Path(os.environ.get("BOOK_DIR", ROOT))  # BOOK_DIR points the tests at another book
HTML_DIR = BOOK_DIR / "_build" / "html"

#: Test files (in tests/) that read the built book without a browser: marked ``book``
#: (tests/conftest.py), so that ``make test`` runs them once the book is built, with the
#: browser tests (scripts/run_tests.py).
BOOK_TEST_FILES = ("test_book.py",)


def toc_pages(book_dir: Path = BOOK_DIR) -> list[str]:
    """Every page of ``_toc.yml`` (root first), as paths without suffix."""
    toc = yaml.safe_load((book_dir / "_toc.yml").read_text(encoding="utf-8"))
    pages = [toc["root"]]

    def walk(entries):
        for entry in entries or []:
            if "file" in entry:
                pages.append(entry["file"])
            for key in ("parts", "chapters", "sections"):
                walk(entry.get(key))

    walk([toc])
    return [
        str(Path(p).with_suffix("")) if Path(p).suffix in (".md", ".ipynb") else p for p in pages
    ]
