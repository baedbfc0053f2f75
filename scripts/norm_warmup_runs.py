"""Train chapter 7's grid of toy runs and store their curves in data/norm_warmup_runs.json.

Post-LN and pre-LN, with and without warm-up, at three learning rates, five seeds each:
every combination of ``GRID`` in :mod:`transformer_lib.views.explorers.norm_warmup`, each
trained by ``train_reverser`` (200 Adam steps on the sequence-reversal task). The chapter
and its explorer read the file; ``tests/test_norm_warmup.py`` checks it and re-trains the
start of one run to confirm that the stored curves come from this code.

    python scripts/norm_warmup_runs.py            # 60 runs, about 10 CPU minutes on one core
    python scripts/norm_warmup_runs.py --jobs 4   # four processes at once
    python scripts/norm_warmup_runs.py --out /tmp/runs.json
"""

from __future__ import annotations

import argparse
import itertools
import json
import multiprocessing
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from transformer_lib.views.explorers.norm_warmup import (  # noqa: E402
    GRID,
    RUNS_FILE,
    SOLVED_ACCURACY,
    STEPS,
    WINDOW,
    block_means,
    run_key,
    train_reverser,
)


def _round(values: list[float]) -> list[float]:
    return [float(f"{v:.5g}") for v in values]


def one_run(setting: tuple[bool, int, float, int]) -> tuple[str, dict]:
    """Train one setting of the grid; return its key and its stored form."""
    torch.set_num_threads(1)  # deterministic, and fastest for these tiny models
    norm_first, warmup, lr, seed = setting
    curves = train_reverser(norm_first, warmup, steps=STEPS, lr=lr, seed=seed)
    loss, accuracy = curves["loss"], curves["accuracy"]
    return run_key(norm_first, warmup, lr, seed), {
        "loss": _round(block_means(loss)),
        "accuracy": _round(block_means(accuracy)),
        "final_loss": float(f"{loss[-10:].mean().item():.5g}"),
        "final_accuracy": float(f"{accuracy[-10:].mean().item():.5g}"),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=RUNS_FILE, help="where to write the JSON")
    parser.add_argument("--jobs", type=int, default=1, help="processes to train in parallel")
    args = parser.parse_args(argv)
    combos = list(itertools.product(GRID["norm_first"], GRID["warmup"], GRID["lr"], GRID["seed"]))
    start = time.perf_counter()
    runs = {}
    with multiprocessing.get_context("spawn").Pool(max(1, args.jobs)) as pool:
        for n, (key, run) in enumerate(pool.imap(one_run, combos), 1):
            runs[key] = run
            print(
                f"[{n}/{len(combos)}] {key}: final loss {run['final_loss']:.3f}, "
                f"accuracy {run['final_accuracy']:.3f} ({time.perf_counter() - start:.0f} s)",
                flush=True,
            )
    data = {
        "settings": {
            "task": "reverse 12 random symbols from 20; 6-layer encoder, d_model 64, 4 heads, "
            "d_ff 256, no dropout; Adam betas (0.9, 0.98), batch 32, linear warm-up",
            "steps": STEPS,
            "window": WINDOW,
            "solved_accuracy": SOLVED_ACCURACY,
            "grid": {k: list(v) for k, v in GRID.items()},
            "torch": torch.__version__,
        },
        "runs": runs,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {len(runs)} runs to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
