"""``data/head_to_head.json`` belongs to the shipped checkpoints (``scripts/head_to_head.py``).

Chapter 12 reads the comparison from that file instead of re-running beam search when the
book is built, so the file must describe the models that ship: the parameter counts must
be theirs, and greedy BLEU on the first 100 test sources, recomputed now, must match the
value the script stored. A retrained model without a re-run of the script fails here.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from transformer_lib import count_parameters, load_pretrained
from transformer_lib.pipeline.corpus import find_corpus, read_pairs, split_pairs
from transformer_lib.pipeline.evaluation import evaluate_pairs
from transformer_lib.pipeline.pretrained import DEFAULT_CHECKPOINT, DEFAULT_DECODER_ONLY

ROOT = Path(__file__).resolve().parents[1]
RESULT = ROOT / "data" / "head_to_head.json"
CHECKPOINTS = {"encoder-decoder": DEFAULT_CHECKPOINT, "decoder-only": DEFAULT_DECODER_ONLY}

pytestmark = pytest.mark.skipif(
    not (RESULT.is_file() and all(p.is_file() for p in CHECKPOINTS.values())),
    reason="data/head_to_head.json or a shipped checkpoint is missing: "
    "run `python scripts/head_to_head.py` once both models are in data/",
)


@pytest.fixture(scope="module")
def result() -> dict:
    return json.loads(RESULT.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def test_pairs() -> list[tuple[str, str]]:
    pairs, _ = read_pairs(find_corpus())
    return split_pairs(pairs)["test"]


def test_both_models_and_their_fields(result):
    assert set(result["models"]) == set(CHECKPOINTS)
    beam = f"beam{result['beam_size']}"
    for name, record in result["models"].items():
        assert record["arch"] == name
        for key in ("greedy", beam):
            assert 0 <= record[key]["bleu"] <= 100 and 0 <= record[key]["chrf"] <= 100
        training = record["training"]
        assert training["steps"] > 0 and training["cpu_minutes"] > 0
        assert record["decoding"]["sentences_per_s"] > 0


@pytest.mark.parametrize("name", sorted(CHECKPOINTS))
def test_parameter_counts_are_the_checkpoints(result, name):
    translator = load_pretrained(CHECKPOINTS[name])
    assert result["models"][name]["parameters"] == count_parameters(translator.model)


@pytest.mark.parametrize("name", sorted(CHECKPOINTS))
def test_greedy_bleu_on_the_first_100_test_sources_is_reproduced(result, test_pairs, name):
    torch.set_num_threads(1)
    translator = load_pretrained(CHECKPOINTS[name])
    n = result["test_split"]["first_n_check"]
    now = evaluate_pairs(translator.model, translator.tokenizer, test_pairs, limit=n)
    stored = result["models"][name]["bleu_greedy_first100"]
    assert now.bleu == pytest.approx(stored, abs=0.01), (
        f"{name}: greedy BLEU on the first {n} test sources is {now.bleu:.2f} now but "
        f"{stored} in {RESULT.name}; re-run `python scripts/head_to_head.py`"
    )
