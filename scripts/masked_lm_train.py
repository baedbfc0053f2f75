"""Train chapter 14's small masked language model and write ``data/masked_lm.pt`` and
``data/masked_lm.json``.

The model (:class:`transformer_lib.pipeline.masked_lm.MaskedLanguageModel`) is the
library's encoder stack with a padding mask only, so that every position reads the whole
sentence, an embedding with sinusoidal positions and an output layer tied to the
embedding. It reads the English sentences of the corpus's *training* split
(:func:`~transformer_lib.pipeline.corpus.split_pairs`, the split every shipped model
uses: no normalised sentence of the validation or test split occurs in training), each
once, encoded with the shipped tokenizer (``data/tokenizer.json``) between ``<bos>`` and
``<eos>``. Every step draws BERT's masks afresh with
:func:`~transformer_lib.pipeline.masked_lm.mask_tokens` (15 % of the tokens picked; of
those 80 % ``[MASK]``, 10 % a random token, 10 % kept) and takes the cross-entropy at the
picked positions only. The validation split's masked loss is logged; the test split is
only read at the end.

The JSON records, for the distinct English sentences of the *test* split, every
non-special token hidden behind ``[MASK]`` once, alone (:func:`masked_accuracy`):
top-1 and top-5 accuracy of the model, of a unigram baseline (the five most frequent
training tokens, whatever the context) and of a left-neighbour bigram baseline (the
tokens that most often follow the token on the left in training), over all tokens and
over the tokens that hold a letter (punctuation left out). It also records the model's
counts on the first 100 test sentences (``first100``), which
``tests/test_masked_lm_model.py`` recomputes to check that the JSON belongs to the
checkpoint. Chapter 14 reads both files; nothing is trained when the book is built.

    python scripts/masked_lm_train.py    # the shipped run: 6.0 CPU-minutes, one thread
"""

from __future__ import annotations

import sys
from collections import Counter, defaultdict

import lm_training as lm  # puts the repository on sys.path
import torch
import torch.nn.functional as F

from transformer_lib import TransformerConfig
from transformer_lib.pipeline.masked_lm import (
    MaskedLanguageModel,
    mask_tokens,
    masked_accuracy,
    masked_lm_batch,
)
from transformer_lib.pipeline.tokenizer import BOS_ID, SPECIAL_TOKENS, Tokenizer

FIRST_N = 100  # test sentences whose counts tests/test_masked_lm_model.py recomputes


def word_ids(tokenizer: Tokenizer) -> list[int]:
    """The ids of the tokens that hold a letter (not only punctuation or digits)."""
    return [
        i
        for i in range(len(SPECIAL_TOKENS), tokenizer.vocab_size)
        if any(ch.isalpha() for ch in tokenizer.id_to_token(i))
    ]


def baselines(train: list[list[int]], test: list[list[int]], words: set[int]) -> dict:
    """Top-1/top-5 of the unigram and left-neighbour bigram guesses on every test token.

    Each baseline is counted on the training sentences; on the letter tokens it guesses
    only among letter tokens (a generous rule: it is told that a word is hidden).
    """
    uni, bi = Counter(), defaultdict(Counter)
    for s in train:
        for left, tok in zip([BOS_ID, *s[:-1]], s):
            uni[tok] += 1
            bi[left][tok] += 1

    def top(counter: Counter, allowed=None) -> list[int]:
        ranked = [t for t, _ in counter.most_common() if allowed is None or t in allowed]
        return ranked[:5]

    top_uni = {None: top(uni), "word": top(uni, words)}
    out = {}
    for name in ("unigram", "bigram"):
        counts = dict.fromkeys(
            ("tokens", "top1", "top5", "word_tokens", "word_top1", "word_top5"), 0
        )
        for s in test:
            for left, tok in zip([BOS_ID, *s[:-1]], s):
                for prefix, allowed in [("", None), ("word_", words)]:
                    if allowed is not None and tok not in allowed:
                        continue
                    fallback = top_uni["word" if allowed else None]
                    guess = fallback
                    if name == "bigram":
                        guess = top(bi[left], allowed) if bi.get(left) else []
                        guess = (guess + [t for t in fallback if t not in guess])[:5]
                    counts[prefix + "tokens"] += 1
                    counts[prefix + "top1"] += int(guess[0] == tok)
                    counts[prefix + "top5"] += int(tok in guess)
        out[name] = counts
    out["unigram_top5_tokens"] = top_uni[None]
    return out


def rates(counts: dict) -> dict:
    """Counts and the accuracies they give."""
    out = dict(counts)
    for prefix in ("", "word_"):
        for k in ("top1", "top5"):
            out[f"{prefix}{k}_acc"] = counts[prefix + k] / counts[prefix + "tokens"]
    return out


@torch.no_grad()
def validation_loss(model: MaskedLanguageModel, valid: list[list[int]], seed: int) -> float:
    """Mean cross-entropy at BERT's picked positions, on one fixed draw of masks."""
    model.eval()
    total, n = 0.0, 0
    for start in range(0, len(valid), 256):
        batch = masked_lm_batch(valid[start : start + 256])
        out = mask_tokens(batch, model.mask_id, model.mask_id, seed=seed + start)
        logits = model.logits_at(out.inputs, out.selected)
        total += F.cross_entropy(logits, out.targets[out.selected], reduction="sum").item()
        n += int(out.selected.sum())
    model.train()
    return total / n


def main(argv: list[str] | None = None) -> int:
    args = lm.parse_args(__doc__.splitlines()[0], argv, steps=7000, layers=2, name="masked_lm")
    data = lm.read_english_splits()
    ids, words = data.ids, set(word_ids(data.tokenizer))
    V = data.tokenizer.vocab_size  # [MASK] gets id V
    config = TransformerConfig(
        vocab_size=V + 1,
        d_model=args.d_model,
        n_heads=args.heads,
        d_ff=4 * args.d_model,
        n_encoder_layers=args.layers,
        n_decoder_layers=0,
        dropout=0.1,
        max_len=max(64, data.longest),
    )
    model = MaskedLanguageModel(config)

    def step_loss(batch: torch.Tensor, step: int) -> tuple[torch.Tensor, int]:
        out = mask_tokens(batch, model.mask_id, V, seed=args.seed * 1_000_003 + step)
        logits = model.logits_at(out.inputs, out.selected)  # (N, V + 1)
        loss = F.cross_entropy(logits, out.targets[out.selected])
        return loss, int((batch != config.pad_id).sum())

    def validate() -> tuple[dict, str]:
        val = validation_loss(model, ids["valid"], seed=12345)
        return {"val_loss": round(val, 4)}, f"val {val:.3f}"

    train_ids = ids["train"]
    run = lm.train(model, args, train_ids, step_loss, validate)
    tok_sha = lm.save_checkpoint(args, model, config.to_dict(), run, len(train_ids))

    test = ids["test"]
    result = lm.result_header(
        args,
        "masked-token accuracy of data/masked_lm.pt on the English test "
        "sentences, each non-special token hidden behind [MASK] once, alone",
        "scripts/masked_lm_train.py",
        data.corpus,
        tok_sha,
        model,
    ) | {
        "config": {k: config.to_dict()[k] for k in ("d_model", "n_heads", "d_ff")}
        | {"layers": config.n_encoder_layers, "vocab_with_mask": config.vocab_size},
        "training": lm.training_summary(args, run, len(train_ids))
        | {"final_val_loss": run.log[-1]["val_loss"]},
        "test": {
            "sentences": len(test),
            "model": rates(masked_accuracy(model, test, words)),
            **{
                k: rates(v)
                for k, v in baselines(train_ids, test, words).items()
                if k != "unigram_top5_tokens"
            },
        },
        "valid": {
            "sentences": len(ids["valid"]),
            "model": rates(masked_accuracy(model, ids["valid"], words)),
        },
        "first100": masked_accuracy(model, test[:FIRST_N], words),
    }
    lm.write_result(args, result)
    t = result["test"]
    for name in ("model", "unigram", "bigram"):
        print(
            f"{name:8} top-1 {t[name]['top1_acc']:.1%}  top-5 {t[name]['top5_acc']:.1%}  "
            f"(letters: {t[name]['word_top1_acc']:.1%} / {t[name]['word_top5_acc']:.1%})"
        )
    lm.print_written(args, run)
    return 0


if __name__ == "__main__":
    sys.exit(main())
