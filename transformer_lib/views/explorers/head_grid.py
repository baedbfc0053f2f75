"""Attention maps of several heads side by side, drawn straight into pixels with Pillow.

Used by the two explorers of the trained model (chapter 11), which redraw on every change
of a control: matplotlib would spend most of each redraw laying out the labels.
"""

from __future__ import annotations

import functools
import math
import textwrap
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..text_size import with_text_size
from .frames import LIVE_DPI, encode_png

_QUERY_AXIS, _KEY_AXIS = "query (attends from)", "key (attends to)"  # as in views.style


def _token_label(token: str, width: int = 12) -> str:
    """A token as a tick label: blanks made visible, long ones shortened."""
    s = str(token)
    if not s.strip():
        s = s.replace(" ", "␣").replace("\t", "\\t").replace("\n", "\\n") or "''"
    return s if len(s) <= width else s[: width - 1] + "…"


class _HeadGrid:
    """Draws attention maps of several heads side by side, straight into pixels (Pillow).

    The live explorers redraw on every change of a control, and matplotlib spends most of
    a redraw laying out the ~60 text labels of such a grid (≈ 80 ms here). Drawing the
    same picture with Pillow takes a few milliseconds, in the same font (DejaVu Sans)
    and colour map as :mod:`~transformer_lib.views.style`. Rows are queries, columns are
    keys; every map shares one colour bar from 0 to 1.
    """

    def __init__(self, dpi: int = LIVE_DPI):
        import matplotlib as mpl

        from ..style import SEQUENTIAL_CMAP

        self.px = dpi / 72  # pixels per point
        lut = mpl.colormaps[SEQUENTIAL_CMAP](np.linspace(0.0, 1.0, 256))[:, :3]
        self.lut = np.round(lut * 255).astype(np.uint8)  # (256, 3)

    @staticmethod
    @functools.lru_cache(maxsize=16)
    def _font(size_px: int):
        from matplotlib import font_manager
        from PIL import ImageFont

        path = font_manager.findfont("DejaVu Sans")
        return ImageFont.truetype(path, size_px, layout_engine=ImageFont.Layout.BASIC)

    def font(self, points: float):
        return self._font(max(6, round(points * self.px)))

    def _colour(self, values: np.ndarray) -> np.ndarray:
        idx = np.round(np.clip(np.nan_to_num(values), 0.0, 1.0) * 255).astype(np.intp)
        return self.lut[idx]  # (..., 3)

    @staticmethod
    def _rotated(size: tuple[int, int], draw_fn) -> Any:
        """A text mask drawn left-to-right in a ``size`` strip, turned to read bottom-to-top."""
        from PIL import Image, ImageDraw

        strip = Image.new("L", size, 0)
        draw_fn(ImageDraw.Draw(strip))
        return strip.transpose(Image.Transpose.ROTATE_90)

    def render(
        self,
        mats: np.ndarray,
        query_tokens: Sequence[str],
        key_tokens: Sequence[str],
        *,
        title: str,
        panel_titles: Sequence[str],
        ncols: int,
        off: Sequence[bool] = (),
        palette: bool = False,
    ) -> bytes:
        """Tile ``mats`` ``(n, Tq, Tk)`` in ``ncols`` columns; return PNG bytes."""
        from PIL import Image, ImageDraw

        px = self.px
        n, tq, tk = mats.shape
        ncols = max(1, min(ncols, n))
        nrows = math.ceil(n / ncols)
        # Cell size: the maps fill about 430 x 400 points, each cell 9 to 24 points (a long
        # sentence makes a wider image rather than unreadable labels).
        cell_pt = float(np.clip(min(430 / (ncols * tk), 400 / (nrows * tq)), 9.0, 24.0))
        cell = max(3, round(cell_pt * px))
        tick_font = self.font(float(np.clip(cell_pt * 0.85, 7.5, 10.0)))
        label_font, title_font = self.font(11), self.font(11)
        panel_font = self.font(9.5)
        q_labels = [_token_label(t) for t in query_tokens]
        k_labels = [_token_label(t) for t in key_tokens]
        pad = round(4 * px)
        line = round(14 * px)  # height of one line of 11-point text
        gap_x = max(cell, round(12 * px))
        gap_y = line + pad  # room for the panel titles of the next row
        maps_w = ncols * tk * cell + (ncols - 1) * gap_x
        maps_h = nrows * tq * cell + (nrows - 1) * gap_y
        y_label_w = round(max((tick_font.getlength(s) for s in q_labels), default=0))
        x_label_h = round(max((tick_font.getlength(s) for s in k_labels), default=0))
        left = pad + line + pad + y_label_w + pad
        cbar_w, cbar_label_w = round(12 * px), round(self.font(9).getlength("0.0")) + pad
        width = max(left + maps_w + 3 * pad + cbar_w + cbar_label_w + line + pad, round(400 * px))
        wrap = max(40, int(width / (6.2 * px)))
        lines = [ln for part in title.split("\n") for ln in textwrap.wrap(part, wrap) or [""]]
        top = pad + len(lines) * line + pad + line + pad  # title, then the first panel titles
        height = top + maps_h + pad + x_label_h + pad + line + pad

        canvas = np.full((height, width, 3), 255, dtype=np.uint8)
        origins = []
        for idx in range(n):
            r, c = divmod(idx, ncols)
            y0, x0 = top + r * (tq * cell + gap_y), left + c * (tk * cell + gap_x)
            rgb = self._colour(mats[idx])  # (Tq, Tk, 3)
            block = rgb.repeat(cell, axis=0).repeat(cell, axis=1)
            if idx < len(off) and off[idx]:  # fade a switched-off head towards white
                block = (0.3 * block + 0.7 * 255).astype(np.uint8)
            canvas[y0 : y0 + tq * cell, x0 : x0 + tk * cell] = block
            origins.append((y0, x0))
        # Colour bar: 0 at the bottom, 1 at the top.
        cb_h = min(maps_h, round(250 * px))
        cb_x, cb_y = left + maps_w + 3 * pad, top
        ramp = self._colour(np.linspace(1.0, 0.0, cb_h))[:, None, :]
        canvas[cb_y : cb_y + cb_h, cb_x : cb_x + cbar_w] = ramp.repeat(cbar_w, axis=1)

        image = Image.fromarray(canvas)
        draw = ImageDraw.Draw(image)
        ink, grey = (0, 0, 0), (68, 68, 68)
        for i, text_line in enumerate(lines):
            draw.text((pad, pad + i * line), text_line, font=title_font, fill=ink)
        rows_y0 = sorted({y0 for y0, _ in origins})
        cols_x0 = sorted({x0 for _, x0 in origins})
        for y0 in rows_y0:  # query labels left of each row of panels
            for i, s in enumerate(q_labels):
                draw.text(
                    (left - pad, y0 + i * cell + cell // 2),
                    s,
                    font=tick_font,
                    fill=ink,
                    anchor="rm",
                )
        longest = max(panel_titles, key=len, default="")
        size = 9.5
        while size > 6 and panel_font.getlength(longest) > tk * cell + gap_x - 2 * pad:
            size -= 0.5  # narrow panels: smaller titles rather than overlapping ones
            panel_font = self.font(size)
        for idx, (y0, x0) in enumerate(origins):
            draw.text(
                (x0 + tk * cell // 2, y0 - pad // 2),
                panel_titles[idx],
                font=panel_font,
                fill=ink,
                anchor="md",
            )
            if idx < len(off) and off[idx]:
                w, h = tk * cell, tq * cell
                for c in range(0, w + h, round(10 * px)):  # hatching: lines x + y = c
                    start = (x0 + max(0, c - h), y0 + min(h, c))
                    end = (x0 + min(w, c), y0 + max(0, c - w))
                    draw.line([start, end], fill=grey, width=1)
                draw.rectangle([x0, y0, x0 + w - 1, y0 + h - 1], outline=grey)
                draw.text(
                    (x0 + w // 2, y0 + h // 2),
                    "switched off",
                    font=panel_font,
                    fill=ink,
                    anchor="mm",
                    stroke_width=2,
                    stroke_fill=(255, 255, 255),
                )
        # Key labels under the bottom row, reading upwards, as in the other heatmaps.
        strip_w = x_label_h + 1

        def key_labels(d) -> None:
            for x0 in cols_x0:
                for j, s in enumerate(k_labels):
                    d.text(
                        (strip_w - 1, x0 - left + j * cell + cell // 2),
                        s,
                        font=tick_font,
                        fill=255,
                        anchor="rm",
                    )

        maps_bottom = top + maps_h
        mask = self._rotated((strip_w, maps_w), key_labels)
        image.paste(ink, (left, maps_bottom + pad), mask)
        draw.text(
            (left + maps_w // 2, height - pad), _KEY_AXIS, font=label_font, fill=ink, anchor="md"
        )
        q_axis = _QUERY_AXIS if label_font.getlength(_QUERY_AXIS) <= maps_h else "query"
        q_axis_w = round(label_font.getlength(q_axis)) + 2
        mask = self._rotated(
            (q_axis_w, line), lambda d: d.text((0, 0), q_axis, font=label_font, fill=255)
        )
        image.paste(ink, (pad, top + max(0, (maps_h - q_axis_w) // 2)), mask)
        for v in (0.0, 0.2, 0.4, 0.6, 0.8, 1.0):
            y = cb_y + round((1 - v) * (cb_h - 1))
            draw.line([(cb_x + cbar_w, y), (cb_x + cbar_w + 3, y)], fill=ink)
            draw.text((cb_x + cbar_w + 5, y), f"{v:.1f}", font=self.font(9), fill=ink, anchor="lm")
        cb_label_w = round(self.font(10).getlength("attention weight")) + 2
        mask = self._rotated(
            (cb_label_w, line),
            lambda d: d.text((0, 0), "attention weight", font=self.font(10), fill=255),
        )
        image.paste(
            ink, (cb_x + cbar_w + cbar_label_w + pad, cb_y + max(0, (cb_h - cb_label_w) // 2)), mask
        )
        fonts = (title_font, tick_font, panel_font, label_font, self.font(9), self.font(10))
        return with_text_size(encode_png(np.asarray(image), palette), [f.size for f in fonts])
