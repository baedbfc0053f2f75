"""Line charts: measured curves, and how cost and attention scores grow with size.

:func:`plot_curves` draws any ``{label: values}`` against one x axis (chapters 1, 3, 7, 9,
10, 12). :func:`plot_recurrence_vs_attention` is the paper's Table 1 as curves against the
sequence length (chapter 1); :func:`plot_dot_product_variance` and
:func:`plot_softmax_saturation` show, against ``d_k``, why the scores are divided by
``√d_k`` (chapter 3).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

from .phone_layout import set_phone_narrow
from .style import (
    LAYER_STYLES,
    OKABE_ITO,
    SCALING_STYLES,
    _figure_and_axes,
    _new_figure,
    _styled,
    _to_numpy,
)

__all__ = [
    "plot_curves",
    "plot_recurrence_vs_attention",
    "plot_dot_product_variance",
    "plot_softmax_saturation",
]


_MARKERS = ("o", "s", "^", "D", "v", "P")
_DEFAULT_DKS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)


def _power_of_two_axis(ax: Axes, dks: np.ndarray) -> None:
    ax.set_xscale("log", base=2)
    ax.set_xticks(dks)
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.xaxis.set_minor_formatter(NullFormatter())


@_styled
def plot_curves(
    x: Any,
    series: Mapping[str, Any],
    *,
    xlabel: str,
    ylabel: str,
    title: str,
    logx: bool = False,
    logy: bool = False,
    ax: Axes | None = None,
    styles: Mapping[str, Mapping[str, Any]] | None = None,
) -> Figure:
    """Several measured curves over one x axis, one colour and marker each (chapters 1, 3).

    Args:
        x: ``(N,)`` positions on the x axis.
        series: ``{label: (N,) values}``, drawn in the Okabe-Ito order.
        xlabel, ylabel, title: axis labels and title (required: a figure without
            them does not say what it measures).
        logx, logy: logarithmic axes; an x axis of powers of two gets base-2 ticks.
        styles: ``{label: matplotlib line keywords}`` for some series, e.g. the book's
            :data:`~transformer_lib.views.style.LAYER_STYLES` entry for a kind of layer,
            so that the same thing has the same colour and marker in every figure.
            Series not listed take the next colour and marker of the default order.

    Example:
        >>> fig = plot_curves([1, 2, 4], {"a": [1, 2, 3]}, xlabel="n", ylabel="t",
        ...                   title="demo")  # doctest: +SKIP
    """
    xs = _to_numpy(x).astype(float)
    if xs.ndim != 1:
        raise ValueError(f"plot_curves: x must be 1-D, got shape {tuple(xs.shape)}.")
    if not series:
        raise ValueError("plot_curves: series is empty; pass {label: values}.")
    fig, ax = _figure_and_axes(ax, (7.5, 4.4))
    for idx, (label, values) in enumerate(series.items()):
        ys = _to_numpy(values).astype(float)
        if ys.shape != xs.shape:
            raise ValueError(
                f"plot_curves: series {label!r} has shape {tuple(ys.shape)}, x has "
                f"{tuple(xs.shape)}; give one value per x."
            )
        style = {
            "marker": _MARKERS[idx % len(_MARKERS)],
            "markersize": 4 if xs.size > 20 else 6,
            "color": OKABE_ITO[idx % len(OKABE_ITO)],
            "linewidth": 2,
            **dict((styles or {}).get(label, {})),
        }
        ax.plot(xs, ys, label=str(label), **style)
    if logx:
        if np.all(xs > 0) and np.allclose(np.log2(xs), np.round(np.log2(xs))):
            _power_of_two_axis(ax, xs)
        else:
            ax.set_xscale("log")
    if logy:
        ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(alpha=0.3, which="major")
    ax.legend()
    if len(fig.axes) == 1:  # a phone shows the one panel narrower, not scrolling
        set_phone_narrow(fig)
    return fig


@_styled
def plot_recurrence_vs_attention(
    seq_lens: Sequence[int] | None = None,
    d_model: int = 512,
    title: str = "Self-attention vs recurrence and convolution (paper, Table 1)",
    *,
    kernel_size: int = 3,
    include_convolution: bool = True,
) -> Figure:
    """Per-layer cost against sequence length ``n`` for recurrent, convolutional and
    self-attention layers, after the paper's Table 1 (chapter 1).

    Three panels, log-log: sequential operations (what cannot run in parallel) and
    maximum path length between any two positions (what long-range dependencies must
    travel) side by side, and below them, across the full width, operations per layer
    (``n·d²`` for recurrence vs ``n²·d`` for self-attention; self-attention is cheaper
    while ``n < d``). Constants are dropped, as in the table's O-notation. Colours are the
    book's :data:`~transformer_lib.views.style.LAYER_STYLES`. The figure is 6.7 inches
    wide, so that a page column shows it at full size.

    Args:
        seq_lens: sequence lengths ``n`` (default 1 to 4096).
        d_model: representation size ``d``.
        kernel_size: ``k`` for the (dilated) convolution, path length ``log_k n``.
    """
    n = (
        np.unique(np.geomspace(1, 4096, 120).round())
        if seq_lens is None
        else _to_numpy(seq_lens).astype(float)
    )
    d = float(d_model)
    series = [
        ("recurrent", "recurrent", n, n, n * d**2),
        ("self-attention", "self-attention", np.ones_like(n), np.ones_like(n), n**2 * d),
    ]
    if include_convolution:
        path = np.maximum(1.0, np.ceil(np.log(np.maximum(n, 1)) / np.log(kernel_size) - 1e-9))
        series.append(
            (
                f"convolution (k = {kernel_size}, dilated)",
                "convolution",
                np.ones_like(n),
                path,
                kernel_size * n * d**2,
            )
        )
    fig, axes = _new_figure((6.7, 6.9), 2, 2, height_ratios=[1, 1.15])
    gs = axes[1, 0].get_gridspec()
    for ax in axes[1]:
        ax.remove()
    bottom = fig.add_subplot(gs[1, :])
    panels = [
        (axes[0, 0], "Sequential operations", "operations in order"),
        (axes[0, 1], "Maximum path length", "steps between positions"),
        (bottom, "Operations per layer", "multiply-adds (order of)"),
    ]
    for col, (ax, name, ylabel) in enumerate(panels):
        for label, kind, *values in series:
            style = LAYER_STYLES[kind]
            # Where the dashed convolution line lies on self-attention's (at 1), a wider
            # self-attention line underneath keeps both visible.
            wide = include_convolution and kind == "self-attention" and col == 0
            ax.plot(
                n,
                values[col],
                color=style["color"],
                linestyle=style["linestyle"],
                linewidth=4.5 if wide else 2.2,
                label=label,
            )
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(name)
        ax.set_xlabel("sequence length n (tokens)")
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3, which="major")
        ax.yaxis.set_major_locator(LogLocator(base=10, numticks=5 if col < 2 else 8))
        ax.xaxis.set_major_locator(LogLocator(base=10, numticks=5))
    if include_convolution:
        axes[0, 0].annotate(
            "self-attention and\nconvolution: both 1",
            xy=(n[-1], 1.0),
            xytext=(0, 8),
            textcoords="offset points",
            ha="right",
            va="bottom",
            fontsize=10,
            color="#444444",
        )
    bottom.axvline(d, color="#666666", linestyle=":", linewidth=1.2)
    bottom.annotate(
        f"n = d = {d_model}",
        xy=(d, 0.04),
        xycoords=("data", "axes fraction"),
        xytext=(-4, 0),
        textcoords="offset points",
        ha="right",
        fontsize=10,
        color="#444444",
    )
    handles, labels = bottom.get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncols=len(series), frameon=False)
    fig.suptitle(title)
    from .phone_layout import set_phone_aspect

    # Stacked on a phone, the wide bottom panel would keep its flat desktop shape.
    set_phone_aspect(fig, 0.75)
    return fig


@_styled
def plot_dot_product_variance(
    dks: Sequence[int] | None = None,
    variances: Sequence[float] | None = None,
    scaled_variances: Sequence[float] | None = None,
    title: str = "Why scale by 1/√d_k: variance of the attention score",
    *,
    ax: Axes | None = None,
    n_samples: int = 2000,
    seed: int = 0,
) -> Figure:
    """Variance of ``q · k`` against ``d_k``, with and without the ``1/√d_k`` scale (ch. 3).

    For ``q, k`` with independent unit-variance entries, ``Var(q · k) = d_k``
    (§3.2.1, footnote 4); dividing by ``√d_k`` brings it back to 1. Both axes
    are logarithmic; dashed lines show the theory.

    Args:
        dks: key dimensions (default 1, 2, 4, ..., 1024).
        variances: measured ``Var(q · k)`` per ``d_k``; if omitted, estimated here
            from ``n_samples`` random Gaussian pairs.
        scaled_variances: measured ``Var(q · k / √d_k)``; default ``variances / d_k``.
    """
    dk = np.asarray(_DEFAULT_DKS if dks is None else _to_numpy(dks), dtype=float)
    if variances is None:
        rng = np.random.default_rng(seed)
        var = np.array(
            [
                np.var(np.einsum("nd,nd->n", *rng.standard_normal((2, n_samples, int(d)))))
                for d in dk
            ]
        )
    else:
        var = _to_numpy(variances).astype(float)
    scaled = var / dk if scaled_variances is None else _to_numpy(scaled_variances).astype(float)
    if not var.shape == scaled.shape == dk.shape:
        raise ValueError("plot_dot_product_variance: dks and variances must have the same length.")
    fig, ax = _figure_and_axes(ax, (7.5, 4.6))
    ax.plot(dk, dk, color="#888888", linestyle="--", linewidth=1.2, label="theory: Var = d_k")
    ax.plot(
        dk, np.ones_like(dk), color="#888888", linestyle=":", linewidth=1.4, label="theory: Var = 1"
    )
    ax.plot(dk, var, linewidth=2, label="q · k (unscaled)", **SCALING_STYLES["unscaled"])
    ax.plot(dk, scaled, linewidth=2, label="q · k / √d_k (scaled)", **SCALING_STYLES["scaled"])
    _power_of_two_axis(ax, dk)
    ax.set_yscale("log")
    ax.set_xlabel("key dimension d_k")
    ax.set_ylabel("variance of the attention score")
    ax.set_title(title)
    ax.grid(alpha=0.3, which="major")
    ax.legend(loc="upper left")
    if len(fig.axes) == 1:  # a phone shows the one panel narrower, not scrolling
        set_phone_narrow(fig)
    return fig


@_styled
def plot_softmax_saturation(
    dks: Sequence[int] | None = None,
    max_weights: Sequence[float] | None = None,
    max_weights_scaled: Sequence[float] | None = None,
    title: str = "Unscaled scores saturate the softmax",
    *,
    ax: Axes | None = None,
    n_keys: int = 10,
    n_samples: int = 500,
    seed: int = 0,
) -> Figure:
    """Mean largest softmax weight against ``d_k``, unscaled vs scaled scores (chapter 3).

    With unscaled scores the largest weight approaches 1 as ``d_k`` grows: the
    softmax turns into a hard arg-max whose gradients vanish. With ``1/√d_k`` it
    stays put.

    Args:
        dks: key dimensions (default 1, 2, 4, ..., 1024).
        max_weights, max_weights_scaled: measured values per ``d_k``; if omitted
            they are estimated here from ``n_samples`` random queries, each over
            ``n_keys`` random keys with unit-Gaussian entries.
    """
    dk = np.asarray(_DEFAULT_DKS if dks is None else _to_numpy(dks), dtype=float)
    if max_weights is None or max_weights_scaled is None:
        rng = np.random.default_rng(seed)
        raw, scaled = [], []
        for d in dk.astype(int):
            q = rng.standard_normal((n_samples, 1, d))
            k = rng.standard_normal((n_samples, n_keys, d))
            scores = (q * k).sum(-1)  # (n_samples, n_keys)
            for s, out in ((scores, raw), (scores / math.sqrt(d), scaled)):
                p = np.exp(s - s.max(-1, keepdims=True))
                out.append(float((p.max(-1) / p.sum(-1)).mean()))
        computed = (np.array(raw), np.array(scaled))
    m_raw = computed[0] if max_weights is None else _to_numpy(max_weights).astype(float)
    m_scaled = (
        computed[1] if max_weights_scaled is None else _to_numpy(max_weights_scaled).astype(float)
    )
    fig, ax = _figure_and_axes(ax, (7.5, 4.6))
    ax.axhline(1.0, color="#888888", linestyle="--", linewidth=1.2, label="one-hot (arg-max)")
    ax.axhline(
        1 / n_keys, color="#888888", linestyle=":", linewidth=1.4, label=f"uniform (1/{n_keys})"
    )
    ax.plot(dk, m_raw, linewidth=2, label="softmax(q · k)", **SCALING_STYLES["unscaled"])
    ax.plot(dk, m_scaled, linewidth=2, label="softmax(q · k / √d_k)", **SCALING_STYLES["scaled"])
    _power_of_two_axis(ax, dk)
    ax.set_ylim(0, 1.08)
    ax.set_xlabel("key dimension d_k")
    ax.set_ylabel(f"mean largest weight (of {n_keys} keys)")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(loc="center right")
    if len(fig.axes) == 1:  # a phone shows the one panel narrower, not scrolling
        set_phone_narrow(fig)
    return fig
