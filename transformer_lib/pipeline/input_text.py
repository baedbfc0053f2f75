"""What the translator warns about in its input, and text that is not UTF-8.

One rule for the library's :class:`~transformer_lib.pipeline.pretrained.Translator`, the
command line and the book's in-page translator: a sentence is flagged when it holds any
character the tokenizer turns into ``<unk>`` (:func:`unknown_characters`), or no letter at
all (:func:`has_letter`); :func:`input_warning` words it. :func:`not_utf8` finds bytes
that were not UTF-8 in a string (Python keeps them as surrogate escapes).

Taught with the tokenizer in chapter 2; the failures they lead to are in chapter 10.
"""

from __future__ import annotations

import unicodedata
import warnings
from collections.abc import Sequence
from typing import Any

__all__ = [
    "UNKNOWN_SHARE_WARNING",
    "has_letter",
    "input_warning",
    "not_utf8",
    "unknown_characters",
    "warn_about_inputs",
]

#: Share of a sentence's characters that are unknown above which its translation is
#: called meaningless (and :func:`~.tokenizer.warn_if_mostly_unknown` warns).
UNKNOWN_SHARE_WARNING = 0.5


def unknown_characters(tokenizer: Any, text: str) -> list[str]:
    """The characters of ``text`` that ``tokenizer`` turns into ``<unk>``, each once.

    A character is unknown when it lies under an ``<unk>`` token of the encoding (the
    token's character offsets in ``text``); spaces never count. This is the rule the
    translators (the library's and the book's page) use to warn about an input.

    Args:
        tokenizer: The tokenizer the model was trained with.
        text: One sentence.

    Returns:
        The distinct unknown characters (code points) in order of first appearance; empty
        when every character is known.

    Example:
        >>> unknown_characters(Tokenizer.load(), "I like 🍕 very much.")  # doctest: +SKIP
        ['🍕']
    """
    if not isinstance(text, str):
        raise TypeError(f"unknown_characters expects a str, got {type(text).__name__}.")
    problem = not_utf8(text)
    if problem is not None:
        raise ValueError(f"the text {problem}")
    enc = tokenizer.backend.encode(text, add_special_tokens=False)
    found: dict[str, None] = {}
    for token_id, (start, end) in zip(enc.ids, enc.offsets):
        if token_id == tokenizer.unk_id:
            for ch in text[start:end]:
                if not ch.isspace():
                    found.setdefault(ch, None)
    return list(found)


def has_letter(text: str) -> bool:
    """Whether ``text`` holds at least one letter (Unicode category L*, any script).

    An input without one (``"?!..."``, ``"42"``, ``"--"``) has no words to translate.
    """
    return any(unicodedata.category(ch).startswith("L") for ch in text)


def _describe_characters(chars: Sequence[str], limit: int = 3) -> str:
    def one(ch: str) -> str:
        return f"{ch!r} ({unicodedata.name(ch, f'U+{ord(ch):04X}')})"

    named = ", ".join(one(ch) for ch in chars[:limit])
    return named + (f" and {len(chars) - limit} more" if len(chars) > limit else "")


def input_warning(tokenizer: Any, text: str) -> str | None:
    """Why the translation of ``text`` deserves a warning, in one sentence, or None.

    The rule: warn when the sentence holds any character the tokenizer maps to
    ``<unk>`` (:func:`unknown_characters`: emoji, Chinese, Cyrillic, accented letters
    outside German, ...), naming them, or when it holds no letter at all
    (:func:`has_letter`: punctuation, digits or symbols only). One unknown character is
    enough: the model reads a bare ``<unk>`` there and its translation drops or garbles
    that part.

    Args:
        tokenizer: The tokenizer the model was trained with.
        text: One sentence.

    Returns:
        The message (without the sentence's number), or None if the input is fine.

    Example:
        >>> input_warning(Tokenizer.load(), "Tom is lazy.") is None  # doctest: +SKIP
        True
    """
    unknown = unknown_characters(tokenizer, text)
    if unknown:
        share = tokenizer.unknown_share(text)
        effect = (
            "so its translation will be meaningless"
            if share > UNKNOWN_SHARE_WARNING
            else "so the translation drops or garbles that part"
        )
        return (
            f"has {len(unknown)} character{'s' if len(unknown) > 1 else ''} the model has "
            f"never seen, which become{'s' if len(unknown) == 1 else ''} <unk>: "
            f"{_describe_characters(unknown)} ({share:.0%} of the sentence); it knows only "
            f"English in Latin script, {effect}."
        )
    if not has_letter(text):
        return (
            "has no letter, only punctuation, digits or symbols: there are no words to "
            "translate, so the output is a guess."
        )
    return None


def warn_about_inputs(tokenizer: Any, texts: Sequence[str]) -> list[int]:
    """Warn (``UserWarning``) about each sentence that :func:`input_warning` flags.

    Args:
        tokenizer: The tokenizer the model was trained with.
        texts: The sentences about to be translated.

    Returns:
        The indices of the sentences warned about.
    """
    flagged = []
    for i, text in enumerate(texts):
        message = input_warning(tokenizer, text)
        if message is not None:
            flagged.append(i)
            warnings.warn(f"sentence {i} ({text[:40]!r}) {message}", UserWarning, stacklevel=3)
    return flagged


def not_utf8(text: str) -> str | None:
    """Say where ``text`` holds bytes that were not valid UTF-8, or None if it is clean.

    Python keeps undecodable bytes of command-line arguments and of some streams as
    "surrogate escapes" (U+DC80..U+DCFF) instead of failing; such a string cannot be
    tokenized. The message names the first bad byte and its position.
    """
    for i, ch in enumerate(text):
        if "\ud800" <= ch <= "\udfff":
            escaped = 0xDC80 <= ord(ch) <= 0xDCFF  # one undecodable byte
            byte = f"byte 0x{ord(ch) - 0xDC00:02x}" if escaped else f"U+{ord(ch):04X}"
            return (
                f"is not valid UTF-8 ({byte} at character {i}): it was probably written in "
                f"another encoding such as Latin-1; convert it to UTF-8 (e.g. with iconv -f "
                f"latin1 -t utf-8) or set a UTF-8 locale"
            )
    return None
