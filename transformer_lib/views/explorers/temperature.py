"""Softmax temperature: dividing the scores by τ sharpens or flattens attention (ch. 3)."""

from __future__ import annotations

import math

import numpy as np

from .frames import (
    LayoutMemo,
    book_style,
    figure_to_png,
    live_explorer,
    load_ipywidgets,
    new_figure,
    static_explorer,
    use_static,
)

__all__ = ["temperature_explorer"]


_STATIC_TAUS = (1, 2, 4, 8, 16, 32, 64)


def _labels(n: int) -> tuple[list[str], list[str]]:
    """Neutral names for random vectors, numbered from 0: ``q0 … q(n-1)``, ``k0 … k(n-1)``."""
    return [f"q{i}" for i in range(n)], [f"k{i}" for i in range(n)]


def _tau_note(tau: float, d_k: int) -> str:
    """What a temperature stands for: τ = 1 is the unscaled softmax, τ = √d_k the paper's."""
    if math.isclose(tau, 1.0):
        return " (unscaled)"
    if math.isclose(tau, math.sqrt(d_k)):
        return " = √d_k, the paper's scaling"
    return ""


def _softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _temperature_scores(n: int, d_k: int, seed: int) -> np.ndarray:
    """Raw dot products ``q · k`` of random unit-Gaussian vectors: std ≈ √d_k."""
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((n, d_k))
    k = rng.standard_normal((n, d_k))
    return q @ k.T  # (n, n)


def _temperature_figure(n: int, d_k: int, tau: float, seed: int):
    from ..attention_maps import plot_attention
    from ..style import OKABE_ITO

    queries, keys = _labels(n)
    weights = _softmax(_temperature_scores(n, d_k, seed) / tau)
    entropy = -(weights * np.log2(np.clip(weights, 1e-12, None))).sum(-1)
    with book_style():
        fig = new_figure((8.6, 4.3), layout="constrained")  # 688 px at FRAME_DPI
        ax0, ax1 = fig.subplots(1, 2, width_ratios=[1.55, 1])
        plot_attention(
            weights,
            queries,
            keys,
            ax=ax0,
            annotate=True,
            title=f"softmax(q·k / τ) with τ = {tau:g}{_tau_note(tau, d_k)}",
        )
        ax1.barh(np.arange(n), entropy, color=OKABE_ITO[0], height=0.6)
        uniform = math.log2(n)
        ax1.axvline(uniform, color="#666666", linestyle="--", linewidth=1.2)
        # No row's entropy exceeds the uniform one: the strip right of the line stays
        # free for its label, whatever τ.
        ax1.set_xlim(0, uniform * 1.2)
        ax1.set_ylim(n - 0.5, -0.5)  # same row order as the heatmap
        ax1.set_yticks(np.arange(n), queries)
        ax1.text(
            uniform * 1.1,
            (n - 1) / 2,
            f"uniform: {uniform:.2f} bits",
            ha="center",
            va="center",
            rotation=90,
            fontsize=10,
            color="#444444",
        )
        ax1.set_xlabel("entropy of the row (bits)")
        ax1.set_ylabel("query (attends from)")
        ax1.set_title(f"Spread of each row: mean {entropy.mean():.2f} bits")
        ax1.grid(axis="x", alpha=0.3)
        fig.suptitle(
            f"{n} random queries and keys, d_k = {d_k}: raw scores q·k have std ≈ √d_k = "
            f"{math.sqrt(d_k):.3g}"
        )
    return fig


def temperature_explorer(
    n: int = 6,
    d_k: int = 64,
    *,
    seed: int = 0,
    static: bool | None = None,
):
    """Softmax temperature: how dividing the scores by τ sharpens or flattens attention.

    Chapter 3. The scores are dot products of random ``d_k``-dimensional queries and keys
    (std ≈ √d_k); the weights are ``softmax(scores / τ)``. τ = 1 is the unscaled softmax,
    τ = √d_k the paper's scaling (§3.2.1); τ → 0 gives a one-hot arg-max, τ → ∞ a
    uniform average. The right panel shows each row's entropy in bits. The vectors are
    random, not words, so the rows and columns are named ``q0 …`` and ``k0 …``.

    Args:
        n: the number of queries and of keys.
        d_k: key width; the static version uses it throughout.
        seed: seed of the random queries and keys.
        static: force the precomputed (True) or the live (False) version; default
            :func:`static_mode`.

    Returns:
        The explorer (an ``ipywidgets.VBox``). Live: a τ slider and a ``d_k`` choice.
        Static: a τ slider over 1, 2, 4, ..., 64 (seven frames).
    """
    widgets = load_ipywidgets()
    n = int(n)
    if n < 2:
        raise ValueError(f"temperature_explorer needs at least two queries and keys, got n={n}")
    title = "Softmax temperature"
    if use_static(static):
        taus = list(_STATIC_TAUS)
        default = min(range(len(taus)), key=lambda i: abs(taus[i] - math.sqrt(d_k)))
        labels = [
            f"{t:g} (√d_k)" if i == default else f"{t:g} (unscaled)" if t == 1 else f"{t:g}"
            for i, t in enumerate(taus)
        ]
        tau = widgets.SelectionSlider(
            options=labels,
            index=default,
            description="τ",
            tooltip="temperature tau: the scores are divided by it before the softmax",
            continuous_update=True,
            layout=widgets.Layout(width="420px"),
        )
        frames = [figure_to_png(_temperature_figure(n, d_k, t, seed)) for t in taus]
        return static_explorer(
            title,
            "Move the slider: divide the scores of random queries and keys by τ before the "
            "softmax (τ = 1: unscaled).",
            [tau],
            {"tau": tau},
            [tau],
            frames,
            alt=f"Left: heatmap of softmax weights for {n} random queries q0 to q{n - 1} (rows) "
            f"and {n} random keys k0 to k{n - 1} (columns) at the chosen temperature. Right: bars "
            "of each row's entropy in bits, with the uniform distribution's entropy as a "
            "dashed line.",
        )
    tau = widgets.FloatLogSlider(
        value=math.sqrt(d_k),
        base=2,
        min=-2,
        max=8,
        step=0.25,
        description="τ",
        tooltip="temperature tau: the scores are divided by it before the softmax",
        continuous_update=False,
        readout_format=".3g",
        layout=widgets.Layout(width="420px"),
    )
    dk = widgets.Dropdown(
        options=sorted({4, 16, 64, 256, int(d_k)}),
        value=int(d_k),
        description="d_k",
        tooltip="width of the queries and keys",
        layout=widgets.Layout(width="160px"),
    )

    memo = LayoutMemo()

    def draw() -> tuple[bytes, str]:
        fig = _temperature_figure(n, dk.value, tau.value, seed)
        return memo.png(fig, key=dk.value), ""

    return live_explorer(
        title,
        "Divide the scores of random queries and keys by τ before the softmax (τ = 1: "
        "unscaled); change d_k to see why the paper picks √d_k.",
        [widgets.HBox([tau, dk])],
        {"tau": tau, "d_k": dk},
        draw,
        [tau, dk],
    )
