"""What a decoder layer's key/value cache holds at each decoding step (chapter 10)."""

from __future__ import annotations

from collections.abc import Sequence

from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import Patch, Rectangle

from .phone_layout import set_phone_figure
from .style import OKABE_ITO, _figure_and_axes, _label_text, _styled

__all__ = ["plot_kv_cache"]

# Fill, edge and hatch of each kind of cached column; the legend names them.
_KINDS = {
    "self-new": ("#F6D3BF", OKABE_ITO[1], "////", "self: appended at this step (newest token)"),
    "self-stored": ("#CCE3F0", OKABE_ITO[0], "", "self: kept from earlier steps"),
    "cross-new": ("#CCECE3", OKABE_ITO[2], "\\\\\\\\", "cross: projected from the encoder output"),
    "cross-stored": ("#EEEEEE", "#888888", "", "cross: the same tensors, reused"),
}


@_styled
def plot_kv_cache(
    decoder_tokens: Sequence[str],
    source_tokens: Sequence[str],
    self_lengths: Sequence[int],
    cross_computed: Sequence[bool],
    title: str | None = None,
    *,
    heads: int | None = None,
    d_k: int | None = None,
    ax: Axes | None = None,
    fontsize: float = 10.0,
    narrow: bool = False,
) -> Figure:
    """Draw the key/value cache of one decoder layer, step by step (chapter 10, §3.2.3).

    One row per decoding step (numbered from 0, as everywhere in the book). On the left,
    decoder self-attention: one column per target position whose key and value the cache
    holds after the step, the columns appended at that step highlighted. On the right,
    encoder-decoder attention: one column per source position, marked as projected from
    the encoder output at the steps where the layer computed them and as reused at the
    others. Draw it from a real cache (record
    ``cache.layers[i]["self"]["k"].size(2)`` and whether ``cache.layers[i]["cross"]["k"]``
    is a new tensor after every step) and the figure shows what the model did.

    Args:
        decoder_tokens: the tokens the decoder has read, from ``<bos>``; column ``j`` of
            the self-attention cache belongs to ``decoder_tokens[j]``.
        source_tokens: the source sentence's tokens (the columns of cross-attention).
        self_lengths: positions in the self-attention cache after each step (``t``, the
            third axis of its ``(B, H, t, d_k)`` tensors); never decreasing.
        cross_computed: for each step, whether the cross-attention keys and values were
            computed at that step (True) or reused from the cache (False).
        title: the figure title (default: "The key/value cache of one decoder layer").
        heads: number of heads ``H``; with ``d_k``, the rows are labelled with the
            tensor shapes ``(B, H, t, d_k)`` and ``(B, H, S, d_k)``.
        d_k: the width of one head's key (and value).
        ax: draw into this axes instead of a new figure.
        fontsize: size of the token labels (points); the figure is sized so that at a
            672-pixel page column no text is under 9 CSS pixels.
        narrow: the layout for a phone's column: the cross-attention block under the
            self-attention one, the title and the legend in shorter lines. A figure this
            function makes (``ax`` None) carries it as its phone version in the static
            build.

    Returns:
        The figure.

    Shape:
        ``len(self_lengths) == len(cross_computed)`` steps; ``max(self_lengths) <=
        len(decoder_tokens)``.

    Example:
        >>> fig = plot_kv_cache(["<bos>", "▁Wo", "▁ist"], ["▁Where", "▁is", "?"],
        ...                     self_lengths=[1, 2, 3], cross_computed=[True, False, False])
    """
    steps = len(self_lengths)
    if steps == 0 or len(cross_computed) != steps:
        raise ValueError(
            "plot_kv_cache: give one entry per decoding step in both self_lengths and "
            f"cross_computed (got {steps} and {len(cross_computed)})."
        )
    lengths = [int(n) for n in self_lengths]
    if lengths[0] < 1 or any(b < a for a, b in zip(lengths, lengths[1:])):
        raise ValueError(
            f"plot_kv_cache: self_lengths {lengths} must start at 1 or more and never "
            "decrease: the self-attention cache only grows."
        )
    if lengths[-1] > len(decoder_tokens):
        raise ValueError(
            f"plot_kv_cache: the cache holds {lengths[-1]} positions but only "
            f"{len(decoder_tokens)} decoder_tokens were given; pass every token read."
        )
    if not source_tokens:
        raise ValueError("plot_kv_cache: source_tokens is empty.")
    S, T = len(source_tokens), lengths[-1]
    row = 1.75  # a row: k and v cells (0.5 each), the token labels, space
    shapes = heads is not None and d_k is not None
    header = 1.05 if shapes else 0.55  # room for a block's heading over its first row
    if narrow:  # the cross-attention block under the other, its heading between them
        x_cross, y_cross = 0.0, -(steps * row + header + 0.45)
        width = max(T, S)
        size = (max(3.6, 0.6 * width + 1.6), 0.55 * row * 2 * steps + 2.6)
    else:
        x_cross, y_cross = T + 2.0, 0.0  # two columns between the blocks
        width = x_cross + S
        size = (max(5.5, 0.6 * width + 1.6), 0.55 * row * steps + 1.7)
    made = ax is None
    fig, ax = _figure_and_axes(ax, size)

    def column(x: float, y: float, kind: str, gid: str) -> None:
        fc, ec, hatch, _ = _KINDS[kind]
        for dy, name in ((0.5, "k"), (0.0, "v")):
            ax.add_patch(
                Rectangle(
                    (x + 0.06, y + dy),
                    0.88,
                    0.46,
                    fc=fc,
                    ec=ec,
                    lw=1.2,
                    hatch=hatch,
                    gid=f"{gid}:{name}",
                )
            )
            ax.text(x + 0.5, y + dy + 0.23, name, ha="center", va="center", fontsize=fontsize)

    previous = 0
    for i, (n, computed) in enumerate(zip(lengths, cross_computed)):
        y = -(i + 1) * row
        for j in range(n):
            kind = "self-new" if j >= previous else "self-stored"
            column(j, y, kind, f"{kind}:{i}:{j}")
            ax.text(
                j + 0.5,
                y - 0.08,
                _label_text(decoder_tokens[j]),
                ha="center",
                va="top",
                fontsize=fontsize,
            )
        kind = "cross-new" if computed else "cross-stored"
        for j, token in enumerate(source_tokens):
            column(x_cross + j, y + y_cross, kind, f"{kind}:{i}:{j}")
            ax.text(
                x_cross + j + 0.5,
                y + y_cross - 0.08,
                _label_text(token),
                ha="center",
                va="top",
                fontsize=fontsize,
            )
        previous = n
    top = -row + 1.25
    ax.text(
        0,
        top,
        "decoder self-attention"
        + (f"\n(B, {heads}, t, {d_k}): t grows by one per step" if shapes else ""),
        ha="left",
        va="bottom",
        fontsize=fontsize,
    )
    ax.text(
        x_cross,
        top + y_cross,
        "cross-attention to the encoder output"
        + (f"\n(B, {heads}, S = {S}, {d_k}): fixed" if shapes else ""),
        ha="left",
        va="bottom",
        fontsize=fontsize,
    )
    ax.set_xlim(-0.2, width + 0.2)
    ax.set_ylim(-steps * row - 0.7 + y_cross, top + header)
    ticks = [-(i + 1) * row + 0.5 for i in range(steps)]
    ax.set_yticks(ticks + ([t + y_cross for t in ticks] if narrow else []))
    reads = []
    for i, n in enumerate(lengths):
        first = lengths[i - 1] if i else 0  # a step may read several tokens (a prefix)
        read = _label_text(decoder_tokens[n - 1])
        if n - first > 1:
            read = f"{_label_text(decoder_tokens[first])} … {read}"
        reads.append(f"step {i}\nreads {read}")
    ax.set_yticklabels(reads * (2 if narrow else 1), fontsize=fontsize)
    ax.tick_params(axis="y", length=0)
    ax.set_xticks([])
    for side in ("right", "top", "bottom", "left"):
        ax.spines[side].set_visible(False)
    ax.set_ylabel("decoding step (the token it reads)")
    ax.set_xlabel(
        "cached positions: one k and one v\ncolumn per token"
        if narrow
        else "cached positions: one k and one v column per token"
    )
    title_text = title if title is not None else "The key/value cache of one decoder layer"
    if narrow and len(title_text) > 34 and " for " in title_text:
        title_text = title_text.replace(" for ", "\nfor ", 1)
    ax.set_title(title_text)
    handles = [
        Patch(facecolor=fc, edgecolor=ec, hatch=hatch, label=label)
        for fc, ec, hatch, label in _KINDS.values()
    ]
    fig.legend(
        handles=handles,
        loc="outside lower center",
        ncol=1 if narrow else 2,
        fontsize=fontsize,
        frameon=False,
    )
    if made and not narrow:  # on a phone, the stacked layout (drawn in the static build)
        set_phone_figure(
            fig,
            lambda: plot_kv_cache(
                decoder_tokens,
                source_tokens,
                self_lengths,
                cross_computed,
                title,
                heads=heads,
                d_k=d_k,
                fontsize=fontsize,
                narrow=True,
            ),
        )
    return fig
