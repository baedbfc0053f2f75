"""Train the tiny translator with each planted bug; store the symptoms in data/debugging_runs.json.

Chapter 13 shows what each tutorial bug of :mod:`transformer_lib.pipeline.check_kit.planting`
looks like from outside, next to the healthy model. This script measures it: for the healthy
library model and for every planted bug that acts in training, it trains the book's tiny
model (chapter 9) for the same short budget with the bug planted, and records

* the training-loss curve (one logged mean every ``log_every`` steps) and the validation
  loss (label-smoothed, as in training, and the plain cross-entropy) on the whole
  validation split;
* greedy BLEU and chrF on a fixed subset of the validation split, scored by
  ``evaluate_pairs`` (every reference of each English sentence); beam-4 BLEU too for the
  healthy model and for the bug that only beam search meets;
* two example translations, and the last layer's attention maps (averaged over the heads)
  on one validation sentence, teacher-forced with its reference, with two ``<pad>`` after
  the source so that weight on padding shows;
* which checks of the kit fail on the trained model (with the bug still planted).

Bugs that act only when decoding (the key/value cache, beam reordering, dropout left on in
evaluation) change nothing in training: their rows decode the healthy run's model with the
bug planted. The decoder-only bugs get a healthy decoder-only run of their own (GPT-style
learned positions, so that the learned table's cache offset is exercised).

Every run uses the same explicit settings (:data:`SETTINGS`): the paper's Noam schedule
(Eq. 3, factor 1, warm-up ``warmup`` steps) and Adam with β1 = 0.9, β2 = 0.98, ε = 1e-9
(§5.3), label smoothing 0.1 (§5.4), dropout 0.1, gradient clipping at norm 1 (the library's
default, not in the paper), batches of at most 2,048 padded tokens, seed 0, one CPU thread
per process, a fixed number of steps (so a run is reproducible; the seconds vary with the
machine). ``tests/test_debugging_runs.py`` re-trains the first steps of stored runs and
compares their losses, so the file is known to come from this code.

    python scripts/debugging_runs.py --jobs 2               # every run, about 30 minutes
    python scripts/debugging_runs.py --steps 20 --subset 20 --out /tmp/quick.json   # a try
    python scripts/debugging_runs.py --only healthy,no_sqrt_dk --out /tmp/two.json
    python scripts/debugging_runs.py --resume      # after an interruption: only what is missing

The file is rewritten after every finished job, so an interrupted run loses only the jobs
that were training.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import multiprocessing
import os
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from transformer_lib.components.config import TransformerConfig  # noqa: E402
from transformer_lib.pipeline.check_kit import PLANTED_BUGS, plant, run_checks  # noqa: E402
from transformer_lib.pipeline.corpus import (  # noqa: E402
    find_corpus,
    group_references,
    read_pairs,
    split_pairs,
)
from transformer_lib.pipeline.decoding import encode_sources  # noqa: E402
from transformer_lib.pipeline.evaluation import evaluate_pairs, translate_any  # noqa: E402
from transformer_lib.pipeline.lm_batching import join_pair  # noqa: E402
from transformer_lib.pipeline.tasks import build_model, make_datasets  # noqa: E402
from transformer_lib.pipeline.tokenizer import DEFAULT_TOKENIZER_PATH, SEP_ID, Tokenizer  # noqa: E402
from transformer_lib.pipeline.training import Trainer, TrainingConfig  # noqa: E402

OUT = ROOT / "data" / "debugging_runs.json"

#: The training settings of every run (documented in the module docstring and chapter 13).
SETTINGS: dict[str, Any] = {
    "preset": "tiny",  # d_model 128, 4 heads, 2 + 2 layers, d_ff 512, dropout 0.1
    "max_steps": 400,  # about 2 CPU-minutes on one thread
    "max_tokens": 2048,  # padded tokens per batch, as the shipped model
    "schedule": "noam",  # §5.3, Eq. 3
    "warmup": 200,  # so that the peak and the decay both fall inside the run
    "lr_factor": 1.0,
    "label_smoothing": 0.1,
    "clip_norm": 1.0,
    "log_every": 10,
    "eval_every": 200,
    "seed": 0,
    "threads": 1,
}
#: Decoder-only runs: the encoder-decoder's 2 + 2 layers plus one, as in chapter 12.
DECODER_ONLY = {"n_decoder_layers": 5, "positional": "learned"}
#: Distinct English sentences of the validation split scored for BLEU (spread over lengths).
SUBSET = 300
BEAM = 4
#: The sentence whose attention maps are stored, and the one more example translation.
MAP_SENTENCE = ("Her bike is blue.", "Ihr Fahrrad ist blau.")
EXTRA_EXAMPLE = "I was in the hospital."
MAP_PADS = 2  # <pad> columns after the source in the stored maps

HEALTHY, HEALTHY_DO = "healthy", "healthy-decoder-only"
#: Bugs that act only when decoding, and the healthy run whose model they decode.
DECODE_ONLY = {
    "kv_cache_wrong_offset": HEALTHY,
    "cache_not_reordered": HEALTHY,
    "dropout_in_eval": HEALTHY,
    "learned_positions_ignore_offset": HEALTHY_DO,
}
#: Runs scored with beam search as well as greedily.
BEAM_RUNS = {HEALTHY, "cache_not_reordered"}


def run_names() -> list[str]:
    """Every row of the file: the two healthy runs, then each planted bug in book order."""
    return [HEALTHY, HEALTHY_DO, *PLANTED_BUGS]


def arch_of(name: str) -> str:
    if name == HEALTHY_DO:
        return "decoder-only"
    if name == HEALTHY:
        return "encoder-decoder"
    bug = PLANTED_BUGS[name]
    # The residual bug is shown on a decoder-only model by the kit, but its override (the
    # encoder layer's forward) acts in the translator's encoder too: train it there.
    if name == "ffn_without_residual":
        return "encoder-decoder"
    return "decoder-only" if bug.arch == "decoder-only" else "encoder-decoder"


def jobs_for(names: list[str]) -> list[str]:
    """Training jobs: each trained run; a decode-only bug rides on its healthy run's job."""
    return [n for n in names if n not in DECODE_ONLY]


# ---- data, loaded once per worker process -------------------------------------------------
_DATA: dict[str, Any] = {}


def data() -> dict[str, Any]:
    if not _DATA:
        tokenizer = Tokenizer.load(DEFAULT_TOKENIZER_PATH)
        corpus = find_corpus()
        pairs, _ = read_pairs(corpus)
        splits = split_pairs(pairs)
        valid = {en for en, _ in splits["valid"]}
        if not {MAP_SENTENCE[0], EXTRA_EXAMPLE} <= valid:
            raise ValueError("the example sentences must come from the validation split")
        _DATA.update(tokenizer=tokenizer, splits=splits, corpus=corpus)
        _DATA["datasets"] = {}
    return _DATA


def datasets(arch: str, config: TransformerConfig):
    d = data()
    if arch not in d["datasets"]:
        d["datasets"][arch] = make_datasets({"arch": arch}, d["splits"], d["tokenizer"], config)
    return d["datasets"][arch]


def subset_pairs(valid: list[tuple[str, str]], n: int) -> list[tuple[str, str]]:
    """The pairs of ``n`` distinct English sentences spread evenly over the validation split."""
    groups = group_references(valid)
    every = max(1, len(groups) // n)
    return [(en, de) for en, refs in groups[::every][:n] for de in refs]


def model_config(arch: str, vocab_size: int) -> TransformerConfig:
    """The run's model config, built from the config class as it is (a planted default shows)."""
    config = getattr(TransformerConfig, SETTINGS["preset"])(vocab_size)
    return config.replace(**DECODER_ONLY) if arch == "decoder-only" else config


def training_config(steps: int) -> TrainingConfig:
    s = SETTINGS
    return TrainingConfig(
        max_tokens=s["max_tokens"], lr_factor=s["lr_factor"], warmup=s["warmup"],
        schedule=s["schedule"], label_smoothing=s["label_smoothing"], clip_norm=s["clip_norm"],
        max_steps=steps, eval_every=min(s["eval_every"], steps), log_every=s["log_every"],
        checkpoint_minutes=0, seed=s["seed"], device="cpu", progress=False,
    )  # fmt: skip


def train(name: str, steps: int):
    """Build and train the model of run ``name`` with its bug planted (inside the ``plant``).

    Returns the trainer; its model is in eval mode. The caller must plant the bug again to
    use the model with it (a decode-only bug is never planted here).
    """
    torch.set_num_threads(SETTINGS["threads"])
    arch = arch_of(name)
    bug_ids = [] if name in (HEALTHY, HEALTHY_DO) or name in DECODE_ONLY else [name]
    tokenizer = data()["tokenizer"]
    with plant(*bug_ids):
        config = model_config(arch, tokenizer.vocab_size)  # inside: a planted default shows
        train_set, valid_set = datasets(arch, config)
        torch.manual_seed(SETTINGS["seed"])  # the initial weights
        model = build_model({"arch": arch}, config)
        if bug_ids and PLANTED_BUGS[name].readable_attention:
            model.set_fast_attention(False)  # the only attention path a from-scratch model has
        trainer = Trainer(model, train_set, valid_set, training_config(steps))
        trainer.fit()
    model.eval()
    return trainer


def _r(x: float, digits: int = 4) -> float:
    return float(f"{x:.{digits}g}")


def _matrix(weights: torch.Tensor) -> list[list[float]]:
    return [[round(float(p), 3) for p in row] for row in weights.tolist()]


@torch.no_grad()
def attention_maps(model, tokenizer) -> dict[str, Any]:
    """The last layer's maps, averaged over heads, for :data:`MAP_SENTENCE` (teacher-forced)."""
    english, german = MAP_SENTENCE
    pad = model.config.pad_id
    src_ids = encode_sources(model, tokenizer, [english])[0]
    tgt_ids = tokenizer.encode(german)
    tok = tokenizer.id_to_token
    if arch_name(model) == "decoder-only":
        ids, prefix = join_pair(src_ids, tgt_ids, SEP_ID, tokenizer.eos_id)
        x = torch.tensor([ids[:-1]])  # (1, L): what the model reads
        _, attn = model(x, return_attention=True)
        tokens = [tok(i) for i in ids[:-1]]
        return {"decoder": {"queries": tokens, "keys": tokens,
                            "weights": _matrix(attn["decoder"][-1][0].mean(0))},
                "prefix_len": prefix}  # fmt: skip
    src = torch.tensor([src_ids + [pad] * MAP_PADS])  # (1, S): two <pad> after the source
    tgt = torch.tensor([[tokenizer.bos_id, *tgt_ids]])  # (1, T): <bos> German, fed in
    _, attn = model(src, tgt, return_attention=True)
    s_tok = [tok(i) for i in src[0].tolist()]
    t_tok = [tok(i) for i in tgt[0].tolist()]
    out = {}
    for kind, queries in (("encoder", s_tok), ("decoder", t_tok), ("cross", t_tok)):
        w = attn[kind][-1][0].mean(0)  # (Tq, Tk), averaged over the heads
        keys = s_tok if kind in ("encoder", "cross") and w.size(-1) == len(s_tok) else t_tok
        out[kind] = {"queries": queries, "keys": keys, "weights": _matrix(w)}
    return out


def arch_name(model) -> str:
    return "encoder-decoder" if hasattr(model, "encoder") else "decoder-only"


def measure(name: str, model, subset: list[tuple[str, str]], beam: bool) -> dict[str, Any]:
    """Scores, examples, attention maps and the kit's verdict of a trained model (the bug of
    ``name`` planted, if any)."""
    tokenizer = data()["tokenizer"]
    bug_ids = [name] if name in PLANTED_BUGS else []
    out: dict[str, Any] = {}
    with plant(*bug_ids):
        torch.manual_seed(SETTINGS["seed"])  # dropout left on in eval draws from here
        model.eval()
        greedy = evaluate_pairs(model, tokenizer, subset)
        out.update(bleu=round(greedy.bleu, 2), chrf=round(greedy.chrf, 2))
        examples = [MAP_SENTENCE[0], EXTRA_EXAMPLE]
        got = translate_any(model, tokenizer, examples)
        out["examples"] = [{"source": e, "output": h} for e, h in zip(examples, got)]
        if beam:
            b = evaluate_pairs(model, tokenizer, subset, beam_size=BEAM)
            out.update(beam_bleu=round(b.bleu, 2), beam_chrf=round(b.chrf, 2))
            got = translate_any(model, tokenizer, examples, beam_size=BEAM)
            for ex, h in zip(out["examples"], got):
                ex["beam_output"] = h
        out["attention"] = attention_maps(model, tokenizer)
        report = run_checks(model)
        out["kit"] = {
            "failed": [r.name for r in report.failures],
            "causes": {r.name: list(r.cause_keys[:2]) for r in report.failures},
            "passed": sum(r.passed for r in report),
            "skipped": [r.name for r in report.skipped],
        }
    return out


def one_job(job: tuple[str, int, int, list[str]]) -> list[tuple[str, dict[str, Any]]]:
    """Train one run and measure it (and the decode-only bugs that decode its model)."""
    name, steps, n_subset, riders = job
    start, cpu0 = time.perf_counter(), time.process_time()
    trainer = train(name, steps)
    train_cpu = trainer.cpu_s
    subset = subset_pairs(data()["splits"]["valid"], n_subset)
    log = trainer.log
    val = [e for e in log if "val_loss" in e]
    base = {
        "arch": arch_of(name),
        "loss": [[e["step"], e["loss"]] for e in log if "loss" in e],
        "val": [[e["step"], _r(e["val_loss"]), _r(e["val_nll"])] for e in val],
        "val_loss": _r(val[-1]["val_loss"]),
        "val_nll": _r(val[-1]["val_nll"]),
        "steps": trainer.step,
        "train_cpu_s": round(train_cpu, 1),
    }
    rows = []
    for row in [name, *riders]:
        t0 = time.process_time()
        record = {
            "bug": row if row in PLANTED_BUGS else None,
            "trained": row not in DECODE_ONLY,
            "model_of": name,
            **base,
            **measure(row, trainer.model, subset, beam=row in BEAM_RUNS),
        }
        record["measure_cpu_s"] = round(time.process_time() - t0, 1)
        rows.append((row, record))
    rows[0][1]["job_cpu_s"] = round(time.process_time() - cpu0, 1)
    rows[0][1]["job_wall_s"] = round(time.perf_counter() - start, 1)
    return rows


def _own_session() -> None:
    """Run a worker in a session of its own: where the kernel groups processes by session
    (Linux autogroup), each worker then gets the CPU share of any other single job."""
    with contextlib.suppress(OSError):
        os.setsid()


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def settings_record(steps: int, subset: int) -> dict[str, Any]:
    """What the file records about how its runs were made (checked again by ``--resume``)."""
    return {
        **SETTINGS,
        "max_steps": steps,
        "decoder_only": DECODER_ONLY,
        "adam": {"betas": [0.9, 0.98], "eps": 1e-9},
        "subset": subset,
        "subset_rule": "every k-th distinct English sentence of the validation split",
        "beam": BEAM,
        "map_sentence": list(MAP_SENTENCE),
        "map_pads": MAP_PADS,
        "tokenizer_sha256": sha256(Path(DEFAULT_TOKENIZER_PATH)),
        "corpus_sha256": sha256(Path(find_corpus())),
        "torch": torch.__version__,
    }


def write(path: Path, settings: dict[str, Any], runs: dict[str, Any], names: list[str]) -> int:
    """Write the file (atomically: a killed run leaves the previous version); its size."""
    ordered = {name: runs[name] for name in names if name in runs}
    text = json.dumps({"settings": settings, "runs": ordered}, ensure_ascii=False,
                      separators=(",", ":"))  # fmt: skip
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text + "\n", encoding="utf-8")
    tmp.replace(path)
    return len(text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT, help="where to write the JSON")
    parser.add_argument("--jobs", type=int, default=2, help="processes to train in parallel")
    parser.add_argument("--steps", type=int, default=SETTINGS["max_steps"], help="steps per run")
    parser.add_argument("--subset", type=int, default=SUBSET, help="validation sentences scored")
    parser.add_argument("--only", help="comma-separated run names (default: every run)")
    parser.add_argument(
        "--resume", action="store_true", help="keep the runs already in --out and do the rest"
    )
    args = parser.parse_args(argv)
    names = run_names()
    if args.only:
        wanted = [n.strip() for n in args.only.split(",") if n.strip()]
        unknown = [n for n in wanted if n not in names]
        if unknown:
            parser.error(f"--only: unknown runs {unknown}; known: {', '.join(names)}")
        names = [n for n in names if n in wanted]
    missing = [b for b, base in DECODE_ONLY.items() if b in names and base not in names]
    if missing:
        parser.error(f"--only: {missing} decode the model of {DECODE_ONLY[missing[0]]}: add it")
    settings = settings_record(args.steps, args.subset)
    runs: dict[str, Any] = {}
    before = {"wall_minutes": 0.0}
    if args.resume and args.out.is_file():
        old = json.loads(args.out.read_text(encoding="utf-8"))
        same = {k: v for k, v in old["settings"].items() if k in settings}
        if same != settings:
            changed = sorted(k for k in settings if same.get(k) != settings[k])
            parser.error(f"--resume: {args.out} was made with other settings ({changed})")
        runs = old["runs"]
        before["wall_minutes"] = old["settings"].get("wall_minutes", 0.0)
        print(f"resuming: {len(runs)} runs already in {args.out}", flush=True)
    jobs = []
    for name in jobs_for(names):
        riders = [b for b, base in DECODE_ONLY.items() if base == name and b in names]
        if name not in runs or any(r not in runs for r in riders):
            jobs.append((name, args.steps, args.subset, riders))
    jobs.sort(key=lambda j: -len(j[3]))  # the longest jobs (healthy + its riders) first
    start = time.perf_counter()

    def totals() -> dict[str, Any]:
        wall = before["wall_minutes"] + (time.perf_counter() - start) / 60
        cpu = sum(r.get("job_cpu_s", 0.0) for r in runs.values()) / 60
        return {"wall_minutes": round(wall, 1), "cpu_minutes": round(cpu, 1), "jobs": args.jobs}

    size = 0
    pool = multiprocessing.get_context("spawn").Pool(max(1, args.jobs), initializer=_own_session)
    with pool:
        for rows in pool.imap_unordered(one_job, jobs):
            for name, record in rows:
                runs[name] = record
                kit = ", ".join(record["kit"]["failed"]) or "none"
                beam = f", beam {record['beam_bleu']:.1f}" if "beam_bleu" in record else ""
                last = record["loss"][-1][1] if record["loss"] else float("nan")
                print(
                    f"[{len(runs)}/{len(names)}] {name}: loss {last:.3f}, "
                    f"val {record['val_loss']:.3f}, BLEU {record['bleu']:.1f}{beam}; "
                    f"kit fails: {kit} (train {record['train_cpu_s']:.0f} CPU-s, "
                    f"measure {record['measure_cpu_s']:.0f} CPU-s; "
                    f"{time.perf_counter() - start:.0f} s so far)",
                    flush=True,
                )
            size = write(args.out, {**settings, **totals()}, runs, names)  # after every job
    t = totals()
    if not jobs:
        size = write(args.out, {**settings, **t}, runs, names)
    print(
        f"wrote {len(runs)} runs to {args.out} ({size / 1024:.0f} KB): {t['wall_minutes']} "
        f"minutes on the clock, {t['cpu_minutes']} CPU-minutes, {args.jobs} processes"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
