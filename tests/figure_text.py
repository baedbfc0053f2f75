"""How large a figure's smallest text is on the book's page (figure and explorer tests)."""

from __future__ import annotations

from matplotlib.text import Text

#: CSS pixels of a chapter's text column in a 1280-pixel window: an inline figure wider
#: than this is shrunk to fit it.
FIGURE_COLUMN_PX = 672
#: The widest an explorer frame (a widget image) is shown in the same window.
FRAME_COLUMN_PX = 688


def smallest_text_css_px(
    fig, dpi: float = 100, column_px: float = FIGURE_COLUMN_PX, tight: bool = True
) -> float:
    """The smallest visible text of ``fig`` in CSS pixels, drawn at ``dpi`` and shrunk to
    ``column_px`` when wider. Inline figures are saved with a tight bounding box
    (``tight``); explorer frames keep the figure's own width."""
    fig.set_dpi(dpi)
    fig.canvas.draw()
    sizes = [
        t.get_fontsize() for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip()
    ]
    width_in = fig.get_tightbbox(fig.canvas.get_renderer()).width if tight else fig.get_figwidth()
    return min(sizes) * dpi / 72 * min(1.0, column_px / (width_in * dpi))
