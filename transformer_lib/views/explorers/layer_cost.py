"""The paper's Table 1 for one sequence length n and width d: cost and path length (ch. 1)."""

from __future__ import annotations

import math

import numpy as np

from .frames import (
    LayoutMemo,
    book_style,
    count_slider,
    figure_to_png,
    live_explorer,
    load_ipywidgets,
    new_figure,
    static_explorer,
    use_static,
)

__all__ = ["layer_cost_explorer", "layer_costs"]


_STATIC_LENGTHS = (8, 32, 128, 512, 2048, 8192)
_STATIC_WIDTHS = (128, 512, 1024)
_LIVE_LENGTHS = tuple(2**i for i in range(2, 15))  # 4 ... 16384
_LIVE_WIDTHS = (64, 128, 256, 512, 1024, 2048)
_KINDS = ("self-attention", "recurrent", "convolution")


def layer_costs(n: int, d: int, kernel_size: int = 3) -> dict[str, tuple[float, int, int]]:
    """Table 1 of the paper for one ``n`` and ``d``, constants dropped as in its O-notation.

    Returns ``{kind: (operations per layer, sequential operations, maximum path length)}``
    for ``"self-attention"`` (``n²·d``, 1, 1), ``"recurrent"`` (``n·d²``, ``n``, ``n``)
    and ``"convolution"`` (``k·n·d²``, 1, ``⌈log_k n⌉``: dilated kernels of width ``k``).
    """
    if n < 1 or d < 1 or kernel_size < 2:
        raise ValueError("layer_costs needs n >= 1, d >= 1 and kernel_size >= 2")
    conv_path = max(1, math.ceil(math.log(n) / math.log(kernel_size) - 1e-9)) if n > 1 else 1
    return {
        "self-attention": (float(n) ** 2 * d, 1, 1),
        "recurrent": (float(n) * d**2, n, n),
        "convolution": (float(kernel_size) * n * d**2, 1, conv_path),
    }


def _words(x: float) -> str:
    """A count for a bar label, in words past a million: ``8.6 billion``."""
    for value, name in ((1e12, "trillion"), (1e9, "billion"), (1e6, "million")):
        if x >= value:
            return f"{x / value:.3g} {name}"
    return f"{x:,.0f}"


def _si(x: float, _pos: object = None) -> str:
    """Tick label without superscripts (they would be too small to read): 10k, 1M, 1G."""
    for value, suffix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if x >= value:
            return f"{x / value:g}{suffix}"
    return f"{x:g}"


def _cost_figure(n: int, d: int, kernel_size: int, lengths, widths):
    from matplotlib.ticker import FuncFormatter, LogLocator, NullLocator

    from ..phone_layout import set_phone_aspect
    from ..style import LAYER_STYLES

    costs = layer_costs(n, d, kernel_size)
    # Fixed axis ranges over every state, so that moving a control moves the bars.
    top_ops = max(layer_costs(max(lengths), max(widths), kernel_size)[k][0] for k in _KINDS)
    low_ops = min(layer_costs(min(lengths), min(widths), kernel_size)[k][0] for k in _KINDS)
    top_path = max(lengths)
    y = np.arange(len(_KINDS))
    colours = [LAYER_STYLES[k]["color"] for k in _KINDS]
    labels = ["self-attention", "recurrent", f"convolution\n(k = {kernel_size}, dilated)"]
    with book_style():
        fig = new_figure((8.4, 3.9), layout="constrained")
        axes = fig.subplots(1, 3, sharey=True, width_ratios=[1.5, 1, 1])
        columns = [
            ("operations per layer", 0, (low_ops / 3, top_ops * 1000)),
            ("sequential operations", 1, (0.6, top_path * 60)),
            ("maximum path length", 2, (0.6, top_path * 60)),
        ]
        for ax, (name, col, lim) in zip(axes, columns):
            values = [costs[k][col] for k in _KINDS]
            ax.barh(y, [v - lim[0] for v in values], left=lim[0], color=colours, height=0.6)
            for yi, v in zip(y, values):
                ax.text(v * 1.25, yi, _words(v), va="center", ha="left", fontsize=10)
            ax.set_xscale("log")
            ax.set_xlim(*lim)
            ax.set_title(name, fontsize=11)
            ax.grid(axis="x", alpha=0.3)
            ax.xaxis.set_major_locator(LogLocator(base=100 if col == 0 else 10, numticks=6))
            ax.xaxis.set_minor_locator(NullLocator())
            ax.xaxis.set_major_formatter(FuncFormatter(_si))
        axes[0].set_xlabel("multiply-adds (order of)")
        axes[1].set_xlabel("steps in order")
        axes[2].set_xlabel("steps between positions")
        axes[0].set_yticks(y, labels)
        axes[0].set_ylim(len(_KINDS) - 0.5, -0.5)
        axes[0].set_ylabel("layer type")
        ratio = costs["recurrent"][0] / costs["self-attention"][0]
        verdict = (
            f"self-attention does {ratio:.3g}× fewer operations than recurrence"
            if ratio > 1
            else f"self-attention does {1 / ratio:.3g}× more operations than recurrence"
            if ratio < 1
            else "self-attention and recurrence cost the same"
        )
        set_phone_aspect(fig, 0.62)  # stacked on a phone: three bars need no square panel
        fig.suptitle(f"n = {n:,} tokens, d = {d:,}: {verdict} (n/d = {n / d:.3g})", fontsize=12)
    return fig


def layer_cost_explorer(kernel_size: int = 3, *, static: bool | None = None):
    """Table 1 of the paper as bars for one sequence length ``n`` and width ``d``.

    Chapter 1 (§4). Three panels: operations per layer (``n²·d`` for self-attention,
    ``n·d²`` for recurrence, ``k·n·d²`` for a convolution), sequential operations and
    the maximum path length between two positions, each on a logarithmic axis that stays
    fixed as the controls move. Self-attention is the cheaper layer exactly when
    ``n < d``.

    Args:
        kernel_size: the convolution's kernel width ``k`` (dilated, path ``⌈log_k n⌉``).
        static: force the precomputed (True) or the live (False) version; default
            :func:`~transformer_lib.views.explorers.frames.static_mode`.

    Returns:
        The explorer. Live: ``n`` over the powers of two from 4 to 16,384 and ``d`` from
        64 to 2,048. Static: ``n`` ∈ {8, 32, 128, 512, 2048, 8192} × ``d`` ∈ {128, 512,
        1024} (18 frames).
    """
    widgets = load_ipywidgets()
    title = "Table 1 for your own n and d"
    description = (
        "Slide the sequence length n and choose the width d: which layer does fewer "
        "operations, and how many steps separate two positions?"
    )
    if use_static(static):
        lengths, widths = _STATIC_LENGTHS, _STATIC_WIDTHS
        n = count_slider(lengths, 128, "n (tokens)", static=True)
        d = widgets.ToggleButtons(
            options=[f"{v:,}" for v in widths],
            index=widths.index(512) if 512 in widths else 0,
            description="d",
            tooltip="the representation width d",
            style={"button_width": "70px"},
        )
        frames = [
            [figure_to_png(_cost_figure(nv, dv, kernel_size, lengths, widths)) for dv in widths]
            for nv in lengths
        ]
        return static_explorer(
            title,
            description,
            [n, d],
            {"n": n, "d": d},
            [n, d],
            frames,
            alt="Three horizontal bar charts for self-attention, recurrence and convolution "
            "at the chosen n and d: operations per layer, sequential operations and maximum "
            "path length, on logarithmic axes.",
        )
    lengths, widths = _LIVE_LENGTHS, _LIVE_WIDTHS
    n = count_slider(lengths, 128, "n (tokens)", static=False)
    d = widgets.Dropdown(
        options=[(f"{v:,}", v) for v in widths],
        value=512,
        description="d",
        tooltip="the representation width d",
        layout=widgets.Layout(width="160px"),
    )
    memo = LayoutMemo()

    def draw() -> tuple[bytes, str]:
        fig = _cost_figure(n.value, d.value, kernel_size, lengths, widths)
        return memo.png(fig, key="cost"), ""

    return live_explorer(title, description, [widgets.HBox([n, d])], {"n": n, "d": d}, draw, [n, d])
