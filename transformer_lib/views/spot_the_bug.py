""" "Spot the bug": mystery models whose symptoms the reader reads, and a verdict in the page.

Each :class:`Mystery` shows what a trained model with one unknown bug looks like from
outside (figures as inline PNG images, a few lines of evidence such as its BLEU and a
translation) and asks which bug it has, as a multiple-choice
:class:`~transformer_lib.views.self_check.Question`. Choosing a suspect says at once whether
it is right and, in every case, which check of the kit would have told. Everything is
precomputed, so it works without a kernel: in the built HTML book, in Colab and in Jupyter.

It is built on :mod:`transformer_lib.views.self_check` and behaves like it: native radio
inputs in a ``<fieldset>`` whose ``<legend>`` is the question (Tab to a mystery, arrow keys
to choose), the explanation shown by CSS alone (``:checked``) and, where scripts run, copied
into the question's polite live region so that screen readers announce it; verdicts in
words, never colour alone; page colours, so it reads in light and dark themes; ids from a
hash of the content, so the book's execution cache stays valid. The figures of a mystery
sit side by side and wrap one below the other on a narrow screen; each is shrunk to the
column when it must be. Their PNGs record their smallest text
(:mod:`~transformer_lib.views.text_size`), and a figure must stay readable (9 CSS px) at
:data:`PHONE_COLUMN_PX`, the text column of a 390-pixel phone screen: draw it at most
that wide, or with text large enough to be shrunk.

    from transformer_lib.views.spot_the_bug import Mystery, spot_the_bug

    spot_the_bug([
        Mystery("Mystery model A", question=Question(...),
                figures=[(png_bytes, "alt text", "caption")],
                evidence=["Validation BLEU 0.4 (healthy model: 15.2)"]),
        ...
    ])
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass

from .self_check import _CSS, _SCRIPT, Question, _inline_html, _question_html
from .text_size import png_text_size

__all__ = ["Mystery", "SpotTheBug", "spot_the_bug"]

MIN_MYSTERIES, MAX_MYSTERIES = 1, 8
#: The smallest text a figure may show, in CSS pixels, and the narrowest column it must fit:
#: a 390-pixel phone screen less the page's margins.
MIN_TEXT_PX, PHONE_COLUMN_PX = 9.0, 340


def png_width(png: bytes) -> int:
    """The width in pixels of a PNG image (from its IHDR chunk)."""
    return int.from_bytes(png[16:20], "big")


def readable_width(png: bytes, min_text_px: float = MIN_TEXT_PX) -> int:
    """The narrowest width (CSS px) at which the smallest text of ``png`` is still
    ``min_text_px``; 0 for an image without text."""
    smallest = png_text_size(png)
    if smallest is None:
        raise ValueError("the PNG records no text size; draw it with frames.figure_to_png")
    if not math.isfinite(smallest):
        return 0
    return min(png_width(png), math.ceil(png_width(png) * min_text_px / smallest))


@dataclass(frozen=True)
class Mystery:
    """One mystery model: its symptoms, and the question which bug it has.

    Args:
        title: shown above the symptoms, e.g. ``"Mystery model A"``.
        question: a single-answer :class:`~transformer_lib.views.self_check.Question`
            whose choices are the suspects; each choice's ``why`` is the verdict shown.
        figures: ``(png, alt, caption)`` triples: PNG bytes that record their smallest text
            (drawn by ``figure_to_png``), a description for screen readers (at least a
            sentence), and a visible caption (inline markup allowed).
        evidence: short lines shown as a list beside the figures (inline markup allowed).

    Raises:
        ValueError: an empty title, a question that allows several answers, a figure that
            is not a PNG, records no text size or has a missing alt text or caption.
    """

    title: str
    question: Question
    figures: Sequence[tuple[bytes, str, str]] = ()
    evidence: Sequence[str] = ()

    def __post_init__(self):
        if not isinstance(self.title, str) or not self.title.strip():
            raise ValueError(f"a Mystery needs a title, got {self.title!r}")
        if not isinstance(self.question, Question):
            raise TypeError(f"{self.title}: question must be a Question(...)")
        if self.question.multiple:
            raise ValueError(f"{self.title}: a mystery has one bug: use a single-answer question")
        object.__setattr__(self, "figures", tuple(tuple(f) for f in self.figures))
        object.__setattr__(self, "evidence", tuple(self.evidence))
        for figure in self.figures:
            if len(figure) != 3:
                raise ValueError(f"{self.title}: each figure is (png, alt, caption)")
            png, alt, caption = figure
            if not isinstance(png, bytes) or not png.startswith(b"\x89PNG"):
                raise ValueError(f"{self.title}: a figure is not PNG bytes")
            if png_text_size(png) is None:
                raise ValueError(
                    f"{self.title}: a figure records no text size; draw it with "
                    "views.explorers.frames.figure_to_png"
                )
            if readable_width(png) > PHONE_COLUMN_PX:
                raise ValueError(
                    f"{self.title}: a figure is unreadable below {readable_width(png)} px; it "
                    f"must stay readable at {PHONE_COLUMN_PX} px (draw it narrower or its "
                    "text larger)"
                )
            if not isinstance(alt, str) or len(alt.split()) < 4:
                raise ValueError(f"{self.title}: a figure needs alt text that says what it shows")
            if not isinstance(caption, str) or not caption.strip():
                raise ValueError(f"{self.title}: a figure needs a caption")
            _inline_html(caption)
        for line in self.evidence:
            _inline_html(line)


@dataclass(frozen=True)
class SpotTheBug:
    """The mysteries as displayed: ``text/html`` in a page, ``text/plain`` elsewhere."""

    mysteries: tuple[Mystery, ...]
    key: str = ""

    @property
    def uid(self) -> str:
        """The id prefix of this block's elements: a hash of its content and ``key``."""
        digest = hashlib.sha256()
        digest.update(json.dumps([self.key, repr(self)], ensure_ascii=False).encode("utf-8"))
        for m in self.mysteries:
            for png, alt, caption in m.figures:
                digest.update(hashlib.sha256(png).digest() + alt.encode() + caption.encode())
            for c in m.question.choices:
                digest.update(f"{c.correct}{c.why}".encode())
        return "stb-" + digest.hexdigest()[:10]

    def __repr__(self) -> str:
        lines = [
            f"Spot the bug: {len(self.mysteries)} mystery models. Open the rendered page to see "
            "their symptoms, choose a suspect and read the verdict."
        ]
        for i, m in enumerate(self.mysteries, 1):
            lines += ["", f"{i}. {m.title}: {' '.join(m.question.text.split())}"]
            lines += [f"   - {' '.join(e.split())}" for e in m.evidence]
            for letter, c in zip("ABCDEF", m.question.choices):
                lines.append(f"   {letter}. {' '.join(c.text.split())}")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        uid = self.uid
        parts = [f'<div class="sc-quiz stb-quiz" id="{uid}">', f"<style>{_CSS}{_STB_CSS}</style>"]
        parts.append(
            '<p class="sc-intro">Read each mystery model\'s symptoms, then choose the bug you '
            "suspect: the page says whether you are right and which check would have told.</p>"
        )
        for i, m in enumerate(self.mysteries, 1):
            parts.append(_mystery_html(m, f"{uid}-m{i}", i))
        parts.append(f"<script>{_SCRIPT}</script>")
        parts.append("</div>")
        return "\n".join(parts)


def _mystery_html(m: Mystery, mid: str, number: int) -> str:
    rows = [
        f'<section class="stb-mystery" id="{mid}" aria-labelledby="{mid}-t">',
        f'<p class="stb-title" id="{mid}-t">{_inline_html(m.title)}</p>',
    ]
    if m.evidence:
        items = "".join(f"<li>{_inline_html(e)}</li>" for e in m.evidence)
        rows.append(f'<ul class="stb-evidence">{items}</ul>')
    if m.figures:
        rows.append('<div class="stb-figures">')
        for png, alt, caption in m.figures:
            src = "data:image/png;base64," + base64.b64encode(png).decode("ascii")
            width = png_width(png)
            # The figure is as wide as its image (its caption wraps under it), so that
            # figures that fit side by side in the column sit side by side.
            rows.append(
                f'<figure class="stb-figure" style="width:{width}px"><img src="{src}" '
                f'alt="{_attr(alt)}" width="{width}" data-readable-width="{readable_width(png)}">'
                f"<figcaption>{_inline_html(caption)}</figcaption></figure>"
            )
        rows.append("</div>")
    rows.append(_question_html(m.question, f"{mid}-q", number))
    rows.append("</section>")
    return "\n".join(rows)


def _attr(text: str) -> str:
    return html.escape(" ".join(text.split()), quote=True)


_STB_CSS = (
    ".stb-quiz .stb-mystery{border-top:2px solid rgba(128,128,128,.5);padding-top:.6em;"
    "margin-top:1em}"
    ".stb-quiz .stb-title{font-weight:700;font-size:1.05em;margin:0 0 .4em}"
    ".stb-quiz .stb-evidence{margin:0 0 .6em 1.2em;padding:0}"
    ".stb-quiz .stb-evidence li{overflow-wrap:anywhere}"
    ".stb-quiz .stb-figures{display:flex;flex-wrap:wrap;gap:.8em;margin:0 0 .8em}"
    ".stb-quiz figure.stb-figure{margin:0;flex:0 1 auto;min-width:0;max-width:100%}"
    ".stb-quiz .stb-figure img{display:block;max-width:100%;height:auto}"
    # The theme greys figure captions for its own background; the quiz sits on a light
    # panel in the dark theme too, so its captions take the quiz's text colour.
    ".stb-quiz figcaption{font-size:.9em;margin-top:.2em;overflow-wrap:anywhere;color:inherit}"
)


def spot_the_bug(mysteries: Sequence[Mystery], *, key: str = "") -> SpotTheBug:
    """A "spot the bug" block: the mysteries with their symptoms and suspects.

    Make it the last line of a cell so that Jupyter (and Jupyter Book, Colab) display it.

    Args:
        mysteries: 1 to 8 :class:`Mystery` objects, shown in this order.
        key: only needed when one page shows two blocks with the same mysteries.

    Raises:
        ValueError: no mysteries, too many, or two with the same title.
        TypeError: an item that is not a :class:`Mystery`.

    Example:
        >>> block = spot_the_bug([mystery_a, mystery_b])  # doctest: +SKIP
        >>> block  # doctest: +SKIP
    """
    if isinstance(mysteries, Mystery) or not isinstance(mysteries, Sequence):
        raise TypeError("spot_the_bug takes a list of Mystery(...) objects")
    mysteries = tuple(mysteries)
    for m in mysteries:
        if not isinstance(m, Mystery):
            raise TypeError(f"spot_the_bug takes Mystery(...) objects, got {type(m).__name__}")
    if not MIN_MYSTERIES <= len(mysteries) <= MAX_MYSTERIES:
        raise ValueError(
            f"spot_the_bug got {len(mysteries)} mysteries: give {MIN_MYSTERIES} to {MAX_MYSTERIES}"
        )
    titles = [m.title for m in mysteries]
    repeated = sorted({t for t in titles if titles.count(t) > 1})
    if repeated:
        raise ValueError(f"two mysteries are called {repeated[0]!r}: give each its own title")
    if not isinstance(key, str):
        raise TypeError(f"key must be a string, not {type(key).__name__}")
    return SpotTheBug(mysteries, key)
