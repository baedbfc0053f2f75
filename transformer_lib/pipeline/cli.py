"""Command line: ``python -m transformer_lib train | translate | evaluate``.

    python -m transformer_lib train --preset tiny --minutes 15 --out runs/mine
    python -m transformer_lib translate "Tom is lazy."
    python -m transformer_lib evaluate --split test --beam 4
    python -m transformer_lib evaluate --pairs my_pairs.tsv

Run any command with ``--help`` for its options.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path

PRESETS = ("tiny", "base", "big")


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text}")
    return value


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m transformer_lib",
        description="Train, run and evaluate the book's English→German Transformer.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=(
            "examples:\n"
            "  python -m transformer_lib train --minutes 15 --out runs/mine\n"
            '  python -m transformer_lib translate "Tom is lazy." --beam 4\n'
            "  python -m transformer_lib evaluate --split test --beam 4\n"
        ),
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    fmt = argparse.ArgumentDefaultsHelpFormatter

    # ---- train -----------------------------------------------------------------------
    t = sub.add_parser(
        "train",
        help="train a model on the English-German corpus",
        description=(
            "Train a Transformer on the train split of the Tatoeba English-German pairs. "
            "Writes OUT/checkpoint.pt (resumable), OUT/model.pt (weights only, small) and "
            "OUT/training_log.json. Stops at --minutes or --max-steps, whichever comes first."
        ),
        formatter_class=fmt,
    )
    t.add_argument("--preset", choices=PRESETS, default="tiny", help="model size")
    t.add_argument("--out", required=True, help="output directory, e.g. runs/mine")
    t.add_argument("--corpus", default=None, help="deu.txt (default: find it or download it)")
    t.add_argument(
        "--tokenizer", default=None, help="tokenizer .json (default: data/tokenizer.json)"
    )
    t.add_argument("--minutes", type=float, default=None, help="wall-clock budget of this run")
    t.add_argument("--max-steps", type=_positive_int, default=None, help="total optimiser steps")
    t.add_argument("--max-tokens", type=_positive_int, default=2048, help="padded tokens per batch")
    t.add_argument("--lr-factor", type=float, default=1.0, help="Noam schedule factor (§5.3)")
    t.add_argument("--warmup", type=_positive_int, default=400, help="Noam warm-up steps")
    t.add_argument("--label-smoothing", type=float, default=0.1, help="ε_ls (§5.4)")
    t.add_argument("--clip-norm", type=float, default=1.0, help="gradient clipping (0 = off)")
    t.add_argument("--dropout", type=float, default=None, help="override the preset's dropout")
    t.add_argument("--seed", type=int, default=0, help="seed for init, dropout, batch order")
    t.add_argument("--device", default="auto", help="auto (CUDA → MPS → CPU), cpu, cuda, mps")
    t.add_argument(
        "--threads",
        type=_positive_int,
        default=None,
        help="torch CPU threads (default: all cores; on a busy shared machine 1 is often "
        "fastest, as threads of one job wait for each other)",
    )
    t.add_argument("--eval-every", type=int, default=500, help="validation loss every N steps")
    t.add_argument("--log-every", type=_positive_int, default=25, help="log entry every N steps")
    t.add_argument("--resume", default=None, help="continue from OUT/checkpoint.pt of a run")
    t.add_argument(
        "--final-bleu",
        choices=("none", "valid", "test"),
        default="valid",
        help="greedy BLEU on this split at the end",
    )
    t.add_argument("--no-progress", action="store_true", help="no progress bar")

    # ---- translate -------------------------------------------------------------------
    tr = sub.add_parser(
        "translate",
        help="translate English sentences",
        description=(
            "Translate English sentences into German with the shipped model (or "
            "--checkpoint). Without sentences, reads one per line from standard input."
        ),
        formatter_class=fmt,
    )
    tr.add_argument("sentences", nargs="*", help="English sentences (quote each one)")
    tr.add_argument("--beam", type=_positive_int, default=1, help="beam size (1 = greedy)")
    tr.add_argument("--alpha", type=float, default=0.6, help="length penalty for beam search")
    tr.add_argument("--checkpoint", default=None, help="model file (default: data/model.pt)")
    tr.add_argument("--device", default="cpu", help="cpu, cuda, mps or auto")

    # ---- evaluate --------------------------------------------------------------------
    ev = sub.add_parser(
        "evaluate",
        help="BLEU and chrF against all references",
        description=(
            "Translate each distinct English sentence once and score it with sacreBLEU "
            "(corpus BLEU and chrF) against all its German references. Give --pairs FILE "
            "(English<TAB>German lines; bad lines are skipped and counted) or --split."
        ),
        formatter_class=fmt,
    )
    src = ev.add_mutually_exclusive_group()
    src.add_argument("--pairs", default=None, help="English<TAB>German file to score on")
    src.add_argument(
        "--split", choices=("train", "valid", "test"), default=None, help="corpus split"
    )
    ev.add_argument("--corpus", default=None, help="deu.txt for --split (default: find it)")
    ev.add_argument("--beam", type=_positive_int, default=1, help="beam size (1 = greedy)")
    ev.add_argument("--alpha", type=float, default=0.6, help="length penalty for beam search")
    ev.add_argument("--limit", type=_positive_int, default=None, help="first N sources only")
    ev.add_argument("--checkpoint", default=None, help="model file (default: data/model.pt)")
    ev.add_argument("--device", default="cpu", help="cpu, cuda, mps or auto")
    ev.add_argument("--threads", type=_positive_int, default=None, help="torch CPU threads")
    ev.add_argument("--show", type=int, default=3, help="print this many example translations")
    ev.add_argument("--json", default=None, help="also write the scores to this JSON file")
    return parser


# ======================================================================================
# Commands
# ======================================================================================


def _corpus_splits(corpus: str | None) -> dict[str, list[tuple[str, str]]]:
    from .corpus import find_corpus, read_pairs, split_pairs

    pairs, _ = read_pairs(find_corpus(corpus))
    return split_pairs(pairs)


def _cmd_train(args: argparse.Namespace) -> int:
    import torch

    from ..components.config import TransformerConfig
    from ..components.model import Transformer, count_parameters
    from .batching import TranslationDataset
    from .checkpoints import load_checkpoint, tokenizer_from_checkpoint
    from .evaluation import evaluate_pairs
    from .tokenizer import DEFAULT_TOKENIZER_PATH, Tokenizer
    from .training import Trainer, TrainingConfig, select_device

    if args.minutes is None and args.max_steps is None:
        print("error: give --minutes or --max-steps (or both)", file=sys.stderr)
        return 2
    if args.threads:
        torch.set_num_threads(args.threads)
    out = Path(args.out)
    resume_ckpt = load_checkpoint(args.resume) if args.resume else None
    if resume_ckpt is not None:
        config = TransformerConfig.from_dict(resume_ckpt["config"])
        tokenizer = tokenizer_from_checkpoint(resume_ckpt, args.resume)
        tok_path = Path(resume_ckpt["tokenizer"]["name"])
    else:
        tok_path = Path(args.tokenizer) if args.tokenizer else DEFAULT_TOKENIZER_PATH
        tokenizer = Tokenizer.load(tok_path)
        overrides = {} if args.dropout is None else {"dropout": args.dropout}
        config = getattr(TransformerConfig, args.preset)(tokenizer.vocab_size, **overrides)
    splits = _corpus_splits(args.corpus)
    train_set = TranslationDataset(splits["train"], tokenizer, max_len=config.max_len)
    valid_set = TranslationDataset(splits["valid"], tokenizer, max_len=config.max_len)
    torch.manual_seed(args.seed)  # model initialisation
    model = Transformer(config)
    tcfg = TrainingConfig(
        max_tokens=args.max_tokens,
        lr_factor=args.lr_factor,
        warmup=args.warmup,
        label_smoothing=args.label_smoothing,
        clip_norm=args.clip_norm or None,
        max_steps=args.max_steps,
        minutes=args.minutes,
        eval_every=args.eval_every,
        log_every=args.log_every,
        seed=args.seed,
        device=args.device,
        progress=not args.no_progress,
    )
    device = select_device(args.device)
    print(
        f"model: {args.preset} preset, {count_parameters(model):,} parameters | "
        f"train {len(train_set):,} pairs, valid {len(valid_set):,} | device {device}, "
        f"{torch.get_num_threads()} threads | torch {torch.__version__}",
        flush=True,
    )
    trainer = Trainer(
        model, train_set, valid_set, tcfg, tokenizer=tokenizer, tokenizer_path=tok_path,
        out_dir=out,
    )  # fmt: skip
    if args.resume:
        trainer.resume(args.resume)
        print(f"resumed from {args.resume} at step {trainer.step}", flush=True)
    session_start = time.perf_counter()
    log = trainer.fit()
    wall = time.perf_counter() - session_start
    speeds = [e["tokens_per_s"] for e in log if "tokens_per_s" in e]
    vals = [e for e in log if "val_loss" in e]
    print(
        f"done: step {trainer.step}, {wall / 60:.1f} min this run "
        f"({trainer.elapsed_s / 60:.1f} min in total, {trainer.cpu_s / 60:.1f} CPU-min), "
        f"median {sorted(speeds)[len(speeds) // 2] if speeds else 0:,.0f} tokens/s, "
        f"val_loss {vals[-1]['val_loss']:.3f} (ppl {vals[-1]['val_ppl']:.2f})"
        if vals
        else f"done: step {trainer.step}",
        flush=True,
    )
    summary = {
        "steps": trainer.step,
        "minutes_total": round(trainer.elapsed_s / 60, 2),
        "cpu_minutes_total": round(trainer.cpu_s / 60, 2),
        "tokens_seen": trainer.tokens_seen,
    }
    if args.final_bleu != "none":
        pairs = splits[args.final_bleu]
        model.eval()
        result = evaluate_pairs(model, tokenizer, pairs, beam_size=1)
        print(f"{args.final_bleu} greedy BLEU = {result.bleu:.2f}  chrF = {result.chrf:.2f}")
        summary[f"{args.final_bleu}_bleu_greedy"] = round(result.bleu, 2)
        summary[f"{args.final_bleu}_chrf_greedy"] = round(result.chrf, 2)
    (out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    print(f"wrote {out / 'checkpoint.pt'}, {out / 'model.pt'}, {out / 'training_log.json'}")
    return 0


def _load_translator(args: argparse.Namespace):
    from .pretrained import load_pretrained
    from .training import select_device

    return load_pretrained(args.checkpoint, device=select_device(args.device))


def _cmd_translate(args: argparse.Namespace) -> int:
    sentences = list(args.sentences)
    if not sentences:
        sentences = [line.rstrip("\n") for line in sys.stdin if line.strip()]
    if not sentences:
        print("error: no sentence given (pass it in quotes, or pipe lines in)", file=sys.stderr)
        return 2
    translator = _load_translator(args)
    for line in translator.translate(sentences, beam=args.beam, alpha=args.alpha):
        print(line)
    return 0


def _cmd_evaluate(args: argparse.Namespace) -> int:
    import torch

    from .corpus import read_pairs
    from .evaluation import _jsonable, evaluate_pairs

    if args.threads:
        torch.set_num_threads(args.threads)
    if args.pairs is None and args.split is None:
        args.split = "test"
    if args.pairs is not None:
        if not Path(args.pairs).is_file():
            print(f"error: no pairs file at {args.pairs}", file=sys.stderr)
            return 2
        pairs, stats = read_pairs(args.pairs)
        skipped = stats.blank + stats.malformed
        print(
            f"read {stats.kept} pairs from {args.pairs} "
            f"(skipped {skipped} bad lines: {stats.malformed} malformed, {stats.blank} blank)"
        )
        if not pairs:
            print("error: the file holds no English<TAB>German pairs", file=sys.stderr)
            return 2
    else:
        pairs = _corpus_splits(args.corpus)[args.split]
        print(f"{args.split} split: {len(pairs)} pairs")
    translator = _load_translator(args)
    start = time.perf_counter()
    result = evaluate_pairs(
        translator.model, translator.tokenizer, pairs, args.beam, args.alpha, args.limit
    )
    seconds = time.perf_counter() - start
    print(f"BLEU = {result.bleu:.2f}")
    print(f"chrF = {result.chrf:.2f}")
    mode = "greedy" if args.beam == 1 else f"beam {args.beam}, alpha {args.alpha}"
    print(
        f"{result.n_sources} source sentences, {result.n_references} references, {mode}, "
        f"{seconds:.1f} s"
    )
    print(f"sacreBLEU: {result.bleu_detail}")
    for src_text, hyp, refs in list(zip(result.sources, result.hypotheses, result.references))[
        : max(args.show, 0)
    ]:
        print(f"  {src_text}  →  {hyp}    [ref: {' | '.join(refs[:3])}]")
    if args.json:
        data = _jsonable(result)
        data.update({"mode": mode, "pairs": args.pairs or f"split:{args.split}"})
        Path(args.json).write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m transformer_lib`` (and the ``transformer-lib`` script)."""
    from .checkpoints import CheckpointError

    args = _build_parser().parse_args(argv)
    command = {"train": _cmd_train, "translate": _cmd_translate, "evaluate": _cmd_evaluate}
    try:
        return command[args.command](args)
    except (CheckpointError, FileNotFoundError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
