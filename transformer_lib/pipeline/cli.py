"""Command line: ``python -m transformer_lib train | translate | evaluate | generate | average``.

    python -m transformer_lib train --preset tiny --minutes 15 --out runs/mine
    python -m transformer_lib translate "Tom is lazy."
    python -m transformer_lib evaluate --split test --beam 4
    python -m transformer_lib evaluate --pairs my_pairs.tsv
    python -m transformer_lib generate "Ich habe" --temperature 0.8 --top-k 20 --seed 0
    python -m transformer_lib average runs/mine --last 5 --out runs/mine/averaged.pt

Every argument is checked before any data is read: a bad one ends the command with
status 2 and a one-line message that names the flag.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from collections.abc import Sequence
from pathlib import Path

from . import cli_checks as checks
from .cli_checks import UsageError

PRESETS = ("tiny", "base", "big")
ARCHS = ("encoder-decoder", "decoder-only")

#: Defaults of ``train``, applied after parsing so that the flags a user typed can be told
#: apart (a resumed run keeps its own settings unless a flag is given explicitly).
TRAIN_DEFAULTS = {
    "preset": "tiny",
    "arch": "encoder-decoder",
    "max_tokens": 2048,
    "lr_factor": 1.0,
    "warmup": 400,
    "label_smoothing": 0.1,
    "clip_norm": 1.0,
    "seed": 0,
    "eval_every": 500,
    "log_every": 25,
    "checkpoint_every": None,
    "checkpoint_minutes": 1.0,
    "keep_checkpoints": 0,
    "snapshot_at": (),
}
#: Loop settings a resumed run may change (everything else is restored from the run).
RESUME_MAY_CHANGE = ("minutes", "max_steps", "cpu_minutes")


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line (and exit status 2)."""

    def error(self, message: str):  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


def _build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="python -m transformer_lib",
        description="Train, run and evaluate the book's English→German Transformer.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=(
            "examples:\n"
            "  python -m transformer_lib train --minutes 15 --out runs/mine\n"
            '  python -m transformer_lib translate "Tom is lazy." --beam 4\n'
            "  python -m transformer_lib evaluate --split test --beam 4\n"
            "  python -m transformer_lib average runs/mine --last 5 --out runs/mine/avg.pt\n"
        ),
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, **kw) -> argparse.ArgumentParser:
        return sub.add_parser(name, **kw)

    # ---- train -----------------------------------------------------------------------
    t = command(
        "train",
        help="train a model on the English-German corpus",
        description=(
            "Train a Transformer on the train split of the shipped Tatoeba English-German "
            "pairs. Writes OUT/checkpoint.pt (resumable, at least once a minute), "
            "OUT/model.pt (weights only) and OUT/training_log.json. Stops at --minutes or "
            "--max-steps, whichever comes first, or at Ctrl-C (the run is saved and can be "
            "resumed). Runs under torchrun --nproc_per_node N for data parallelism."
        ),
    )
    d = TRAIN_DEFAULTS
    t.add_argument("--out", required=True, help="run folder, e.g. runs/mine")
    t.add_argument("--preset", choices=PRESETS, help=f"model size (default: {d['preset']})")
    t.add_argument("--arch", choices=ARCHS, help=f"architecture (default: {d['arch']})")
    t.add_argument(
        "--prefix-lm",
        action="store_true",
        default=None,
        help="decoder-only: the English prefix is visible both ways (prefix-LM mask)",
    )
    t.add_argument(
        "--corpus",
        help="pairs file, or 'download' for the larger current release "
        "(default: the shipped data/deu.txt.gz)",
    )
    t.add_argument("--tokenizer", help="tokenizer .json (default: data/tokenizer.json)")
    t.add_argument("--minutes", type=float, help="wall-clock budget of this run")
    t.add_argument("--max-steps", type=int, help="total optimiser steps")
    t.add_argument(
        "--cpu-minutes",
        type=float,
        help="CPU-time budget of the whole run (fair budgets on a shared machine)",
    )
    t.add_argument("--max-tokens", type=int, help="padded tokens per batch (default: 2048)")
    t.add_argument("--lr-factor", type=float, help="Noam schedule factor, §5.3 (default: 1)")
    t.add_argument("--warmup", type=int, help="Noam warm-up steps (default: 400)")
    t.add_argument("--label-smoothing", type=float, help="ε_ls, §5.4 (default: 0.1)")
    t.add_argument("--clip-norm", type=float, help="gradient clipping, 0 = off (default: 1)")
    t.add_argument("--dropout", type=float, help="override the preset's dropout")
    t.add_argument(
        "--layers",
        type=int,
        help="decoder-only: number of blocks (default: encoder + decoder layers of the "
        "preset + 1, about the encoder-decoder's parameter count)",
    )
    t.add_argument("--seed", type=int, help="seed for init, dropout, batch order (default: 0)")
    t.add_argument("--device", default="auto", help="auto (CUDA → MPS → CPU), cpu, cuda, mps")
    t.add_argument("--amp", action="store_true", default=None, help="bf16 autocast on CUDA")
    t.add_argument(
        "--threads",
        type=int,
        help="torch CPU threads (default: all cores; on a busy shared machine 1 is often "
        "fastest, as threads of one job wait for each other)",
    )
    t.add_argument("--eval-every", type=int, help="validation loss every N steps (default: 500)")
    t.add_argument("--log-every", type=int, help="log entry every N steps (default: 25)")
    t.add_argument(
        "--checkpoint-every", type=int, help="checkpoint every N steps (default: --eval-every)"
    )
    t.add_argument(
        "--checkpoint-minutes",
        type=float,
        help="and at least this often in minutes, 0 = off (default: 1)",
    )
    t.add_argument(
        "--keep-checkpoints",
        type=int,
        help="keep the last K step checkpoints for `average` (default: 0)",
    )
    t.add_argument(
        "--snapshot-at",
        type=checks.step_list,
        help="record attention snapshots of the book's example sentences at these steps, "
        "e.g. 0,100,500",
    )
    t.add_argument(
        "--resume",
        nargs="?",
        const="",
        help="continue the run in --out (or from this checkpoint.pt) with its own settings",
    )
    t.add_argument("--force", action="store_true", help="overwrite a run already in --out")
    t.add_argument(
        "--final-bleu",
        choices=("none", "valid", "test"),
        default="valid",
        help="greedy BLEU on this split at the end (default: valid)",
    )
    t.add_argument("--no-progress", action="store_true", help="no progress bar")

    # ---- translate -------------------------------------------------------------------
    tr = command(
        "translate",
        help="translate English sentences",
        description=(
            "Translate English sentences into German with the shipped model (or "
            "--checkpoint). Without sentences, reads one per line from standard input."
        ),
    )
    tr.add_argument("sentences", nargs="*", help="English sentences (quote each one)")
    _add_decoding_args(tr)

    # ---- evaluate --------------------------------------------------------------------
    ev = command(
        "evaluate",
        help="BLEU and chrF against all references",
        description=(
            "Translate each distinct English sentence once and score it with sacreBLEU "
            "(corpus BLEU and chrF) against all its German references. Give --pairs FILE "
            "(English<TAB>German lines; bad lines are skipped and counted) or --split."
        ),
    )
    src = ev.add_mutually_exclusive_group()
    src.add_argument("--pairs", help="English<TAB>German file (UTF-8) to score on")
    src.add_argument(
        "--split",
        choices=("train", "valid", "test"),
        default="test",
        help="split of the corpus (default: test)",
    )
    ev.add_argument("--corpus", help="pairs file for --split (default: the shipped corpus)")
    ev.add_argument("--limit", type=int, help="first N source sentences only")
    ev.add_argument("--threads", type=int, help="torch CPU threads")
    ev.add_argument("--show", type=int, default=3, help="example translations to print")
    ev.add_argument("--json", help="also write the scores to this JSON file")
    _add_decoding_args(ev)

    # ---- generate --------------------------------------------------------------------
    ge = command(
        "generate",
        help="continue German text with a decoder-only model (sampling)",
        description=(
            "Continue German text with a decoder-only checkpoint (train --arch "
            "decoder-only; the book ships data/decoder_only.pt). The model reads "
            "`English <sep> German`: the prompt is put after <sep>, with --source as the "
            "English (empty by default). Sampling: --temperature, --top-k, --top-p, --seed; "
            "--greedy takes the most likely token."
        ),
    )
    ge.add_argument("prompt", help="the German text to continue, in quotes")
    ge.add_argument("--checkpoint", help="decoder-only model (default: data/decoder_only.pt)")
    ge.add_argument("--source", default="", help="English sentence the German translates")
    ge.add_argument("--max-new-tokens", type=int, default=30, help="default: 30")
    ge.add_argument("--temperature", type=float, default=1.0, help="> 0 (default: 1)")
    ge.add_argument("--top-k", type=int, help="sample among the k likeliest tokens")
    ge.add_argument("--top-p", type=float, help="nucleus sampling: smallest set with mass p")
    ge.add_argument("--greedy", action="store_true", help="no sampling: the likeliest token")
    ge.add_argument("--seed", type=int, help="seed for reproducible samples")
    ge.add_argument("--samples", type=int, default=1, help="continuations to print (default: 1)")
    ge.add_argument("--device", default="cpu", help="cpu, cuda, mps or auto (default: cpu)")

    # ---- average ---------------------------------------------------------------------
    av = command(
        "average",
        help="average the last K checkpoints of a run (§6.1)",
        description=(
            "Average the weights of the last K step checkpoints (step-NNNNNN.pt, kept by "
            "`train --keep-checkpoints K`) of a run folder, or of the checkpoint files "
            "given, into one model file, as the paper does for its final models (§6.1)."
        ),
    )
    av.add_argument("inputs", nargs="+", help="a run folder, or checkpoint files")
    av.add_argument("--last", type=int, default=5, help="how many checkpoints (default: 5)")
    av.add_argument("--out", required=True, help="the averaged model file to write")
    av.add_argument("--force", action="store_true", help="overwrite --out if it exists")
    return parser


def _add_decoding_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--beam", type=int, default=1, help="beam size, 1 = greedy (default: 1)")
    p.add_argument("--alpha", type=float, default=0.6, help="length penalty (default: 0.6)")
    p.add_argument("--checkpoint", help="model file (default: data/model.pt)")
    p.add_argument("--device", default="cpu", help="cpu, cuda, mps or auto (default: cpu)")


# ======================================================================================
# Commands
# ======================================================================================


def _corpus_splits(corpus: str | None) -> dict[str, list[tuple[str, str]]]:
    from .corpus import find_corpus, read_pairs, split_pairs

    if corpus == "download":
        path = find_corpus(download=True)
    else:
        path = find_corpus(corpus)
    pairs, stats = read_pairs(path)
    print(f"corpus {path}: {stats.summary()}", flush=True)
    return split_pairs(pairs)


def _cmd_train(args: argparse.Namespace) -> int:
    import torch

    from ..components.config import TransformerConfig
    from ..components.model import count_parameters
    from .checkpoints import load_checkpoint, tokenizer_from_checkpoint
    from .distributed import init_distributed, process_group_backend
    from .tokenizer import DEFAULT_TOKENIZER_PATH, Tokenizer
    from .training import Trainer, TrainingConfig

    explicit = {k for k, v in vars(args).items() if v is not None}
    out = Path(args.out)
    device = checks.device(args.device)
    checks.train_numbers(args)
    resume_path = checks.train_out_dir(out, args.resume, args.force)
    if args.threads:
        torch.set_num_threads(args.threads)
    rank, world = init_distributed(device)
    if world > 1 and device.type == "cuda":
        device = torch.device("cuda", torch.cuda.current_device())

    if resume_path is not None:
        ckpt = load_checkpoint(resume_path)
        run = ckpt.get("state", {}).get("run", {})
        saved = ckpt.get("state", {}).get("training_config", {})
        checks.resume_conflicts(args, explicit, run, saved, RESUME_MAY_CHANGE, resume_path)
        config = TransformerConfig.from_dict(
            {k: v for k, v in ckpt["config"].items() if k not in ("arch", "prefix_lm")}
        )
        tokenizer = tokenizer_from_checkpoint(ckpt, resume_path)
        tok_path = Path(ckpt["tokenizer"]["name"])
        settings = {**saved, **{k: getattr(args, k) for k in RESUME_MAY_CHANGE if k in explicit}}
        run = {**TRAIN_DEFAULTS, **run}
    else:
        run = {k: getattr(args, k) if k in explicit else v for k, v in TRAIN_DEFAULTS.items()}
        run["prefix_lm"] = bool(args.prefix_lm)
        tok_path = Path(args.tokenizer) if args.tokenizer else DEFAULT_TOKENIZER_PATH
        tokenizer = Tokenizer.load(tok_path)
        overrides = {} if args.dropout is None else {"dropout": args.dropout}
        config = getattr(TransformerConfig, run["preset"])(tokenizer.vocab_size, **overrides)
        if run["arch"] == "decoder-only":
            blocks = args.layers or config.n_encoder_layers + config.n_decoder_layers + 1
            config = config.replace(n_decoder_layers=blocks)
            run["layers"] = blocks
        settings = {k: run[k] for k in TRAIN_DEFAULTS if k not in ("preset", "arch")}
        settings.update(max_steps=args.max_steps, minutes=args.minutes, amp=bool(args.amp))
        settings["cpu_minutes"] = args.cpu_minutes
        settings["clip_norm"] = settings["clip_norm"] or None
    settings.update(device=str(device), progress=not args.no_progress)
    tcfg = TrainingConfig.from_dict(settings)

    splits = _corpus_splits(args.corpus)
    from .tasks import build_model, make_datasets

    train_set, valid_set = make_datasets(run, splits, tokenizer, config)
    torch.manual_seed(tcfg.seed)  # model initialisation
    model = build_model(run, config)
    if rank == 0:
        print(
            f"model: {run['arch']}, {run['preset']} preset, {count_parameters(model):,} "
            f"parameters | train {len(train_set):,} pairs, valid {len(valid_set):,} | "
            f"device {device}, {torch.get_num_threads()} threads"
            + (f", {world} processes ({backend})" if (backend := process_group_backend()) else "")
            + f" | torch {torch.__version__}",
            flush=True,
        )
    trainer = Trainer(
        model, train_set, valid_set, tcfg, tokenizer=tokenizer, tokenizer_path=tok_path,
        out_dir=out, run=run,
    )  # fmt: skip
    if resume_path is not None:
        trainer.resume(resume_path)
        if rank == 0:
            print(f"resumed {resume_path} at step {trainer.step}", flush=True)
    elif args.force and rank == 0:
        checks.clear_run(out)
    session_start = time.perf_counter()
    log = trainer.fit()
    if rank:
        return 0
    if trainer.interrupted:
        print(
            f"{trainer.interrupted}: stopped at step {trainer.step} and saved {out}/checkpoint.pt"
            f"; continue with: python -m transformer_lib train --out {out} --resume",
            flush=True,
        )
        return 130 if trainer.interrupted == "SIGINT" else 143
    _report_run(trainer, log, time.perf_counter() - session_start)
    summary = {
        "steps": trainer.step,
        "minutes_total": round(trainer.elapsed_s / 60, 2),
        "cpu_minutes_total": round(trainer.cpu_s / 60, 2),
        "tokens_seen": trainer.tokens_seen,
    }
    if args.final_bleu != "none":
        from .tasks import evaluate_model

        result = evaluate_model(model, tokenizer, splits[args.final_bleu], beam=1)
        print(f"{args.final_bleu} greedy BLEU = {result.bleu:.2f}  chrF = {result.chrf:.2f}")
        summary[f"{args.final_bleu}_bleu_greedy"] = round(result.bleu, 2)
        summary[f"{args.final_bleu}_chrf_greedy"] = round(result.chrf, 2)
    (out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    print(f"wrote {out / 'checkpoint.pt'}, {out / 'model.pt'}, {out / 'training_log.json'}")
    return 0


def _report_run(trainer, log, wall: float) -> None:
    speeds = [e["tokens_per_s"] for e in log if "tokens_per_s" in e]
    vals = [e for e in log if "val_loss" in e]
    median = sorted(speeds)[len(speeds) // 2] if speeds else 0
    text = (
        f"done: step {trainer.step}, {wall / 60:.1f} min this run "
        f"({trainer.elapsed_s / 60:.1f} min in total, {trainer.cpu_s / 60:.1f} CPU-min), "
        f"median {median:,.0f} tokens/s"
    )
    if vals:
        text += f", val_loss {vals[-1]['val_loss']:.3f} (ppl {vals[-1]['val_ppl']:.2f})"
    print(text, flush=True)


def _load_translator(args: argparse.Namespace):
    from .pretrained import load_pretrained

    return load_pretrained(args.checkpoint, device=checks.device(args.device))


def _cmd_translate(args: argparse.Namespace) -> int:
    checks.decoding(args)
    sentences = list(args.sentences)
    if not sentences:
        sentences = [line.rstrip("\n") for line in sys.stdin if line.strip()]
    if not sentences:
        raise UsageError("no sentence given (pass it in quotes, or pipe lines in)")
    translator = _load_translator(args)
    for line in translator.translate(sentences, beam=args.beam, alpha=args.alpha):
        print(line)
    return 0


def _cmd_evaluate(args: argparse.Namespace) -> int:
    import torch

    from .corpus import read_pairs
    from .evaluation import _jsonable

    checks.decoding(args)
    checks.positive(args, "limit", "threads")
    if args.json:
        checks.writable_file(args.json, "--json")
    if args.pairs is not None and not Path(args.pairs).is_file():
        raise UsageError(f"--pairs: no file at {args.pairs}")
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.pairs is not None:
        pairs, stats = read_pairs(args.pairs)
        print(f"{args.pairs}: {stats.summary()}")
        if not pairs:
            raise UsageError(f"--pairs: {args.pairs} holds no English<TAB>German pairs")
    else:
        pairs = _corpus_splits(args.corpus)[args.split]
        print(f"{args.split} split: {len(pairs)} pairs")
    translator = _load_translator(args)
    start = time.perf_counter()
    result = translator.evaluate(pairs, beam=args.beam, alpha=args.alpha, limit=args.limit)
    seconds = time.perf_counter() - start
    print(f"BLEU = {result.bleu:.2f}")
    print(f"chrF = {result.chrf:.2f}")
    mode = "greedy" if args.beam == 1 else f"beam {args.beam}, alpha {args.alpha}"
    print(
        f"{result.n_sources} source sentences, {result.n_references} references, {mode}, "
        f"{seconds:.1f} s"
    )
    print(f"sacreBLEU: {result.bleu_detail}")
    shown = list(zip(result.sources, result.hypotheses, result.references))[: max(args.show, 0)]
    for src_text, hyp, refs in shown:
        print(f"  {src_text}  →  {hyp}    [ref: {' | '.join(refs[:3])}]")
    if args.json:
        data = _jsonable(result)
        data.update({"mode": mode, "pairs": args.pairs or f"split:{args.split}"})
        Path(args.json).write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n")
    return 0


def _cmd_generate(args: argparse.Namespace) -> int:
    import torch

    from ..components.decoder_only import DecoderOnlyTransformer
    from .generation import generate
    from .pretrained import DEFAULT_DECODER_ONLY, load_pretrained

    checks.sampling(args)
    path = args.checkpoint or DEFAULT_DECODER_ONLY
    if not Path(path).is_file():
        raise UsageError(f"--checkpoint: no file at {path}")
    if not args.prompt.strip():
        raise UsageError("the prompt is empty; give some German text to continue")
    translator = load_pretrained(path, device=checks.device(args.device))
    model, tok = translator.model, translator.tokenizer
    if not isinstance(model, DecoderOnlyTransformer):
        raise UsageError(
            f"--checkpoint: {path} is an encoder-decoder model; generate needs a decoder-only "
            f"one (train --arch decoder-only, or data/decoder_only.pt)"
        )
    sep = tok.token_to_id("<sep>")
    if sep is None:
        raise UsageError(f"--checkpoint: the tokenizer in {path} has no <sep> token")
    source = tok.encode(args.source) if args.source.strip() else []
    prompt = [*source, sep, *tok.encode(args.prompt)]
    if len(prompt) >= model.config.max_len:
        raise UsageError(
            f"the prompt has {len(prompt)} tokens; the model's context is "
            f"{model.config.max_len}: shorten it"
        )
    never = (tok.pad_id, tok.bos_id, sep)
    for i in range(args.samples):
        seed = None if args.seed is None else args.seed + i
        out = generate(
            model, torch.tensor(prompt), args.max_new_tokens, args.temperature, args.top_k,
            args.top_p, greedy=args.greedy, seed=seed, eos_id=tok.eos_id,
            prefix_lm=model.prefix_lm, never=never,
        )  # fmt: skip
        print(tok.decode(out[len(source) + 1 :].tolist()))
    return 0


def _cmd_average(args: argparse.Namespace) -> int:
    from .checkpoints import average_checkpoints
    from .training import step_checkpoints

    checks.positive(args, "last")
    out = Path(args.out)
    if out.exists() and not args.force:
        raise UsageError(f"--out: {out} exists; choose another file or pass --force")
    checks.writable_file(out, "--out")
    paths: list[Path] = []
    for item in map(Path, args.inputs):
        if item.is_dir():
            found = step_checkpoints(item)
            if not found:
                raise UsageError(
                    f"{item} holds no step-NNNNNN.pt checkpoints; train with "
                    f"--keep-checkpoints K to keep them"
                )
            paths.extend(found)
        elif item.is_file():
            paths.append(item)
        else:
            raise UsageError(f"no checkpoint file or run folder at {item}")
    paths = paths[-args.last :]
    average_checkpoints(paths, out)
    names = ", ".join(p.name for p in paths)
    print(f"averaged {len(paths)} checkpoints ({names}) into {out}")
    return 0


def _warning_line(message, category, filename, lineno, line=None) -> str:
    return f"warning: {message}\n"


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m transformer_lib`` (and the ``transformer-lib`` script)."""
    from .checkpoints import CheckpointError

    args = _build_parser().parse_args(argv)
    command = {
        "train": _cmd_train,
        "translate": _cmd_translate,
        "evaluate": _cmd_evaluate,
        "average": _cmd_average,
        "generate": _cmd_generate,
    }
    warnings.formatwarning = _warning_line  # one line on stderr, no source excerpt
    try:
        return command[args.command](args)
    except UsageError as exc:
        print(f"python -m transformer_lib {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except (CheckpointError, FileNotFoundError, ValueError, TypeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
