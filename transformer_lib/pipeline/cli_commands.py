"""The commands that use a model: ``translate``, ``evaluate``, ``generate``, ``average``,
and what the command line shares (the corpus, JSON output, SIGTERM, unknown flags).

Parsing and ``train`` are in :mod:`.cli`; every check runs before any work
(:mod:`.cli_checks`), and a bad argument is one line with exit status 2.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import signal
import sys
import threading
import time
from pathlib import Path

from . import cli_checks as checks
from .cli_checks import UsageError


def _cli():
    """The :mod:`.cli` module, where the corpus and the model are loaded (looked up at call
    time, so that one place can be replaced in tests)."""
    from . import cli

    return cli


#: Checkpoints ``average`` takes by default: the paper's base models average the last 5.
DEFAULT_AVERAGE_LAST = 5


def _warning_line(message, category, filename, lineno, line=None) -> str:
    """A warning as one line on stderr (``warnings.formatwarning``), no source excerpt."""
    return f"warning: {message}\n"


class _Terminated(Exception):
    """SIGTERM arrived while a command was not training (see :func:`_sigterm_raises`)."""


@contextlib.contextmanager
def _sigterm_raises():
    """Turn SIGTERM into :class:`_Terminated` inside the block (as Ctrl-C raises
    ``KeyboardInterrupt``), so that the command can stop cleanly."""

    def handler(signum, frame):  # noqa: ARG001 - signal handler signature
        raise _Terminated

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _write_json(path: Path, data: dict) -> None:
    """Write ``data`` as JSON, atomically (a reader never sees half a file)."""
    from .checkpoints import write_atomically

    text = json.dumps(data, indent=1, ensure_ascii=False) + "\n"
    write_atomically(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))


def _cmd_translate(args: argparse.Namespace) -> int:
    checks.decoding(args)
    sentences = [
        checks.text_input(text, f"sentence {i} on the command line")
        for i, text in enumerate(args.sentences)
    ]
    if not sentences:
        sentences = _read_stdin()
    if not sentences:
        raise UsageError("no sentence given (pass it in quotes, or pipe lines in)")
    translator = _cli()._load_translator(args)
    for line in translator.translate(sentences, beam=args.beam, alpha=args.alpha):
        print(line)
    return 0


def _read_stdin() -> list[str]:
    """The non-blank lines of standard input, each checked to be UTF-8."""
    buffer = getattr(sys.stdin, "buffer", None)
    if buffer is not None:
        return checks.stdin_lines(buffer)
    lines = [line.rstrip("\r\n") for line in sys.stdin if line.strip()]
    return [checks.text_input(t, f"line {i + 1} of standard input") for i, t in enumerate(lines)]


def _cmd_evaluate(args: argparse.Namespace) -> int:
    import torch

    from .corpus import read_pairs
    from .evaluation import _jsonable

    checks.decoding(args)
    checks.positive(args, "limit", "threads")
    if args.json:
        checks.writable_file(args.json, "--json", create_folders=False)
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
        cli = _cli()
        pairs = cli._corpus_splits(cli._resolve_corpus(args.corpus))[args.split]
        print(f"{args.split} split: {len(pairs)} pairs")
    translator = _cli()._load_translator(args)
    start = time.perf_counter()
    label = None if args.no_progress else "translating"
    with _sigterm_raises():
        result = translator.evaluate(pairs, args.beam, args.alpha, args.limit, progress=label)
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
        _write_json(Path(args.json), data)
    return 0


def _cmd_generate(args: argparse.Namespace) -> int:
    import torch

    from ..components.decoder_only import DecoderOnlyTransformer
    from .generation import context_room, decode_for_display, generate
    from .pretrained import DEFAULT_DECODER_ONLY, load_pretrained

    checks.sampling(args)
    checks.text_input(args.prompt, "the prompt")
    checks.text_input(args.source, "--source")
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
    room = context_room(model, len(prompt))
    never = (tok.pad_id, tok.bos_id, sep)
    noted = False
    for i in range(args.samples):
        seed = None if args.seed is None else args.seed + i
        out = generate(
            model, torch.tensor(prompt), args.max_new_tokens, args.temperature, args.top_k,
            args.top_p, greedy=args.greedy, seed=seed, eos_id=tok.eos_id,
            prefix_lm=model.prefix_lm, never=never,
        )  # fmt: skip
        print(decode_for_display(tok, out[len(source) + 1 :].tolist()), flush=True)
        new = out[len(prompt) :].tolist()
        if not noted and room < args.max_new_tokens and len(new) >= room and tok.eos_id not in new:
            print(
                f"note: generation stopped at the model's context of {model.config.max_len} "
                f"tokens: the prompt has {len(prompt)}, so only {room} new tokens fit (of "
                f"--max-new-tokens {args.max_new_tokens})",
                file=sys.stderr,
                flush=True,
            )
            noted = True
    return 0


def _cmd_average(args: argparse.Namespace) -> int:
    from .checkpoints import average_checkpoints
    from .training import step_checkpoints

    checks.positive(args, "last")
    last = DEFAULT_AVERAGE_LAST if args.last is None else args.last
    out = Path(args.out)
    if out.exists() and not args.force:
        raise UsageError(f"--out: {out} exists; choose another file or pass --force")
    checks.writable_file(out, "--out")
    paths: list[Path] = []
    folders = []
    for item in map(Path, args.inputs):
        if item.is_dir():
            found = step_checkpoints(item)
            if not found:
                raise UsageError(
                    f"{item} holds no step-NNNNNN.pt checkpoints; train with "
                    f"--keep-checkpoints K to keep them"
                )
            paths.extend(found)
            folders.append(item)
        elif item.is_file():
            paths.append(item)
        else:
            raise UsageError(f"no checkpoint file or run folder at {item}")
    if len(paths) < last and (folders or args.last is not None):
        where = ", ".join(map(str, folders or args.inputs))
        print(
            f"warning: --last {last} asked for {last} checkpoints, but only {len(paths)} "
            f"{'was' if len(paths) == 1 else 'were'} found ({where}); averaging those "
            f"{len(paths)} (keep more with train --keep-checkpoints K)",
            file=sys.stderr,
            flush=True,
        )
    paths = paths[-last:]
    try:
        average_checkpoints(paths, out)
    except ValueError as exc:  # different models or tokenizers: nothing to average
        raise UsageError(str(exc)) from None
    names = ", ".join(p.name for p in paths)
    print(f"averaged {len(paths)} checkpoints ({names}) into {out}")
    return 0


#: Flags people type for a flag of another name (the suggestion shown instead).
FLAG_ALIASES = {
    "--max-len": "--max-new-tokens",
    "--max-length": "--max-new-tokens",
    "--length": "--max-new-tokens",
    "--max-tokens": "--max-new-tokens",
    "--num-samples": "--samples",
    "--temp": "--temperature",
    "--beam-size": "--beam",
    "--num-beams": "--beam",
    "--steps": "--max-steps",
    "--model": "--checkpoint",
}


def _unknown_arguments(parser: argparse.ArgumentParser, extras: list[str]) -> str:
    """One line about arguments argparse did not recognise, with the likely flag."""
    import difflib

    known = [o for a in parser._actions for o in a.option_strings if o.startswith("--")]
    flags = [e for e in extras if e.startswith("-")]
    if not flags:
        return f"unrecognized arguments: {' '.join(extras)}"
    parts = []
    for flag in flags:
        name = flag.split("=", 1)[0]
        guess = FLAG_ALIASES.get(name)
        if guess not in known:
            close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
            guess = close[0] if close else None
        parts.append(f"{name} (did you mean {guess}?)" if guess else name)
    word = "argument" if len(parts) == 1 else "arguments"
    return f"unrecognized {word}: {', '.join(parts)}"


def _final_bleu(args, model, tokenizer, pairs, summary: dict) -> str | None:
    """Greedy BLEU of the trained model on ``--final-bleu``'s split, into ``summary``.

    Returns None, or the signal ("SIGINT"/"SIGTERM") that interrupted it; then
    ``summary`` says so instead of holding a score.
    """
    from .evaluation import evaluate_pairs

    split = args.final_bleu
    model.eval()
    label = None if args.no_progress else f"{split} BLEU (greedy)"
    try:
        with _sigterm_raises():
            result = evaluate_pairs(model, tokenizer, pairs, 1, progress=label)
    except (KeyboardInterrupt, _Terminated) as exc:
        name = "SIGINT" if isinstance(exc, KeyboardInterrupt) else "SIGTERM"
        summary["final_bleu"] = f"interrupted ({name}) before the {split} BLEU was complete"
        return name
    print(f"{split} greedy BLEU = {result.bleu:.2f}  chrF = {result.chrf:.2f}")
    summary[f"{split}_bleu_greedy"] = round(result.bleu, 2)
    summary[f"{split}_chrf_greedy"] = round(result.chrf, 2)
    return None


def _report_run(trainer, log, session: tuple[float, int, int, float]) -> None:
    """The one-line summary of a finished session; ``session`` is (start time, step,
    tokens seen, elapsed seconds) when it began."""
    started, step0, tokens0, elapsed0 = session
    wall = time.perf_counter() - started
    speeds = [e["tokens_per_s"] for e in log if "tokens_per_s" in e and e["step"] > step0]
    vals = [e for e in log if "val_loss" in e]
    if speeds:
        speed = f"median {sorted(speeds)[len(speeds) // 2]:,.0f} tokens/s"
    else:  # fewer steps than --log-every: the session's mean instead
        seconds = trainer.elapsed_s - elapsed0
        tokens = (trainer.tokens_seen - tokens0) * trainer.world
        speed = f"{tokens / seconds:,.0f} tokens/s" if seconds > 0 and tokens else "no steps"
    text = (
        f"done: step {trainer.step}, {wall / 60:.1f} min this run "
        f"({trainer.elapsed_s / 60:.1f} min in total, {trainer.cpu_s / 60:.1f} CPU-min), "
        f"{speed}"
    )
    if vals:
        text += f", val_loss {vals[-1]['val_loss']:.3f} (ppl {vals[-1]['val_ppl']:.2f})"
    print(text, flush=True)


def _average_at_end(out: Path, k: int, summary: dict):
    """Average the run's last ``k`` step checkpoints into ``out/averaged.pt`` (§6.1).

    Returns the averaged model (to score), or None when fewer than two checkpoints exist.
    """
    from .checkpoints import average_checkpoints, load_model
    from .training import step_checkpoints

    paths = step_checkpoints(out)[-k:]
    if len(paths) < 2:
        print(f"note: {out} holds {len(paths)} step checkpoint(s), so nothing was averaged")
        return None
    target = out / "averaged.pt"
    average_checkpoints(paths, target)
    steps = [int(p.stem.split("-")[1]) for p in paths]
    print(
        f"averaged the last {len(paths)} checkpoints (steps {steps[0]:,}-{steps[-1]:,}) into "
        f"{target} (§6.1): the model to use",
        flush=True,
    )
    summary["averaged"] = {"file": target.name, "steps": steps}
    return load_model(target)[0]
