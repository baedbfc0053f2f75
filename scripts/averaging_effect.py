"""Measure what checkpoint averaging (§6.1) does to test BLEU, and record it.

    python scripts/averaging_effect.py runs/shipped --last 5 --out data/averaging.json

Scores the run's last checkpoint and the average of its last K step checkpoints on the
test split (greedy and beam 4, all references, sacreBLEU) in one run on this machine,
and writes both to a JSON file that the model card and chapters 9–10 read.
"""

from __future__ import annotations

import argparse
import json
import platform
import tempfile
import time
from pathlib import Path

import torch

from transformer_lib.pipeline.checkpoints import average_checkpoints
from transformer_lib.pipeline.corpus import find_corpus, read_pairs, split_pairs
from transformer_lib.pipeline.pretrained import load_pretrained
from transformer_lib.pipeline.training import step_checkpoints


def score(path: Path, pairs) -> dict:
    translator = load_pretrained(path)
    out = {"step": translator.training_state.get("step")}
    for name, beam in (("greedy", 1), ("beam4", 4)):
        start = time.perf_counter()
        result = translator.evaluate(pairs, beam=beam)
        out[f"bleu_{name}"] = round(result.bleu, 2)
        out[f"chrf_{name}"] = round(result.chrf, 2)
        out[f"seconds_{name}"] = round(time.perf_counter() - start, 1)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", type=Path, help="run folder with step-NNNNNN.pt checkpoints")
    parser.add_argument("--last", type=int, default=5, help="checkpoints to average")
    parser.add_argument("--out", type=Path, required=True, help="JSON file to write")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    steps = step_checkpoints(args.run)[-args.last :]
    if len(steps) < args.last:
        raise SystemExit(f"{args.run} has only {len(steps)} step checkpoints")
    pairs = split_pairs(read_pairs(find_corpus())[0])["test"]
    with tempfile.TemporaryDirectory() as tmp:
        averaged = Path(tmp) / "averaged.pt"
        average_checkpoints(steps, averaged)
        result = {
            "k": args.last,
            "steps": [int(p.stem.split("-")[1]) for p in steps],
            "last_checkpoint": score(steps[-1], pairs),
            "averaged": score(averaged, pairs),
            "test_sources": len({en for en, _ in pairs}),
            "test_references": len(pairs),
            "torch": torch.__version__,
            "threads": args.threads,
            "machine": platform.machine(),
        }
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
