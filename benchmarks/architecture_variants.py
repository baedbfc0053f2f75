"""The paper's architecture against later variants, trained the same way on the same budget.

    python benchmarks/architecture_variants.py                 # 1,600 steps per run
    python benchmarks/architecture_variants.py --cpu-minutes 5 # 5 CPU-minutes per run
    python benchmarks/architecture_variants.py --max-steps 20 --out /tmp/v.json  # smoke
    python benchmarks/architecture_variants.py --missing      # only runs not in the file yet

Every run is ``python -m transformer_lib train --max-steps N --threads 1`` (or
``--cpu-minutes N``) with the command line's budget recipe, the tiny preset and the
shipped corpus; only the architecture flags differ (:data:`VARIANTS`). A budget in steps
makes each run repeatable: a budget in CPU-minutes depends on how busy the machine is
(a loaded machine makes fewer steps per CPU-second, and the budget recipe's schedule
follows the budget), so its numbers move with the load. The paper's architecture, the
modern one and rotary positions are each trained with two seeds, so that the table shows
how far two runs of the *same* model land apart: a gap smaller than that is not a
measured difference. Each model is scored the way :mod:`quality_per_minute` scores its
runs (greedy decoding of every distinct English sentence of the test split, sacreBLEU and
chrF against all its references). ``--missing`` trains only the variants the output
file lacks (with its budget) and keeps the rows it has, so that a variant added later
joins the table without retraining, or changing, the others.

Chapter 14 reads the result (default ``data/architecture_variants.json``).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:0] = [str(ROOT), str(HERE)]

from quality_per_minute import _splits, library_scores  # noqa: E402

#: name -> (what it is, ``train`` flags, seed). SwiGLU has three FFN matrices, so its
#: inner width is 2/3 of the preset's 512 (rounded to 344) to keep the parameter count.
MODERN = ["--norm-first", "--activation", "swiglu", "--d-ff", "344", "--norm", "rms"]
VARIANTS: dict[str, tuple[str, list[str], int]] = {
    "paper": ("post-LN, ReLU, LayerNorm (the paper)", [], 0),
    "paper, seed 1": ("the same, another seed", [], 1),
    "pre-LN": ("pre-LN, ReLU, LayerNorm", ["--norm-first"], 0),
    "modern": ("pre-LN, SwiGLU (d_ff 344), RMSNorm", MODERN, 0),
    "modern, seed 1": ("the same, another seed", MODERN, 1),
    "rope": ("post-LN, ReLU, LayerNorm, rotary positions", ["--position", "rope"], 0),
    "rope, seed 1": ("the same, another seed", ["--position", "rope"], 1),
}


def train(name: str, budget: list[str], work: Path) -> Path:
    """One run of the command line with ``budget`` (its flags); returns its folder."""
    _, flags, seed = VARIANTS[name]
    out = work / name.replace(", ", "-").replace(" ", "-")
    cmd = [
        sys.executable, "-m", "transformer_lib", "train", *budget,
        "--threads", "1", "--seed", str(seed), "--final-bleu", "none", "--no-progress",
        "--out", str(out), *flags,
    ]  # fmt: skip
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{proc.stderr[-2000:]}")
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    budget = p.add_mutually_exclusive_group()
    budget.add_argument("--max-steps", type=int, help="budget of every run (default: 1600)")
    budget.add_argument("--cpu-minutes", type=float, help="budget of every run, instead")
    p.add_argument("--jobs", type=int, default=2, help="training processes at a time")
    p.add_argument("--out", type=Path, default=ROOT / "data" / "architecture_variants.json")
    p.add_argument("--keep", type=Path, help="keep the runs in this folder")
    p.add_argument(
        "--missing",
        action="store_true",
        help="train only the variants --out lacks, with its budget, and keep its other rows",
    )
    args = p.parse_args(argv)
    kept, names = [], list(VARIANTS)
    if args.missing:
        if args.max_steps is not None or args.cpu_minutes is not None:
            p.error("--missing trains with the budget recorded in --out; give no budget")
        if not args.out.exists():
            p.error(f"--missing: {args.out} does not exist yet; run without --missing first")
        before = json.loads(args.out.read_text())
        args.max_steps = before["budget"]["max_steps"]
        args.cpu_minutes = before["budget"]["cpu_minutes"]
        kept = [r for r in before["rows"] if r["variant"] in VARIANTS]
        names = [n for n in VARIANTS if n not in {r["variant"] for r in kept}]
        if not names:
            print(f"{args.out} already has every variant: nothing to train")
            return 0
    if args.cpu_minutes is None and args.max_steps is None:
        args.max_steps = 1600
    if (args.cpu_minutes or 1) <= 0 or (args.max_steps or 1) < 1 or args.jobs < 1:
        p.error("--cpu-minutes must be > 0, --max-steps and --jobs >= 1")
    if args.max_steps is not None:
        budget = ["--max-steps", str(args.max_steps)]
    else:
        budget = ["--cpu-minutes", f"{args.cpu_minutes:g}"]
    import torch

    from transformer_lib import count_parameters, load_pretrained

    torch.set_num_threads(1)
    started = time.perf_counter()
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    with tempfile.TemporaryDirectory() as tmp:
        work = args.keep or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        with ThreadPoolExecutor(args.jobs) as pool:
            folders = dict(zip(names, pool.map(lambda n: train(n, budget, work), names)))
        test = _splits()["test"]
        new = {}
        for name, folder in folders.items():
            what, flags, seed = VARIANTS[name]
            model = load_pretrained(folder / "model.pt").model
            scores = library_scores(folder / "model.pt", test)
            new[name] = {
                "variant": name,
                "what": what,
                "flags": flags,
                "seed": seed,
                "parameters": count_parameters(model),
                **scores,
            }
    rows = [*kept, *new.values()]
    rows.sort(key=lambda r: list(VARIANTS).index(r["variant"]))
    result = {
        "what": "test BLEU of the tiny preset after the same budget, per architecture",
        "budget": {"max_steps": args.max_steps, "cpu_minutes": args.cpu_minutes},
        "rows": rows,
        "date": datetime.date.today().isoformat(),
        "threads": 1,
        "jobs": args.jobs,
        "torch": torch.__version__,
        "python": platform.python_version(),
        "machine": platform.machine(),
        "load_average_at_start": load,
        "wall_minutes": round((time.perf_counter() - started) / 60, 1),
    }
    if kept:  # keep the first session's record; note each later one beside it
        session = {k: result[k] for k in ("date", "jobs", "torch", "load_average_at_start")}
        session.update(variants=list(new), wall_minutes=result["wall_minutes"])
        result = {**before, "rows": rows}
        result["added_later"] = [*before.get("added_later", []), session]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    steps = {r["steps"] for r in rows}
    print(f"steps per run: {', '.join(f'{n:,}' for n in sorted(steps))}")
    print("| run | architecture | parameters | test BLEU | chrF |")
    print("|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['variant']} | {r['what']} | {r['parameters']:,} | {r['bleu']:.2f} | "
            f"{r['chrf']:.2f} |"
        )
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
