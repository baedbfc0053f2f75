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

from transformer_lib import TransformerConfig, count_parameters  # noqa: E402
from transformer_lib.pipeline.corpus import (  # noqa: E402
    corpus_sha256,
    find_corpus,
    read_pairs,
    split_pairs,
)
from transformer_lib.pipeline.masked_lm import (  # noqa: E402
    MaskedLanguageModel,
    mask_tokens,
    masked_accuracy,
    masked_lm_batch,
)
from transformer_lib.pipeline.tokenizer import BOS_ID, SPECIAL_TOKENS, Tokenizer  # noqa: E402

DATA = ROOT / "data"
FIRST_N = 100  # test sentences whose counts tests/test_masked_lm_model.py recomputes


def english_sentences(pairs) -> list[str]:
    """The distinct English sentences of some pairs, in corpus order."""
    return list(dict.fromkeys(en for en, _ in pairs))


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
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=7000)
    p.add_argument("--batch", type=int, default=128, help="sentences per step")
    p.add_argument("--d-model", type=int, default=96)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--lr", type=float, default=2e-3, help="peak learning rate")
    p.add_argument("--warmup", type=int, default=300)
    p.add_argument("--eval-every", type=int, default=500)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--out", type=Path, default=DATA / "masked_lm.pt")
    p.add_argument("--json", type=Path, default=DATA / "masked_lm.json")
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)

    tokenizer = Tokenizer.load(DATA / "tokenizer.json")
    corpus = find_corpus()
    splits = split_pairs(read_pairs(corpus)[0])
    text = {name: english_sentences(pairs) for name, pairs in splits.items()}
    ids = {name: tokenizer.encode_batch(s) for name, s in text.items()}
    words = set(word_ids(tokenizer))
    V = tokenizer.vocab_size  # [MASK] gets id V
    longest = max(len(s) for split in ids.values() for s in split) + 2
    config = TransformerConfig(
        vocab_size=V + 1,
        d_model=args.d_model,
        n_heads=args.heads,
        d_ff=4 * args.d_model,
        n_encoder_layers=args.layers,
        n_decoder_layers=0,
        dropout=0.1,
        max_len=max(64, longest),
    )
    model = MaskedLanguageModel(config)
    opt = torch.optim.Adam(model.parameters(), lr=args.lr, betas=(0.9, 0.98), eps=1e-9)

    def lr_at(step: int) -> float:  # linear warm-up, then cosine decay to a tenth
        if step < args.warmup:
            return args.lr * (step + 1) / args.warmup
        done = (step - args.warmup) / max(1, args.steps - args.warmup)
        return args.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * done)))

    train, gen = ids["train"], torch.Generator().manual_seed(args.seed)
    order, cursor, epoch, log, tokens_seen = torch.randperm(len(train), generator=gen), 0, 0, [], 0
    cpu0, wall0 = time.process_time(), time.perf_counter()
    model.train()
    for step in range(args.steps):
        if cursor + args.batch > len(train):
            order, cursor, epoch = torch.randperm(len(train), generator=gen), 0, epoch + 1
        batch = masked_lm_batch([train[i] for i in order[cursor : cursor + args.batch]])
        cursor += args.batch
        out = mask_tokens(batch, model.mask_id, V, seed=args.seed * 1_000_003 + step)
        logits = model.logits_at(out.inputs, out.selected)  # (N, V + 1)
        loss = F.cross_entropy(logits, out.targets[out.selected])
        for group in opt.param_groups:
            group["lr"] = lr_at(step)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        tokens_seen += int((batch != config.pad_id).sum())
        if (step + 1) % 100 == 0:
            log.append({"step": step + 1, "loss": round(loss.item(), 4), "lr": lr_at(step)})
        if (step + 1) % args.eval_every == 0 or step + 1 == args.steps:
            val = validation_loss(model, ids["valid"], seed=12345)
            log.append({"step": step + 1, "val_loss": round(val, 4)})
            cpu = time.process_time() - cpu0
            print(f"step {step + 1:5d}  loss {loss.item():.3f}  val {val:.3f}  cpu {cpu:.0f} s")
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
        "config": config.to_dict(),
        "model": model.state_dict(),
        "tokenizer_sha256": tok_sha,
        "state": state,
    }
    torch.save(ckpt, args.out)

    test = ids["test"]
    result = {
        "description": "masked-token accuracy of data/masked_lm.pt on the English test "
        "sentences, each non-special token hidden behind [MASK] once, alone",
        "written_by": "scripts/masked_lm_train.py",
        "date": datetime.date.today().isoformat(),
        "machine": f"{platform.machine()}, torch {torch.__version__}, {args.threads} thread",
        "corpus_sha256": corpus_sha256(corpus),
        "tokenizer_sha256": tok_sha,
        "checkpoint_sha256": hashlib.sha256(args.out.read_bytes()).hexdigest(),
        "parameters": count_parameters(model),
        "config": {k: config.to_dict()[k] for k in ("d_model", "n_heads", "d_ff")}
        | {"layers": config.n_encoder_layers, "vocab_with_mask": config.vocab_size},
        "training": {
            "steps": args.steps,
            "sentences_per_step": args.batch,
            "train_sentences": len(train),
            "epochs": round(args.steps * args.batch / len(train), 2),
            "cpu_minutes": round(cpu_s / 60, 2),
            "wall_minutes": round(wall_s / 60, 2),
            "final_val_loss": log[-1]["val_loss"],
        },
        "test": {
            "sentences": len(test),
            "model": rates(masked_accuracy(model, test, words)),
            **{
                k: rates(v)
                for k, v in baselines(train, test, words).items()
                if k != "unigram_top5_tokens"
            },
        },
        "valid": {
            "sentences": len(ids["valid"]),
            "model": rates(masked_accuracy(model, ids["valid"], words)),
        },
        "first100": masked_accuracy(model, test[:FIRST_N], words),
    }
    args.json.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    t = result["test"]
    for name in ("model", "unigram", "bigram"):
        print(
            f"{name:8} top-1 {t[name]['top1_acc']:.1%}  top-5 {t[name]['top5_acc']:.1%}  "
            f"(letters: {t[name]['word_top1_acc']:.1%} / {t[name]['word_top5_acc']:.1%})"
        )
    print(f"wrote {args.out} ({args.out.stat().st_size / 1e6:.2f} MB) and {args.json}")
    print(f"{cpu_s / 60:.1f} CPU-minutes, {wall_s / 60:.1f} minutes of wall clock")
    return 0


if __name__ == "__main__":
    sys.exit(main())
