"""Post-LN vs pre-LN, with and without warm-up, on a toy task over several seeds (ch. 7).

The task: read 12 random symbols (from 20) and output them reversed. Output ``i`` must copy
input ``11 - i``, so a model needs positions and attention to solve it. The model is the
library's :class:`~transformer_lib.components.layers.Encoder` between an embedding and a
linear read-out (:class:`ReverseTagger`); :func:`train_reverser` trains it with Adam.

Training a grid of settings over several seeds takes many CPU minutes, more than a chapter
may spend, so ``scripts/norm_warmup_runs.py`` runs the grid once and stores the curves in
``data/norm_warmup_runs.json`` (:data:`RUNS_FILE`); :func:`load_runs` reads them and
:func:`norm_warmup_explorer` shows them. The chapter re-trains seed 0 of three settings live
and checks that it reproduces the stored curves.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from torch import nn

from ...components.config import TransformerConfig
from ...components.embedding import TokenEmbedding
from ...components.layers import Encoder
from ...components.positional import SinusoidalPositionalEncoding
from .frames import (
    book_style,
    figure_to_png,
    load_ipywidgets,
    new_figure,
    static_explorer,
)

__all__ = [
    "GRID",
    "RUNS_FILE",
    "RUN_STYLES",
    "SOLVED_ACCURACY",
    "ReverseTagger",
    "block_means",
    "grid_summary",
    "is_solved",
    "load_runs",
    "norm_warmup_explorer",
    "run_key",
    "train_reverser",
]

VOCAB, LENGTH, BATCH = 20, 12, 32  # symbols, sequence length, sequences per step
STEPS = 200  # Adam steps per run
WINDOW = 5  # stored curves are means over blocks of this many steps
#: A run "solves" the task when its last 10 steps get at least this fraction of symbols right.
SOLVED_ACCURACY = 0.95
#: The settings ``scripts/norm_warmup_runs.py`` trains: every combination, every seed.
GRID = {
    "norm_first": (False, True),
    "warmup": (0, 50),
    "lr": (5e-4, 1e-3, 3e-3),
    "seed": (0, 1, 2, 3, 4),
}
RUNS_FILE = Path(__file__).resolve().parents[3] / "data" / "norm_warmup_runs.json"

_NAMES = {False: "post-LN", True: "pre-LN"}
#: Colour and marker of each kind of run, the same in every figure of chapter 7 (the order
#: in which ``plot_curves`` assigns them there): key ``(norm_first, with warm-up)``.
RUN_STYLES = {
    (False, False): {"color": "#0072B2", "marker": "o"},  # post-LN: blue circles
    (True, False): {"color": "#D55E00", "marker": "s"},  # pre-LN: vermillion squares
    (False, True): {"color": "#009E73", "marker": "^"},  # post-LN + warm-up: green
    (True, True): {"color": "#CC79A7", "marker": "D"},  # pre-LN + warm-up: purple
}


class ReverseTagger(nn.Module):
    """Embedding + positions + the library's Encoder + a linear read-out, one label per position.

    Shape: ``tokens (B, L)`` → logits ``(B, L, VOCAB)``.
    """

    def __init__(self, config: TransformerConfig):
        super().__init__()
        self.embed = TokenEmbedding(VOCAB, config.d_model, pad_id=None)
        self.positional = SinusoidalPositionalEncoding(LENGTH, config.d_model)
        self.encoder = Encoder(config)
        self.readout = nn.Linear(config.d_model, VOCAB)
        for p in self.parameters():  # the same initialisation as Transformer
            if p.dim() > 1:
                nn.init.xavier_uniform_(p)
        nn.init.normal_(self.embed.weight, std=config.d_model**-0.5)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        memory, _ = self.encoder(self.positional(self.embed(tokens)))  # (B, L, D)
        return self.readout(memory)  # (B, L, VOCAB)


def train_reverser(
    norm_first: bool,
    warmup_steps: int = 0,
    steps: int = STEPS,
    lr: float = 3e-3,
    seed: int = 0,
) -> dict[str, torch.Tensor]:
    """Train a 6-layer ``ReverseTagger`` on fresh random batches.

    Adam with the paper's ``betas=(0.9, 0.98)``; the learning rate rises linearly over
    ``warmup_steps`` steps (none if 0) and then stays at ``lr``. ``seed`` fixes both the
    initial weights and the batches.

    Returns:
        ``{"loss": (steps,), "accuracy": (steps,)}``: the cross-entropy and the fraction of
        correctly reversed symbols of every step's batch.
    """
    torch.manual_seed(seed)
    config = TransformerConfig(
        vocab_size=VOCAB,
        d_model=64,
        n_heads=4,
        d_ff=256,
        dropout=0.0,
        n_encoder_layers=6,
        n_decoder_layers=0,
        norm_first=norm_first,
    )
    model = ReverseTagger(config)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr, betas=(0.9, 0.98))
    schedule = torch.optim.lr_scheduler.LambdaLR(  # linear warm-up, then constant
        optimizer, lambda step: min(1.0, (step + 1) / warmup_steps) if warmup_steps else 1.0
    )
    data = torch.Generator().manual_seed(seed + 1)
    losses, accuracies = [], []
    for _ in range(steps):
        tokens = torch.randint(0, VOCAB, (BATCH, LENGTH), generator=data)  # (B, L)
        target = tokens.flip(1)  # the reversed sequence
        logits = model(tokens)  # (B, L, VOCAB)
        loss = nn.functional.cross_entropy(logits.reshape(-1, VOCAB), target.reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        schedule.step()
        losses.append(loss.item())
        accuracies.append((logits.argmax(-1) == target).float().mean().item())
    return {"loss": torch.tensor(losses), "accuracy": torch.tensor(accuracies)}


def block_means(values: Any, window: int = WINDOW) -> list[float]:
    """Means over consecutive blocks of ``window`` steps (the stored form of a curve)."""
    t = torch.as_tensor(values, dtype=torch.float64)
    n = len(t) // window * window
    return t[:n].view(-1, window).mean(1).tolist()


def run_key(norm_first: bool, warmup: int, lr: float, seed: int) -> str:
    """The key of one run in the stored file, e.g. ``"pre-LN|warmup=50|lr=0.003|seed=2"``."""
    return f"{_NAMES[bool(norm_first)]}|warmup={warmup}|lr={lr:g}|seed={seed}"


def is_solved(run: dict[str, Any]) -> bool:
    """Whether a stored run learned the task: ``final_accuracy >= SOLVED_ACCURACY``."""
    return run["final_accuracy"] >= SOLVED_ACCURACY


def load_runs(path: str | Path | None = None) -> dict[str, Any]:
    """The stored grid: ``{"settings": ..., "runs": {run_key: run}}``.

    Each run has ``loss`` and ``accuracy`` (means over blocks of ``settings["window"]``
    steps), ``final_loss`` and ``final_accuracy`` (means over the last 10 steps) and
    ``solved`` (:func:`is_solved`).
    """
    path = Path(path) if path is not None else RUNS_FILE
    if not path.is_file():
        raise FileNotFoundError(
            f"{path} is missing: run `python scripts/norm_warmup_runs.py` (about 10-20 CPU "
            "minutes) to train the grid of chapter 7 and write it."
        )
    return json.loads(path.read_text(encoding="utf-8"))


def _curves_figure(runs: dict[str, Any], lr: float, warmup: int):
    settings = runs["settings"]
    window = settings["window"]
    seeds = settings["grid"]["seed"]
    with book_style():
        fig = new_figure((9.0, 4.1), layout="constrained")
        axes = fig.subplots(1, 2, sharey=True)
        for ax, norm_first in zip(axes, (False, True)):
            chosen = [runs["runs"][run_key(norm_first, warmup, lr, s)] for s in seeds]
            style = RUN_STYLES[(norm_first, warmup > 0)]
            for n, run in enumerate(chosen):
                # steps done, counted from 0: each block of steps drawn at its middle
                steps = [window * i + (window - 1) / 2 for i in range(len(run["loss"]))]
                ax.plot(
                    steps,
                    run["loss"],
                    color=style["color"],
                    marker=style["marker"],
                    markevery=(n, 8),  # staggered, so that overlapping curves stay countable
                    markersize=5,
                    linewidth=1.4,
                    alpha=0.8,
                    label="one seed" if n == 0 else None,
                )
            ax.axhline(math.log(VOCAB), color="#555555", linestyle=":", linewidth=1.2)
            solved = sum(is_solved(run) for run in chosen)
            ax.set_title(f"{_NAMES[norm_first]}: {solved} of {len(chosen)} seeds solve it")
            ax.set_xlabel("optimizer steps done (from 0)")
            ax.set_ylim(-0.1, 3.6)
            ax.grid(alpha=0.3)
        axes[0].set_ylabel("loss (nats per symbol)")
        axes[0].annotate(
            f"chance: ln {VOCAB}",
            xy=(settings["steps"], math.log(VOCAB)),
            xytext=(0, 3),
            textcoords="offset points",
            ha="right",
            va="bottom",
            fontsize=10,
        )
        w = f"{warmup}-step warm-up" if warmup else "no warm-up"
        fig.suptitle(f"Reversing 12 symbols, 6-layer encoder: learning rate {lr:g}, {w}")
    return fig


def norm_warmup_explorer(runs: dict[str, Any] | None = None, *, static: bool | None = None):
    """Loss curves of post-LN and pre-LN over several seeds; choose learning rate and warm-up.

    Chapter 7. Every state is a stored run of ``scripts/norm_warmup_runs.py``, so the
    explorer is precomputed with or without a kernel (``static`` is accepted for symmetry
    with the other explorers and ignored): a slider for the learning rate and buttons for
    the warm-up switch between ``len(lr) × len(warmup)`` frames. To train a setting that is
    not stored, call :func:`train_reverser` in a live notebook.
    """
    del static  # the frames come from stored runs either way
    widgets = load_ipywidgets()
    runs = load_runs() if runs is None else runs
    grid = runs["settings"]["grid"]
    lrs, warmups = list(grid["lr"]), list(grid["warmup"])
    lr = widgets.SelectionSlider(
        options=[f"{v:g}" for v in lrs],
        index=len(lrs) - 1,
        description="learning rate",
        tooltip="peak learning rate of the runs shown",
        style={"description_width": "initial"},
        layout=widgets.Layout(width="360px"),
    )
    warm = widgets.ToggleButtons(
        options=[f"{w} steps" if w else "none" for w in warmups],
        index=0,
        description="warm-up",
        tooltip="warm-up steps of the runs shown",
        style={"button_width": "80px", "description_width": "initial"},
        # label and buttons on one line, as one block that never shrinks
        layout=widgets.Layout(
            display="flex", flex_flow="row nowrap", align_items="center", flex="0 0 auto"
        ),
    )
    frames = [[figure_to_png(_curves_figure(runs, v, w)) for w in warmups] for v in lrs]
    return static_explorer(
        "Post-LN vs pre-LN over five seeds",
        "Each line is one seed (its own initial weights and batches). Choose the learning "
        "rate and switch the warm-up on and off.",
        # if the row is too narrow, the warm-up control moves down as a whole
        [widgets.HBox([lr, warm], layout=widgets.Layout(flex_flow="row wrap"))],
        {"lr": lr, "warmup": warm},
        [lr, warm],
        frames,
        note="Stored runs (scripts/norm_warmup_runs.py); train other settings with "
        "train_reverser in a live notebook.",
        alt="Two panels of training-loss curves against the step, post-LN on the left and "
        "pre-LN on the right, one line per seed, for the chosen learning rate with or "
        "without warm-up.",
    )


def grid_summary(runs: dict[str, Any], lrs: Sequence[float] | None = None) -> list[list[str]]:
    """Rows ``[setting, solved seeds at each learning rate...]`` for a Markdown table."""
    grid = runs["settings"]["grid"]
    lrs = list(grid["lr"]) if lrs is None else list(lrs)
    rows = []
    for norm_first in grid["norm_first"]:
        for warmup in grid["warmup"]:
            name = f"{_NAMES[norm_first]}, " + (
                f"{warmup}-step warm-up" if warmup else "no warm-up"
            )
            cells = []
            for v in lrs:
                chosen = [runs["runs"][run_key(norm_first, warmup, v, s)] for s in grid["seed"]]
                solved = [s for s, r in zip(grid["seed"], chosen) if is_solved(r)]
                cells.append(f"{len(solved)} of {len(chosen)}")
            rows.append([name, *cells])
    return rows
