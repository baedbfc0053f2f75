"""The Transformer's architecture diagrams, drawn from patches.

:func:`plot_architecture` redraws the paper's Figure 1 (chapter 1). :func:`plot_data_flow`
unrolls it for one configuration (chapter 8): every layer numbered from 0, the shape of the
tensors between them, the encoder's output (``memory``) feeding the keys and values of every
decoder layer's cross-attention, and which mask each attention uses. Both are built from a
few shapes (a rounded box per sub-layer, arrows, the ⊕ of a sum and the wave of the
positional encoding).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import Ellipse, FancyBboxPatch

from .phone_layout import set_phone_figure
from .style import OKABE_ITO, _figure_and_axes, _styled

__all__ = ["plot_architecture", "plot_data_flow"]


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


def _rounded_box(
    ax: Axes,
    xc: float,
    yc: float,
    w: float,
    h: float,
    colours: tuple[str, str],
    rounding: float = 0.18,
    linewidth: float = 1.6,
    **style,
) -> None:
    """A rounded box of width ``w`` and height ``h`` centred on (xc, yc), in ``colours``
    (face, edge); ``style`` goes to the patch (e.g. ``hatch``, ``linestyle``)."""
    face, edge = colours
    ax.add_patch(
        FancyBboxPatch(
            (xc - w / 2, yc - h / 2),
            w,
            h,
            boxstyle=f"round,pad=0,rounding_size={rounding}",
            facecolor=face,
            edgecolor=edge,
            linewidth=linewidth,
            zorder=3,
            **style,
        )
    )


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
    face, _ = _ARCH_STYLE[kind]
    _rounded_box(ax, xc, yc, w, h, _ARCH_STYLE[kind], hatch=hatch)
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
    Opens chapter 1; chapter 8 unrolls it with :func:`plot_data_flow`.

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


#: The masks of :func:`plot_data_flow`: (colour, line style) of their labels' frames, so
#: that the two kinds differ without colour too.
_MASK_STYLE = {"padding": (OKABE_ITO[0], "-"), "causal": (OKABE_ITO[1], "--")}


def _stack_frame(
    ax: Axes, xc: float, w: float, y0: float, h: float, name: str, fs: float, dropped: bool = False
) -> None:
    """The grey frame around a stack of layers, centred at ``xc``, its name at the top left;
    ``dropped`` draws it dashed and pale (a stack the model does without)."""
    ax.add_patch(
        FancyBboxPatch(
            (xc - w / 2 - 0.12, y0),
            w + 0.24,
            h,
            boxstyle="round,pad=0,rounding_size=0.1",
            facecolor="white" if dropped else "#F2F2F2",
            edgecolor="#9A9A9A",
            linestyle="--" if dropped else "-",
            linewidth=1.0,
            zorder=1,
        )
    )
    ax.text(
        xc - w / 2 - 0.02,
        y0 + h - 0.06,
        name,
        ha="left",
        va="top",
        fontsize=fs,
        fontweight="bold",
        color="#777777" if dropped else "#444444",
        zorder=2,
    )


def _layers_drawn(n: int) -> list[int | None]:
    """The layers a diagram draws of ``n``: all of up to three, else the first, an
    ellipsis (``None``) for the middle ones, and the last."""
    return list(range(n)) if n <= 3 else [0, None, n - 1]


@_styled
def plot_data_flow(
    config,
    ax: Axes | None = None,
    title: str | None = None,
    *,
    narrow: bool = False,
) -> Figure:
    """The data flow through a Transformer of configuration ``config``, layer by layer.

    The paper's Figure 1 (§3.1) unrolled: the encoder's layers on the left, the decoder's
    on the right, each numbered from 0 and each sub-layer in its own box (self-attention,
    cross-attention, feed-forward; the residual addition and LayerNorm around each are
    part of the box). Batch-first shapes label the tensors between them: ``(B, S)``
    source and ``(B, T)`` target ids, the ``(B, S, d_model)`` encoder stream and its
    output ``memory``, the ``(B, T, d_model)`` decoder stream, the ``(B, T, V)`` logits.
    ``memory`` runs up a bus between the stacks into every decoder layer's
    cross-attention as its keys and values, while the queries come from the decoder's
    own stream below. Each attention box names its mask and the mask's shape: the
    source padding mask ``(B, 1, 1, S)`` in the encoder's self-attention and the
    decoder's cross-attention, causal and target padding combined, ``(B, 1, T, T)``, in
    the decoder's self-attention (masks broadcast to ``(B, H, queries, keys)``, chapter
    6). With more than three layers in a stack, the middle ones are one box.

    Args:
        config: a :class:`~transformer_lib.components.config.TransformerConfig`; its
            ``n_encoder_layers``, ``n_decoder_layers``, ``d_model``, ``vocab_size`` and
            ``norm_first`` are drawn.
        ax: axes to draw on (default: a new figure, 8 by about 7 inches).
        title: the figure's title (default: the layer counts and sizes of ``config``).
        narrow: the layout for a phone's column, 4.85 inches wide (its 9-point text at
            9 CSS px there): narrower columns, the masks named shorter ("padding mask",
            "causal + padding"), long labels in two lines. A figure drawn here (``ax``
            None) carries it as its phone version in the static build.

    Returns:
        The figure.

    Example:
        >>> from transformer_lib import TransformerConfig
        >>> fig = plot_data_flow(TransformerConfig.tiny(4000))
        >>> "decoder layer 1" in [t.get_text() for t in fig.axes[0].texts]
        True
    """
    title_arg = title
    enc = _layers_drawn(config.n_encoder_layers)
    dec = _layers_drawn(config.n_decoder_layers)
    fs, fs_small = 10.0, 9.0
    box_h, gap, label_h, pad = 0.5, 0.2, 0.3, 0.08  # inches
    between = 0.42  # between layers: an arrow and the stream's shape
    frame_h = {"encoder": label_h + 2 * box_h + gap + 2 * pad}
    frame_h["decoder"] = label_h + 3 * box_h + 2 * gap + 2 * pad
    ellipsis_h = 0.5
    bottom = 1.25  # ids, arrow, embedding box, arrow

    def stack_height(kind: str, drawn: list[int | None]) -> float:
        heights = [ellipsis_h if i is None else frame_h[kind] for i in drawn]
        return sum(heights) + between * (len(drawn) - 1)

    final_norm = 0.6 if config.norm_first else 0.0  # a stack's final LayerNorm box
    y_top = bottom + final_norm
    y_top += max(stack_height("encoder", enc) + 1.3, stack_height("decoder", dec) + 1.25)
    width = 4.85 if narrow else 8.0
    if narrow:  # two-line boxes and title
        y_top += 0.3
    made = ax is None
    fig, ax = _figure_and_axes(ax, (width, y_top + 0.1))
    ax.set_xlim(0, width)
    ax.set_ylim(0, y_top + 0.1)
    ax.set_aspect("equal")
    ax.axis("off")
    if title is None:
        title = (
            f"Data flow: {config.n_encoder_layers} encoder and {config.n_decoder_layers} "
            f"decoder layers,{chr(10) if narrow else ' '}d_model = {config.d_model}, "
            f"V = {config.vocab_size:,}"
        )
    ax.set_title(title, fontsize=12, pad=6)

    if narrow:
        xe, we, xd, wd, x_bus, mem_half = 1.1, 1.9, 3.67, 2.1, 2.3, 0.8
        padding_src, causal = "padding mask (B, 1, 1, S)", "causal + padding (B, 1, T, T)"
    else:
        xe, we = 1.75, 3.1  # encoder column: centre, box width
        xd, wd = 5.95, 3.3  # decoder column
        x_bus, mem_half = 3.78, 1.0
        padding_src = "source padding mask (B, 1, 1, S)"
        causal = "causal + padding mask (B, 1, T, T)"
    two = "\n" if narrow else " "  # where a long label breaks in the narrow layout

    def box(xc, yc, w, text, kind, mask=None, h=box_h):
        _rounded_box(ax, xc, yc, w, h, _ARCH_STYLE[kind], rounding=0.08, linewidth=1.3)
        if mask is None:
            ax.text(xc, yc, text, ha="center", va="center", fontsize=fs, zorder=4)
            return
        ax.text(xc, yc + 0.11, text, ha="center", va="center", fontsize=fs, zorder=4)
        colour, style = _MASK_STYLE["causal" if "causal" in mask else "padding"]
        ax.text(
            xc,
            yc - 0.12,
            mask,
            ha="center",
            va="center",
            fontsize=fs_small,
            zorder=5,
            bbox=dict(
                boxstyle="round,pad=0.18",
                facecolor="white",
                edgecolor=colour,
                linestyle=style,
                linewidth=1.2,
            ),
        )

    def arrow(x, y0, y1, label=None, left=None):
        """An arrow up from ``y0`` to ``y1``, ``label`` on its right, ``left`` on its left."""
        _path(ax, [(x, y0), (x, y1)])
        for text, side in ((label, 1), (left, -1)):
            if text:
                ax.text(
                    x + side * 0.08,
                    (y0 + y1) / 2,
                    text,
                    ha="left" if side > 0 else "right",
                    va="center",
                    fontsize=fs_small,
                    style="italic",
                    color="#333333",
                )

    def frame(xc, w, y0, h, name):
        _stack_frame(ax, xc, w, y0, h, name, fs)

    def inputs(xc, w, ids, stream):
        ax.text(xc, 0.16, ids, ha="center", va="center", fontsize=fs)
        arrow(xc, 0.3, 0.5)
        if narrow:
            box(xc, 0.74, w, "embedding × √d_model\n+ positions", "embedding", h=0.46)
        else:
            box(xc, 0.72, w, "embedding × √d_model + positions", "embedding", h=0.42)
        arrow(xc, 0.97 if narrow else 0.93, bottom, stream, "Q, K, V")

    # Encoder: self-attention with the source padding mask, then feed-forward.
    inputs(xe, we, "source ids (B, S)", "(B, S, d_model)")
    y = bottom
    for k, i in enumerate(enc):
        if k:
            arrow(xe, y, y + between, "(B, S, d_model)", None if i is None else "Q, K, V")
            y += between
        if i is None:
            frame(xe, we, y, ellipsis_h, f"encoder layers 1 to {config.n_encoder_layers - 2}")
            y += ellipsis_h
            continue
        y0 = y + pad + box_h / 2
        box(xe, y0, we, "self-attention", "attention", padding_src)
        box(xe, y0 + box_h + gap, we, "feed-forward", "ffn")
        arrow(xe, y0 + box_h / 2, y0 + box_h / 2 + gap)
        frame(xe, we, y, frame_h["encoder"], f"encoder layer {i}")
        y += frame_h["encoder"]
    if config.norm_first:
        y_norm = y + 0.35
        arrow(xe, y, y_norm - 0.15)
        box(xe, y_norm + 0.05, we, "final LayerNorm (pre-LN)", "addnorm", h=0.4)
        y = y_norm + 0.25
    y_mem = y + 0.45
    arrow(xe, y, y_mem - 0.14)
    ax.text(
        xe,
        y_mem,
        "memory (B, S, d_model)",
        ha="center",
        va="center",
        fontsize=fs,
        fontweight="bold",
        bbox=dict(boxstyle="round,pad=0.2", facecolor="white", edgecolor=_LINE),
        zorder=4,
    )

    # Decoder: masked self-attention, cross-attention to memory, feed-forward.
    inputs(xd, wd, "target ids, shifted right (B, T)", "(B, T, d_model)")
    y = bottom
    cross_y = []
    for k, i in enumerate(dec):
        if k:
            arrow(xd, y, y + between, "(B, T, d_model)", None if i is None else "Q, K, V")
            y += between
        if i is None:
            frame(xd, wd, y, ellipsis_h, f"decoder layers 1 to {config.n_decoder_layers - 2}")
            cross_y.append(y + ellipsis_h / 2)
            y += ellipsis_h
            continue
        y0 = y + pad + box_h / 2
        box(xd, y0, wd, "masked self-attention", "attention", causal)
        box(xd, y0 + box_h + gap, wd, "cross-attention", "attention", padding_src)
        box(xd, y0 + 2 * (box_h + gap), wd, "feed-forward", "ffn")
        arrow(xd, y0 + box_h / 2, y0 + box_h / 2 + gap, "Q")
        arrow(xd, y0 + 1.5 * box_h + gap, y0 + 1.5 * box_h + 2 * gap)
        cross_y.append(y0 + box_h + gap)
        frame(xd, wd, y, frame_h["decoder"], f"decoder layer {i}")
        y += frame_h["decoder"]
    if config.norm_first:
        arrow(xd, y, y + 0.2)
        box(xd, y + 0.4, wd, "final LayerNorm (pre-LN)", "addnorm", h=0.4)
        y += 0.6
    arrow(xd, y, y + 0.3)
    linear = f"linear (tied to the{two}embedding, §3.4)" if config.share_embeddings else "linear"
    tall = 0.15 if narrow and config.share_embeddings else 0.0  # two lines
    box(xd, y + 0.5 + tall / 2, wd, linear, "linear", h=0.4 + tall)
    arrow(xd, y + 0.7 + tall, y + 0.95 + tall)
    ax.text(
        xd,
        y + 1.07 + tall,
        "logits (B, T, V)",
        ha="center",
        va="center",
        fontsize=fs,
        fontweight="bold",
    )

    residual = (
        "Each box: LayerNorm, the sub-layer,\nthen the residual addition (pre-LN)"
        if config.norm_first
        else "Each box: the sub-layer, the residual\naddition, then LayerNorm (post-LN)"
    )
    ax.text(0.05, y_top - 0.05, residual, ha="left", va="top", fontsize=fs_small, color="#333333")

    # memory → keys and values of every cross-attention
    x_mem_right = xe + mem_half
    _path(ax, [(x_mem_right, y_mem), (x_bus, y_mem)], arrow=False)
    low, high = min(cross_y + [y_mem]), max(cross_y + [y_mem])
    ax.plot([x_bus, x_bus], [low, high], color=_LINE, linewidth=2.2, zorder=2)
    for yc in cross_y:
        _path(ax, [(x_bus, yc), (xd - wd / 2, yc)])
        ax.text(x_bus + 0.06, yc + 0.05, "K, V", fontsize=fs_small, style="italic", va="bottom")
    if made and not narrow:  # on a phone, the narrow layout (drawn only in the static build)
        set_phone_figure(fig, lambda: plot_data_flow(config, title=title_arg, narrow=True))
    return fig
