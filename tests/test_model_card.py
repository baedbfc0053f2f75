"""The model card and the README's paragraph on the shipped models are current: every
number in them is rendered again from the shipped files and compared."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _script():
    spec = importlib.util.spec_from_file_location("model_card", ROOT / "scripts" / "model_card.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["model_card"] = module
    spec.loader.exec_module(module)
    return module


def test_model_card_and_readme_are_current():
    script = _script()
    card, block = script.render()
    assert (ROOT / "data" / "MODEL_CARD.md").read_text(encoding="utf-8") == card, (
        "data/MODEL_CARD.md is out of date: run python scripts/model_card.py"
    )
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert block in readme, "README.md's shipped-models block is out of date: run the script"


def test_readme_states_the_versions_it_needs():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert 'requires-python = ">=3.10"' in pyproject
    assert "Python ≥ 3.10" in readme and "3.9" not in readme


def test_readme_opening_time_claim_holds():
    import torch

    state = torch.load(ROOT / "data" / "model.pt", weights_only=True)["state"]
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "in under an hour of CPU\ntime" in readme
    assert state["cpu_s"] < 3600
