"""How big is the key/value cache? Multi-head, grouped-query, multi-query (chapter 13).

A model that generates keeps the key and the value of every earlier token in every layer.
Per token and layer that is ``2 · G · d_k`` numbers, where ``G`` is the number of key/value
heads: ``G = H`` for the paper's multi-head attention, ``1 < G < H`` for grouped-query
attention, ``G = 1`` for multi-query attention. The explorer draws the cache of one request
against the context length for every ``G`` and spells out the arithmetic for the chosen one.
"""

from __future__ import annotations

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

__all__ = ["kv_cache_bytes", "kv_cache_explorer"]

#: The model of the explorer: 32 layers of 32 query heads of width 128, 16-bit numbers
#: (the size of many 7-billion-parameter models; the chapter's table uses it too).
MODEL = {"n_layers": 32, "n_heads": 32, "d_k": 128, "bytes_per_number": 2}
_STATIC_CONTEXTS = (1_024, 4_096, 16_384, 32_768, 131_072)
_LIVE_CONTEXTS = tuple(2**i for i in range(8, 19))  # 256 ... 262,144


def kv_cache_bytes(
    n_layers: int, n_kv_heads: int, d_k: int, tokens: int, bytes_per_number: int = 2
) -> int:
    """Bytes of the key/value cache of one sequence: ``2 · layers · G · d_k · tokens · bytes``.

    The 2 counts a key and a value; ``n_kv_heads`` is ``G``, the number of key/value heads
    (``H`` for multi-head, 1 for multi-query attention).
    """
    if min(n_layers, n_kv_heads, d_k, bytes_per_number) < 1 or tokens < 0:
        raise ValueError("kv_cache_bytes needs positive sizes and tokens >= 0")
    return 2 * n_layers * n_kv_heads * d_k * tokens * bytes_per_number


def _groups(n_heads: int) -> list[int]:
    """The numbers of key/value heads that divide the query heads: 1, 2, 4, ... H."""
    return [g for g in range(1, n_heads + 1) if n_heads % g == 0]


def _gib(n_bytes: float) -> float:
    return n_bytes / 2**30


def _size(n_bytes: float) -> str:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n_bytes >= scale:
            return f"{n_bytes / scale:,.1f} {unit}"
    return f"{n_bytes:,.0f} bytes"


def _name(g: int, n_heads: int) -> str:
    if g == n_heads:
        return f"G = {g}: multi-head"
    if g == 1:
        return "G = 1: multi-query"
    return f"G = {g}: grouped"


def _cache_gib(n_kv_heads: int, tokens: int, model=MODEL) -> float:
    """The cache of one sequence of ``tokens`` tokens with ``n_kv_heads`` heads, in GiB."""
    return _gib(
        kv_cache_bytes(
            model["n_layers"], n_kv_heads, model["d_k"], tokens, model["bytes_per_number"]
        )
    )


def _cache_figure(n_kv_heads: int, tokens: int, contexts, model=MODEL):
    from matplotlib.ticker import FuncFormatter, LogLocator, NullLocator

    from ..style import OKABE_ITO

    L, H, d_k, nb = model["n_layers"], model["n_heads"], model["d_k"], model["bytes_per_number"]
    groups = _groups(H)
    x = np.geomspace(min(contexts), max(contexts), 60)
    chosen = kv_cache_bytes(L, n_kv_heads, d_k, tokens, nb)
    full = kv_cache_bytes(L, H, d_k, tokens, nb)
    with book_style():
        fig = new_figure((8.4, 4.4), layout="constrained")
        ax, text_ax = fig.subplots(1, 2, width_ratios=[1.35, 1])
        for g in groups:
            sizes = [_gib(kv_cache_bytes(L, g, d_k, int(t), nb)) for t in x]
            mine = g == n_kv_heads
            ax.plot(
                x,
                sizes,
                color=OKABE_ITO[5] if mine else "#BBBBBB",
                linewidth=2.8 if mine else 1.2,
                zorder=3 if mine else 2,
            )
            ax.text(  # every line labelled, just right of the axes
                1.03,
                sizes[-1],
                f"G = {g}",
                va="center",
                fontsize=10,
                color="black" if mine else "#555555",
                fontweight="bold" if mine else "normal",
                transform=ax.get_yaxis_transform(),
                clip_on=False,
            )
        ax.plot(
            [tokens], [_gib(chosen)], "o", color=OKABE_ITO[5], markersize=8, zorder=4, clip_on=False
        )
        ax.axvline(tokens, color="#888888", linestyle=":", linewidth=1)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log", base=2)
        ax.set_xlim(min(contexts), max(contexts))  # the axis ends at the largest context
        low = _gib(kv_cache_bytes(L, 1, d_k, min(contexts), nb))
        high = _gib(kv_cache_bytes(L, H, d_k, max(contexts), nb))
        ax.set_ylim(low / 1.6, high * 1.6)
        # the contexts themselves (every other one when there are many), the largest included
        ax.set_xticks(list(contexts) if len(contexts) <= 6 else list(contexts)[::-2][::-1])
        ax.xaxis.set_minor_locator(NullLocator())
        ax.xaxis.set_major_formatter(
            FuncFormatter(lambda v, _: f"{v / 1024:g}k" if v >= 1024 else f"{v:g}")
        )
        ax.yaxis.set_major_locator(LogLocator(base=8))
        ax.yaxis.set_minor_locator(NullLocator())
        ax.yaxis.set_major_formatter(
            FuncFormatter(lambda v, _: f"{v * 1024:g} MiB" if v < 1 else f"{v:g} GiB")
        )
        ax.grid(alpha=0.3)
        ax.set_xlabel("context length (tokens)")
        ax.set_ylabel("KV cache of one sequence")
        ax.set_title("cache against context length", fontsize=11)
        text_ax.axis("off")
        per_token = 2 * n_kv_heads * d_k
        lines = [
            (_name(n_kv_heads, H), "bold"),
            (f"{H // n_kv_heads} query head{'s' * (H > n_kv_heads)} per key/value head", None),
            ("", None),
            ("per token and layer:", "bold"),
            (f"2 × G × d_k = 2 × {n_kv_heads} × {d_k}", None),
            (f"= {per_token:,} numbers", None),
            ("", None),
            (f"× {L} layers × {tokens:,} tokens", None),
            (f"× {nb} bytes per number", None),
            (f"= {_size(chosen)}", "bold"),
            ("", None),
            (f"multi-head (G = {H}): {_size(full)}", None),
            (
                "the same, G = H"
                if n_kv_heads == H
                else f"grouping saves {1 - chosen / full:.0%} (÷ {H // n_kv_heads})",
                None,
            ),
        ]
        for i, (line, weight) in enumerate(lines):
            text_ax.text(
                0.02,
                0.98 - i * 0.075,
                line,
                fontsize=10.5,
                fontweight=weight or "normal",
                va="top",
                transform=text_ax.transAxes,
            )
        fig.suptitle(
            f"{L} layers, {H} query heads of d_k = {d_k}: cache at {tokens:,} tokens",
            fontsize=12,
        )
    return fig


def kv_cache_explorer(*, static: bool | None = None):
    """The key/value cache of one sequence for ``G`` key/value heads and a context length.

    Chapter 13. The model is :data:`MODEL` (32 layers, 32 query heads of width 128, 16-bit
    numbers). Left: the cache against the context length, one line per ``G`` that divides
    the 32 query heads, the chosen one highlighted; right: the arithmetic
    ``2 · G · d_k · layers · tokens · bytes`` and the saving against multi-head attention.

    Args:
        static: force the precomputed (True) or the live (False) version; default
            :func:`~transformer_lib.views.explorers.frames.static_mode`.

    Returns:
        The explorer. Static: ``G`` ∈ {1, 2, 4, 8, 16, 32} × context ∈ {1,024, 4,096,
        16,384, 32,768, 131,072} (30 frames). Live: the same ``G`` and any power of two
        from 256 to 262,144 tokens.
    """
    widgets = load_ipywidgets()
    H = MODEL["n_heads"]
    groups = _groups(H)
    title = "How big is the key/value cache?"
    description = (
        "Choose how many key/value heads G the 32 query heads share (G = 32: the paper's "
        "multi-head attention; G = 1: multi-query) and slide the context length: the "
        "cache of one sequence, and how it is computed."
    )
    g = widgets.ToggleButtons(
        options=[str(v) for v in groups],
        index=groups.index(8),
        description="G",
        tooltip="number of key/value heads shared by the 32 query heads",
        style={"button_width": "48px"},
    )
    if use_static(static):
        contexts = _STATIC_CONTEXTS
        n = count_slider(contexts, 32_768, "context (tokens)", static=True)
        frames = [
            [figure_to_png(_cache_figure(gv, nv, contexts)) for nv in contexts] for gv in groups
        ]
        return static_explorer(
            title,
            description,
            [g, n],
            {"G": g, "context": n},
            [g, n],
            frames,
            alt="A line chart of the key/value cache of one sequence, in GiB, against the "
            "context length, both axes logarithmic, one line for each number of key/value "
            "heads G from 1 to 32 with the chosen G highlighted and its size marked at the "
            "chosen context length; beside it the arithmetic: 2 × G × d_k numbers per token "
            "and layer, times 32 layers, the tokens and 2 bytes, and the saving against "
            "multi-head attention.",
            describe=lambda i, j: (
                f"G = {groups[i]} at {contexts[j]:,} tokens: the cache of one sequence is "
                f"{_size(_cache_gib(groups[i], contexts[j]) * 2**30)}, against "
                f"{_size(_cache_gib(H, contexts[j]) * 2**30)} for multi-head attention"
            ),
        )
    contexts = _LIVE_CONTEXTS
    n = count_slider(contexts, 32_768, "context (tokens)", static=False)
    memo = LayoutMemo()

    def draw() -> tuple[bytes, str]:
        fig = _cache_figure(int(g.value), n.value, contexts)
        return memo.png(fig, key="cache"), ""

    return live_explorer(title, description, [g, n], {"G": g, "context": n}, draw, [g, n])
