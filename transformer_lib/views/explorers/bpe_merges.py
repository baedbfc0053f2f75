"""Byte-pair encoding, merge by merge: how sentences split as the merges add up (ch. 2)."""

from __future__ import annotations

import json
from collections.abc import Sequence

from ..phone_layout import with_phone_png
from .frames import (
    InputProblem,
    book_style,
    figure_to_png,
    live_explorer,
    load_ipywidgets,
    new_figure,
    static_explorer,
    static_mode,
    use_static,
)

__all__ = ["BPE_SENTENCES", "BpeReplay", "bpe_merges_explorer"]


#: Two English and two German sentences with common and rare words.
BPE_SENTENCES = (
    "Tom is reading a newspaper.",
    "I have never seen a hedgehog.",
    "Tom liest eine Zeitung.",
    "Wo ist die Straßenbahnhaltestelle?",
)
_STATIC_MERGES = (0, 25, 100, 250, 500, 1000, 2000, None)  # None: every merge


class BpeReplay:
    """A trained BPE tokenizer that applies only its first ``m`` merges.

    Byte-pair encoding learns its merges one at a time, most frequent pair first, so the
    first ``m`` merges of the shipped tokenizer are the tokenizer that training would
    have produced had it stopped after ``m`` merges. Splitting a word replays them: start
    from single characters and, while some adjacent pair is among the first ``m`` merges,
    merge the pair that was learned earliest (leftmost first). With every merge this gives
    exactly the shipped tokenizer's tokens.

    Args:
        tokenizer: a :class:`~transformer_lib.pipeline.tokenizer.Tokenizer`; default the
            shipped one.
    """

    def __init__(self, tokenizer=None):
        if tokenizer is None:
            from ...pipeline.tokenizer import Tokenizer

            tokenizer = Tokenizer.load()
        self.tokenizer = tokenizer
        model = json.loads(tokenizer.backend.to_str())["model"]
        if model.get("type") != "BPE":
            raise ValueError(f"BpeReplay needs a BPE tokenizer, got {model.get('type')!r}")
        merges = [tuple(m.split(" ")) if isinstance(m, str) else tuple(m) for m in model["merges"]]
        self.merges: list[tuple[str, str]] = merges
        self.rank = {pair: i for i, pair in enumerate(merges)}
        self.vocab = set(model["vocab"])
        self.unk = model.get("unk_token") or "<unk>"

    @property
    def n_merges(self) -> int:
        return len(self.merges)

    def _word(self, word: str, m: int) -> list[str]:
        symbols: list[str] = []
        for ch in word:  # unknown characters become <unk>; a run of them one <unk>
            if ch in self.vocab:
                symbols.append(ch)
            elif not symbols or symbols[-1] != self.unk:
                symbols.append(self.unk)
        while len(symbols) > 1:
            ranks = [self.rank.get(pair, m) for pair in zip(symbols, symbols[1:])]
            best = min(ranks)
            if best >= m:
                break
            i = ranks.index(best)
            symbols[i : i + 2] = [symbols[i] + symbols[i + 1]]
        return symbols

    def tokens(self, text: str, n_merges: int | None = None) -> list[str]:
        """The tokens of ``text`` after the first ``n_merges`` merges (default: all)."""
        m = self.n_merges if n_merges is None else int(n_merges)
        if not 0 <= m <= self.n_merges:
            raise ValueError(f"n_merges must be between 0 and {self.n_merges}, got {m}")
        backend = self.tokenizer.backend
        if backend.normalizer is not None:
            text = backend.normalizer.normalize_str(text)
        words = backend.pre_tokenizer.pre_tokenize_str(text)
        return [tok for word, _ in words for tok in self._word(word, m)]


#: The static page's note in place of the text box.
OWN_SENTENCE_NOTE = (
    "To split a sentence of your own, open this chapter in Colab (rocket button at the "
    "top) or Jupyter: the live explorer has a text box"
)


def _plain(text: str) -> str:
    return text.replace("$", r"\$")


#: Width of the phone version of a frame, in inches: 344 px at the frames' 80 dpi, shown
#: at full size in a phone's 350-pixel column.
_PHONE_WIDTH_IN = 4.3


def _bpe_figure(replay: BpeReplay, sentences: Sequence[str], m: int, width_in: float = 8.4):
    from matplotlib.patches import FancyBboxPatch

    from ..style import OKABE_ITO

    tokens = [replay.tokens(s, m) for s in sentences]
    chars = [replay.tokens(s, 0) for s in sentences]
    width_pt = width_in * 72 - 24  # usable width of the figure in points
    char_pt, pad_pt, gap_pt = 7.0, 5.0, 3.0  # 11-point text: about 7 points per character
    lines: list[list[list[str]]] = []  # per sentence, its rows of tokens
    for toks in tokens:
        rows, row, used = [], [], 0.0
        for t in toks:
            w = len(t) * char_pt + pad_pt + gap_pt
            if row and used + w > width_pt:
                rows.append(row)
                row, used = [], 0.0
            row.append(t)
            used += w
        rows.append(row)
        lines.append(rows)
    row_pt, head_pt = 24.0, 16.0
    total = sum(len(t) for t in tokens)
    n_chars = sum(len(c) for c in chars)
    label = "every merge" if m == replay.n_merges else f"{m:,} merges"
    header = f"After {label} of {replay.n_merges:,}: {total} tokens in all"
    header += f" (one per character: {n_chars})"
    two_lines = len(header) * 7.2 > width_pt  # 12-point text: about 7.2 points a character
    if two_lines:
        header = header.replace(" (", "\n(")
    top_pt = 40.0 + 16.0 * two_lines  # under the header
    height_pt = top_pt + sum(head_pt + row_pt * len(rows) + 8 for rows in lines)
    fills = ("#CFE3F3", "#FBE0C8")  # light tints of blue and orange, alternating
    edges = (OKABE_ITO[0], OKABE_ITO[3])
    with book_style():
        fig = new_figure((width_in, height_pt / 72))
        ax = fig.add_axes((0, 0, 1, 1))
        ax.set_xlim(0, width_in * 72)
        ax.set_ylim(height_pt, 0)
        ax.axis("off")
        ax.text(
            12,
            8,
            header,
            fontsize=12,
            va="top",
        )
        y = top_pt
        for sentence, rows, toks in zip(sentences, lines, tokens):
            ax.text(
                12,
                y,
                f"{_plain(sentence)}   ({len(toks)} tokens)",
                fontsize=10,
                color="#444444",
                va="top",
            )
            y += head_pt
            k = 0
            for row in rows:
                x = 12.0
                for t in row:
                    w = len(t) * char_pt + pad_pt
                    ax.add_patch(
                        FancyBboxPatch(
                            (x, y + 2),
                            w,
                            row_pt - 6,
                            boxstyle="round,pad=0,rounding_size=3",
                            facecolor=fills[k % 2],
                            edgecolor=edges[k % 2],
                            linewidth=1.0,
                        )
                    )
                    ax.text(
                        x + w / 2,
                        y + row_pt / 2 - 1,
                        _plain(t),
                        fontsize=11,
                        family="DejaVu Sans Mono",
                        ha="center",
                        va="center",
                    )
                    x += w + gap_pt
                    k += 1
                y += row_pt
            y += 8
    return fig


def _frame(replay: BpeReplay, sentences: Sequence[str], m: int) -> bytes:
    """A precomputed frame; in the static build it carries a phone version, the same
    tokens in shorter rows (``phone_layout`` stacks panels, and this figure has one)."""
    png = figure_to_png(_bpe_figure(replay, sentences, m), phone=False)
    if not static_mode():
        return png
    phone = figure_to_png(_bpe_figure(replay, sentences, m, _PHONE_WIDTH_IN), phone=False)
    return with_phone_png(png, phone)


def bpe_merges_explorer(
    sentences: Sequence[str] = BPE_SENTENCES,
    tokenizer=None,
    *,
    static: bool | None = None,
):
    """How sentences split into tokens as byte-pair encoding's merges add up.

    Chapter 2 (§5.1 of the paper; Sennrich et al., 2016). The shipped tokenizer's merges
    are replayed in the order they were learned (:class:`BpeReplay`): after 0 merges every
    character is a token; after all of them the sentences split as the book's model reads
    them. Alternating colours mark token boundaries; ``▁`` marks the start of a word.

    Args:
        sentences: the sentences to split (the static version precomputes these).
        tokenizer: a :class:`~transformer_lib.pipeline.tokenizer.Tokenizer`; default the
            shipped one.
        static: force the precomputed (True) or the live (False) version.

    Returns:
        The explorer. Static: a merges slider over 0, 25, 100, 250, 500, 1,000, 2,000 and
        all merges (8 frames), with a note that a live notebook takes your own sentence
        (no text box). Live: any number of merges and a text box for your own sentence.
    """
    widgets = load_ipywidgets()
    replay = BpeReplay(tokenizer)
    sentences = [s for s in sentences if isinstance(s, str) and s.strip()]
    if not sentences:
        raise ValueError("bpe_merges_explorer needs at least one sentence")
    title = "Byte-pair encoding, as the merges add up"
    text = widgets.Text(
        description="sentence",
        layout=widgets.Layout(width="95%"),
        continuous_update=False,
    )
    if use_static(static):
        counts = [replay.n_merges if m is None else m for m in _STATIC_MERGES]
        merges = widgets.SelectionSlider(
            options=[f"{m:,}" for m in counts],
            index=len(counts) - 1,
            description="merges",
            tooltip="how many byte-pair merges are applied",
            continuous_update=True,
            layout=widgets.Layout(width="460px"),
        )
        # No text box on a page without a kernel: a box that cannot be typed into only
        # says "not here"; the note says where one can.
        frames = [_frame(replay, sentences, m) for m in counts]
        return static_explorer(
            title,
            f"The slider stops at {len(counts)} of the {replay.n_merges + 1:,} stages: from "
            f"single characters (0 merges) to the book's tokenizer (all {replay.n_merges:,} "
            "merges). A live notebook steps through every merge.",
            [merges],
            {"merges": merges},
            [merges],
            frames,
            note=OWN_SENTENCE_NOTE,
            alt="Four sentences split into tokens after the chosen number of merges, one "
            "box per token, with the token count of each sentence.",
        )
    merges = widgets.IntSlider(
        value=replay.n_merges,
        min=0,
        max=replay.n_merges,
        description="merges",
        tooltip="how many byte-pair merges are applied",
        continuous_update=False,
        layout=widgets.Layout(width="460px"),
    )
    text.value = sentences[0]

    def draw() -> tuple[bytes, str]:
        own = " ".join(text.value.split())
        if not own:
            raise InputProblem("Type a sentence into the box (it is empty).")
        shown = [own, *[s for s in sentences if s != own]][:4]
        png = figure_to_png(_bpe_figure(replay, shown, merges.value), dpi=72, palette=False)
        return png, ""

    return live_explorer(
        title,
        "Type a sentence and press Enter, then slide the number of merges.",
        [merges, text],
        {"merges": merges, "sentence": text},
        draw,
        [merges, text],
    )
