"""Padding and causal masks on a small padded batch, and the attention they allow (ch. 6)."""

from __future__ import annotations

from collections.abc import Sequence

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

__all__ = ["MASK_PAIRS", "MASK_SENTENCES", "mask_batch", "mask_explorer"]


#: Sentence pairs of the precomputed version, those of chapter 6: three lengths, so that
#: the batch has padding to mask.
MASK_PAIRS = (
    ("Tom is reading a book.", "Tom liest ein Buch."),
    ("Thank you.", "Danke."),
    ("I am tired.", "Ich bin müde."),
)
#: Their German sides, whose decoder inputs the explorer shows.
MASK_SENTENCES = tuple(german for _, german in MASK_PAIRS)


def mask_batch(pairs: Sequence[tuple[str, str]] = MASK_PAIRS, tokenizer=None) -> list[list[str]]:
    """The decoder inputs of ``pairs`` as training builds them, as token strings.

    :class:`~transformer_lib.pipeline.batching.TranslationDataset` wraps each target as
    ``<bos> ... <eos>``, :func:`~transformer_lib.pipeline.batching.collate` pads the batch
    on the right, and the decoder input is ``tgt[:, :-1]``: the shorter sentences keep
    their ``<eos>`` before the ``<pad>`` tokens. The tokens are those of the book's
    tokenizer (default: the shipped one), ``▁`` marking the start of a word.
    """
    from ...pipeline.batching import TranslationDataset, collate

    if tokenizer is None:
        from ...pipeline.tokenizer import Tokenizer

        tokenizer = Tokenizer.load()
    dataset = TranslationDataset(list(pairs), tokenizer)
    _, tgt = collate([dataset[i] for i in range(len(dataset))], pad_id=tokenizer.pad_id)
    return [[tokenizer.id_to_token(i) for i in row.tolist()] for row in tgt[:, :-1]]


def _mask_figure(batch: Sequence[Sequence[str]], padding: bool, causal: bool, row: int):
    import torch

    from ...components.attention import scaled_dot_product_attention
    from ...components.masks import causal_mask, combine_masks, padding_mask
    from ..attention_maps import plot_attention
    from ..masks import plot_mask

    vocab = {"<pad>": 0}
    ids = torch.tensor([[vocab.setdefault(t, len(vocab)) for t in seq] for seq in batch])  # (B, T)
    B, T = ids.shape
    gen = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(B, 1, T, 8, generator=gen) for _ in range(3))  # (B, H=1, T, Dk)
    mask = combine_masks(
        padding_mask(ids, pad_id=0) if padding else None,  # (B, 1, 1, T)
        causal_mask(T) if causal else None,  # (1, 1, T, T)
    )
    _, weights = scaled_dot_product_attention(q, k, v, mask)  # (B, 1, T, T)
    full = torch.ones(B, 1, T, T, dtype=torch.bool)
    shown = (full if mask is None else mask.expand(B, 1, T, T))[row, 0]  # (T, T)
    tokens = list(batch[row])
    name = " + ".join(n for n, on in (("padding", padding), ("causal", causal)) if on) or "none"
    with book_style():
        # 8.6 inches = 688 px at FRAME_DPI, shown at full size; every text is 10 pt or more
        # (11.1 CSS px), the numbers in the cells too.
        fig = new_figure((8.6, 5.0), layout="constrained")
        ax0, ax1 = fig.subplots(1, 2)
        plot_mask(shown, tokens, tokens, ax=ax0, title=f"Mask: {name}")
        handles = ax0.get_legend().legend_handles
        ax0.get_legend().remove()  # below the panels: the heatmaps keep their width
        fig.legend(handles=handles, loc="outside lower left", ncols=2, fontsize=11)
        plot_attention(
            weights[row, 0],
            tokens,
            tokens,
            ax=ax1,
            annotate=True,
            title="Attention weights",
            cbar_label="weight (each row sums to 1)",
        )
        for text in ax1.texts:  # the weights written in the cells
            text.set_fontsize(10)
        for ax in fig.axes:
            ax.tick_params(labelsize=11)
            ax.xaxis.label.set_fontsize(12)
            ax.yaxis.label.set_fontsize(12)
            ax.title.set_fontsize(12)
        fig.suptitle(
            f"Sentence {row} of a padded batch of {B}; random queries and keys", fontsize=12
        )
    return fig


def mask_explorer(batch: Sequence[Sequence[str]] | None = None, *, static: bool | None = None):
    """Padding and causal masks on a small padded batch, and the attention they allow.

    Chapter 6 (the paper's §3.2.3). Left (top on a phone): the boolean mask (True = may
    attend); right (below it): the weights of
    :func:`~transformer_lib.components.attention.scaled_dot_product_attention` with that mask, for
    random queries and keys. Rows are queries, columns are keys.

    Args:
        batch: token sequences of equal length, padded with ``"<pad>"``; default
            :func:`mask_batch`, the decoder inputs of :data:`MASK_PAIRS` as ``collate``
            pads them.
        static: force the precomputed (True) or the live (False) version.

    Returns:
        The explorer: padding on/off, causal on/off and a slider for the sentence
        (static: 2 × 2 × ``len(batch)`` frames).
    """
    widgets = load_ipywidgets()
    batch = [list(map(str, seq)) for seq in (mask_batch() if batch is None else batch)]
    if not batch or len({len(s) for s in batch}) != 1:
        raise ValueError("mask_explorer needs sequences of one common (padded) length")
    pad = widgets.ToggleButtons(
        options=["off", "on"],
        index=1,
        description="padding",
        tooltip="padding mask on or off",
        style={"button_width": "50px"},
    )
    causal = widgets.ToggleButtons(
        options=["off", "on"],
        index=1,
        description="causal",
        tooltip="causal mask on or off",
        style={"button_width": "50px"},
    )
    row = widgets.IntSlider(
        value=0, min=0, max=len(batch) - 1, description="sentence", continuous_update=True
    )
    controls = {"padding": pad, "causal": causal, "sentence": row}
    title = "Attention masks"
    description = "Switch the padding and causal masks on and off; slide through the batch."
    rows = [widgets.HBox([pad, causal]), row]
    if use_static(static):
        frames = [
            [
                [figure_to_png(_mask_figure(batch, bool(p), bool(c), r)) for r in range(len(batch))]
                for c in (0, 1)
            ]
            for p in (0, 1)
        ]
        return static_explorer(
            title,
            description,
            rows,
            controls,
            [pad, causal, row],
            frames,
            alt="For one sentence of a padded batch: the boolean mask with the cells that "
            "may attend marked, and beside it (below it on a phone) the attention weights "
            "it allows. Rows are queries, columns keys; blocked cells get weight 0.",
        )
    row.continuous_update = False

    memo = LayoutMemo()

    def draw() -> tuple[bytes, str]:
        fig = _mask_figure(batch, pad.index == 1, causal.index == 1, row.value)
        return memo.png(fig, key=row.value), ""

    return live_explorer(title, description, rows, controls, draw, [pad, causal, row])
