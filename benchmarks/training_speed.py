"""Training throughput: transformer_lib's Transformer vs torch.nn.Transformer, same size.

Both models get the same embeddings-and-output wrapper, the same batches and the same
optimiser; the runs alternate (ours, theirs, ours, ...) so that background load hits
both alike. Prints tokens per second for each and their ratio (ours / PyTorch's).

    python benchmarks/training_speed.py            # tiny preset, 150 sentences × 8 tokens
    python benchmarks/training_speed.py --threads 1 --rounds 5
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time

import torch
import torch.nn.functional as F
from torch_baseline import TorchBaseline  # benchmarks/torch_baseline.py

from transformer_lib import Transformer, TransformerConfig


def make_batches(n, batch_size, length, vocab, pad_id, seed=0):
    g = torch.Generator().manual_seed(seed)
    batches = []
    for _ in range(n):
        src = torch.randint(4, vocab, (batch_size, length), generator=g)
        tgt = torch.randint(4, vocab, (batch_size, length + 1), generator=g)
        # Realistic ragged lengths: pad the tail of each sentence.
        for row, cut in enumerate(
            torch.randint(length // 2, length + 1, (batch_size,), generator=g).tolist()
        ):
            src[row, cut:] = pad_id
            tgt[row, cut + 1 :] = pad_id
        batches.append((src, tgt))
    return batches


def train_steps(model, batches, pad_id):
    opt = torch.optim.Adam(model.parameters(), lr=1e-4, betas=(0.9, 0.98), eps=1e-9)
    model.train()
    tokens = 0
    start = time.perf_counter()
    for src, tgt in batches:
        logits = model(src, tgt[:, :-1])
        loss = F.cross_entropy(
            logits.reshape(-1, logits.size(-1)),
            tgt[:, 1:].reshape(-1),
            ignore_index=pad_id,
            label_smoothing=0.1,
        )
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        tokens += int((src != pad_id).sum() + (tgt[:, 1:] != pad_id).sum())
    return tokens / (time.perf_counter() - start)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--batch-size", type=int, default=150)
    p.add_argument("--length", type=int, default=8)
    p.add_argument("--steps", type=int, default=30, help="training steps per round")
    p.add_argument("--rounds", type=int, default=5, help="alternating rounds per model")
    p.add_argument("--threads", type=int, default=2, help="torch.set_num_threads")
    p.add_argument("--vocab", type=int, default=4000)
    p.add_argument(
        "--readable",
        action="store_true",
        help="also time the library's readable attention path (the one the book teaches)",
    )
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)

    cfg = TransformerConfig.tiny(args.vocab)
    torch.manual_seed(0)
    ours = Transformer(cfg)
    torch.manual_seed(0)
    theirs = TorchBaseline(cfg)
    n_ours = sum(p.numel() for p in ours.parameters())
    n_theirs = sum(p.numel() for p in theirs.parameters())
    batches = make_batches(args.steps, args.batch_size, args.length, args.vocab, cfg.pad_id)
    warm = batches[:5]
    train_steps(ours, warm, cfg.pad_id)
    train_steps(theirs, warm, cfg.pad_id)

    rates = {"transformer_lib": [], "torch.nn.Transformer": []}
    if args.readable:
        rates["transformer_lib, readable"] = []
    for _ in range(args.rounds):
        rates["transformer_lib"].append(train_steps(ours, batches, cfg.pad_id))
        rates["torch.nn.Transformer"].append(train_steps(theirs, batches, cfg.pad_id))
        if args.readable:
            ours.set_fast_attention(False)  # softmax(QK^T/sqrt(d_k))V written out, with weights
            rates["transformer_lib, readable"].append(train_steps(ours, batches, cfg.pad_id))
            ours.set_fast_attention(True)

    print(
        f"torch {torch.__version__}, {platform.processor() or platform.machine()}, "
        f"{args.threads} thread(s); tiny preset d_model={cfg.d_model}, "
        f"{cfg.n_encoder_layers}+{cfg.n_decoder_layers} layers, {cfg.n_heads} heads, "
        f"d_ff={cfg.d_ff}; batches of {args.batch_size} sentences × {args.length} tokens"
    )
    print(f"parameters: transformer_lib {n_ours:,}  torch.nn.Transformer {n_theirs:,}")
    for name, r in rates.items():
        print(
            f"{name:26s} median {statistics.median(r):9,.0f} tokens/s  "
            f"(rounds: {', '.join(f'{x:,.0f}' for x in r)})"
        )
    ratios = [a / b for a, b in zip(rates["transformer_lib"], rates["torch.nn.Transformer"])]
    print(
        f"ratio transformer_lib / torch.nn.Transformer: median {statistics.median(ratios):.3f} "
        f"(per round: {', '.join(f'{x:.3f}' for x in ratios)})"
    )
    return statistics.median(ratios)


if __name__ == "__main__":
    main()
