"""Figures of chapter 2: sentence lengths in tokens, vocabulary sizes, embedding norms vs the PE."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from .style import OKABE_ITO, _figure_and_axes, _new_figure, _squeeze_to, _styled, _to_numpy

__all__ = ["plot_length_histogram", "plot_embedding_norms", "plot_vocab_sizes"]


@_styled
def plot_length_histogram(
    lengths: Mapping[str, Any],
    *,
    unit: str = "tokens",
    title: str = "Sentence lengths",
    ax: Axes | None = None,
) -> Figure:
    """Side-by-side histograms of sentence lengths, one bar per integer length (chapter 2).

    Args:
        lengths: ``{name: lengths}``, e.g. ``{"English": [...], "German": [...]}``.
        unit: what is counted ("tokens", "words", "characters"), used in the x label.
        title: axes title.
    """
    if not lengths:
        raise ValueError("plot_length_histogram: lengths is empty; pass {name: lengths}.")
    arrays = {name: _to_numpy(v).astype(int).ravel() for name, v in lengths.items()}
    if any(a.size == 0 for a in arrays.values()):
        raise ValueError("plot_length_histogram: every entry needs at least one length.")
    lo = min(int(a.min()) for a in arrays.values())
    hi = max(int(a.max()) for a in arrays.values())
    edges = np.arange(lo, hi + 2) - 0.5  # one bin per integer length
    fig, ax = _figure_and_axes(ax, (7.5, 4.2))
    labels = [f"{name} (mean {a.mean():.1f})" for name, a in arrays.items()]
    ax.hist(
        list(arrays.values()),
        bins=edges,
        label=labels,
        color=list(OKABE_ITO[: len(arrays)]),
        edgecolor="white",
        linewidth=0.4,
    )
    ax.xaxis.get_major_locator().set_params(integer=True)
    ax.set_xlim(lo - 0.5, hi + 0.5)
    ax.set_xlabel(f"sentence length ({unit})")
    ax.set_ylabel("number of sentences")
    ax.set_title(title)
    ax.grid(axis="y", alpha=0.3)
    ax.legend()
    return fig


def _sinusoidal_pe(length: int, d_model: int) -> np.ndarray:
    """The library's sinusoidal table (§3.5), for figures that need a default input."""
    import torch  # imported only when a figure needs the default table

    from ..components.positional import sinusoidal_positional_encoding

    return sinusoidal_positional_encoding(length, d_model, dtype=torch.float64).numpy()


@_styled
def plot_embedding_norms(
    embeddings: Any,
    pe: Any | None = None,
    title: str = "Vector lengths: token embeddings and positional encodings",
    *,
    ax: Axes | None = None,
    scale: float | None = None,
) -> Figure:
    """Euclidean norms of token embeddings, before and after ``× √d_model``, vs the PE (ch. 2).

    The encoder input is ``embedding · √d_model + PE`` (§3.4). Bars show the mean
    norm per vector with the range (min to max) as whiskers, so one sees whether
    the positional signal would drown out the token or the other way round.

    Args:
        embeddings: ``(V, D)`` embedding matrix (e.g. ``model.embedding.weight``)
            or any ``(N, D)`` batch of token vectors.
        pe: ``(L, D)`` positional encodings; default the paper's sinusoids for 100
            positions.
        scale: the multiplier, default ``√D``.
    """
    func = "plot_embedding_norms"
    emb = _squeeze_to(embeddings, 2, "embeddings", func, "(V, D)").astype(float)
    d_model = emb.shape[1]
    pos = _sinusoidal_pe(100, d_model) if pe is None else _squeeze_to(pe, 2, "pe", func, "(L, D)")
    if pos.shape[1] != d_model:
        raise ValueError(f"{func}: embeddings have D = {d_model} but pe has D = {pos.shape[1]}.")
    scale = math.sqrt(d_model) if scale is None else float(scale)
    groups = [
        ("token embedding", np.linalg.norm(emb, axis=1)),
        (f"token embedding\n× √d_model = {scale:.3g}", np.linalg.norm(emb, axis=1) * scale),
        ("positional\nencoding", np.linalg.norm(pos.astype(float), axis=1)),
    ]
    means = np.array([g[1].mean() for g in groups])
    lows = np.maximum(0.0, means - np.array([g[1].min() for g in groups]))
    highs = np.maximum(0.0, np.array([g[1].max() for g in groups]) - means)  # rounding
    fig, ax = _figure_and_axes(ax, (7.0, 4.6))
    x = np.arange(len(groups))
    bars = ax.bar(
        x,
        means,
        yerr=[lows, highs],
        capsize=6,
        color=[OKABE_ITO[0], OKABE_ITO[1], OKABE_ITO[2]],
        edgecolor="black",
        linewidth=0.6,
        width=0.6,
    )
    ax.bar_label(
        bars,
        labels=[f"{m:.3g}" for m in means],
        label_type="center",
        color="white",
        fontweight="bold",
    )
    ax.set_xticks(x)
    ax.set_xticklabels([g[0] for g in groups])
    if means.max() / max(means.min(), 1e-12) > 20:
        ax.set_yscale("log")
    ax.set_ylabel("norm per vector (mean, min–max)")
    ax.set_xlabel(f"vectors of dimension d_model = {d_model}")
    ax.set_title(title)
    ax.grid(axis="y", alpha=0.3)
    return fig


@_styled
def plot_vocab_sizes(
    sizes: Any,
    d_model: int,
    shipped: int,
    rest: int | None = None,
) -> Figure:
    """What a vocabulary's size buys and costs, for tokenizers trained alike (chapter 2).

    Two panels over the vocabulary size ``V`` (log scale): the mean tokens per sentence
    of each language, and the embedding table's ``V × d_model`` parameters; a dotted
    line marks the shipped size in both.

    Args:
        sizes: rows as in ``data/vocab_sizes.json`` (``"sizes"``): each with
            ``vocab_size`` and ``tokens_per_sentence_<language>``.
        d_model: the model's width, for the table's parameters.
        shipped: the shipped tokenizer's vocabulary size.
        rest: if given, the parameters of the rest of the model, drawn as a line.
    """
    rows = sorted(sizes, key=lambda r: r["vocab_size"])
    if not rows:
        raise ValueError("plot_vocab_sizes: no sizes to plot.")
    v = np.array([r["vocab_size"] for r in rows])
    langs = [k.removeprefix("tokens_per_sentence_") for k in rows[0] if k.startswith("tokens_")]
    fig, (ax0, ax1) = _new_figure((8.4, 3.9), 1, 2)
    for color, marker, lang in zip(OKABE_ITO, "os", langs):
        y = [r[f"tokens_per_sentence_{lang}"] for r in rows]
        ax0.plot(v, y, marker=marker, color=color, label=lang.capitalize())
    ax0.set_ylim(0, None)
    ax0.set_ylabel("tokens per sentence (mean)")
    ax0.set_title("shorter sequences")
    ax0.legend(loc="upper right")
    ax1.plot(v, v * d_model / 1e6, marker="o", color=OKABE_ITO[2], label=f"V × {d_model}")
    if rest is not None:
        ax1.axhline(rest / 1e6, color="0.45", linestyle="--", label="rest of the model")
    ax1.set_ylim(0, None)
    ax1.set_ylabel("embedding table (million parameters)")
    ax1.set_title("a larger table")
    ax1.legend(loc="upper left")
    for ax in (ax0, ax1):
        ax.set_xscale("log")
        ax.set_xticks(v, [f"{x / 1000:g}k" for x in v])
        ax.minorticks_off()
        ax.axvline(shipped, color="black", linestyle=":", linewidth=1.2)
        ax.annotate(
            "shipped",
            (shipped, 0.02),
            xycoords=("data", "axes fraction"),
            xytext=(4, 0),
            textcoords="offset points",
            fontsize=10,
        )
        ax.set_xlabel("vocabulary size V")
        ax.grid(alpha=0.3)
    return fig
