"""The data checks of chapter 13: a planted shift, a planted leak and text the model cannot
hold are each found; the shipped data passes; bad input gets a clear error."""

from __future__ import annotations

import random

import pytest

from transformer_lib import load_pretrained
from transformer_lib.pipeline.check_kit import CheckReport
from transformer_lib.pipeline.corpus import read_pairs, split_pairs
from transformer_lib.pipeline.data_checks import (
    check_alignment,
    check_coverage,
    check_data,
    check_leakage,
    flagged_from,
    pair_losses,
)


@pytest.fixture(scope="module")
def translator():
    return load_pretrained()


@pytest.fixture(scope="module")
def splits(corpus_path):
    pairs, _ = read_pairs(corpus_path)
    return split_pairs(pairs)


@pytest.fixture(scope="module")
def sample(splits):
    """120 test pairs spread over the test split, in file order."""
    test = splits["test"]
    return [test[i * len(test) // 120] for i in range(120)]


def shifted(pairs, start):
    """The German side one line ahead from ``start`` on (a German line lost there)."""
    return pairs[:start] + [
        (en, pairs[i + 1][1]) for i, (en, _) in enumerate(pairs[start:-1], start)
    ]


# ---- alignment -------------------------------------------------------------------------------
def test_pair_losses_separate_aligned_from_shifted(translator, sample):
    aligned = pair_losses(translator.model, translator.tokenizer, sample)
    wrong = pair_losses(translator.model, translator.tokenizer, shifted(sample, 0))
    assert aligned.shape == (120,) and wrong.shape == (119,)
    assert aligned.median() < 1.5 < 4.0 < wrong.median()
    assert translator.model.training is False  # left as it was (load_pretrained: eval)


def test_aligned_pairs_pass(translator, sample):
    res = check_alignment(translator.model, translator.tokenizer, sample)
    assert res.passed, str(res)
    assert res.measured["flagged share"] < 0.3 and not res.causes


def test_a_planted_shift_is_found_and_placed(translator, sample):
    res = check_alignment(translator.model, translator.tokenizer, shifted(sample, 60))
    assert res.failed, str(res)
    assert res.cause_keys[0] == "pairs-shifted"
    assert abs(res.measured["flagged from pair"] - 60) <= 6
    assert "from pair" in res.finding


def test_a_shift_from_the_first_line_is_found_throughout(translator, sample):
    res = check_alignment(translator.model, translator.tokenizer, shifted(sample, 0))
    assert res.failed and res.measured["flagged share"] > 0.8
    assert "flagged from pair" not in res.measured and "throughout" in res.finding


def test_flagged_from_finds_a_change_point():
    assert flagged_from([False] * 10 + [True] * 10) == 10
    assert flagged_from([True] * 8) == 0  # the same share throughout
    # The index is the first pair of the flagged run: a clean pair flagged by chance just
    # before the change starts the run (chapter 13's shift at 150 is placed at 149) ...
    assert flagged_from([False] * 9 + [True] + [True] * 10) == 9
    # ... while one flagged by chance two pairs before does not move it.
    assert flagged_from([False] * 8 + [True, False] + [True] * 10) == 10
    with pytest.raises(ValueError, match="empty"):
        flagged_from([])


# ---- leakage ---------------------------------------------------------------------------------
def test_the_book_split_does_not_leak(splits):
    res = check_leakage(splits["train"], splits["test"])
    assert res.passed and res.measured["English in train"] == 0


def test_a_planted_leak_is_found(splits):
    en, de = splits["test"][5]
    train = [*splits["train"], (en.upper() + "!", "Etwas ganz anderes.")]  # a near-copy
    res = check_leakage(train, splits["test"])
    assert res.failed and res.measured["English in train"] == 1
    assert res.measured["German in train"] == 0 and res.measured["whole pair in train"] == 0
    assert "1 of" in res.finding and res.cause_keys == ("split-by-pair", "near-copies")


def test_a_random_split_of_tatoeba_leaks(corpus_path):
    pairs, _ = read_pairs(corpus_path)
    random.Random(0).shuffle(pairs)
    res = check_leakage(pairs[1200:], pairs[:1200])
    assert res.failed and res.measured["English in train"] > 300  # about 40 %


# ---- coverage --------------------------------------------------------------------------------
def test_shipped_text_is_covered(translator, sample):
    res = check_coverage(translator.tokenizer, sample, translator.config.max_len)
    assert res.passed and res.measured["<unk> share"] == 0


def test_unknown_text_and_overlong_pairs_are_found(translator, sample):
    bad = [*sample, ("Tokyo 東京 🎉", "Tokio 東京 🎉"), (" ".join(["very"] * 200) + ".", "Sehr.")]
    res = check_coverage(translator.tokenizer, bad, translator.config.max_len)
    assert res.failed
    assert res.measured["pairs with <unk>"] == 1 and res.measured["longer than max_len"] == 1
    assert res.cause_keys == ("unknown-characters", "longer-than-max-len")
    only_long = check_coverage(translator.tokenizer, bad[-1:], translator.config.max_len)
    assert only_long.cause_keys == ("longer-than-max-len",)


# ---- all together, and bad input ----------------------------------------------------------------
def test_check_data_on_the_shipped_data(splits, translator):
    report = check_data(splits, translator.model, translator.tokenizer, sample=100)
    assert isinstance(report, CheckReport) and report.passed, str(report)
    names = [r.name for r in report]
    assert names == ["coverage", "leakage", "leakage (valid)", "alignment"]


@pytest.mark.parametrize(
    ("pairs", "error", "match"),
    [
        ([], ValueError, "empty"),
        ("Hello.\tHallo.", TypeError, "list of"),
        ([("Hello.", "Hallo.", "CC-BY")], TypeError, r"pairs\[0\]"),
        ([("Hello.", None)], TypeError, "two strings"),
    ],
)
def test_bad_pairs_are_named(translator, pairs, error, match):
    with pytest.raises(error, match=match):
        check_coverage(translator.tokenizer, pairs, 128)
    with pytest.raises(error, match=match):
        check_alignment(translator.model, translator.tokenizer, pairs)


def test_bad_settings_are_named(translator, sample):
    tok, model = translator.tokenizer, translator.model
    with pytest.raises(ValueError, match="max_len"):
        check_coverage(tok, sample, 0)
    with pytest.raises(ValueError, match="threshold"):
        check_alignment(model, tok, sample, threshold=0)
    with pytest.raises(ValueError, match="empty"):
        check_leakage(sample, [])
    with pytest.raises(KeyError, match="'train' and 'test'"):
        check_data({"train": sample}, model, tok)
