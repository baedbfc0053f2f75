"""The Transformer's architecture diagram, the paper's Figure 1, drawn from patches.

Opens chapter 1 and returns in chapter 8. The diagram is built from a few shapes (a
rounded box per sub-layer, arrows, the ⊕ of a sum and the wave of the positional
encoding), placed by :func:`plot_architecture`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import Ellipse, FancyBboxPatch

from .style import _figure_and_axes, _styled

__all__ = ["plot_architecture"]


_LINE = "#333333"  # arrows and outlines in diagrams
_ARCH_STYLE = {
    # kind: (face, edge). Light tints of the Okabe-Ito colours keep black text readable.
    "embedding": ("#EBC9DC", "#CC79A7"),
    "attention": ("#F5CF99", "#E69F00"),
    "addnorm": ("#F6F1A8", "#B8A800"),
    "ffn": ("#A9D8F4", "#2B8CC4"),
    "linear": ("#EBC9DC", "#CC79A7"),
    "softmax": ("#99D8C7", "#009E73"),
}


def _box(
    ax: Axes,
    xc: float,
    yc: float,
    w: float,
    h: float,
    text: str,
    kind: str,
    hatch: str | None = None,
) -> tuple[float, float]:
    face, edge = _ARCH_STYLE[kind]
    ax.add_patch(
        FancyBboxPatch(
            (xc - w / 2, yc - h / 2),
            w,
            h,
            boxstyle="round,pad=0,rounding_size=0.18",
            facecolor=face,
            edgecolor=edge,
            linewidth=1.6,
            hatch=hatch,
            zorder=3,
        )
    )
    ax.text(
        xc,
        yc,
        text,
        ha="center",
        va="center",
        fontsize=10.5,
        zorder=4,
        bbox=dict(facecolor=face, edgecolor="none", pad=0.5) if hatch else None,
    )
    return yc - h / 2, yc + h / 2


def _path(ax: Axes, points: Sequence[tuple[float, float]], arrow: bool = True) -> None:
    """A polyline through ``points``; an arrowhead on the last segment if ``arrow``."""
    pts = list(points)
    if len(pts) > 2 or not arrow:
        xs, ys = zip(*(pts[:-1] if arrow else pts))
        ax.plot(xs, ys, color=_LINE, linewidth=1.4, solid_capstyle="round", zorder=2)
    if arrow:
        ax.annotate(
            "",
            xy=pts[-1],
            xytext=pts[-2],
            arrowprops=dict(
                arrowstyle="-|>", color=_LINE, lw=1.4, shrinkA=0, shrinkB=0, mutation_scale=12
            ),
            zorder=2,
        )


def _circle(ax: Axes, x: float, y: float, r: float, sx: float) -> None:
    """A circle of radius ``r`` (in y units) on axes whose x units are drawn ``sx`` as wide."""
    ax.add_patch(
        Ellipse(
            (x, y), 2 * r / sx, 2 * r, facecolor="white", edgecolor=_LINE, linewidth=1.3, zorder=3
        )
    )


def _positional_glyph(ax: Axes, x: float, y: float, r: float = 0.32, sx: float = 1.0) -> None:
    _circle(ax, x, y, r, sx)
    t = np.linspace(-1, 1, 50)
    ax.plot(
        x + 0.8 * r * t / sx,
        y + 0.45 * r * np.sin(np.pi * t * 1.5),
        color=_LINE,
        linewidth=1.2,
        zorder=4,
    )


def _plus(ax: Axes, x: float, y: float, r: float = 0.26, sx: float = 1.0) -> None:
    _circle(ax, x, y, r, sx)
    ax.plot([x - 0.6 * r / sx, x + 0.6 * r / sx], [y, y], color=_LINE, linewidth=1.3, zorder=4)
    ax.plot([x, x], [y - 0.6 * r, y + 0.6 * r], color=_LINE, linewidth=1.3, zorder=4)


@_styled
def plot_architecture(
    n_layers_label: str = "N×",
    ax: Axes | None = None,
    title: str = "The Transformer: encoder (left) and decoder (right)",
    *,
    compact: bool = False,
) -> Figure:
    """The Transformer's architecture diagram (the paper's Figure 1), drawn from patches.

    Encoder stack on the left, decoder stack on the right, each sub-layer
    colour-coded by type (embedding, attention, add & norm, feed-forward,
    linear, softmax), residual connections drawn around each sub-layer, and the
    encoder output feeding the decoder's cross-attention as keys and values.
    Opens chapter 1 and returns in chapter 8.

    Args:
        n_layers_label: label for the repeated layers, e.g. ``"N×"`` or ``"6×"``.
        compact: draw the diagram three quarters as wide (the text keeps its size), so
            that the figure is under 6.7 inches wide and a page column shows it
            unshrunk. By default it is 8.6 inches wide.
    """
    sx = 0.75 if compact else 1.0  # width on the page of one x unit, in y units
    fig, ax = _figure_and_axes(ax, (6.6 if compact else 8.6, 9.3))
    ax.set_xlim(-0.9, 16.9)
    ax.set_aspect(1 / sx)
    ax.axis("off")
    ax.set_title(title, fontsize=13, pad=10)

    w, h_sub, h_an = 4.2, 1.05, 0.7
    xe, xd = 4.7, 11.7
    split = 0.7  # distance of the Q/K/V split line below an attention box
    qkv = (-1.0, 0.0, 1.0)  # x offsets of V, K, Q into an attention box
    cross_kv = (-1.4, -0.6)  # V, K of the cross-attention: left of the decoder's own stream

    def embed(xc: float, side: int, label: str, caption: str) -> float:
        ax.text(xc, 0.35, caption, ha="center", va="center", fontsize=11)
        _path(ax, [(xc, 0.95 if "\n" not in caption else 1.05), (xc, 1.6)])
        _box(ax, xc, 2.1, w, 1.0, label, "embedding")
        _path(ax, [(xc, 2.6), (xc, 3.24)])
        _plus(ax, xc, 3.5, sx=sx)
        gx = xc + side * 1.35
        _positional_glyph(ax, gx, 3.5, sx=sx)
        _path(ax, [(gx - side * 0.32 / sx, 3.5), (xc + side * 0.26 / sx, 3.5)])
        ax.text(
            gx + side * 0.5 / sx,
            3.5,
            "Positional\nEncoding",
            ha="left" if side > 0 else "right",
            va="center",
            fontsize=10.5,
        )
        return 3.76  # top of the ⊕

    def stack(xc: float, side: int, blocks: list[tuple[str, str, str | None]], y0: float):
        """Draw sub-layers from ``y0`` up; ``side`` = -1 puts residual paths on the left."""
        x_res = xc + side * (w / 2 + 0.45)
        y = y0
        tops = {}
        for idx, (kind, label, hatch) in enumerate(blocks):
            y_split = y + 0.5
            bottom = y_split + split
            _, top = _box(ax, xc, bottom + h_sub / 2, w, h_sub, label, kind, hatch)
            an_bottom = top + 0.45
            _box(ax, xc, an_bottom + h_an / 2, w, h_an, "Add & Norm", "addnorm")
            y_an = an_bottom + h_an / 2
            if kind == "attention" and hatch is None and idx > 0:  # cross-attention
                _path(ax, [(xc, y), (xc, y_split), (xc + qkv[2], y_split), (xc + qkv[2], bottom)])
                tops["cross"] = (bottom, y_split)
                ax.text(xc + qkv[2] + 0.1, bottom - 0.3, "Q", fontsize=9, style="italic")
            elif kind == "attention":
                _path(ax, [(xc, y), (xc, y_split)], arrow=False)
                _path(ax, [(xc + qkv[0], y_split), (xc + qkv[2], y_split)], arrow=False)
                for off, name in zip(qkv, "VKQ"):
                    _path(ax, [(xc + off, y_split), (xc + off, bottom)])
                    ax.text(xc + off + 0.1, bottom - 0.3, name, fontsize=9, style="italic")
            else:
                _path(ax, [(xc, y), (xc, bottom)])
            # residual: from below the sub-layer around it into Add & Norm
            _path(ax, [(xc, y_split), (x_res, y_split), (x_res, y_an), (xc + side * w / 2, y_an)])
            _path(ax, [(xc, top), (xc, an_bottom)])
            y = an_bottom + h_an
        return y, tops

    def frame(xc: float, y0: float, y1: float, side: int, name: str) -> None:
        pad = w / 2 + 0.8
        ax.add_patch(
            FancyBboxPatch(
                (xc - pad, y0),
                2 * pad,
                y1 - y0,
                boxstyle="round,pad=0,rounding_size=0.35",
                facecolor="#F2F2F2",
                edgecolor="#9A9A9A",
                linewidth=1.2,
                zorder=1,
            )
        )
        x_out = xc + side * (pad + 0.25)
        ha = "left" if side > 0 else "right"
        ax.text(
            x_out, (y0 + y1) / 2, n_layers_label, fontsize=15, fontweight="bold", ha=ha, va="center"
        )
        ax.text(x_out, y1, name, fontsize=12, fontweight="bold", ha=ha, va="top", color="#444444")

    # Encoder
    y_in = embed(xe, -1, "Input\nEmbedding", "Inputs")
    enc_blocks = [("attention", "Multi-Head\nAttention", None), ("ffn", "Feed\nForward", None)]
    stack_bottom = y_in + 0.25
    y_top_e, _ = stack(xe, -1, enc_blocks, y_in)
    frame(xe, stack_bottom, y_top_e + 0.35, -1, "Encoder")

    # Decoder
    y_in_d = embed(xd, +1, "Output\nEmbedding", "Outputs\n(shifted right)")
    dec_blocks = [
        ("attention", "Masked\nMulti-Head\nAttention", "////"),
        ("attention", "Multi-Head\nAttention", None),
        ("ffn", "Feed\nForward", None),
    ]
    y_top_d, tops = stack(xd, +1, dec_blocks, y_in_d)
    frame(xd, stack_bottom, y_top_d + 0.35, +1, "Decoder")

    # Encoder output -> keys and values of the decoder's cross-attention
    cross_bottom, cross_split = tops["cross"]
    y_kv = cross_split + 0.3  # above the decoder's split line, so the paths never cross
    x_mid = (xe + xd) / 2
    y_route = y_top_e + 0.9
    _path(
        ax,
        [
            (xe, y_top_e),
            (xe, y_route),
            (x_mid, y_route),
            (x_mid, y_kv),
            (xd + cross_kv[1], y_kv),
            (xd + cross_kv[1], cross_bottom),
        ],
    )
    _path(ax, [(xd + cross_kv[0], y_kv), (xd + cross_kv[0], cross_bottom)])
    for off, name in zip(cross_kv, "VK"):
        ax.text(xd + off + 0.1, cross_bottom - 0.3, name, fontsize=9, style="italic")
    ax.text(
        (xe + x_mid) / 2 + 0.3,
        y_route + 0.12,
        "encoder output",
        fontsize=9.5,
        ha="center",
        va="bottom",
        color="#444444",
    )

    # Output head
    y = y_top_d + 0.35
    _path(ax, [(xd, y_top_d), (xd, y + 0.5)])
    _, top = _box(ax, xd, y + 0.5 + 0.35, w, 0.7, "Linear", "linear")
    _path(ax, [(xd, top), (xd, top + 0.45)])
    _, top = _box(ax, xd, top + 0.45 + 0.35, w, 0.7, "Softmax", "softmax")
    _path(ax, [(xd, top), (xd, top + 0.5)])
    ax.text(xd, top + 0.85, "Output\nProbabilities", ha="center", va="center", fontsize=11)
    ax.set_ylim(-0.2, top + 1.6)
    return fig
