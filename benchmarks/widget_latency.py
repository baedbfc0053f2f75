"""How long a live explorer takes to react: new sentence → translation → redrawn maps.

Builds the live :func:`~transformer_lib.views.explorers.attention_explorer` with the
shipped model and types several sentences into it, timing each update from the moment the
text changes until the new PNG is in the image widget (the browser's part, a few
milliseconds to show the image, is not included). It also times redraws without a new
translation (another layer, another kind of attention) and one head switched off in the
live :func:`~transformer_lib.views.explorers.head_ablation_explorer`; those three must stay
within the budget (p90). The figure explorers (temperature, positions, learning rate,
masks) are timed for reference. Besides wall-clock time, the CPU time of each update is
shown: on a machine busy with other work the wall-clock time grows, the CPU time does not.

    python benchmarks/widget_latency.py                    # shipped model, 1 thread
    python benchmarks/widget_latency.py --threads 2 --rounds 3
    python benchmarks/widget_latency.py --checkpoint runs/mine/model.pt
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time

import torch

BUDGET_MS = 300.0
NEW, SAME, HEAD = (
    "attention: new sentence",
    "attention: other layer/kind",
    "ablation: one head on/off",
)

SENTENCES = (
    "I am tired.",
    "The cat is sleeping on the sofa.",
    "Where is the train station?",
    "We will go to the beach tomorrow if it doesn't rain.",
    "She gave her brother a book for his birthday.",
    "Tom has lived in Berlin for three years.",
    "Can you help me carry these heavy boxes upstairs, please?",
    "My grandmother used to tell us stories about the war when we were children.",
)


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    idx = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[idx]


CPU: dict[str, list[float]] = {}


def _timed(action, name: str) -> float:
    """Wall-clock milliseconds of ``action()``; its CPU time goes to ``CPU[name]``."""
    start, cpu = time.perf_counter(), time.process_time()
    action()
    CPU.setdefault(name, []).append((time.process_time() - cpu) * 1000.0)
    return (time.perf_counter() - start) * 1000.0


def _report(name: str, times: list[float], budget: float | None = BUDGET_MS) -> bool:
    median, p90 = statistics.median(times), _percentile(times, 0.9)
    ok = budget is None or p90 <= budget
    verdict = "(no budget)" if budget is None else ("OK" if ok else "OVER")
    print(
        f"{name:<32} n={len(times):>3}  median {median:6.1f} ms  p90 {p90:6.1f} ms  "
        f"max {max(times):6.1f} ms  CPU median {statistics.median(CPU[name]):6.1f} ms  {verdict}"
    )
    return ok


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    parser.add_argument("--rounds", type=int, default=3, help="passes over the sentences")
    parser.add_argument("--checkpoint", default=None, help="model.pt (default: the shipped one)")
    args = parser.parse_args(argv)

    torch.set_num_threads(args.threads)
    from transformer_lib.pipeline.pretrained import load_pretrained
    from transformer_lib.views.explorers import (
        attention_explorer,
        head_ablation_explorer,
        lr_schedule_explorer,
        mask_explorer,
        positional_encoding_explorer,
        temperature_explorer,
    )

    translator = load_pretrained(args.checkpoint)
    print(
        f"{platform.processor() or platform.machine()}, torch {torch.__version__}, "
        f"{args.threads} thread(s), {translator!r}"
    )
    box = attention_explorer(translator, static=False)
    text, kind, layer = (box.controls[k] for k in ("sentence", "kind", "layer"))
    box.update()  # warm-up: first draw of each figure size and font

    new_sentence, same_sentence = [], []
    for _ in range(args.rounds):
        for sentence in SENTENCES:
            new_sentence.append(_timed(lambda s=sentence: setattr(text, "value", s), NEW))
            assert "Could not" not in box.message.value, box.message.value
            same_sentence.append(_timed(lambda: setattr(layer, "value", 1 - layer.value), SAME))
            other = "encoder" if kind.value != "encoder" else "cross"
            same_sentence.append(_timed(lambda k=other: setattr(kind, "value", k), SAME))
        text.value = ""  # the next round translates every sentence again

    ablation = head_ablation_explorer(translator, static=False)
    toggles = list(ablation.toggles.values())
    toggle_times = []
    for _ in range(args.rounds):
        for button in toggles[:8]:
            toggle_times.append(_timed(lambda b=button: setattr(b, "value", False), HEAD))
            toggle_times.append(_timed(lambda b=button: setattr(b, "value", True), HEAD))

    # The figure explorers redraw when a slider is released; no budget, shown for reference.
    others = {}
    for name, build, control, values in (
        ("temperature: τ", temperature_explorer, "tau", [1.0, 2.0, 4.0, 16.0, 8.0]),
        ("positional: pair i", positional_encoding_explorer, "pair", [1, 2, 10, 30, 4]),
        ("lr schedule: warm-up", lr_schedule_explorer, "warmup", [1000, 2000, 4000, 400]),
        ("masks: sentence", mask_explorer, "sentence", [1, 2, 0, 1, 2, 0]),
    ):
        explorer = build(static=False)
        widget = explorer.controls[control]
        others[name] = [
            _timed(lambda w=widget, v=v: setattr(w, "value", v), name)
            for _ in range(args.rounds)
            for v in values
        ]

    print(f"times from the control change to the new PNG; budget {BUDGET_MS:.0f} ms (p90)")
    ok = _report(NEW, new_sentence)
    ok &= _report(SAME, same_sentence)
    ok &= _report(HEAD, toggle_times)
    for name, times in others.items():
        _report(name, times, budget=None)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
