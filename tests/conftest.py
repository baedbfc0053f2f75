"""Shared pytest fixtures. Keep this file small; put fixtures used by one file in that file."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

# The test machines have few cores shared by several jobs; one thread keeps runs predictable.
torch.set_num_threads(1)

REPO_ROOT = Path(__file__).resolve().parents[1]


def pytest_collection_modifyitems(config, items):
    from book_pages import BOOK_TEST_FILES  # tests that read the built book: marker "book"

    for item in items:
        if item.path.name in BOOK_TEST_FILES and item.path.parent == REPO_ROOT / "tests":
            item.add_marker(pytest.mark.book)


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
