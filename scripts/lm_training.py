"""What ``scripts/english_lm_train.py`` and ``scripts/masked_lm_train.py`` share.

Both train a small model on the distinct English sentences of the corpus's training split,
encoded with the shipped tokenizer, with the same options, optimiser, learning-rate
schedule, training loop (one pass over the sentences in a random order after another,
gradient norm clipped at 1.0, the loss logged every 100 steps, the validation split
measured every ``--eval-every`` steps, CPU and wall-clock time counted) and checkpoint
layout. Each script keeps its own model, loss, validation measure and JSON.
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
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from transformer_lib import count_parameters  # noqa: E402
from transformer_lib.pipeline.corpus import (  # noqa: E402
    corpus_sha256,
    find_corpus,
    read_pairs,
    split_pairs,
)
from transformer_lib.pipeline.masked_lm import masked_lm_batch  # noqa: E402
from transformer_lib.pipeline.tokenizer import Tokenizer  # noqa: E402

DATA = ROOT / "data"
TOKENIZER = DATA / "tokenizer.json"


def parse_args(
    description: str, argv: list[str] | None, *, steps: int, layers: int, name: str
) -> argparse.Namespace:
    """The options both scripts take (their defaults ``steps``, ``layers`` and the files
    ``data/<name>.pt`` and ``data/<name>.json``); sets torch's threads and seed."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--steps", type=int, default=steps)
    p.add_argument("--batch", type=int, default=128, help="sentences per step")
    p.add_argument("--d-model", type=int, default=96)
    p.add_argument("--layers", type=int, default=layers)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--lr", type=float, default=2e-3, help="peak learning rate")
    p.add_argument("--warmup", type=int, default=300)
    p.add_argument("--eval-every", type=int, default=500)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--out", type=Path, default=DATA / f"{name}.pt")
    p.add_argument("--json", type=Path, default=DATA / f"{name}.json")
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    return args


def english_sentences(pairs) -> list[str]:
    """The distinct English sentences of some pairs, in corpus order."""
    return list(dict.fromkeys(en for en, _ in pairs))


@dataclass
class EnglishSplits:
    """The shipped tokenizer, the corpus file, and each split's distinct English sentences
    as text and as token ids (``"train"``, ``"valid"``, ``"test"``)."""

    tokenizer: Tokenizer
    corpus: Path
    text: dict[str, list[str]]
    ids: dict[str, list[list[int]]]

    @property
    def longest(self) -> int:
        """The longest sentence of any split, in tokens with ``<bos>`` and ``<eos>``."""
        return max(len(s) for split in self.ids.values() for s in split) + 2


def read_english_splits() -> EnglishSplits:
    tokenizer = Tokenizer.load(TOKENIZER)
    corpus = find_corpus()
    splits = split_pairs(read_pairs(corpus)[0])
    text = {name: english_sentences(pairs) for name, pairs in splits.items()}
    ids = {name: tokenizer.encode_batch(s) for name, s in text.items()}
    return EnglishSplits(tokenizer, corpus, text, ids)


@dataclass
class TrainingRun:
    """What :func:`train` measured."""

    epoch: int = 0
    tokens_seen: int = 0
    log: list[dict] = field(default_factory=list)
    cpu_s: float = 0.0
    wall_s: float = 0.0


def train(
    model: torch.nn.Module,
    args: argparse.Namespace,
    train_ids: list[list[int]],
    step_loss: Callable[[torch.Tensor, int], tuple[torch.Tensor, int]],
    validate: Callable[[], tuple[dict, str]],
) -> TrainingRun:
    """Adam (β2 0.98), linear warm-up then cosine decay to a tenth of ``args.lr``.

    ``step_loss(batch, step)`` gets the padded batch ``<bos> sentence <eos>`` (B, T) and
    returns the loss and how many tokens it counted; ``validate()`` returns the log entry
    (without the step) and the text printed for it. Leaves the model in eval mode.
    """
    opt = torch.optim.Adam(model.parameters(), lr=args.lr, betas=(0.9, 0.98), eps=1e-9)

    def lr_at(step: int) -> float:  # linear warm-up, then cosine decay to a tenth
        if step < args.warmup:
            return args.lr * (step + 1) / args.warmup
        done = (step - args.warmup) / max(1, args.steps - args.warmup)
        return args.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * done)))

    gen = torch.Generator().manual_seed(args.seed)
    order, cursor, run = torch.randperm(len(train_ids), generator=gen), 0, TrainingRun()
    cpu0, wall0 = time.process_time(), time.perf_counter()
    model.train()
    for step in range(args.steps):
        if cursor + args.batch > len(train_ids):
            order, cursor = torch.randperm(len(train_ids), generator=gen), 0
            run.epoch += 1
        batch = masked_lm_batch([train_ids[i] for i in order[cursor : cursor + args.batch]])
        cursor += args.batch
        loss, n_tokens = step_loss(batch, step)
        for group in opt.param_groups:
            group["lr"] = lr_at(step)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        run.tokens_seen += n_tokens
        if (step + 1) % 100 == 0:
            run.log.append({"step": step + 1, "loss": round(loss.item(), 4), "lr": lr_at(step)})
        if (step + 1) % args.eval_every == 0 or step + 1 == args.steps:
            entry, shown = validate()
            run.log.append({"step": step + 1, **entry})
            cpu = time.process_time() - cpu0
            print(f"step {step + 1:5d}  loss {loss.item():.3f}  {shown}  cpu {cpu:.0f} s")
            sys.stdout.flush()
    run.cpu_s, run.wall_s = time.process_time() - cpu0, time.perf_counter() - wall0
    model.eval()
    return run


def save_checkpoint(
    args: argparse.Namespace, model: torch.nn.Module, config: dict, run: TrainingRun, n_train: int
) -> str:
    """Write ``args.out`` (config, weights, tokenizer sha256, training state); returns the
    tokenizer's sha256."""
    tok_sha = hashlib.sha256(TOKENIZER.read_bytes()).hexdigest()
    state = {
        "step": args.steps,
        "epoch": run.epoch,
        "tokens_seen": run.tokens_seen,
        "cpu_s": run.cpu_s,
        "elapsed_s": run.wall_s,
        "log": run.log,
        "training_config": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
        "train_sentences": n_train,
        "torch": str(torch.__version__),
    }
    ckpt = {
        "config": config,
        "model": model.state_dict(),
        "tokenizer_sha256": tok_sha,
        "state": state,
    }
    torch.save(ckpt, args.out)
    return tok_sha


def result_header(
    args: argparse.Namespace,
    description: str,
    script: str,
    corpus: Path,
    tok_sha: str,
    model: torch.nn.Module,
) -> dict:
    """The JSON's first entries: what it is, who wrote it when and where, and the files
    and the model it belongs to."""
    return {
        "description": description,
        "written_by": script,
        "date": datetime.date.today().isoformat(),
        "machine": f"{platform.machine()}, torch {torch.__version__}, {args.threads} thread",
        "corpus_sha256": corpus_sha256(corpus),
        "tokenizer_sha256": tok_sha,
        "checkpoint_sha256": hashlib.sha256(args.out.read_bytes()).hexdigest(),
        "parameters": count_parameters(model),
    }


def training_summary(args: argparse.Namespace, run: TrainingRun, n_train: int, **extra) -> dict:
    """The JSON's ``training`` entry (``extra`` goes before the times)."""
    return {
        "steps": args.steps,
        "sentences_per_step": args.batch,
        "train_sentences": n_train,
        "epochs": round(args.steps * args.batch / n_train, 2),
        **extra,
        "cpu_minutes": round(run.cpu_s / 60, 2),
        "wall_minutes": round(run.wall_s / 60, 2),
    }


def write_result(args: argparse.Namespace, result: dict) -> None:
    args.json.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def print_written(args: argparse.Namespace, run: TrainingRun) -> None:
    print(f"wrote {args.out} ({args.out.stat().st_size / 1e6:.2f} MB) and {args.json}")
    print(f"{run.cpu_s / 60:.1f} CPU-minutes, {run.wall_s / 60:.1f} minutes of wall clock")
