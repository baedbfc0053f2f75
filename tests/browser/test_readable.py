"""Every page read at page width (1280 px): figures readable, nothing cut off, alt text.

* **Text size.** The smallest text of every figure, as the page shows it, is at least
  :data:`MIN_TEXT_PX` CSS pixels. For an image that is the size recorded in the PNG when it
  was drawn (``transformer_lib.views.text_size``) times the scale at which the page shows
  it; for SVG (the bertviz views) and canvas (the in-browser translator) the browser
  measures the text itself. An image without a record fails: it did not come from the
  book's figure paths, so nobody knows whether it is readable.
* **Nothing runs off the page.** No code listing, printed output, display equation,
  table, widget or figure reaches past the right edge of the article or scrolls sideways
  inside it. Collapsed cells (hidden inputs, solutions) are opened first: a reader can
  open them too.
* **Alt text.** Every image says what it shows; an explorer's frames carry its hidden
  descriptions, what every frame shows and what each one shows (``_static/explorer-alt.js``).

Phones and tablets are checked in ``test_screens.py``, screen readers, keyboards and dark
mode in ``test_access.py`` and ``test_keyboard.py``.
"""

from __future__ import annotations

import pytest
from page_checks import (
    ARTICLE,
    IMAGE_TEXT_SIZES,
    MIN_TEXT_PX,
    SVG_AND_CANVAS_TEXT,
    listing,
    wait_for_translators,
)

pytestmark = pytest.mark.browser

# Elements that must stay inside the article: what scrolls sideways or reaches past it.
OVERFLOW = """(article) => {
  const edge = article.getBoundingClientRect().right;
  const selector = [
    "div.highlight pre", "div.cell_output pre", "mjx-container[display='true']", "table",
    ".jupyter-widgets", "img", "svg", "canvas", ".bertviz", "div.cell_output > div",
  ].join(", ");
  const out = [];
  for (const e of article.querySelectorAll(selector)) {
    const box = e.getBoundingClientRect();
    if (box.width === 0 || !e.getClientRects().length) continue;
    const scrolls = e.scrollWidth > e.clientWidth + 1
      && ["auto", "scroll", "hidden", "clip"].includes(getComputedStyle(e).overflowX);
    const past = box.right - edge;
    if (scrolls || past > 1) {
      out.push(`${e.tagName.toLowerCase()}.${(e.className.baseVal ?? e.className)
        .toString().split(" ")[0]}: ` + (scrolls ? `scrolls ${e.scrollWidth - e.clientWidth} px`
        : `ends ${Math.round(past)} px past the article`)
        + ` -- ${JSON.stringify((e.textContent || "").trim().slice(0, 60))}`);
    }
  }
  return out;
}"""


def _article(visit, page_name):
    v = visit(page_name)
    page = v.page
    wait_for_translators(page, timeout=30_000)
    return page, page.locator(ARTICLE).first


def test_figure_text_is_readable_at_page_width(visit, page_name):
    page, article = _article(visit, page_name)
    too_small, unknown = [], []
    for img in article.evaluate(IMAGE_TEXT_SIZES):
        if img["recorded"] in (None, "not a PNG"):
            unknown.append(f"{img['src']} ({img['recorded'] or 'no text size recorded'})")
            continue
        if img["recorded"] == "none":  # no text in the image
            continue
        px = float(img["recorded"]) * img["shown"] / img["natural"]
        if px < MIN_TEXT_PX:
            too_small.append(
                f"{img['src']}: {px:.1f} px ({img['recorded']} px drawn, shown at "
                f"{img['shown'] / img['natural']:.0%}); alt: {(img['alt'] or '')[:60]!r}"
            )
    for item in article.evaluate(SVG_AND_CANVAS_TEXT):
        if item["px"] < MIN_TEXT_PX:
            too_small.append(f"{item['what']}: {item['px']:.1f} px")
    assert not unknown, f"{page_name}: images of unknown text size:" + listing(unknown)
    assert not too_small, f"{page_name}: text under {MIN_TEXT_PX:g} CSS px at 1280 px:" + listing(
        too_small
    )


def test_nothing_runs_off_the_page(visit, page_name):
    page, article = _article(visit, page_name)
    page.evaluate("() => document.querySelectorAll('details').forEach(d => (d.open = true))")
    page.wait_for_timeout(100)
    wide = article.evaluate(OVERFLOW)
    assert not wide, f"{page_name}: cut off or scrolling sideways at 1280 px:" + listing(wide)


def test_every_image_says_what_it_shows(visit, page_name):
    page, article = _article(visit, page_name)
    bad = []
    for img in article.evaluate(IMAGE_TEXT_SIZES):
        alt = (img["alt"] or "").strip()
        looks_like_a_file = alt.lower().endswith((".png", ".svg", ".jpg")) or " " not in alt
        if len(alt) < 15 or looks_like_a_file:
            bad.append(f"{img['src']}: alt={alt!r}")
    assert not bad, f"{page_name}: images without a description:" + listing(bad)
