"""Chapter 12's block diagram: the encoder–decoder beside the decoder-only model.

:func:`plot_decoder_only_diagram` draws the parts the decoder-only model does not keep in
grey and dashed, its one input stream and a small causal mask (rows are queries, columns
keys; blue: may attend, colours of :mod:`~transformer_lib.views.decoder_only`).
"""

from __future__ import annotations

from typing import Any

from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from .style import _new_figure, _styled

__all__ = ["plot_decoder_only_diagram"]

_DROPPED = ("#F2F2F2", "#9A9A9A")  # grey: a part the decoder-only model does not keep


@_styled
def plot_decoder_only_diagram(
    encoder_decoder_config: Any,
    decoder_only_config: Any,
    title: str = "What the decoder-only model keeps of the encoder–decoder",
) -> Figure:
    """The encoder–decoder of chapters 8 to 11 beside the decoder-only model of chapter 12.

    Left (on top on a phone, where the panels stack), the translator: an encoder stack
    reads the English, a decoder stack reads ``<bos>`` and the German, and every decoder
    layer's cross-attention reads the encoder's output. The parts that the decoder-only
    model drops (the whole encoder and every cross-attention) are grey and dashed. Right
    (below on a phone), the decoder-only model: one input stream ``English <sep> German``,
    one stack of blocks (masked self-attention, then the feed-forward network: a decoder
    layer without cross-attention, which is an encoder layer given the causal mask), and
    the output layer tied to the embedding. A small causal mask beside the block shows who
    may read whom (rows are queries, columns keys).

    Args:
        encoder_decoder_config: the translator's configuration (``n_encoder_layers``,
            ``n_decoder_layers``, ``share_embeddings``: a tied output layer).
        decoder_only_config: the decoder-only configuration (``n_decoder_layers``).

    Example:
        >>> from transformer_lib import TransformerConfig
        >>> c = TransformerConfig.tiny(4000)
        >>> fig = plot_decoder_only_diagram(c, c)
        >>> "cross-attention" in [t.get_text() for t in fig.axes[0].texts]
        True
    """

    from .architecture import _ARCH_STYLE, _LINE, _path, _rounded_box, _stack_frame
    from .decoder_only import _COUNTED, _IGNORED  # the chapter's mask colours

    fs, fs_small = 10.0, 9.0
    box_h, gap, label_h, pad = 0.46, 0.18, 0.3, 0.09
    width, height = 9.25, 5.2
    # Two panels (x in inches of the desktop figure): the encoder–decoder on 0.03-4.6,
    # the decoder-only model on 5.0-9.25. A phone shows them one under the other
    # (phone_layout stacks the panels of a grid) at about 0.85 of their desktop size, so
    # the boxes are drawn wide enough for their 10-point labels at that scale too.
    spans = ((0.03, 4.6), (5.0, width))
    fig, axes = _new_figure(
        (width - 0.3, height + 0.1), 1, 2, width_ratios=[b - a for a, b in spans]
    )
    fig.get_layout_engine().set(w_pad=0.01, wspace=0.0)  # the drawing keeps its own gaps
    for panel, span in zip(axes, spans):
        panel.set_xlim(*span)
        panel.set_ylim(0, height)
        panel.set_aspect("equal")
        panel.axis("off")
    ax = axes[0]  # the helpers below draw on ``ax``: the left panel, then the right
    fig.suptitle(title)

    def box(xc, yc, w, text, kind, dropped=False, h=box_h, size=fs):
        colours = _DROPPED if dropped else _ARCH_STYLE[kind]
        _rounded_box(
            ax,
            xc,
            yc,
            w,
            h,
            colours,
            rounding=0.08,
            linewidth=1.3,
            linestyle="--" if dropped else "-",
        )
        ax.text(
            xc,
            yc,
            text,
            ha="center",
            va="center",
            fontsize=size,
            zorder=4,
            color="#777777" if dropped else "black",
        )

    def arrow(x, y0, y1, dropped=False):
        if dropped:
            ax.annotate(
                "",
                xy=(x, y1),
                xytext=(x, y0),
                arrowprops=dict(
                    arrowstyle="-|>", color="#9A9A9A", lw=1.2, linestyle="--", shrinkA=0, shrinkB=0
                ),
                zorder=2,
            )
        else:
            _path(ax, [(x, y0), (x, y1)])

    def frame(xc, w, y0, h, name, dropped=False):
        _stack_frame(ax, xc, w, y0, h, name, fs, dropped)

    bottom = 1.25  # the stacks start here: ids, arrow, embedding box, arrow below

    def inputs(xc, w, ids, dropped=False):
        ax.text(
            xc,
            0.18,
            ids,
            ha="center",
            va="center",
            fontsize=fs,
            color="#777777" if dropped else "black",
        )
        arrow(xc, 0.32, 0.52, dropped)
        if w < 1.8:  # the encoder's narrow column: two lines
            box(xc, 0.74, w, "embedding\n+ positions", "embedding", dropped, 0.46, fs_small)
        else:
            box(xc, 0.74, w, "embedding + positions", "embedding", dropped, h=0.42)
        arrow(xc, 0.95, bottom, dropped)

    def stack(xc, w, boxes, name, dropped=()):
        # boxes: (text, kind) from the bottom; dropped: indices drawn grey
        y0 = bottom + pad + box_h / 2
        for k, (text, kind) in enumerate(boxes):
            yc = y0 + k * (box_h + gap)
            box(xc, yc, w, text, kind, k in dropped)
            if k:
                arrow(xc, yc - box_h / 2 - gap, yc - box_h / 2, k - 1 in dropped and k in dropped)
        h = label_h + len(boxes) * box_h + (len(boxes) - 1) * gap + 2 * pad
        frame(xc, w, bottom, h, name, dropped=len(dropped) == len(boxes))
        return bottom + h, [y0 + k * (box_h + gap) for k in range(len(boxes))]

    def output(xc, w, y, text, tied):
        arrow(xc, y, y + 0.28)
        box(xc, y + 0.5, w, "linear (tied weights)" if tied else "linear", "linear", h=0.42)
        arrow(xc, y + 0.71, y + 0.93)
        ax.text(xc, y + 1.12, text, ha="center", va="center", fontsize=fs)

    ed, do = encoder_decoder_config, decoder_only_config
    # Left: the encoder-decoder, with what is dropped in grey.
    xe, we, xd, wd = 1.02, 1.7, 3.37, 2.1
    ax.text(
        2.3,
        height - 0.12,
        "encoder–decoder (chapters 8 to 11)",
        ha="center",
        va="top",
        fontsize=11,
        fontweight="bold",
    )
    inputs(xe, we, "English", dropped=True)
    top_e, _ = stack(
        xe,
        we,
        [("self-attention", "attention"), ("feed-forward", "ffn")],
        f"encoder layer ×{ed.n_encoder_layers}",
        dropped=(0, 1),
    )
    inputs(xd, wd, "<bos> German")
    top_d, ys = stack(
        xd,
        wd,
        [
            ("masked self-attention", "attention"),
            ("cross-attention", "attention"),
            ("feed-forward", "ffn"),
        ],
        f"decoder layer ×{ed.n_decoder_layers}",
        dropped=(1,),
    )
    output(xd, wd, top_d, "next German token", getattr(ed, "share_embeddings", True))
    # memory: from the top of the encoder into every cross-attention, as keys and values
    x_bus = (xe + we / 2 + xd - wd / 2) / 2
    y_mem = top_e + 0.25
    ax.plot(
        [xe, xe, x_bus, x_bus],
        [top_e, y_mem, y_mem, ys[1]],
        color="#9A9A9A",
        lw=1.2,
        linestyle="--",
        zorder=2,
    )
    arrow(x_bus, ys[1], ys[1], dropped=True)
    ax.annotate(
        "",
        xy=(xd - wd / 2, ys[1]),
        xytext=(x_bus, ys[1]),
        arrowprops=dict(
            arrowstyle="-|>", color="#9A9A9A", lw=1.2, linestyle="--", shrinkA=0, shrinkB=0
        ),
        zorder=2,
    )
    ax.text(
        x_bus - 0.08,  # ends short of the bus, also on a phone (text keeps its size)
        y_mem + 0.03,
        "memory → K, V",
        fontsize=fs_small,
        style="italic",
        color="#777777",
        ha="right",
        va="bottom",
    )
    ax.text(
        xe,
        top_e + 0.6,
        "grey, dashed:\nnot kept",
        ha="center",
        va="bottom",
        fontsize=fs_small,
        color="#555555",
    )

    # Right: the decoder-only model.
    ax = axes[1]
    xo, wo = 6.45, 2.3
    ax.text(
        xo + 0.35,
        height - 0.12,
        "decoder-only (this chapter)",
        ha="center",
        va="top",
        fontsize=11,
        fontweight="bold",
    )
    inputs(xo, wo, "English <sep> German")
    top_o, yo = stack(
        xo,
        wo,
        [("masked self-attention", "attention"), ("feed-forward", "ffn")],
        f"block ×{do.n_decoder_layers}",
    )
    ax.text(
        xo,
        top_o + 0.08,
        "= a decoder layer without cross-attention\n= an encoder layer given the causal mask",
        ha="center",
        va="bottom",
        fontsize=fs_small,
        color="#333333",
    )
    output(
        xo,
        wo,
        top_o + 0.55,
        "next token at every position\n(the loss counts German, <eos>)",
        getattr(do, "share_embeddings", True),
    )

    # A causal mask beside the block: rows are queries, columns keys; 3 English, <sep>, 2 German.
    labels = ["E", "E", "E", "s", "G", "G"]
    n, cell = len(labels), 0.17
    x0 = xo + wo / 2 + 0.3
    y_top = yo[0] + 0.75
    for i in range(n):
        for j in range(n):
            ax.add_patch(
                Rectangle(
                    (x0 + j * cell, y_top - (i + 1) * cell),
                    cell,
                    cell,
                    facecolor=_COUNTED if j <= i else _IGNORED,
                    edgecolor="white",
                    linewidth=0.8,
                    zorder=3,
                )
            )
        ax.text(x0 - 0.04, y_top - (i + 0.5) * cell, labels[i], ha="right", va="center", fontsize=9)
        ax.text(
            x0 + (i + 0.5) * cell, y_top + 0.03, labels[i], ha="center", va="bottom", fontsize=9
        )
    ax.text(
        x0 + n * cell / 2,
        y_top - n * cell - 0.06,
        "causal mask, rows are\nqueries (E English,\ns <sep>, G German;\nblue: may attend)",
        ha="center",
        va="top",
        fontsize=9,
        color="#333333",
    )
    ax.plot(
        [x0 - 0.2, xo + wo / 2 + 0.02],
        [y_top - n * cell / 2, yo[0]],
        color=_LINE,
        linewidth=1.0,
        linestyle=":",
        zorder=2,
    )
    return fig
