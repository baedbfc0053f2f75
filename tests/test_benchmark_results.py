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
