"""Check the library's CUDA paths on a machine with a GPU, in a few minutes.

    python scripts/gpu_check.py                      # every check, on cuda
    python scripts/gpu_check.py --json gpu.json      # ... and keep the table as JSON
    python scripts/gpu_check.py --device cpu --only logits,greedy,cache --sentences 5

What it checks, each as one row of the table it prints:

* ``train fp32`` / ``train amp``: the tiny preset trains for ``--steps`` steps through the
  command line (``train --device cuda``, then with ``--amp``, bf16 autocast); the loss
  must stay finite and fall.
* ``logits``: the shipped model's teacher-forced logits on test sentences, on the GPU
  and on the CPU, agree within ``--logit-tol``.
* ``greedy`` / ``beam 4``: the translations of ``--sentences`` test sentences are the
  same on both devices. A sentence that differs is listed with its score margin, the
  gap in log-probability (on the CPU) between the two competing outputs: below
  ``--tie-margin`` it is a near-tie that float rounding may flip, above it a bug.
* ``kv cache``: greedy decoding on the GPU with the key/value cache gives the same
  tokens as recomputing the whole prefix at every step, and the same last-step logits
  within ``--logit-tol``.
* ``torchrun nccl``: a one-process ``torchrun`` of ``train`` joins an NCCL process group
  and trains through DistributedDataParallel.

It prints one table and exits 1 if a check failed, 0 if all passed. Without CUDA it says
so and exits 0 (nothing to check); ``--device cpu`` runs the same checks against the CPU
itself, a quick test of the script.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

CHECKS = ("train-fp32", "train-amp", "logits", "greedy", "beam", "cache", "torchrun")


@dataclass
class Row:
    """One line of the table: a check, its outcome and what was measured."""

    check: str
    status: str  # "pass", "FAIL" or "skip"
    measured: str
    limit: str = ""
    seconds: float = 0.0
    details: list[str] = field(default_factory=list)


def format_table(rows: Sequence[Row]) -> str:
    """The rows as a fixed-width text table, with any details indented below their row."""
    head = ("check", "result", "measured", "limit", "s")
    body = [(r.check, r.status, r.measured, r.limit, f"{r.seconds:.1f}") for r in rows]
    widths = [max(len(line[i]) for line in [head, *body]) for i in range(len(head))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(head, widths))]
    lines.append("  ".join("-" * w for w in widths))
    for row, cells in zip(rows, body):
        lines.append("  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip())
        lines.extend(f"    {d}" for d in row.details)
    return "\n".join(lines)


def classify_margins(margins: Sequence[float], tie_margin: float) -> tuple[int, int]:
    """``(near-ties, real differences)``: a margin below ``tie_margin`` is a near-tie."""
    ties = sum(1 for m in margins if abs(m) < tie_margin)
    return ties, len(margins) - ties


# --------------------------------------------------------------------------------------
# The checks
# --------------------------------------------------------------------------------------


def _run(cmd: list[str], timeout: float, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout,
        env={**os.environ, **(env or {})},
    )  # fmt: skip


def _train_command(out: Path, device: str, steps: int) -> list[str]:
    return [
        "-m", "transformer_lib", "train", "--preset", "tiny", "--device", device,
        "--max-steps", str(steps), "--eval-every", str(steps), "--log-every", "10",
        "--checkpoint-minutes", "0", "--final-bleu", "none", "--no-progress",
        "--threads", "1", "--out", str(out),
    ]  # fmt: skip


def _loss_row(name: str, proc: subprocess.CompletedProcess, out: Path, t0: float) -> Row:
    seconds = time.perf_counter() - t0
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        return Row(name, "FAIL", f"exit status {proc.returncode}", "0", seconds, tail)
    log = json.loads((out / "training_log.json").read_text())
    losses = [e["loss"] for e in log if "loss" in e]
    steps = max((e["step"] for e in log if "step" in e), default=0)
    if not losses or not all(math.isfinite(v) for v in losses):
        return Row(name, "FAIL", f"non-finite loss in {losses[:3]}…", "finite", seconds)
    first, last = losses[0], losses[-1]
    ok = last < 0.8 * first
    measured = f"loss {first:.2f} → {last:.2f} in {steps} steps"
    return Row(name, "pass" if ok else "FAIL", measured, "falls by 20%+", seconds)


def check_training(device: str, steps: int, amp: bool, timeout: float) -> Row:
    name = "train amp" if amp else "train fp32"
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "run"
        cmd = [sys.executable, *_train_command(out, device, steps), *(["--amp"] if amp else [])]
        try:
            proc = _run(cmd, timeout)
        except subprocess.TimeoutExpired:
            return Row(name, "FAIL", f"no result after {timeout:.0f} s", "", timeout)
        return _loss_row(name, proc, out, t0)


def check_torchrun(device: str, steps: int, timeout: float) -> Row:
    t0 = time.perf_counter()
    want = "nccl" if device.startswith("cuda") else "gloo"
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "run"
        cmd = [
            sys.executable, "-m", "torch.distributed.run", "--standalone",
            "--nproc_per_node", "1", *_train_command(out, device, steps),
        ]  # fmt: skip
        try:
            proc = _run(cmd, timeout, env={"OMP_NUM_THREADS": "1"})
        except subprocess.TimeoutExpired:
            return Row("torchrun " + want, "FAIL", f"no result after {timeout:.0f} s", "", timeout)
        row = _loss_row("torchrun " + want, proc, out, t0)
        if row.status == "pass" and f"1 processes ({want})" not in proc.stdout:
            row.status = "FAIL"
            row.details = [f"the run did not report a {want} process group:"]
            row.details += proc.stdout.strip().splitlines()[:2]
        elif row.status == "pass":
            row.measured += f", {want} group"
        return row


def _test_sentences(n: int) -> list[tuple[str, str]]:
    """The first ``n`` test sources of the shipped corpus, each with its first reference."""
    from transformer_lib.pipeline.corpus import (
        find_corpus,
        group_references,
        read_pairs,
        split_pairs,
    )

    groups = group_references(split_pairs(read_pairs(find_corpus())[0])["test"])
    return [(en, refs[0]) for en, refs in groups[:n]]


def _batch(tok, texts: Sequence[str], device, bos: bool):
    import torch

    from transformer_lib.pipeline.batching import pad_sequences

    ids = [tok.encode(t) for t in texts]
    if bos:
        ids = [[tok.bos_id, *seq, tok.eos_id] for seq in ids]
    return pad_sequences([torch.tensor(seq) for seq in ids], tok.pad_id).to(device)


def check_logits(cpu, gpu, pairs, tol: float) -> Row:
    import torch

    t0 = time.perf_counter()
    tok = cpu.tokenizer
    src = _batch(tok, [en for en, _ in pairs], "cpu", bos=False)
    tgt = _batch(tok, [de for _, de in pairs], "cpu", bos=True)[:, :-1]
    dev = next(gpu.model.parameters()).device
    with torch.no_grad():
        a = cpu.model(src, tgt)
        b = gpu.model(src.to(dev), tgt.to(dev)).cpu()
    keep = (tgt != tok.pad_id).unsqueeze(-1)  # compare real positions only
    diff = float(((a - b).abs() * keep).max())
    scale = float((a.abs() * keep).max())
    status = "pass" if diff <= tol else "FAIL"
    measured = f"max |Δ| {diff:.2e} (logits up to {scale:.1f}), {len(pairs)} sentences"
    return Row("logits", status, measured, f"≤ {tol:g}", time.perf_counter() - t0)


def _margin(cpu, src_text: str, hyp_a: str, hyp_b: str, alpha: float | None) -> float:
    """CPU score of output ``a`` minus that of ``b`` (length-penalised when ``alpha``)."""
    import torch

    from transformer_lib.pipeline.decoding import length_penalty, score_sequences

    tok = cpu.tokenizer
    src = _batch(tok, [src_text, src_text], "cpu", bos=False)
    tgt = _batch(tok, [hyp_a, hyp_b], "cpu", bos=True)
    with torch.no_grad():
        scores = score_sequences(cpu.model, src, tgt)
    if alpha is not None:
        lengths = (tgt[:, 1:] != tok.pad_id).sum(-1)
        scores = scores / length_penalty(lengths, alpha)
    return float(scores[0] - scores[1])


def check_decoding(cpu, gpu, pairs, beam: int, tie_margin: float) -> Row:
    t0 = time.perf_counter()
    name = "greedy" if beam == 1 else f"beam {beam}"
    sources = [en for en, _ in pairs]
    out_cpu = cpu.translate(sources, beam=beam)
    out_gpu = gpu.translate(sources, beam=beam)
    differ = [(s, a, b) for s, a, b in zip(sources, out_cpu, out_gpu) if a != b]
    alpha = None if beam == 1 else 0.6
    margins = [_margin(cpu, s, a, b, alpha) for s, a, b in differ]
    ties, real = classify_margins(margins, tie_margin)
    details = [
        f"{'near-tie' if abs(m) < tie_margin else 'DIFFERS '} margin {m:+.2e}: {s!r}: "
        f"cpu {a!r} / gpu {b!r}"
        for (s, a, b), m in zip(differ, margins)
    ]
    measured = f"{len(sources) - len(differ)}/{len(sources)} identical"
    if differ:
        measured += f", {ties} near-ties, {real} real"
    status = "pass" if real == 0 else "FAIL"
    limit = f"margin < {tie_margin:g}"
    return Row(name, status, measured, limit, time.perf_counter() - t0, details)


def check_cache(gpu, pairs, tol: float) -> Row:
    import torch

    from transformer_lib.pipeline.decoding import greedy_decode

    t0 = time.perf_counter()
    dev = next(gpu.model.parameters()).device
    src = _batch(gpu.tokenizer, [en for en, _ in pairs], dev, bos=False)
    with torch.no_grad():
        cached = greedy_decode(gpu.model, src, use_cache=True)
        full = greedy_decode(gpu.model, src, use_cache=False)
        same = cached.shape == full.shape and bool((cached == full).all())
        # Every step's logits, once through the cache and once from the whole prefix,
        # at the positions that hold a real token (not the padding after <eos>).
        memory, src_mask = gpu.model.encode(src)
        cache = gpu.model.new_cache()
        steps = [
            gpu.model.decode(cached[:, t : t + 1], memory, src_mask, cache=cache)
            for t in range(cached.size(1))
        ]
        stepwise = torch.cat(steps, dim=1)  # (B, L, V)
        whole = gpu.model.decode(cached, memory, src_mask)  # (B, L, V)
        real = (cached != gpu.tokenizer.pad_id).unsqueeze(-1)
        diff = float(((stepwise - whole).abs() * real).max())
    ok = same and diff <= tol
    measured = f"tokens {'identical' if same else 'DIFFER'}, logits max |Δ| {diff:.2e}"
    return Row(
        "kv cache", "pass" if ok else "FAIL", measured, f"≤ {tol:g}", time.perf_counter() - t0
    )


# --------------------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------------------


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"must be a finite number > 0, got {text}")
    return value


def _check_list(text: str) -> tuple[str, ...]:
    names = tuple(n.strip() for n in text.split(",") if n.strip())
    unknown = [n for n in names if n not in CHECKS]
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"unknown check {', '.join(unknown) or '(none given)'}; choose from {', '.join(CHECKS)}"
        )
    return names


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python scripts/gpu_check.py",
        description="Check the library's CUDA paths (training, AMP, parity with the CPU, "
        "decoding, torchrun with NCCL) and print one table.",
    )
    p.add_argument("--device", default="cuda", help="cuda, cuda:N, or cpu (a smoke test)")
    p.add_argument("--steps", type=_positive_int, default=300, help="training steps (300)")
    p.add_argument("--sentences", type=_positive_int, default=100, help="test sentences (100)")
    p.add_argument("--logit-tol", type=_positive_float, default=1e-3, help="|Δ logit| (1e-3)")
    p.add_argument(
        "--tie-margin", type=_positive_float, default=1e-3,
        help="score margins below this count as near-ties (1e-3 nats)",
    )  # fmt: skip
    p.add_argument("--timeout", type=_positive_float, default=120, help="per training run, s")
    p.add_argument("--only", type=_check_list, default=CHECKS, help=",".join(CHECKS))
    p.add_argument("--json", type=Path, help="also write the rows to this JSON file")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    import torch

    if args.json is not None and not args.json.parent.is_dir():
        print(f"--json: no folder {args.json.parent} to write into", file=sys.stderr)
        return 2
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        print(
            f"No CUDA device here (torch {torch.__version__}, cuda "
            f"{torch.version.cuda or 'not built in'}): nothing to check. Run this on a "
            f"machine with an NVIDIA GPU, or pass --device cpu for a smoke test."
        )
        return 0
    if not (args.device == "cpu" or args.device.startswith("cuda")):
        print(f"--device: use cuda, cuda:N or cpu, not {args.device!r}", file=sys.stderr)
        return 2
    torch.set_num_threads(1)
    from transformer_lib import load_pretrained

    name = torch.cuda.get_device_name(args.device) if args.device != "cpu" else "CPU"
    print(f"torch {torch.__version__}, device {args.device} ({name})", flush=True)
    rows: list[Row] = []
    runners: list[tuple[str, Callable[[], Row]]] = []
    cpu = gpu = pairs = None
    if {"logits", "greedy", "beam", "cache"} & set(args.only):
        cpu = load_pretrained(device="cpu")
        gpu = load_pretrained(device=args.device)
        pairs = _test_sentences(args.sentences)
    for check, run in (
        ("train-fp32", lambda: check_training(args.device, args.steps, False, args.timeout)),
        ("train-amp", lambda: check_training(args.device, args.steps, True, args.timeout)),
        ("logits", lambda: check_logits(cpu, gpu, pairs, args.logit_tol)),
        ("greedy", lambda: check_decoding(cpu, gpu, pairs, 1, args.tie_margin)),
        ("beam", lambda: check_decoding(cpu, gpu, pairs, 4, args.tie_margin)),
        ("cache", lambda: check_cache(gpu, pairs, args.logit_tol)),
        ("torchrun", lambda: check_torchrun(args.device, min(args.steps, 100), args.timeout)),
    ):
        if check in args.only:
            runners.append((check, run))
    for check, run in runners:
        try:
            rows.append(run())
        except Exception as exc:  # a crash is a failed check, reported in the table
            rows.append(Row(check, "FAIL", f"{type(exc).__name__}: {exc}"[:200]))
        print(f"  {rows[-1].check}: {rows[-1].status}", flush=True)
    print(format_table(rows))
    if args.json is not None:
        args.json.write_text(json.dumps([asdict(r) for r in rows], indent=1) + "\n")
    failed = [r.check for r in rows if r.status == "FAIL"]
    print(f"{len(rows) - len(failed)} of {len(rows)} checks passed" + (
        f"; failed: {', '.join(failed)}" if failed else ""))  # fmt: skip
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
