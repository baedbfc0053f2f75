"""Test BLEU per CPU-minute: the library's defaults against a plain ``nn.Transformer`` loop.

    python benchmarks/quality_per_minute.py                      # 5, 10 and 20 CPU-minutes
    python benchmarks/quality_per_minute.py --budgets 0.5 --out /tmp/q.json   # a smoke run
    python benchmarks/quality_per_minute.py --sweep --budgets 5  # the recipe candidates

Both sides train the same size of model (d_model 128, 4 heads, 2+2 layers, FFN 512, tied
4,000-token embeddings) on the train split of the shipped corpus, on one thread each,
side by side (``--jobs`` processes at a time), and are scored the same way: greedy
decoding of every distinct English sentence of the **test** split, sacreBLEU and chrF
against all its references.

* **library**: ``python -m transformer_lib train --cpu-minutes N --threads 1`` with no
  other flag, i.e. the recipe the command line chooses for that budget.
* **plain**: this file's own training loop around ``torch.nn.Transformer``
  (:mod:`torch_baseline`): random batches of 64 sentence pairs, label smoothing 0.1,
  Adam (0.9, 0.98, 1e-9), the Noam schedule with factor 0.5 and 400 warm-up steps, no
  clipping, no averaging. Its recipe does not depend on the budget, so one run of the
  largest budget is scored at each smaller budget as it passes it.

``--sweep`` instead trains the library with each candidate recipe of :data:`CANDIDATES`
at each budget and scores them on the **validation** split (the test split is kept for
the comparison above), which is how the command line's budget recipe was chosen.

The results are written as JSON (default ``data/quality_per_minute.json``, read by
chapter 9; ``--sweep``: ``benchmarks/results/recipe_sweep.json``) and printed as a table.
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

PLAIN_BATCH = 64  # sentence pairs per batch
PLAIN_FACTOR, PLAIN_WARMUP = 0.5, 400  # Noam schedule of the plain loop
SEED = 0

#: Candidate recipes for ``--sweep``: TrainingConfig overrides of the library's loop.
CANDIDATES: dict[str, dict] = {
    "noam-2048": {"schedule": "noam", "max_tokens": 2048, "warmup": 400, "lr_factor": 1.0},
    "noam-1024": {"schedule": "noam", "max_tokens": 1024, "warmup": 400, "lr_factor": 1.0},
    "noam-1024-f0.5": {"schedule": "noam", "max_tokens": 1024, "warmup": 400, "lr_factor": 0.5},
    "linear-1024-f0.5": {"schedule": "linear", "max_tokens": 1024, "warmup": 400, "lr_factor": 0.5},
    "linear-1024-f1": {"schedule": "linear", "max_tokens": 1024, "warmup": 400, "lr_factor": 1.0},
    "linear-1024-w200": {"schedule": "linear", "max_tokens": 1024, "warmup": 200, "lr_factor": 0.5},
    "linear-768-f0.7": {"schedule": "linear", "max_tokens": 768, "warmup": 300, "lr_factor": 0.7},
    # Does averaging the last 5 checkpoints (50 steps apart) still help a linear run?
    "linear-1024-f1-avg5": {
        "schedule": "linear",
        "max_tokens": 1024,
        "warmup": 400,
        "lr_factor": 1.0,
        "checkpoint_every": 50,
        "keep_checkpoints": 5,
        "average": 5,
    },  # fmt: skip
    # The decoder-only model (its sequences hold both sides: twice the tokens per batch).
    "gpt-noam-4096": {
        "arch": "decoder-only",
        "schedule": "noam",
        "max_tokens": 4096,
        "warmup": 400,
        "lr_factor": 1.0,
    },  # fmt: skip
    "gpt-linear-2048": {
        "arch": "decoder-only",
        "schedule": "linear",
        "max_tokens": 2048,
        "warmup": 400,
        "lr_factor": 1.0,
    },  # fmt: skip
}


# --------------------------------------------------------------------------------------
# Data and scoring (the same for both sides)
# --------------------------------------------------------------------------------------


def _splits():
    from transformer_lib.pipeline.corpus import find_corpus, read_pairs, split_pairs

    return split_pairs(read_pairs(find_corpus())[0])


def _tokenizer():
    from transformer_lib.pipeline.tokenizer import DEFAULT_TOKENIZER_PATH, Tokenizer

    return Tokenizer.load(DEFAULT_TOKENIZER_PATH)


def score(translate, pairs) -> dict:
    """Greedy translations of every distinct source of ``pairs``, scored on all references."""
    from transformer_lib.pipeline.corpus import group_references
    from transformer_lib.pipeline.evaluation import corpus_scores

    groups = group_references(pairs)
    t0 = time.perf_counter()
    hyps = translate([en for en, _ in groups])
    bleu, chrf, _ = corpus_scores(hyps, [refs for _, refs in groups])
    return {
        "bleu": round(bleu.score, 2),
        "chrf": round(chrf.score, 2),
        "sources": len(groups),
        "decode_s": round(time.perf_counter() - t0, 1),
    }


# --------------------------------------------------------------------------------------
# The plain loop
# --------------------------------------------------------------------------------------


def plain_worker(budgets: list[float], out_dir: Path) -> None:
    """Train the plain model for the largest budget; save its weights at every budget."""
    import torch
    import torch.nn.functional as F
    from torch_baseline import TorchBaseline

    from transformer_lib import TransformerConfig, noam_lr
    from transformer_lib.pipeline.batching import pad_sequences

    torch.set_num_threads(1)
    tok = _tokenizer()
    cfg = TransformerConfig.tiny(tok.vocab_size)
    pairs = _splits()["train"]
    data = []
    for en, de in pairs:
        src, tgt = tok.encode(en), [tok.bos_id, *tok.encode(de), tok.eos_id]
        if len(src) <= cfg.max_len and len(tgt) <= cfg.max_len:
            data.append((torch.tensor(src), torch.tensor(tgt)))
    torch.manual_seed(SEED)
    model = TorchBaseline(cfg).train()
    opt = torch.optim.Adam(model.parameters(), lr=1.0, betas=(0.9, 0.98), eps=1e-9)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda i: noam_lr(i + 1, cfg.d_model, PLAIN_WARMUP, PLAIN_FACTOR)
    )
    pending = sorted(budgets)
    cpu0, wall0, step, epoch = time.process_time(), time.perf_counter(), 0, 0
    while pending:
        order = torch.randperm(len(data), generator=torch.Generator().manual_seed(SEED + epoch))
        for start in range(0, len(order) - PLAIN_BATCH + 1, PLAIN_BATCH):
            used = time.process_time() - cpu0
            while pending and used >= pending[0] * 60:
                budget = pending.pop(0)
                torch.save(model.state_dict(), out_dir / f"plain-{budget:g}.pt")
                info = {"steps": step, "cpu_minutes": round(used / 60, 2)}
                info["wall_minutes"] = round((time.perf_counter() - wall0) / 60, 2)
                (out_dir / f"plain-{budget:g}.json").write_text(json.dumps(info))
            if not pending:
                break
            batch = [data[i] for i in order[start : start + PLAIN_BATCH].tolist()]
            src = pad_sequences([s for s, _ in batch], cfg.pad_id)  # (B, S)
            tgt = pad_sequences([t for _, t in batch], cfg.pad_id)  # (B, T)
            logits = model(src, tgt[:, :-1])  # (B, T-1, V)
            loss = F.cross_entropy(
                logits.reshape(-1, logits.size(-1)), tgt[:, 1:].reshape(-1),
                ignore_index=cfg.pad_id, label_smoothing=0.1,
            )  # fmt: skip
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sched.step()
            step += 1
        epoch += 1


def plain_scores(budget: float, out_dir: Path, pairs) -> dict:
    import torch
    from torch_baseline import TorchBaseline

    from transformer_lib import TransformerConfig
    from transformer_lib.pipeline.batching import pad_sequences

    tok = _tokenizer()
    model = TorchBaseline(TransformerConfig.tiny(tok.vocab_size))
    model.load_state_dict(torch.load(out_dir / f"plain-{budget:g}.pt", weights_only=True))
    model.eval()

    def translate(sources: list[str]) -> list[str]:
        ids = [tok.encode(s) for s in sources]
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
        out = [""] * len(ids)
        for k in range(0, len(order), 64):
            chunk = order[k : k + 64]
            src = pad_sequences([torch.tensor(ids[i]) for i in chunk], tok.pad_id)
            for row, i in zip(model.greedy(src).tolist(), chunk):
                out[i] = tok.decode(row)
        return out

    info = json.loads((out_dir / f"plain-{budget:g}.json").read_text())
    return {**info, **score(translate, pairs)}


# --------------------------------------------------------------------------------------
# The library
# --------------------------------------------------------------------------------------


def library_run(budget: float, out_dir: Path) -> dict:
    """``train --cpu-minutes budget --threads 1`` with the command line's defaults."""
    run = out_dir / f"library-{budget:g}"
    cmd = [
        sys.executable, "-m", "transformer_lib", "train", "--cpu-minutes", f"{budget:g}",
        "--threads", "1", "--final-bleu", "none", "--no-progress", "--out", str(run),
    ]  # fmt: skip
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{proc.stderr[-2000:]}")
    recipe = [line for line in proc.stdout.splitlines() if line.startswith("recipe")]
    return {"run": str(run), "recipe": recipe}


def sweep_worker(name: str, budget: float, out_dir: Path) -> None:
    """Train the library's loop with the candidate recipe ``name`` (Python API)."""
    import torch

    from transformer_lib import TransformerConfig
    from transformer_lib.pipeline.checkpoints import average_checkpoints
    from transformer_lib.pipeline.tasks import build_model, make_datasets
    from transformer_lib.pipeline.training import Trainer, TrainingConfig, step_checkpoints

    torch.set_num_threads(1)
    tok = _tokenizer()
    settings = dict(CANDIDATES[name])
    arch, average = settings.pop("arch", "encoder-decoder"), settings.pop("average", 0)
    config = TransformerConfig.tiny(tok.vocab_size)
    if arch == "decoder-only":  # as the command line builds it: one block more than 2 + 2
        config = config.replace(
            n_decoder_layers=config.n_encoder_layers + config.n_decoder_layers + 1
        )
    run = {"arch": arch, "prefix_lm": False}
    train_set, valid_set = make_datasets(run, _splits(), tok, config)
    torch.manual_seed(SEED)
    model = build_model(run, config)
    tcfg = TrainingConfig(cpu_minutes=budget, progress=False, seed=SEED, **settings)
    folder = out_dir / f"sweep-{name}-{budget:g}"
    trainer = Trainer(model, train_set, valid_set, tcfg, tokenizer=tok, out_dir=folder, run=run)
    trainer.fit()
    if average:
        average_checkpoints(step_checkpoints(folder)[-average:], folder / "averaged.pt")


def library_scores(model_path: Path, pairs) -> dict:
    import torch

    from transformer_lib import load_pretrained
    from transformer_lib.pipeline.evaluation import translate_any

    translator = load_pretrained(model_path)
    state = translator.training_state
    info = {
        "steps": state.get("step"),
        "cpu_minutes": round(state.get("cpu_s", 0.0) / 60, 2),
        "wall_minutes": round(state.get("elapsed_s", 0.0) / 60, 2),
    }
    with torch.no_grad():
        result = score(lambda s: translate_any(translator.model, translator.tokenizer, s), pairs)
    return {**info, **result}


# --------------------------------------------------------------------------------------
# Running both side by side
# --------------------------------------------------------------------------------------


def _spawn(args: list[str]) -> None:
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = subprocess.run([sys.executable, __file__, *args], cwd=ROOT, env=env, text=True,
                          capture_output=True)  # fmt: skip
    if proc.returncode != 0:
        raise RuntimeError(f"worker {args} failed:\n{proc.stderr[-3000:]}")


def _table(rows: list[dict], sides: list[str]) -> str:
    lines = ["| CPU-min | " + " | ".join(f"{s} steps | {s} BLEU | {s} chrF" for s in sides) + " |"]
    lines.append("|---" * (1 + 3 * len(sides)) + "|")
    for row in rows:
        cells = [f"{row['budget']:g}"]
        for s in sides:
            r = row[s]
            cells += [f"{r['steps']:,}", f"{r['bleu']:.2f}", f"{r['chrf']:.2f}"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--budgets", type=float, nargs="+", default=[5.0, 10.0, 20.0])
    p.add_argument("--jobs", type=int, default=2, help="training processes at a time")
    p.add_argument("--sweep", action="store_true", help="compare CANDIDATES on valid")
    p.add_argument("--only", nargs="+", help="with --sweep: these candidates only")
    p.add_argument("--out", type=Path, help="JSON file to write")
    p.add_argument("--keep", type=Path, help="keep the runs in this folder")
    p.add_argument("--worker", nargs="+", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:  # one training job, in its own process
        kind, *rest = args.worker
        if kind == "plain":
            plain_worker([float(b) for b in rest[1:]], Path(rest[0]))
        else:
            sweep_worker(rest[1], float(rest[2]), Path(rest[0]))
        return 0
    if any(b <= 0 for b in args.budgets) or args.jobs < 1:
        p.error("budgets must be > 0 and --jobs >= 1")
    import torch

    torch.set_num_threads(1)
    budgets = sorted(set(args.budgets))
    started = time.perf_counter()
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    with tempfile.TemporaryDirectory() as tmp:
        work = args.keep or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        splits = _splits()
        if args.sweep:
            names = args.only or list(CANDIDATES)
            jobs = [(n, b) for b in sorted(budgets, reverse=True) for n in names]
            with ThreadPoolExecutor(args.jobs) as pool:
                list(pool.map(lambda j: _spawn(["--worker", "sweep", str(work), j[0],
                                                f"{j[1]:g}"]), jobs))  # fmt: skip
            rows = []
            for b in budgets:
                for n in names:
                    folder = work / f"sweep-{n}-{b:g}"
                    base = {"candidate": n, "budget": b, **CANDIDATES[n]}
                    scored = library_scores(folder / "model.pt", splits["valid"])
                    rows.append({**base, **scored})
                    if CANDIDATES[n].get("average"):
                        scored = library_scores(folder / "averaged.pt", splits["valid"])
                        rows.append({**base, "candidate": n + " (averaged)", **scored})
            result = {"what": "library recipe candidates, validation split", "rows": rows}
            default_out = HERE / "results" / "recipe_sweep.json"
            table = "\n".join(
                f"| {r['budget']:g} | {r['candidate']} | {r['steps']:,} | {r['bleu']:.2f} | "
                f"{r['chrf']:.2f} |"
                for r in rows
            )
            head = "| CPU-min | recipe | steps | valid BLEU | chrF |\n|---|---|---|---|---|\n"
            table = head + table
        else:
            jobs = [("library", b) for b in budgets] + [("plain", max(budgets))]
            jobs.sort(key=lambda j: -j[1])
            library_info: dict[float, dict] = {}

            def run(job):
                kind, b = job
                if kind == "plain":
                    _spawn(["--worker", "plain", str(work), *[f"{x:g}" for x in budgets]])
                else:
                    library_info[b] = library_run(b, work)

            with ThreadPoolExecutor(args.jobs) as pool:
                list(pool.map(run, jobs))
            rows = []
            for b in budgets:
                lib = library_scores(Path(library_info[b]["run"]) / "model.pt", splits["test"])
                lib["recipe"] = library_info[b]["recipe"]
                rows.append({"budget": b, "library": lib,
                             "plain": plain_scores(b, work, splits["test"])})  # fmt: skip
            result = {"what": "test BLEU per CPU-minute, library defaults vs plain loop",
                      "rows": rows}  # fmt: skip
            default_out = ROOT / "data" / "quality_per_minute.json"
            table = _table(rows, ["library", "plain"])
    result.update(
        date=datetime.date.today().isoformat(),
        seed=SEED,
        threads=1,
        jobs=args.jobs,
        torch=torch.__version__,
        python=platform.python_version(),
        machine=platform.machine(),
        load_average_at_start=load,
        wall_minutes=round((time.perf_counter() - started) / 60, 1),
    )
    out = args.out or default_out
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(table)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
