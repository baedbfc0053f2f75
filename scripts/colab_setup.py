"""Keep the first cell of every chapter — the Colab set-up — in one place.

The cell is tagged ``hide-cell`` (the HTML book folds it, under a label that says what it
is, so a reader can see what Colab will run) and ``colab-setup``. In a
local kernel it only puts the repository on ``sys.path``; in Colab it clones the
repository named by ``repository.url`` in ``_config.yml``, installs the library and
turns on Colab's widget manager.

    python scripts/colab_setup.py          # write/refresh the cell in every chapter
    python scripts/colab_setup.py --check  # exit 1 if a chapter's cell is missing or stale
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TAG = "colab-setup"

TEMPLATE = """\
# Set-up, run first: in Colab it fetches the book's code and data and
# installs them; in a local Jupyter it finds the library one folder up.
import os
import subprocess
import sys

REPO_URL = "{url}"
if "google.colab" in sys.modules:
    root = "/content/transformer-book"
    if not os.path.isdir(root):
        clone = ["git", "clone", "--depth", "1", REPO_URL, root]
        subprocess.run(clone, check=True)
    pip = [sys.executable, "-m", "pip", "install", "-q"]
    subprocess.run([*pip, "-e", root + "[widgets]"], check=True)
    from google.colab import output

    output.enable_custom_widget_manager()
    os.chdir(root + "/chapters")
    sys.path.insert(0, root)
elif os.path.isdir("../transformer_lib"):
    sys.path.insert(0, os.path.abspath(".."))"""


def repository_url(config: Path = ROOT / "_config.yml") -> str:
    """``repository.url`` from the book's ``_config.yml``."""
    text = config.read_text(encoding="utf-8")
    match = re.search(r"^repository:\s*\n(?:[ \t]+.*\n)*?[ \t]+url:\s*(\S+)", text, re.M)
    if not match:
        raise SystemExit(f"{config}: no repository.url setting found")
    return match.group(1).strip("'\"")


def setup_source(url: str | None = None) -> str:
    return TEMPLATE.format(url=url or repository_url())


def chapters() -> list[Path]:
    return sorted((ROOT / "chapters").glob("[0-9][0-9]_*.ipynb"))


def _cell(source: str) -> dict:
    return {
        "cell_type": "code",
        "execution_count": None,
        "id": "colab-setup",
        "metadata": metadata(),
        "outputs": [],
        "source": source.splitlines(keepends=True),
    }


def metadata() -> dict:
    """The set-up cell's tags and fold labels."""
    return {
        "mystnb": {
            "code_prompt_show": "Show the set-up cell (what Colab runs first)",
            "code_prompt_hide": "Hide the set-up cell",
        },
        "tags": ["hide-cell", TAG],
    }


def find_setup_cell(nb: dict) -> dict | None:
    for cell in nb.get("cells", []):
        if TAG in cell.get("metadata", {}).get("tags", []):
            return cell
    return None


def write(path: Path, source: str) -> bool:
    nb = json.loads(path.read_text(encoding="utf-8"))
    cell = find_setup_cell(nb)
    if cell is not None and "".join(cell["source"]) == source and cell["metadata"] == metadata():
        return False
    if cell is None:
        nb["cells"].insert(0, _cell(source))
    else:
        cell["source"] = source.splitlines(keepends=True)
        cell["metadata"] = metadata()
    path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return True


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--check", action="store_true", help="only check, change nothing")
    args = p.parse_args(argv)
    source = setup_source()
    stale = []
    for path in chapters():
        nb = json.loads(path.read_text(encoding="utf-8"))
        cell = find_setup_cell(nb)
        if cell is None or "".join(cell["source"]) != source or cell["metadata"] != metadata():
            stale.append(path.name)
            if not args.check:
                write(path, source)
    if args.check and stale:
        print(
            "Colab set-up cell missing or stale in: "
            + ", ".join(stale)
            + "\nRun `python scripts/colab_setup.py` to refresh it.",
            file=sys.stderr,
        )
        return 1
    print(("stale: " if args.check else "updated: ") + (", ".join(stale) or "none"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
