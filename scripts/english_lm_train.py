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

import argparse
import datetime
import hashlib
import json
import math
import platform
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

import torch
import torch.nn.functional as F

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from transformer_lib import DecoderOnlyTransformer, count_parameters  # noqa: E402
from transformer_lib.components.decoder_only import model_config_dict  # noqa: E402
from transformer_lib.pipeline.corpus import (  # noqa: E402
    corpus_sha256,
    find_corpus,
    normalize_sentence,
    read_pairs,
    split_pairs,
)
from transformer_lib.pipeline.english_lm import (  # noqa: E402
    english_lm_config,
    sentence_nll,
    write_sentences,
)
from transformer_lib.pipeline.masked_lm import masked_lm_batch  # noqa: E402
from transformer_lib.pipeline.tokenizer import BOS_ID, EOS_ID, Tokenizer  # noqa: E402

DATA = ROOT / "data"
FIRST_N = 100  # test sentences whose perplexity tests/test_english_lm.py recomputes
N_SAMPLES = 50  # sentences sampled from <bos>, seeds 0 .. N_SAMPLES - 1
PROMPT, N_PROMPTED = "Tom", 5


def english_sentences(pairs) -> list[str]:
    """The distinct English sentences of some pairs, in corpus order."""
    return list(dict.fromkeys(en for en, _ in pairs))


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
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=3000)
    p.add_argument("--batch", type=int, default=128, help="sentences per step")
    p.add_argument("--d-model", type=int, default=96)
    p.add_argument("--layers", type=int, default=3)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--lr", type=float, default=2e-3, help="peak learning rate")
    p.add_argument("--warmup", type=int, default=300)
    p.add_argument("--eval-every", type=int, default=500)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--out", type=Path, default=DATA / "english_lm.pt")
    p.add_argument("--json", type=Path, default=DATA / "english_lm.json")
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)

    tokenizer = Tokenizer.load(DATA / "tokenizer.json")
    corpus = find_corpus()
    pairs = read_pairs(corpus)[0]
    splits = split_pairs(pairs)
    text = {name: english_sentences(split) for name, split in splits.items()}
    ids = {name: tokenizer.encode_batch(s) for name, s in text.items()}
    V = tokenizer.vocab_size
    longest = max(len(s) for split in ids.values() for s in split) + 2
    config = english_lm_config(
        V, max(64, longest), d_model=args.d_model, n_heads=args.heads, n_layers=args.layers
    )
    model = DecoderOnlyTransformer(config)
    opt = torch.optim.Adam(model.parameters(), lr=args.lr, betas=(0.9, 0.98), eps=1e-9)

    def lr_at(step: int) -> float:  # linear warm-up, then cosine decay to a tenth
        if step < args.warmup:
            return args.lr * (step + 1) / args.warmup
        done = (step - args.warmup) / max(1, args.steps - args.warmup)
        return args.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * done)))

    def perplexity(sentences) -> float:
        total, n = sentence_nll(model, sentences)
        return math.exp(total / n)

    train, gen = ids["train"], torch.Generator().manual_seed(args.seed)
    order, cursor, epoch, log, tokens_seen = torch.randperm(len(train), generator=gen), 0, 0, [], 0
    cpu0, wall0 = time.process_time(), time.perf_counter()
    model.train()
    for step in range(args.steps):
        if cursor + args.batch > len(train):
            order, cursor, epoch = torch.randperm(len(train), generator=gen), 0, epoch + 1
        batch = masked_lm_batch([train[i] for i in order[cursor : cursor + args.batch]])
        cursor += args.batch
        logits = model(batch[:, :-1])  # (B, T-1, V)
        target = batch[:, 1:]  # (B, T-1): every token after <bos>, <eos> included
        loss = F.cross_entropy(logits.flatten(0, 1), target.flatten(), ignore_index=0)
        for group in opt.param_groups:
            group["lr"] = lr_at(step)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        tokens_seen += int((target != 0).sum())
        if (step + 1) % 100 == 0:
            log.append({"step": step + 1, "loss": round(loss.item(), 4), "lr": lr_at(step)})
        if (step + 1) % args.eval_every == 0 or step + 1 == args.steps:
            val = perplexity(ids["valid"])
            log.append({"step": step + 1, "val_perplexity": round(val, 3)})
            cpu = time.process_time() - cpu0
            print(f"step {step + 1:5d}  loss {loss.item():.3f}  val ppl {val:.2f}  cpu {cpu:.0f} s")
            sys.stdout.flush()
    cpu_s, wall_s = time.process_time() - cpu0, time.perf_counter() - wall0
    model.eval()

    tok_sha = hashlib.sha256((DATA / "tokenizer.json").read_bytes()).hexdigest()
    state = {
        "step": args.steps,
        "epoch": epoch,
        "tokens_seen": tokens_seen,
        "cpu_s": cpu_s,
        "elapsed_s": wall_s,
        "log": log,
        "training_config": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
        "train_sentences": len(train),
        "torch": str(torch.__version__),
    }
    ckpt = {
        "config": model_config_dict(model),
        "model": model.state_dict(),
        "tokenizer_sha256": tok_sha,
        "state": state,
    }
    torch.save(ckpt, args.out)

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
    base = ngram_baselines(train, ids["valid"], test, V)
    result = {
        "description": "perplexity per token of data/english_lm.pt on the distinct English "
        "sentences of the validation and test splits, against unigram and bigram baselines, "
        "and where its sampled sentences occur in the corpus",
        "written_by": "scripts/english_lm_train.py",
        "date": datetime.date.today().isoformat(),
        "machine": f"{platform.machine()}, torch {torch.__version__}, {args.threads} thread",
        "corpus_sha256": corpus_sha256(corpus),
        "tokenizer_sha256": tok_sha,
        "checkpoint_sha256": hashlib.sha256(args.out.read_bytes()).hexdigest(),
        "parameters": count_parameters(model),
        "config": {k: config.to_dict()[k] for k in ("d_model", "n_heads", "d_ff", "max_len")}
        | {"layers": config.n_decoder_layers, "vocab": V},
        "training": {
            "steps": args.steps,
            "sentences_per_step": args.batch,
            "train_sentences": len(train),
            "epochs": round(args.steps * args.batch / len(train), 2),
            "tokens_seen": tokens_seen,
            "cpu_minutes": round(cpu_s / 60, 2),
            "wall_minutes": round(wall_s / 60, 2),
        },
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
    args.json.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
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
    print(f"wrote {args.out} ({args.out.stat().st_size / 1e6:.2f} MB) and {args.json}")
    print(f"{cpu_s / 60:.1f} CPU-minutes, {wall_s / 60:.1f} minutes of wall clock")
    return 0


if __name__ == "__main__":
    sys.exit(main())
