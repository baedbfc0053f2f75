"""Train tokenizers of several vocabulary sizes and measure what each one costs (chapter 2).

    python scripts/vocab_sizes.py --out data/vocab_sizes.json

Each tokenizer is trained as the shipped one was (``train_tokenizer_from_corpus``: the
distinct sentences of the corpus's training split, both languages, ``min_frequency`` 2),
with only the vocabulary size changed. For each it records the size reached, the mean
number of tokens of a validation sentence (English and German apart; the validation split
took no part in training) and how many of its tokens occur fewer than ``RARE`` times in
the training text (an embedding row learns only from the sentences its token is in).
Chapter 2 plots the result; ``tests/test_vocab_sizes.py`` checks the file against the
shipped tokenizer and retrains the smallest size.
"""

from __future__ import annotations

import argparse
import json
import time
from collections import Counter
from pathlib import Path

import tokenizers

from transformer_lib.pipeline.corpus import find_corpus, read_pairs, split_pairs
from transformer_lib.pipeline.tokenizer import train_tokenizer_from_corpus

#: The sizes tried, as requested of the trainer (special tokens included).
SIZES = (500, 1000, 2000, 4000, 8000, 16000)
#: A token that occurs fewer times than this in the training text counts as rare.
RARE = 10


def validation_sentences(pairs) -> dict[str, list[str]]:
    """The validation split's distinct sentences, ``{"English": [...], "German": [...]}``."""
    valid = split_pairs(pairs)["valid"]
    return {
        "English": list(dict.fromkeys(en for en, _ in valid)),
        "German": list(dict.fromkeys(de for _, de in valid)),
    }


def training_sentences(pairs) -> list[str]:
    """The training text exactly as ``train_tokenizer_from_corpus`` reads it."""
    train = split_pairs(pairs)["train"]
    return list(dict.fromkeys(s for pair in train for s in pair))


def mean_tokens(tok, texts) -> float:
    return sum(len(ids) for ids in tok.encode_batch(texts)) / len(texts)


def measure(tok, valid: dict[str, list[str]], train: list[str]) -> dict:
    """What one tokenizer gives: its size, tokens per validation sentence, rare tokens."""
    counts = Counter(i for ids in tok.encode_batch(train) for i in ids)
    n_special = len(tok.special_tokens)
    rare = sum(counts[i] < RARE for i in range(n_special, tok.vocab_size))
    row = {"vocab_size": tok.vocab_size}
    for name, texts in valid.items():
        row[f"tokens_per_sentence_{name.lower()}"] = round(mean_tokens(tok, texts), 3)
    row["rare_tokens"] = rare
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="JSON file to write")
    args = parser.parse_args()
    pairs, _ = read_pairs(find_corpus())
    valid = validation_sentences(pairs)
    train = training_sentences(pairs)
    rows = []
    for size in SIZES:
        start = time.process_time()
        tok = train_tokenizer_from_corpus(out_path=None, vocab_size=size)
        seconds = time.process_time() - start
        row = {"requested": size, **measure(tok, valid, train)}
        row["training_cpu_seconds"] = round(seconds, 2)
        rows.append(row)
        print(row)
    result = {
        "what": "BPE tokenizers trained like the shipped one (train split, min_frequency 2), "
        "only vocab_size changed; tokens per sentence: mean over the validation split's "
        "distinct sentences; rare_tokens: non-special tokens seen fewer than `rare` times "
        "in the training text",
        "rare": RARE,
        "validation_sentences": {name: len(texts) for name, texts in valid.items()},
        "training_sentences": len(train),
        "tokenizers_version": tokenizers.__version__,
        "sizes": rows,
    }
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
