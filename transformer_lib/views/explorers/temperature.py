"""Softmax temperature and the width d_k: why Eq. (1) divides the scores by √d_k (ch. 3)."""

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


#: The widths the slider offers (the static book has one frame per width).
_STATIC_DKS = (4, 16, 64, 256, 1024)

#: Every width takes the first d_k components of vectors this wide (wider: their own).
_WIDEST = 1024

#: The paper's head width (§3.2.2), marked on the slider.
_PAPER_DK = 64


def _labels(n: int) -> tuple[list[str], list[str]]:
    """Neutral names for random vectors, numbered from 0: ``q0 … q(n-1)``, ``k0 … k(n-1)``."""
    return [f"q{i}" for i in range(n)], [f"k{i}" for i in range(n)]


def _dk_label(d_k: int) -> str:
    return f"{d_k:,} (the paper's)" if d_k == _PAPER_DK else f"{d_k:,}"


def _tau_note(tau: float, d_k: int) -> str:
    """What a temperature stands for: τ = 1 is the unscaled softmax, τ = √d_k the paper's."""
    if math.isclose(tau, 1.0):
        return " (unscaled)"
    if math.isclose(tau, math.sqrt(d_k)):
        return " = √d_k"
    return ""


def _softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _temperature_scores(n: int, d_k: int, seed: int) -> np.ndarray:
    """Raw dot products ``q · k`` of random unit-Gaussian vectors: std ≈ √d_k.

    Every width uses the first ``d_k`` components of the same vectors, so moving the
    slider adds components to the queries and keys rather than drawing new ones.
    """
    rng = np.random.default_rng(seed)
    width = max(d_k, _WIDEST)
    q = rng.standard_normal((n, width))[:, :d_k]
    k = rng.standard_normal((n, width))[:, :d_k]
    return q @ k.T  # (n, n)


def _peaks(n: int, d_k: int, tau: float, seed: int) -> tuple[float, float]:
    """Mean largest weight of a row: unscaled, and divided by ``tau``."""
    scores = _temperature_scores(n, d_k, seed)
    raw, scaled = _softmax(scores), _softmax(scores / tau)
    return float(raw.max(-1).mean()), float(scaled.max(-1).mean())


def _temperature_figure(n: int, d_k: int, tau: float, seed: int):
    """Two heatmaps of the same scores: softmax(q·k) on the left, softmax(q·k / τ) right."""
    from ..attention_maps import plot_attention

    queries, keys = _labels(n)
    scores = _temperature_scores(n, d_k, seed)
    with book_style():
        fig = new_figure((8.6, 4.3), layout="constrained")  # 688 px at FRAME_DPI
        ax0, ax1 = fig.subplots(1, 2, width_ratios=[1, 1.22])
        for ax, t in ((ax0, 1.0), (ax1, tau)):
            weights = _softmax(scores / t)
            heading = "unscaled: softmax(q·k)"
            if ax is ax1:
                heading = f"softmax(q·k / τ), τ = {t:.3g}{_tau_note(t, d_k)}"
            plot_attention(
                weights,
                queries,
                keys,
                ax=ax,
                annotate=True,
                colorbar=ax is ax1,
                title=f"{heading}\nmean largest weight {weights.max(-1).mean():.2f}",
            )
            ax.title.set_fontsize(11)
        fig.suptitle(
            f"The same {n} random queries and keys at d_k = {d_k:,}: raw scores q·k have "
            f"std ≈ √d_k = {math.sqrt(d_k):.3g}",
            fontsize=11,
        )
    return fig


def temperature_explorer(
    n: int = 6,
    d_k: int = _PAPER_DK,
    *,
    seed: int = 1,
    static: bool | None = None,
):
    """Softmax temperature and width: the unscaled softmax sharpens as ``d_k`` grows.

    Chapter 3. The scores are dot products of random ``d_k``-dimensional queries and keys
    (std ≈ √d_k); every frame shows the softmax of the same scores twice: unscaled
    (left) and divided by a temperature τ (right), by default the paper's τ = √d_k
    (§3.2.1). As ``d_k`` grows the left map turns one-hot while the right one keeps its
    spread. The vectors are random, not words, so the rows and columns are named ``q0 …``
    and ``k0 …``; every width uses the first ``d_k`` components of the same vectors.

    Args:
        n: the number of queries and of keys.
        d_k: the width selected first (default 64, the paper's).
        seed: seed of the random queries and keys. With the default, the unscaled
            map's mean largest weight rises at every step of the slider, as its average
            over many draws does (chapter 3's saturation figure); other seeds can dip
            once, six rows being a small sample.
        static: force the precomputed (True) or the live (False) version; default
            :func:`static_mode`.

    Returns:
        The explorer (an ``ipywidgets.VBox``). Static: a ``d_k`` slider over 4, 16, ...,
        1,024 (five frames), τ = √d_k. Live: the same ``d_k`` slider and a τ slider for
        the right map, set back to √d_k when ``d_k`` changes.
    """
    widgets = load_ipywidgets()
    n, d_k = int(n), int(d_k)
    if n < 2:
        raise ValueError(f"temperature_explorer needs at least two queries and keys, got n={n}")
    dks = sorted({*_STATIC_DKS, d_k})
    title = "Softmax temperature and the width d_k"
    dk = widgets.SelectionSlider(
        options=[(_dk_label(d), d) for d in dks],
        value=d_k,
        description="d_k",
        tooltip="width of the random queries and keys",
        continuous_update=use_static(static),
        layout=widgets.Layout(width="420px"),
    )
    if use_static(static):
        frames = [figure_to_png(_temperature_figure(n, d, math.sqrt(d), seed)) for d in dks]

        def describe(i: int) -> str:
            raw, scaled = _peaks(n, dks[i], math.sqrt(dks[i]), seed)
            return (
                f"d_k = {dks[i]:,}: mean largest weight {raw:.2f} unscaled, "
                f"{scaled:.2f} divided by √d_k"
            )

        return static_explorer(
            title,
            "Move the slider to widen the random queries and keys. Left: the unscaled "
            "softmax, which turns one-hot as d_k grows. Right: the same scores divided by "
            "√d_k, whose spread stays put.",
            [dk],
            {"d_k": dk},
            [dk],
            frames,
            alt=f"Two heatmaps of softmax weights for the same {n} random queries q0 to "
            f"q{n - 1} (rows) and {n} random keys k0 to k{n - 1} (columns), every cell "
            "labelled with its weight: on the left the unscaled softmax of the dot "
            "products, on the right the softmax of the dot products divided by the square "
            "root of d_k. Each title gives the rows' mean largest weight.",
            describe=describe,
        )
    tau = widgets.FloatLogSlider(
        value=math.sqrt(d_k),
        base=2,
        min=-2,
        max=8,
        step=0.25,
        description="τ",
        tooltip="temperature tau of the right map: its scores are divided by it",
        continuous_update=False,
        readout_format=".3g",
        layout=widgets.Layout(width="420px"),
    )

    def reset_tau(change) -> None:
        tau.value = math.sqrt(change["new"])  # the paper's choice follows the width

    dk.observe(reset_tau, names="value")
    memo = LayoutMemo()

    def draw() -> tuple[bytes, str]:
        fig = _temperature_figure(n, dk.value, tau.value, seed)
        return memo.png(fig, key=dk.value), ""

    return live_explorer(
        title,
        "Widen the random queries and keys with d_k: the unscaled softmax (left) turns "
        "one-hot, the one divided by τ = √d_k (right) keeps its spread. Move τ to sharpen "
        "(small τ) or flatten (large τ) the right map.",
        [widgets.VBox([dk, tau])],
        {"tau": tau, "d_k": dk},
        draw,
        [tau, dk],
    )
