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
import contextlib
import os
import sys
import time
import warnings
from collections.abc import Sequence
from pathlib import Path

from ..components.feedforward import ACTIVATIONS, NORMS
from ..components.positional import POSITIONALS
from . import check_command
from . import cli_checks as checks
from .cli_checks import UsageError
from .cli_commands import (
    DEFAULT_AVERAGE_LAST,
    _average_at_end,
    _cmd_average,
    _cmd_evaluate,
    _cmd_generate,
    _cmd_translate,
    _final_bleu,
    _report_run,
    _Terminated,
    _unknown_arguments,
    _warning_line,
    _write_json,
)

PRESETS = ("tiny", "base", "big")
SCHEDULE_NAMES = ("noam", "linear")
ARCHS = ("encoder-decoder", "decoder-only")

#: Defaults of ``train``, applied after parsing so that the flags a user typed can be told
#: apart (a resumed run keeps its own settings unless a flag is given explicitly).
TRAIN_DEFAULTS = {
    "preset": "tiny",
    "arch": "encoder-decoder",
    "max_tokens": 2048,
    "lr_factor": 1.0,
    "warmup": 400,
    "schedule": "noam",  # runs from before the budget recipe trained with Noam
    "label_smoothing": 0.1,
    "clip_norm": 1.0,
    "seed": 0,
    "eval_every": 500,
    "log_every": 25,
    "checkpoint_every": None,
    "checkpoint_minutes": 1.0,
    "keep_checkpoints": 0,
    "average": 0,  # average the last K step checkpoints into averaged.pt at the end
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
            "  python -m transformer_lib train --out runs/mine --resume --minutes 10\n"
            '  python -m transformer_lib translate "Tom is lazy." --beam 4\n'
            "  python -m transformer_lib evaluate --split test --beam 4\n"
            "  python -m transformer_lib average runs/mine --last 5 --out runs/mine/avg.pt\n"
            "  python -m transformer_lib train --arch decoder-only --minutes 15 --out runs/gpt\n"
            '  python -m transformer_lib generate "Ich habe" --checkpoint data/decoder_only.pt '
            "--temperature 0.8 --top-k 20 --seed 0\n"
            "  python -m transformer_lib check my_model.py:build   # the check kit, ch. 13\n"
        ),
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    parser.commands = {}  # type: ignore[attr-defined]  # name -> its parser (for messages)

    def command(name: str, **kw) -> argparse.ArgumentParser:
        parser.commands[name] = sub.add_parser(name, **kw)  # type: ignore[attr-defined]
        return parser.commands[name]  # type: ignore[attr-defined]

    # ---- train -----------------------------------------------------------------------
    t = command(
        "train",
        help="train a model on the English-German corpus",
        description=(
            "Train a Transformer on the train split of the shipped Tatoeba English-German "
            "pairs. Writes OUT/checkpoint.pt (resumable, at least once a minute), "
            "OUT/model.pt (weights only) and OUT/training_log.json. Stops at --minutes or "
            "--max-steps, whichever comes first, or at Ctrl-C (the run is saved and can be "
            "resumed). A resumed run trains on the corpus it started with (its checkpoint "
            "records the file and its sha256). One train at a time may use a run folder "
            "(it holds OUT/.lock). Runs under torchrun --nproc_per_node N for data "
            "parallelism."
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
    t.add_argument(
        "--max-tokens", type=int, help="padded tokens per batch (default: chosen from the budget)"
    )
    t.add_argument(
        "--schedule",
        choices=SCHEDULE_NAMES,
        help="learning-rate schedule: noam (§5.3) or linear (to zero at the end of the "
        "budget) (default: chosen from the budget)",
    )
    t.add_argument(
        "--lr-factor",
        type=float,
        help="scale of the peak rate, §5.3 (default: from the budget; 1 with --warmup)",
    )
    t.add_argument("--warmup", type=int, help="warm-up steps (default: chosen from the budget)")

    t.add_argument("--label-smoothing", type=float, help="ε_ls, §5.4 (default: 0.1)")
    t.add_argument("--clip-norm", type=float, help="gradient clipping, 0 = off (default: 1)")
    t.add_argument("--dropout", type=float, help="override the preset's dropout")
    t.add_argument(
        "--d-ff",
        type=int,
        help="the FFN's inner width (default: the preset's; about 2/3 of it keeps SwiGLU's "
        "parameter count)",
    )
    t.add_argument(
        "--norm-first",
        action="store_true",
        default=None,
        help="pre-LN: normalise each sub-layer's input (default: post-LN, the paper's)",
    )
    t.add_argument(
        "--activation",
        choices=ACTIVATIONS,
        help="the feed-forward network's (default: relu, the paper's)",
    )
    t.add_argument(
        "--norm", choices=NORMS, help="layer = LayerNorm (default, the paper's), rms = RMSNorm"
    )
    t.add_argument(
        "--position",
        dest="positional",
        choices=POSITIONALS,
        help="sinusoidal (default, the paper's) or learned, added to the embeddings; rope = "
        "rotary positions inside self-attention (chapter 14)",
    )
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
        "--average",
        type=int,
        help="at the end, average the last K step checkpoints into OUT/averaged.pt, §6.1 "
        "(0 = no; default: chosen from the budget)",
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
    ev.add_argument("--no-progress", action="store_true", help="no progress bar")
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
            "--greedy takes the most likely token. An unknown token "
            "(<unk>) is printed as \ufffd (U+FFFD). Generation stops at <eos>, after "
            "--max-new-tokens, or when the sequence fills the model's context (128 tokens "
            "for the shipped model; a note says so)."
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
    av.add_argument(
        "--last",
        type=int,
        help=f"how many checkpoints (default: {DEFAULT_AVERAGE_LAST}, as in §6.1)",
    )
    av.add_argument("--out", required=True, help="the averaged model file to write")
    av.add_argument("--force", action="store_true", help="overwrite --out if it exists")

    # ---- check (the check kit of chapter 13, on a reader's own model) -----------------
    parser.commands["check"] = check_command.add_parser(sub)  # type: ignore[attr-defined]
    return parser


def _add_decoding_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--beam", type=int, default=1, help="beam size, 1 = greedy (default: 1)")
    p.add_argument("--alpha", type=float, default=0.6, help="length penalty (default: 0.6)")
    p.add_argument("--checkpoint", help="model file (default: data/model.pt)")
    p.add_argument("--device", default="cpu", help="cpu, cuda, mps or auto (default: cpu)")


# The commands.


def _resolve_corpus(given: str | None) -> Path:
    """The corpus file ``--corpus`` names (``download``: the cached current release)."""
    from .corpus import find_corpus

    return find_corpus(download=True) if given == "download" else find_corpus(given)


def _corpus_splits(path: Path) -> dict[str, list[tuple[str, str]]]:
    from .corpus import read_pairs, split_pairs

    pairs, stats = read_pairs(path)
    print(f"corpus {path}: {stats.summary()}", flush=True)
    return split_pairs(pairs)


def _load_translator(args: argparse.Namespace):
    from .pretrained import load_pretrained

    return load_pretrained(args.checkpoint, device=checks.device(args.device))


def _launch_rank() -> int:
    """This process's rank under torchrun (which sets ``RANK``), before the group exists."""
    rank = os.environ.get("RANK", "0").strip()
    return int(rank) if rank.isdigit() else 0


def _cmd_train(args: argparse.Namespace) -> int:
    from .run_folder import RunFolderBusy, lock_run_folder

    out = Path(args.out)
    checks.device(args.device)
    checks.train_numbers(args)
    checks.out_folder(out)
    with contextlib.ExitStack() as stack:
        if _launch_rank() == 0:  # only rank 0 writes into the folder
            try:
                stack.enter_context(lock_run_folder(out))
            except RunFolderBusy as exc:
                stop = f"stop it (kill {exc.pid}), " if exc.pid else ""
                raise UsageError(
                    f"--out: {exc}; wait for it to finish, {stop}or choose another --out"
                ) from None
        return _train(args, out)


def _train(args: argparse.Namespace, out: Path) -> int:
    import torch

    from ..components.config import TransformerConfig
    from ..components.model import count_parameters
    from .checkpoints import load_checkpoint, tokenizer_from_checkpoint
    from .distributed import init_distributed, process_group_backend
    from .recipe import RECIPE_KEYS, choose_recipe, describe, describe_budget, planned_steps
    from .run_folder import RunFolderError
    from .tokenizer import DEFAULT_TOKENIZER_PATH, Tokenizer
    from .training import Trainer, TrainingConfig

    explicit = {k for k, v in vars(args).items() if v is not None}
    device = checks.device(args.device)
    resume_path = checks.train_out_dir(out, args.resume, args.force)
    note = None
    if resume_path is not None:
        ckpt = load_checkpoint(resume_path)
        state = ckpt.get("state", {})
        run = state.get("run", {})
        saved = state.get("training_config", {})
        checks.resume_conflicts(
            args, explicit, run, saved, RESUME_MAY_CHANGE, resume_path, ckpt["config"],
            ckpt.get("tokenizer", {}).get("sha256"),
        )  # fmt: skip
        settings = {**saved, **{k: getattr(args, k) for k in RESUME_MAY_CHANGE if k in explicit}}
        checks.nothing_left_to_do(settings, state, explicit, out)
        corpus_path, corpus, note = checks.resume_corpus(args.corpus, run, resume_path, out)
        config = TransformerConfig.from_dict(
            {k: v for k, v in ckpt["config"].items() if k not in ("arch", "prefix_lm")}
        )
        tokenizer = tokenizer_from_checkpoint(ckpt, resume_path)
        tok_path = Path(ckpt["tokenizer"]["name"])
        run = {**TRAIN_DEFAULTS, **run, "corpus": corpus}
    else:
        run = {k: getattr(args, k) if k in explicit else v for k, v in TRAIN_DEFAULTS.items()}
        run["prefix_lm"] = bool(args.prefix_lm)
        recipe = choose_recipe(
            run["arch"], run["preset"], max_steps=args.max_steps, minutes=args.minutes,
            cpu_minutes=args.cpu_minutes,
        )  # fmt: skip
        given = {k: getattr(args, k) for k in RECIPE_KEYS if k in explicit}
        if "warmup" in given and "lr_factor" not in given:
            given["lr_factor"] = 1.0  # a warm-up of one's own: Eq. 3 as the paper has it
        run.update({**recipe.settings(), **given})
        run["recipe"] = {"chosen": recipe.to_dict(), "given": given}
        if run["average"]:  # keep enough step checkpoints, spaced over the end of the run
            if "keep_checkpoints" not in explicit:
                run["keep_checkpoints"] = max(run["keep_checkpoints"], run["average"])
            if "checkpoint_every" not in explicit and recipe.checkpoint_every:
                run["checkpoint_every"] = recipe.checkpoint_every
        tok_path = Path(args.tokenizer) if args.tokenizer else DEFAULT_TOKENIZER_PATH
        tokenizer = Tokenizer.load(tok_path)
        overrides = {k: getattr(args, k) for k in checks.ARCHITECTURE_FLAGS if k in explicit}
        config = getattr(TransformerConfig, run["preset"])(tokenizer.vocab_size, **overrides)
        if run["arch"] == "decoder-only":
            blocks = args.layers or config.n_encoder_layers + config.n_decoder_layers + 1
            config = config.replace(n_decoder_layers=blocks)
            run["layers"] = blocks
        settings = {k: run[k] for k in TRAIN_DEFAULTS if k not in ("preset", "arch")}
        settings.update(max_steps=args.max_steps, minutes=args.minutes, amp=bool(args.amp))
        settings["cpu_minutes"] = args.cpu_minutes
        settings["clip_norm"] = settings["clip_norm"] or None
        corpus_path = _resolve_corpus(args.corpus)
        run["corpus"] = checks.corpus_record(args.corpus, corpus_path)
    if args.threads:
        torch.set_num_threads(args.threads)
    rank, world = init_distributed(device)
    if world > 1 and device.type == "cuda":
        device = torch.device("cuda", torch.cuda.current_device())
    settings.update(device=str(device), progress=not args.no_progress)
    tcfg = TrainingConfig.from_dict(settings)

    if note and rank == 0:
        print(note, flush=True)
    splits = _corpus_splits(corpus_path)
    from .tasks import build_model, make_datasets

    train_set, valid_set = make_datasets(run, splits, tokenizer, config)
    torch.manual_seed(tcfg.seed)  # model initialisation
    model = build_model(run, config)
    if rank == 0:
        print(
            f"model: {run['arch']}, {run['preset']} preset{checks.variant_note(config)}, "
            f"{count_parameters(model):,} "
            f"parameters | train {len(train_set):,} pairs, valid {len(valid_set):,} | "
            f"device {device}, {torch.get_num_threads()} threads"
            + (f", {world} processes ({backend})" if (backend := process_group_backend()) else "")
            + f" | torch {torch.__version__}",
            flush=True,
        )
    if rank == 0 and resume_path is None:
        budget = describe_budget(args.max_steps, args.minutes, args.cpu_minutes)
        planned = planned_steps(args.max_steps, args.minutes, args.cpu_minutes, tcfg.max_tokens)
        print(describe(recipe, config.d_model, given, budget, planned), flush=True)
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
    session = (time.perf_counter(), trainer.step, trainer.tokens_seen, trainer.elapsed_s)
    resume_cmd = f"python -m transformer_lib train --out {out} --resume"
    try:
        log = trainer.fit()
    except RunFolderError as exc:
        if exc.checkpoint_step is not None:
            then = f"make {out} writable again and continue with: {resume_cmd}"
        else:
            then = f"make {out} writable again and start the run again"
        print(f"error: {exc}; {then}", file=sys.stderr, flush=True)
        return 1
    if rank:
        return 0
    if trainer.interrupted:
        print(
            f"{trainer.interrupted}: stopped at step {trainer.step} and saved {out}/checkpoint.pt"
            f"; continue with: {resume_cmd}",
            flush=True,
        )
        return 130 if trainer.interrupted == "SIGINT" else 143
    _report_run(trainer, log, session)
    summary = {
        "steps": trainer.step,
        "minutes_total": round(trainer.elapsed_s / 60, 2),
        "cpu_minutes_total": round(trainer.cpu_s / 60, 2),
        "tokens_seen": trainer.tokens_seen,
    }
    final_model = model
    if run.get("average"):  # §6.1: the model to use is the average of the last checkpoints
        final_model = _average_at_end(out, run["average"], summary) or model
    stopped = None
    if args.final_bleu != "none":
        stopped = _final_bleu(args, final_model, tokenizer, splits[args.final_bleu], summary)
    try:
        _write_json(out / "summary.json", summary)
    except OSError as exc:
        print(
            f"error: could not write {out / 'summary.json'} ({exc.strerror}); the run itself "
            f"is complete and saved in {out / 'checkpoint.pt'}",
            file=sys.stderr,
        )
        return 1
    if stopped is not None:
        split = args.final_bleu
        corpus_flag = "" if run["corpus"]["given"] == "shipped" else f" --corpus {corpus_path}"
        print(
            f"{stopped}: stopped during the final {split} BLEU; the run is complete and saved "
            f"({out / 'checkpoint.pt'}, model.pt, summary.json without the BLEU); score it "
            f"with: python -m transformer_lib evaluate --checkpoint {out / 'model.pt'} "
            f"--split {split}{corpus_flag}",
            flush=True,
        )
        return 130 if stopped == "SIGINT" else 143
    print(f"wrote {out / 'checkpoint.pt'}, {out / 'model.pt'}, {out / 'training_log.json'}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m transformer_lib`` (and the ``transformer-lib`` script)."""
    from .checkpoints import CheckpointError

    parser = _build_parser()
    args, extras = parser.parse_known_args(argv)
    if extras:
        sub = parser.commands[args.command]
        sub.error(_unknown_arguments(sub, extras))
    command = {
        "train": _cmd_train,
        "translate": _cmd_translate,
        "evaluate": _cmd_evaluate,
        "average": _cmd_average,
        "generate": _cmd_generate,
        "check": check_command.run,
    }
    warnings.formatwarning = _warning_line  # one line on stderr, no source excerpt
    prog = f"python -m transformer_lib {args.command}"
    try:
        return command[args.command](args)
    except UsageError as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 2
    except (KeyboardInterrupt, _Terminated) as exc:
        name = "SIGINT" if isinstance(exc, KeyboardInterrupt) else "SIGTERM"
        print(f"{prog}: {name}: interrupted; {INTERRUPTED[args.command]}", file=sys.stderr)
        return 130 if name == "SIGINT" else 143
    except (CheckpointError, OSError, ValueError, TypeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1


#: What an interrupted command leaves behind (Ctrl-C outside training's own handling).
INTERRUPTED = {
    "train": "files already in --out are intact (every write is atomic)",
    "translate": "the translations printed above are complete",
    "evaluate": "the scores were not complete, so nothing was written",
    "generate": "the continuations printed above are complete",
    "average": "--out was not written (it is written atomically)",
    "check": "the checks were not all run, so there is no report",
}


if __name__ == "__main__":
    sys.exit(main())
