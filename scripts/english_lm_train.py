"""Train chapter 12's small causal language model of English and write
``data/english_lm.pt`` and ``data/english_lm.json``.

The model is the library's :class:`~transformer_lib.components.decoder_only.DecoderOnlyTransformer`
in a tiny configuration (:func:`~transformer_lib.pipeline.english_lm.english_lm_config`),
trained as GPT is: each sequence is ``<bos> sentence <eos>`` and every next-token
prediction counts. It reads the distinct English sentences of the corpus's *training*
split (:func:`~transformer_lib.pipeline.corpus.split_pairs`, the split every shipped model
uses: no normalised sentence of the validation or test split occurs in training), encoded
with the shipped tokenizer (``data/tokenizer.json``). The validation split's perplexity is
logged; the test split is only read at the end.

The JSON records the perplexity per token (the sentence's tokens and ``<eos>``) on the
distinct English sentences of the validation and test splits, of the model and of two
baselines counted on the training sentences: a unigram model (add-one smoothing over the
vocabulary) and a bigram model interpolated with it (the weight picked on the validation
split). It also records 50 sentences sampled from ``<bos>`` (seeds 0 to 49) and 5 from
"Tom" (seeds 0 to 4) with chapter 12's settings (τ = 0.7, top-p 0.9), and for the 50 how
many are, after :func:`~transformer_lib.pipeline.corpus.normalize_sentence`, a sentence
of the training split, of the validation or test split only, or of no split (new). Whether
the new ones are grammatical is not measured. ``tests/test_english_lm.py`` recomputes the
perplexity on the first 100 test sentences (``first100``) and a few samples. Chapter 12
reads both files; nothing is trained when the book is built.

    python scripts/english_lm_train.py    # the shipped run, one thread
"""

from __future__ import annotations

import math
import sys
from collections import Counter, defaultdict

import lm_training as lm  # puts the repository on sys.path
import torch
import torch.nn.functional as F

from transformer_lib import DecoderOnlyTransformer
from transformer_lib.components.decoder_only import model_config_dict
from transformer_lib.pipeline.corpus import normalize_sentence
from transformer_lib.pipeline.english_lm import (
    english_lm_config,
    sentence_nll,
    write_sentences,
)
from transformer_lib.pipeline.tokenizer import BOS_ID, EOS_ID

FIRST_N = 100  # test sentences whose perplexity tests/test_english_lm.py recomputes
N_SAMPLES = 50  # sentences sampled from <bos>, seeds 0 .. N_SAMPLES - 1
PROMPT, N_PROMPTED = "Tom", 5


def ngram_baselines(train, valid, test, vocab_size: int) -> dict:
    """Perplexity per token of an add-one unigram model and of an interpolated bigram.

    Targets are the sentence's tokens and ``<eos>``; the bigram's context is the token on
    the left (``<bos>`` for the first). ``p = λ p_bigram + (1 − λ) p_unigram``, λ picked on
    ``valid`` from 0.05 … 0.95 (a generous rule for the baseline).
    """
    uni, bi = Counter(), defaultdict(Counter)
    for s in train:
        seq = [BOS_ID, *s, EOS_ID]
        for left, tok in zip(seq, seq[1:]):
            uni[tok] += 1
            bi[left][tok] += 1
    n_uni = sum(uni.values())
    n_left = {left: sum(c.values()) for left, c in bi.items()}

    def p_uni(tok):
        return (uni[tok] + 1) / (n_uni + vocab_size)

    def nll(sentences, lam):
        total, n = 0.0, 0
        for s in sentences:
            seq = [BOS_ID, *s, EOS_ID]
            for left, tok in zip(seq, seq[1:]):
                p = p_uni(tok)
                if lam and left in bi:
                    p = lam * bi[left][tok] / n_left[left] + (1 - lam) * p
                total -= math.log(p)
                n += 1
        return total, n

    lams = [round(0.05 * k, 2) for k in range(1, 20)]
    best = min(lams, key=lambda lam: nll(valid, lam)[0])
    out = {"bigram_lambda": best}
    for split, sentences in (("valid", valid), ("test", test)):
        for name, lam in (("unigram", 0.0), ("bigram", best)):
            total, n = nll(sentences, lam)
            out[f"{split}_{name}"] = {"nll": total, "tokens": n, "perplexity": math.exp(total / n)}
    return out


def main(argv: list[str] | None = None) -> int:
    args = lm.parse_args(__doc__.splitlines()[0], argv, steps=3000, layers=3, name="english_lm")
    data = lm.read_english_splits()
    tokenizer, text, ids = data.tokenizer, data.text, data.ids
    V = tokenizer.vocab_size
    config = english_lm_config(
        V, max(64, data.longest), d_model=args.d_model, n_heads=args.heads, n_layers=args.layers
    )
    model = DecoderOnlyTransformer(config)

    def perplexity(sentences) -> float:
        total, n = sentence_nll(model, sentences)
        return math.exp(total / n)

    def step_loss(batch: torch.Tensor, step: int) -> tuple[torch.Tensor, int]:
        logits = model(batch[:, :-1])  # (B, T-1, V)
        target = batch[:, 1:]  # (B, T-1): every token after <bos>, <eos> included
        loss = F.cross_entropy(logits.flatten(0, 1), target.flatten(), ignore_index=0)
        return loss, int((target != 0).sum())

    def validate() -> tuple[dict, str]:
        val = perplexity(ids["valid"])
        return {"val_perplexity": round(val, 3)}, f"val ppl {val:.2f}"

    train_ids = ids["train"]
    run = lm.train(model, args, train_ids, step_loss, validate)
    tok_sha = lm.save_checkpoint(args, model, model_config_dict(model), run, len(train_ids))

    # what the model writes, and where its sentences occur
    where = {
        name: {normalize_sentence(s) for s in sents} for name, sents in text.items()
    }  # English of each split, normalised
    samples = write_sentences(model, tokenizer, range(N_SAMPLES))
    kinds = []
    for s in samples:
        key = normalize_sentence(s)
        if key in where["train"]:
            kinds.append("train")
        elif key in where["valid"] or key in where["test"]:
            kinds.append("held-out")
        else:
            kinds.append("new")
    prompted = write_sentences(model, tokenizer, range(N_PROMPTED), prompt=PROMPT)

    test = ids["test"]
    nll_valid, n_valid = sentence_nll(model, ids["valid"])
    nll_test, n_test = sentence_nll(model, test)
    nll100, n100 = sentence_nll(model, test[:FIRST_N])
    base = ngram_baselines(train_ids, ids["valid"], test, V)
    result = lm.result_header(
        args,
        "perplexity per token of data/english_lm.pt on the distinct English "
        "sentences of the validation and test splits, against unigram and bigram baselines, "
        "and where its sampled sentences occur in the corpus",
        "scripts/english_lm_train.py",
        data.corpus,
        tok_sha,
        model,
    ) | {
        "config": {k: config.to_dict()[k] for k in ("d_model", "n_heads", "d_ff", "max_len")}
        | {"layers": config.n_decoder_layers, "vocab": V},
        "training": lm.training_summary(args, run, len(train_ids), tokens_seen=run.tokens_seen),
        "perplexity": {
            "counted": "the sentence's tokens and <eos>, after <bos>",
            "valid": {
                "sentences": len(ids["valid"]),
                "tokens": n_valid,
                "model": math.exp(nll_valid / n_valid),
                "unigram": base["valid_unigram"]["perplexity"],
                "bigram": base["valid_bigram"]["perplexity"],
            },
            "test": {
                "sentences": len(test),
                "tokens": n_test,
                "model": math.exp(nll_test / n_test),
                "unigram": base["test_unigram"]["perplexity"],
                "bigram": base["test_bigram"]["perplexity"],
            },
            "bigram_lambda": base["bigram_lambda"],
        },
        "first100": {"nll": nll100, "tokens": n100, "perplexity": math.exp(nll100 / n100)},
        "samples": {
            "settings": {"temperature": 0.7, "top_p": 0.9, "seeds": f"0 to {N_SAMPLES - 1}"},
            "from_bos": samples,
            "kind": kinds,
            "counts": dict(Counter(kinds)),
            "prompt": PROMPT,
            "from_prompt": prompted,
        },
    }
    for k in ("train", "held-out", "new"):
        result["samples"]["counts"].setdefault(k, 0)
    lm.write_result(args, result)
    ppl = result["perplexity"]["test"]
    print(
        f"test perplexity: model {ppl['model']:.2f}, bigram {ppl['bigram']:.2f}, "
        f"unigram {ppl['unigram']:.2f}"
    )
    print("samples:", result["samples"]["counts"])
    for s, k in zip(samples[:15], kinds):
        print(f"  [{k}] {s}")
    for s in prompted:
        print(f"  [prompt] {s}")
    lm.print_written(args, run)
    return 0


if __name__ == "__main__":
    sys.exit(main())
