"""Text of a figure's phone version (:mod:`~transformer_lib.views.phone_layout`): titles
broken into lines that fit the phone's width, slanted tick labels turned upright where
they would overlap. Each change is recorded in an ``undo`` (anything with ``add``), which
puts it back once the phone version is drawn.
"""

from __future__ import annotations

import math
import re

import numpy as np

__all__ = ["thin_ticks", "upright_ticks", "wrap"]


def wrap(text_artist, width_px: float, renderer, undo) -> None:
    """Break a title into lines no wider than ``width_px`` (each of its lines, when it
    has several); mathematics (``$...$``) is kept whole on its line."""
    if text_artist is None:  # a figure without a suptitle
        return
    text = text_artist.get_text()
    if not text.strip() or not text_artist.get_visible():
        return
    if text.count("$") % 2:
        return  # a lone dollar: not mathematics this module can keep whole
    extent = text_artist.get_window_extent(renderer).width
    if extent <= width_px:
        return
    given = text.split("\n")
    longest = max(len(line) for line in given)  # the widest line, about
    chars = max(12, int(0.95 * longest * width_px / extent))  # 5% spare: widths vary
    lines: list[str] = []
    for line in given:
        # Words: runs of non-space characters, a $...$ counted as part of its word.
        words = re.findall(r"(?:\$[^$]*\$|[^\s$])+", line)
        broken = _fill(words, chars)
        # Lines of about equal length (no last word alone on its line).
        width = math.ceil(len(line) / len(broken))
        while width < chars and len(_fill(words, width)) > len(broken):
            width += 1
        lines += _fill(words, width)
    text_artist.set_text("\n".join(lines))
    undo.add(lambda: text_artist.set_text(text))


def _fill(words: list[str], chars: int) -> list[str]:
    lines: list[str] = []  # lines of at most ``chars`` characters (a longer word alone)
    for word in words:
        if lines and len(lines[-1]) + 1 + len(word) <= chars:
            lines[-1] += " " + word
        else:
            lines.append(word)
    return lines


def upright_ticks(ax, width_px: float, undo) -> None:
    """Turn slanted x tick labels upright when, ``width_px`` apart, they would overlap."""
    labels = [t for t in ax.get_xticklabels() if t.get_visible() and t.get_text()]
    angle = labels[0].get_rotation() % 180 if labels else 0
    ticks = np.sort(np.asarray(ax.get_xticks(), dtype=float))
    if not 0 < angle < 90 or len(ticks) < 2:
        return
    gap = np.diff(ticks).min() / abs(np.diff(ax.get_xlim())[0]) * width_px
    line = max(t.get_fontsize() for t in labels) * ax.figure.dpi / 72 * 1.2
    if gap >= line / math.sin(math.radians(angle)):
        return
    old = [(t, t.get_rotation(), t.get_ha(), t.get_rotation_mode()) for t in labels]
    for t in labels:
        t.update({"rotation": 90, "ha": "center", "rotation_mode": "default"})

    def slant() -> None:
        for t, rotation, ha, mode in old:
            t.update({"rotation": rotation, "ha": ha, "rotation_mode": mode})

    undo.add(slant)


def thin_ticks(ax, width_px: float, renderer, undo) -> None:
    """Show every other upright x tick label (then every fourth...) when, the panel
    ``width_px`` wide, neighbours would touch: eleven powers of two, 1 to 1024, on a
    panel narrowed for a phone. Only ticks placed where they are asked to be
    (``set_xticks``): an automatic locator picks fewer for the narrower panel itself,
    and its ticks, placed anew when drawn, would not be the ones hidden here."""
    from matplotlib.ticker import FixedLocator

    if not isinstance(ax.xaxis.get_major_locator(), FixedLocator):
        return
    ticks = [
        t
        for t in ax.xaxis.get_major_ticks()
        if t.label1.get_visible() and t.label1.get_text() and t.label1.get_rotation() % 180 == 0
    ]
    if len(ticks) < 3:
        return
    box = ax.get_window_extent(renderer)
    left, right = ax.get_xlim()
    to_px = ax.transData.transform
    x_of = {t: (to_px((t.get_loc(), 0))[0] - box.x0) / box.width * width_px for t in ticks}
    half = {t: t.label1.get_window_extent(renderer).width / 2 for t in ticks}
    pad = 4 * ax.figure.dpi / 72  # 4 points between two labels
    shown, step = ticks, 1
    while len(shown) > 2 and any(
        abs(x_of[b] - x_of[a]) < half[a] + half[b] + pad for a, b in zip(shown, shown[1:])
    ):
        step *= 2
        shown = ticks[::step]
    if step == 1:
        return
    hidden = [t for t in ticks if t not in shown]
    for t in hidden:
        t.label1.set_visible(False)

    def show() -> None:
        for t in hidden:
            t.label1.set_visible(True)

    undo.add(show)
