"""Chapter 12's English language model (``data/english_lm.pt``).

A tiny decoder-only model trained on every token of ``<bos> sentence <eos>``. The shipped
checkpoint and the numbers ``scripts/english_lm_train.py`` stored with it in
``data/english_lm.json`` belong together (the perplexity on the first 100 test sentences
and a few samples are recomputed here), and it beats the unigram and bigram baselines
measured on the same test tokens.
"""

from __future__ import annotations

import math

import pytest
import torch
from shipped_lm import (
    ROOT,
    check_json_belongs_to_checkpoint,
    english_of_splits,
    result_fixture,
    skip_without,
)

from transformer_lib import DecoderOnlyTransformer
from transformer_lib.pipeline.corpus import normalize_sentence
from transformer_lib.pipeline.english_lm import (
    english_lm_config,
    load_english_lm,
    sentence_nll,
    shipped_english_lm_path,
    write_sentences,
)
from transformer_lib.pipeline.tokenizer import Tokenizer

RESULT = ROOT / "data" / "english_lm.json"
CHECKPOINT = shipped_english_lm_path()


def test_nll_counts_every_token_and_eos_but_not_bos():
    torch.manual_seed(0)
    model = DecoderOnlyTransformer(english_lm_config(30, 16, d_model=16, n_heads=2, n_layers=1))
    sentences = [[10, 11, 12], [13]]
    total, n = sentence_nll(model, sentences)
    assert n == 3 + 1 + 1 + 1  # three tokens and <eos>, one token and <eos>
    alone = sum(sentence_nll(model, [s])[0] for s in sentences)
    assert total == pytest.approx(alone, rel=1e-5)  # padding changes nothing
    assert 0 < total / n < 2 * math.log(30)


def test_samples_reproduce_from_their_seed_and_keep_the_prompt():
    torch.manual_seed(0)
    tokenizer = Tokenizer.load()
    model = DecoderOnlyTransformer(
        english_lm_config(tokenizer.vocab_size, 12, d_model=16, n_heads=2, n_layers=1)
    ).eval()
    a = write_sentences(model, tokenizer, [3, 4], prompt="Tom")
    assert a == write_sentences(model, tokenizer, [3, 4], prompt="Tom")
    assert a[1:] == write_sentences(model, tokenizer, [4], prompt="Tom")
    assert all(s.startswith("Tom") for s in a)


needs_checkpoint = skip_without(CHECKPOINT, RESULT, "scripts/english_lm_train.py")
result = result_fixture(RESULT)


@pytest.fixture(scope="module")
def english() -> dict[str, list[str]]:
    return english_of_splits()


@needs_checkpoint
def test_the_json_belongs_to_the_shipped_checkpoint(result):
    model = check_json_belongs_to_checkpoint(CHECKPOINT, result, load_english_lm)
    assert isinstance(model, DecoderOnlyTransformer) and not model.prefix_lm
    assert model.config.vocab_size == Tokenizer.load().vocab_size


@needs_checkpoint
def test_first_100_test_sentences_give_the_stored_perplexity(result, english):
    torch.set_num_threads(1)
    tokenizer = Tokenizer.load()
    assert len(english["test"]) == result["perplexity"]["test"]["sentences"]
    model, _ = load_english_lm()
    total, n = sentence_nll(model, tokenizer.encode_batch(english["test"][:100]))
    stored = result["first100"]
    assert n == stored["tokens"]
    assert math.exp(total / n) == pytest.approx(stored["perplexity"], rel=1e-4)


@needs_checkpoint
def test_the_model_beats_both_baselines(result):
    for split in ("valid", "test"):
        ppl = result["perplexity"][split]
        assert ppl["model"] < ppl["bigram"] < ppl["unigram"], split


@needs_checkpoint
def test_a_few_samples_reproduce_and_their_kinds_hold(result, english):
    torch.set_num_threads(1)
    tokenizer = Tokenizer.load()
    model, _ = load_english_lm()
    s = result["samples"]
    assert write_sentences(model, tokenizer, range(5)) == s["from_bos"][:5]
    assert write_sentences(model, tokenizer, range(2), prompt=s["prompt"]) == s["from_prompt"][:2]
    where = {name: {normalize_sentence(x) for x in sents} for name, sents in english.items()}
    for text, kind in zip(s["from_bos"], s["kind"]):
        key = normalize_sentence(text)
        in_train, held_out = key in where["train"], key in where["valid"] | where["test"]
        assert kind == ("train" if in_train else "held-out" if held_out else "new"), text
    assert sum(s["counts"].values()) == len(s["from_bos"]) == 50
