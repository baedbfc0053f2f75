"""The quality-per-minute measurement that ships with the book, and the README's table of it."""

from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _results() -> dict:
    return json.loads((ROOT / "data" / "quality_per_minute.json").read_text(encoding="utf-8"))


def test_the_library_is_ahead_of_the_plain_loop_at_every_budget():
    rows = _results()["rows"]
    assert sorted(r["budget"] for r in rows) == [5.0, 10.0, 20.0]
    for r in rows:
        assert r["library"]["bleu"] >= r["plain"]["bleu"], r["budget"]
        # both sides had the budget they were given (CPU-minutes, one thread)
        for side in ("library", "plain"):
            assert abs(r[side]["cpu_minutes"] - r["budget"]) < 0.2, (side, r["budget"])
            assert r[side]["sources"] == 889


def test_the_readme_table_is_the_measurement():
    readme = (ROOT / "benchmarks" / "README.md").read_text(encoding="utf-8")
    for r in _results()["rows"]:
        lib, plain = r["library"], r["plain"]
        row = (
            f"| {r['budget']:g} | {lib['steps']:,} | {lib['bleu']:.2f} | {lib['chrf']:.2f} | "
            f"{plain['steps']:,} | {plain['bleu']:.2f} | {plain['chrf']:.2f} | "
            f"**{lib['bleu'] - plain['bleu']:+.2f}** |"
        )
        assert row in readme, row


def test_the_sweep_rows_in_the_readme_are_measured():
    readme = (ROOT / "benchmarks" / "README.md").read_text(encoding="utf-8")
    for name in ("recipe_sweep.json", "recipe_sweep_extra.json"):
        data = json.loads((ROOT / "benchmarks" / "results" / name).read_text(encoding="utf-8"))
        for row in data["rows"]:
            assert f"| {row['steps']:,} | " in readme and f"{row['bleu']:.2f}" in readme, row


def _variants() -> dict:
    path = ROOT / "data" / "architecture_variants.json"
    return json.loads(path.read_text(encoding="utf-8"))


def test_the_architecture_variants_were_trained_alike():
    data = _variants()
    rows = {r["variant"]: r for r in data["rows"]}
    assert set(rows) == {
        "paper",
        "paper, seed 1",
        "pre-LN",
        "modern",
        "modern, seed 1",
        "rope",
        "rope, seed 1",
    }
    steps = data["budget"]["max_steps"]
    counts = {r["parameters"] for r in rows.values()}
    for r in rows.values():
        assert r["steps"] == steps, r  # the same budget, reached
        assert r["sources"] == 889  # the whole test split
    # SwiGLU at d_ff 344 keeps the parameter count of the ReLU FFN at 512 (within 0.1%)
    assert (max(counts) - min(counts)) / min(counts) < 1e-3
    assert rows["modern"]["flags"] == rows["modern, seed 1"]["flags"]
    assert rows["paper"]["flags"] == [] and rows["paper"]["seed"] != rows["paper, seed 1"]["seed"]
    # rotary positions: the paper's model otherwise, not one weight more
    assert rows["rope"]["flags"] == rows["rope, seed 1"]["flags"] == ["--position", "rope"]
    assert rows["rope"]["parameters"] == rows["paper"]["parameters"]
    assert rows["rope"]["seed"] != rows["rope, seed 1"]["seed"]


def test_the_readme_table_of_variants_is_the_measurement():
    readme = (ROOT / "benchmarks" / "README.md").read_text(encoding="utf-8")
    for r in _variants()["rows"]:
        row = (
            f"| {r['variant']} | {r['what']} | {r['parameters']:,} | {r['bleu']:.2f} | "
            f"{r['chrf']:.2f} |"
        )
        assert row in readme, row


def test_what_the_readme_says_of_the_variants_holds():
    rows = {r["variant"]: r["bleu"] for r in _variants()["rows"]}
    paper, modern = [rows["paper"], rows["paper, seed 1"]], [rows["modern"], rows["modern, seed 1"]]
    spread = max(abs(paper[0] - paper[1]), abs(modern[0] - modern[1]))
    gap = sum(modern) / 2 - sum(paper) / 2
    assert min(modern) > max(paper) and gap > spread  # "above both, by more than ..."
    assert abs(rows["pre-LN"] - sum(paper) / 2) <= spread  # "pre-LN alone is within"
    lib = {r["budget"]: r["library"] for r in _results()["rows"]}
    assert 0.15 < gap / (lib[10.0]["bleu"] - lib[5.0]["bleu"]) < 0.35  # "about a quarter"
    # rotary positions: "so do both seeds", "+1.03 ... up to 0.81 apart", "each ... a quarter"
    rope = [rows["rope"], rows["rope, seed 1"]]
    rope_gap = sum(rope) / 2 - sum(paper) / 2
    seeds_apart = max(spread, abs(rope[0] - rope[1]))
    assert min(rope) > max(paper) and rope_gap > seeds_apart
    readme = (ROOT / "benchmarks" / "README.md").read_text(encoding="utf-8")
    assert f"(+{rope_gap:.2f} BLEU on the means of two seeds" in readme
    assert f"up to {seeds_apart:.2f} apart)" in readme
    assert 0.15 < rope_gap / (lib[10.0]["bleu"] - lib[5.0]["bleu"]) < 0.35
    # the CPU-minute run of the same benchmark, and the README's comparison with it
    cpu5 = json.loads(
        (ROOT / "benchmarks" / "results" / "architecture_variants_cpu5.json").read_text("utf-8")
    )
    readme = (ROOT / "benchmarks" / "README.md").read_text(encoding="utf-8")
    first = {r["variant"]: r for r in cpu5["rows"]}["paper"]
    quiet = lib[5.0]
    said = (
        f"made {first['steps']:,} steps and {first['bleu']:.2f} BLEU there, against "
        f"{quiet['steps']:,} steps and\n{quiet['bleu']:.2f} BLEU"
    )
    assert said in readme
    assert first["steps"] < quiet["steps"] and first["bleu"] < quiet["bleu"]
    for r in cpu5["rows"]:
        assert f"| {r['variant']} | {r['steps']:,} | {r['bleu']:.2f} |" in readme
