"""Chapter 14's masked language model (``MaskedLanguageModel``, ``data/masked_lm.pt``).

The model reads both ways and restores a hidden token; the shipped checkpoint and the
numbers ``scripts/masked_lm_train.py`` stored with it in ``data/masked_lm.json`` belong
together (the counts on the first 100 test sentences are recomputed here), and it beats
the unigram and bigram baselines measured on the same test tokens.
"""

from __future__ import annotations

import pytest
import torch
from shipped_lm import (
    ROOT,
    check_json_belongs_to_checkpoint,
    english_of_splits,
    result_fixture,
    skip_without,
)

from transformer_lib import TransformerConfig
from transformer_lib.pipeline.masked_lm import (
    MaskedLanguageModel,
    guess_masked,
    load_masked_lm,
    masked_accuracy,
    masked_lm_batch,
    one_mask_at_a_time,
    shipped_masked_lm_path,
)
from transformer_lib.pipeline.tokenizer import BOS_ID, EOS_ID, PAD_ID, Tokenizer

RESULT = ROOT / "data" / "masked_lm.json"
CHECKPOINT = shipped_masked_lm_path()


def small_model(V=50):
    torch.manual_seed(0)
    config = TransformerConfig.tiny(V + 1, d_model=32, d_ff=64, n_heads=2, max_len=16)
    return MaskedLanguageModel(config).eval()


def test_every_position_reads_the_whole_sentence():
    model = small_model()
    ids = masked_lm_batch([[10, 11, 12, 13]])  # (1, 6)
    changed = ids.clone()
    changed[0, -2] = 14  # the last real token
    with torch.no_grad():
        diff = (model.hidden_states(ids) - model.hidden_states(changed)).abs().amax(-1)
    assert (diff[0] > 1e-4).all()  # position 0 (<bos>) too: no causal mask


def test_padding_changes_nothing_and_mask_is_never_a_guess():
    model = small_model()
    short = masked_lm_batch([[10, 11, 12]])  # (1, 5)
    padded = masked_lm_batch([[10, 11, 12], [10, 11, 12, 13, 14, 15]])  # (2, 8)
    with torch.no_grad():
        a, b = model(short), model(padded)[:1, :5]
    assert torch.allclose(a, b, atol=1e-5)
    guesses = guess_masked(model, [10, 11, 12], position=1, k=model.config.vocab_size - 6)
    assert model.mask_id not in {i for i, _ in guesses}
    assert all(i >= 5 for i, _ in guesses)  # never a special token
    assert sum(p for _, p in guesses) == pytest.approx(1.0, abs=1e-5)


def test_one_mask_at_a_time():
    batch = masked_lm_batch([[10, 11], [12]])  # (2, 4): <bos> a b <eos> / <bos> c <eos> <pad>
    assert batch.tolist() == [[BOS_ID, 10, 11, EOS_ID], [BOS_ID, 12, EOS_ID, PAD_ID]]
    inputs, where, targets = one_mask_at_a_time(batch, mask_id=99)
    assert targets.tolist() == [10, 11, 12]
    assert where.sum(-1).tolist() == [1, 1, 1]
    assert inputs[where].tolist() == [99, 99, 99]
    assert torch.equal(inputs[~where], batch[[0, 0, 1]][~where])


needs_checkpoint = skip_without(CHECKPOINT, RESULT, "scripts/masked_lm_train.py")
result = result_fixture(RESULT)


@needs_checkpoint
def test_the_json_belongs_to_the_shipped_checkpoint(result):
    model = check_json_belongs_to_checkpoint(CHECKPOINT, result, load_masked_lm)
    assert model.config.vocab_size == Tokenizer.load().vocab_size + 1  # and [MASK]


@needs_checkpoint
def test_first_100_test_sentences_give_the_stored_counts(result):
    torch.set_num_threads(1)
    tokenizer = Tokenizer.load()
    test = english_of_splits()["test"]
    assert len(test) == result["test"]["sentences"]
    words = [
        i
        for i in range(5, tokenizer.vocab_size)
        if any(c.isalpha() for c in tokenizer.id_to_token(i))
    ]
    model, _ = load_masked_lm()
    now = masked_accuracy(model, tokenizer.encode_batch(test[:100]), words)
    stored = result["first100"]
    assert now["tokens"] == stored["tokens"]
    for key in ("top1", "top5", "word_top1", "word_top5"):  # a tie may fall otherwise elsewhere
        assert abs(now[key] - stored[key]) <= 2, (key, now, stored)


@needs_checkpoint
def test_the_model_beats_both_baselines_on_the_test_split(result):
    test = result["test"]
    for key in ("top1_acc", "top5_acc", "word_top1_acc", "word_top5_acc"):
        assert test["model"][key] > test["bigram"][key] > test["unigram"][key], key
    assert test["model"]["tokens"] == test["unigram"]["tokens"] == test["bigram"]["tokens"]
