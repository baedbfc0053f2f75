"""What the tests of the two shipped language models share (``data/english_lm.pt`` in
``test_english_lm.py``, ``data/masked_lm.pt`` in ``test_masked_lm_model.py``): skipping when
a file is missing, the JSON written with the checkpoint, the English sentences of the
corpus's splits, and the check that the JSON belongs to the checkpoint."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path

import pytest
import torch

from transformer_lib.pipeline.corpus import find_corpus, read_pairs, split_pairs

ROOT = Path(__file__).resolve().parents[1]
TOKENIZER = ROOT / "data" / "tokenizer.json"


def skip_without(checkpoint: Path, result: Path, script: str) -> pytest.MarkDecorator:
    """Skip a test when the shipped checkpoint or its JSON is missing."""
    return pytest.mark.skipif(
        not (checkpoint.is_file() and result.is_file()),
        reason=f"data/{checkpoint.name} or data/{result.name} is missing: run {script}",
    )


def result_fixture(path: Path):
    """A module fixture ``result``: the JSON written with the checkpoint."""

    def result() -> dict:
        return json.loads(path.read_text(encoding="utf-8"))

    return pytest.fixture(scope="module", name="result")(result)


def english_of_splits() -> dict[str, list[str]]:
    """The distinct English sentences of each split of the corpus, in corpus order."""
    splits = split_pairs(read_pairs(find_corpus())[0])
    return {name: list(dict.fromkeys(en for en, _ in p)) for name, p in splits.items()}


def check_json_belongs_to_checkpoint(
    checkpoint: Path, result: dict, load: Callable[[], tuple[torch.nn.Module, dict]]
) -> torch.nn.Module:
    """The checkpoint is small enough to ship, and the JSON names its sha256, the shipped
    tokenizer's and its number of parameters; returns the loaded model."""
    assert checkpoint.stat().st_size < 3.2e6  # small enough to ship
    assert hashlib.sha256(checkpoint.read_bytes()).hexdigest() == result["checkpoint_sha256"]
    tokenizer_sha = hashlib.sha256(TOKENIZER.read_bytes()).hexdigest()
    model, ckpt = load()
    assert ckpt["tokenizer_sha256"] == result["tokenizer_sha256"] == tokenizer_sha
    assert sum(p.numel() for p in model.parameters()) == result["parameters"]
    return model
