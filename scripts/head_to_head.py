"""Measure the two shipped translators side by side and write ``data/head_to_head.json``.

The encoder–decoder (``data/model.pt``) and the decoder-only model (``data/decoder_only.pt``)
were trained on the same corpus with the same tokenizer and about as much CPU time. This
script, run once when both checkpoints are final, records for each:

* the architecture and parameter count (from the model itself);
* test-split BLEU and chrF, greedy and with beam search (all references per sentence, as
  :func:`transformer_lib.pipeline.evaluation.evaluate_pairs` scores them), and greedy BLEU
  on the first 100 test sources (``bleu_greedy_first100``, which ``tests/test_head_to_head.py``
  recomputes to check that the file belongs to the checkpoints);
* training steps, CPU- and wall-clock minutes, tokens seen, the median of the logged
  training tokens/s and tokens per CPU-second (from the checkpoint's ``state``);
* greedy decoding speed on the test split, measured here with the same number of threads
  for both models (best of ``--repeats`` runs, the models taking turns).

``--mask-comparison RUN_A RUN_B`` adds two run folders of ``train --arch decoder-only``
(one trained with ``--prefix-lm``): their ``summary.json`` and final validation loss.

Chapter 12 reads the JSON; it does not re-run beam search when the book is built.

    python scripts/head_to_head.py [--mask-comparison runs/causal runs/prefix]
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from transformer_lib import count_parameters, load_pretrained  # noqa: E402
from transformer_lib.pipeline.corpus import (  # noqa: E402
    find_corpus,
    group_references,
    read_pairs,
    split_pairs,
)
from transformer_lib.pipeline.evaluation import evaluate_pairs, translate_any  # noqa: E402
from transformer_lib.pipeline.pretrained import (  # noqa: E402
    DEFAULT_CHECKPOINT,
    DEFAULT_DECODER_ONLY,
)
from transformer_lib.pipeline.training import split_log  # noqa: E402

OUT = ROOT / "data" / "head_to_head.json"
FIRST_N = 100  # sources in the quick check that tests/test_head_to_head.py repeats


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def relative(path: Path) -> str:
    """The path relative to the repository when it is inside it (no machine paths)."""
    path = Path(path).resolve()
    try:
        return str(path.relative_to(ROOT))
    except ValueError:
        return path.name


def architecture(model) -> dict:
    c = model.config
    if getattr(model, "arch", "encoder-decoder") == "decoder-only":
        return {
            "arch": "decoder-only",
            "prefix_lm": bool(model.prefix_lm),
            "layers": c.n_decoder_layers,
            "description": f"{c.n_decoder_layers} blocks of causal self-attention + FFN",
        }
    return {
        "arch": "encoder-decoder",
        "layers": c.n_encoder_layers + c.n_decoder_layers,
        "description": f"{c.n_encoder_layers} encoder + {c.n_decoder_layers} decoder layers",
    }


def training_record(state: dict) -> dict:
    train_entries, val_entries = split_log(state.get("log", []))
    speeds = [e["tokens_per_s"] for e in train_entries if e.get("tokens_per_s")]
    cpu_s = float(state.get("cpu_s", 0.0))
    record = {
        "steps": int(state.get("step", 0)),
        "cpu_minutes": round(cpu_s / 60, 2),
        "wall_minutes": round(float(state.get("elapsed_s", 0.0)) / 60, 2),
        "tokens_seen": int(state.get("tokens_seen", 0)),
        "median_tokens_per_s": round(statistics.median(speeds), 1) if speeds else None,
        "tokens_per_cpu_s": round(state.get("tokens_seen", 0) / cpu_s, 1) if cpu_s else None,
        "max_tokens_per_batch": state.get("training_config", {}).get("max_tokens"),
        "threads": state.get("torch_threads"),
    }
    last = val_entries[-1] if val_entries else {}
    record["final_val_loss"] = round(last["val_loss"], 4) if "val_loss" in last else None
    record["final_val_nll"] = round(last["val_nll"], 4) if "val_nll" in last else None
    return record


def scores(result) -> dict:
    """BLEU and chrF, with sacreBLEU's line (n-gram precisions, brevity penalty) and its
    signatures, so that the model card can quote them exactly."""
    return {
        "bleu": round(result.bleu, 2),
        "chrf": round(result.chrf, 2),
        "bleu_detail": result.bleu_detail,
        "signatures": result.signatures,
    }


def decoding_speed(translators: dict, sources: list[str], repeats: int) -> dict:
    """Greedy sentences per second (wall clock and CPU time), best of ``repeats``."""
    best = {name: (float("inf"), float("inf")) for name in translators}
    for _ in range(repeats):
        for name, t in translators.items():  # the models take turns: shared load conditions
            wall, cpu = time.perf_counter(), time.process_time()
            translate_any(t.model, t.tokenizer, sources, beam_size=1)
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            best[name] = (min(best[name][0], wall), min(best[name][1], cpu))
    return {
        name: {
            "sentences_per_s": round(len(sources) / wall, 1),
            "sentences_per_cpu_s": round(len(sources) / cpu, 1),
        }
        for name, (wall, cpu) in best.items()
    }


def mask_run(run_dir: Path) -> dict:
    """One short run of the causal vs prefix-LM comparison."""
    from transformer_lib.pipeline.checkpoints import load_checkpoint

    summary_file = run_dir / "summary.json"
    if not summary_file.is_file():
        raise SystemExit(f"{run_dir}: no summary.json (is the run finished?)")
    ckpt = load_checkpoint(run_dir / "model.pt")
    state = ckpt.get("state", {})
    record = {
        "run": run_dir.name,
        "prefix_lm": bool(ckpt["config"].get("prefix_lm", False)),
        "parameters": int(ckpt["n_parameters"]),
        "summary": json.loads(summary_file.read_text()),
        **training_record(state),
    }
    log_file = run_dir / "training_log.json"
    if log_file.is_file():  # the final validation entry, if the log is newer than the model
        _, val_entries = split_log(json.loads(log_file.read_text()))
        if val_entries:
            record["final_val_loss"] = round(val_entries[-1]["val_loss"], 4)
    return record


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--encoder-decoder", type=Path, default=DEFAULT_CHECKPOINT)
    p.add_argument("--decoder-only", type=Path, default=DEFAULT_DECODER_ONLY)
    p.add_argument("--out", type=Path, default=OUT)
    p.add_argument("--beam", type=int, default=4, help="beam size (default: 4)")
    p.add_argument("--threads", type=int, default=1, help="torch threads (default: 1)")
    p.add_argument("--repeats", type=int, default=2, help="decoding-speed runs (default: 2)")
    p.add_argument("--limit", type=int, help="first N test sources only (a quick trial)")
    p.add_argument("--corpus", help="corpus file (default: the shipped one)")
    p.add_argument("--mask-comparison", nargs=2, type=Path, metavar=("RUN_A", "RUN_B"))
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)

    pairs, _ = read_pairs(find_corpus(args.corpus))
    splits = split_pairs(pairs)
    test = splits["test"]
    groups = group_references(test)
    if args.limit:
        groups = groups[: args.limit]
        test = [(src, ref) for src, refs in groups for ref in refs]
    sources = [src for src, _ in groups]
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None

    translators = {
        "encoder-decoder": load_pretrained(args.encoder_decoder),
        "decoder-only": load_pretrained(args.decoder_only),
    }
    models = {}
    for name, t in translators.items():
        started = time.perf_counter()
        greedy = evaluate_pairs(t.model, t.tokenizer, test, beam_size=1)
        beam = evaluate_pairs(t.model, t.tokenizer, test, beam_size=args.beam)
        first = evaluate_pairs(t.model, t.tokenizer, test, beam_size=1, limit=FIRST_N)
        valid = evaluate_pairs(t.model, t.tokenizer, splits["valid"], beam_size=1)
        ckpt_file = Path(t.path)
        models[name] = {
            "checkpoint": relative(ckpt_file),
            "checkpoint_sha256": sha256(ckpt_file),
            **architecture(t.model),
            "parameters": count_parameters(t.model),
            "greedy": scores(greedy),
            f"beam{args.beam}": scores(beam),
            "bleu_greedy_first100": round(first.bleu, 2),
            "valid_greedy": scores(valid),
            "training": training_record(t.training_state),
        }
        print(
            f"{name}: {models[name]['parameters']:,} parameters, BLEU greedy {greedy.bleu:.2f}, "
            f"beam {args.beam} {beam.bleu:.2f} ({time.perf_counter() - started:.0f} s)",
            flush=True,
        )
    for name, speed in decoding_speed(translators, sources, args.repeats).items():
        models[name]["decoding"] = speed

    result = {
        "what": "the two shipped translators on the test split of the shipped corpus",
        "date": datetime.date.today().isoformat(),
        "test_split": {
            "sources": len(groups),
            "references": len(test),
            "first_n_check": FIRST_N,
        },
        "split_pairs": {name: len(part) for name, part in splits.items()},
        "beam_size": args.beam,
        "length_penalty_alpha": 0.6,
        "measured_with": {
            "torch": str(torch.__version__),
            "threads": args.threads,
            "python": platform.python_version(),
            "load_average_at_start": None if load is None else round(load, 2),
        },
        "models": models,
    }
    if args.mask_comparison:
        runs = [mask_run(d) for d in args.mask_comparison]
        result["mask_comparison"] = {("prefix-lm" if r["prefix_lm"] else "causal"): r for r in runs}
        if len(result["mask_comparison"]) != 2:
            raise SystemExit("--mask-comparison needs one causal and one --prefix-lm run")
    args.out.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n")
    print(f"wrote {relative(args.out)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
