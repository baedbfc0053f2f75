"""``data/vocab_sizes.json`` (``scripts/vocab_sizes.py``) fits the shipped corpus and tokenizer.

Chapter 2 plots tokens per sentence against the vocabulary size from that file instead of
training six tokenizers when the book is built. Its row for the shipped size must be what
the shipped tokenizer gives now, and the smallest size, trained again, must give its row.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from transformer_lib.pipeline.corpus import find_corpus, read_pairs
from transformer_lib.pipeline.tokenizer import Tokenizer, train_tokenizer_from_corpus

ROOT = Path(__file__).resolve().parents[1]
RESULT = ROOT / "data" / "vocab_sizes.json"


def _script():
    spec = importlib.util.spec_from_file_location(
        "vocab_sizes", ROOT / "scripts" / "vocab_sizes.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def measured():
    script = _script()
    pairs, _ = read_pairs(find_corpus())
    result = json.loads(RESULT.read_text(encoding="utf-8"))
    return script, result, script.validation_sentences(pairs), script.training_sentences(pairs)


def test_the_file_has_every_size_and_the_trade_off(measured):
    script, result, valid, train = measured
    rows = result["sizes"]
    assert [r["requested"] for r in rows] == list(script.SIZES)
    assert all(r["vocab_size"] == r["requested"] for r in rows)  # every size was reached
    assert result["validation_sentences"] == {k: len(v) for k, v in valid.items()}
    assert result["training_sentences"] == len(train)
    for lang in ("english", "german"):
        lengths = [r[f"tokens_per_sentence_{lang}"] for r in rows]
        assert lengths == sorted(lengths, reverse=True), lang  # larger V, shorter sentences
    rare = [r["rare_tokens"] for r in rows]
    assert rare == sorted(rare), rare


def test_the_shipped_size_is_the_shipped_tokenizer(measured):
    script, result, valid, train = measured
    tok = Tokenizer.load()
    row = next(r for r in result["sizes"] if r["vocab_size"] == tok.vocab_size)
    assert script.measure(tok, valid, train) == {
        k: v for k, v in row.items() if k not in ("requested", "training_cpu_seconds")
    }


def test_the_smallest_size_trains_again_to_its_row(measured):
    script, result, valid, train = measured
    row = result["sizes"][0]
    tok = train_tokenizer_from_corpus(out_path=None, vocab_size=row["requested"])
    got = script.measure(tok, valid, train)
    assert got == {k: v for k, v in row.items() if k not in ("requested", "training_cpu_seconds")}


def test_the_figure_plots_the_file_and_marks_the_shipped_size():
    import matplotlib

    matplotlib.use("agg")
    import numpy as np

    from transformer_lib.views.embeddings import plot_vocab_sizes

    rows = json.loads(RESULT.read_text(encoding="utf-8"))["sizes"]
    fig = plot_vocab_sizes(rows, 128, shipped=4000, rest=900_000)
    lengths, table = fig.axes
    sizes = [r["vocab_size"] for r in rows]
    for ax in (lengths, table):
        assert ax.get_xlabel() == "vocabulary size V" and ax.get_ylabel()
        assert ax.get_xscale() == "log"
        marks = [ln for ln in ax.get_lines() if list(ln.get_xdata()) == [4000, 4000]]
        assert len(marks) == 1  # the shipped size
    english = lengths.get_lines()[0]
    assert list(english.get_xdata()) == sizes
    assert list(english.get_ydata()) == [r["tokens_per_sentence_english"] for r in rows]
    np.testing.assert_allclose(table.get_lines()[0].get_ydata(), np.array(sizes) * 128 / 1e6)
    assert [t.get_text() for t in table.get_legend().get_texts()] == [
        "V × 128",
        "rest of the model",
    ]
