"""Shared pytest fixtures. Keep this file small; put fixtures used by one file in that file."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

# The test machines have few cores shared by several jobs; one thread keeps runs predictable.
torch.set_num_threads(1)

REPO_ROOT = Path(__file__).resolve().parents[1]

# `make test` (scripts/run_tests.py) runs the tests in four processes side by side; those
# marked ``side`` run in a process of their own. They are tests that mostly wait (for
# processes they start, or for pages they open themselves) and share no page with the
# browser tests that visit the built book, so they need not wait behind them.
#: Test files whose tests run in the ``side`` process (unless a test visits a book page).
SIDE_FILES = {
    "test_distributed.py",  # two torchrun launches
    "test_interrupt.py",  # training processes killed, interrupted and resumed
    "browser/test_live_model.py",  # its own pages of the in-browser translator
    "browser/test_self_check_in_browser.py",  # pages of its own and the small book
}
#: A test that uses one of these fixtures opens pages of its own (the small book).
SIDE_FIXTURES = {"minibook", "chromium_context"}
#: A test that uses one of these visits the built book's shared pages: it stays with them.
BOOK_PAGE_FIXTURES = {"visit", "phone_visit"}


def pytest_collection_modifyitems(config, items):
    tests = REPO_ROOT / "tests"
    for item in items:
        fixtures = set(getattr(item, "fixturenames", ()))
        if fixtures & BOOK_PAGE_FIXTURES or tests not in item.path.parents:
            continue
        if item.path.relative_to(tests).as_posix() in SIDE_FILES or fixtures & SIDE_FIXTURES:
            item.add_marker(pytest.mark.side)


@pytest.fixture(scope="session")
def corpus_path() -> Path:
    """The real English-German corpus (never downloaded by tests); skips if there is none."""
    from transformer_lib.pipeline.corpus import CorpusNotFoundError, find_corpus

    try:
        return find_corpus(download=False)
    except CorpusNotFoundError as exc:
        pytest.skip(f"corpus not available: {exc}")


@pytest.fixture(scope="session")
def tokenizer():
    """The tokenizer that ships in data/tokenizer.json."""
    from transformer_lib.pipeline.tokenizer import DEFAULT_TOKENIZER_PATH, Tokenizer

    if not DEFAULT_TOKENIZER_PATH.is_file():
        pytest.fail(
            "data/tokenizer.json is missing; recreate it with "
            "`python -m transformer_lib.pipeline.tokenizer`."
        )
    return Tokenizer.load(DEFAULT_TOKENIZER_PATH)
