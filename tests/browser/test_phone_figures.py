"""Wide figures on a phone: their panels stacked in one column, no sideways scrolling.

A figure of several panels too wide for a phone's column carries a phone version
(``transformer_lib.views.phone_layout``), which the page offers in a ``<picture>``
(``scripts/vendor_js.py``). On a phone (390 x 844) the browser must pick that version,
show it inside the column (its box does not scroll sideways) with its smallest text at
least :data:`~page_checks.MIN_TEXT_PX` CSS px; at 1280 px it must show the desktop image,
and the desktop PNG must no longer carry the phone one. Chapter 4's grids of heads must
have phone versions, and so must every figure named in :data:`MUST_FIT`: a figure that
stops fitting a phone (its phone version lost, or its box scrolling) fails here.
"""

from __future__ import annotations

import pytest
from page_checks import ARTICLE, PNG_CHUNKS_JS, listing, phone_fit_problems

pytestmark = pytest.mark.browser

#: A page whose grids of attention heads must have phone versions.
GRID_PAGE = "chapters/04_multi_head_attention"

#: Figures (by their ``:name:``) that must show a phone version that fits the column.
MUST_FIT = {
    "chapters/03_scaled_dot_product_attention": (
        "fig-ch03-projections",
        "fig-ch03-weighted-sum",
        "fig-ch03-variance",
        "fig-ch03-saturation",
        "fig-ch03-gradient",
    ),
    "chapters/05_positional_encoding": (
        "fig-05-table",
        "fig-05-sinusoids",
        "fig-05-rotation",
    ),
    "chapters/07_feed_forward_and_layer_norm": (
        "fig-07-residual",
        "fig-07-training",
        "fig-07-activations",
    ),
    "chapters/08_encoder_decoder": ("fig-08-data-flow", "fig-08-cross-attention"),
    "chapters/09_training": ("fig-09-lr-schedule", "fig-09-quality-per-minute"),
    "chapters/10_decoding_and_evaluation": ("fig-10-kv-cache-contents",),
    "chapters/13_debugging": ("fig-ch13-scoreboard",),
}

#: Pages whose precomputed explorers must show phone frames that fit (chapters 1-6 are
#: checked, before and after a change, in test_phone_explorers.py).
EXPLORERS_MUST_FIT = ("chapters/08_encoder_decoder", "chapters/10_decoding_and_evaluation")

# The image a named figure shows: as PHONE_FIGURES reports it, with its box's scroll.
NAMED_FIGURE = (
    """async (figure) => {
"""
    + PNG_CHUNKS_JS
    + """
  const img = figure.querySelector("img");
  if (!img.complete) await img.decode().catch(() => null);
  const chosen = await pngChunks(img.currentSrc);
  return {
    src: img.getAttribute("src"),
    chosen: img.currentSrc,
    natural: img.naturalWidth,
    naturalHeight: img.naturalHeight,
    shown: img.getBoundingClientRect().width,
    column: figure.closest("article, main").getBoundingClientRect().width,
    scroll: Math.max(figure.scrollWidth - figure.clientWidth,
      img.parentElement.scrollWidth - img.parentElement.clientWidth),
    recorded: chosen.text,
  };
}"""
)

# For each figure with a phone version: the image the browser chose, its sizes, the text
# size recorded in that image, and how far its box scrolls sideways.
PHONE_FIGURES = (
    """async (article) => {
"""
    + PNG_CHUNKS_JS
    + """
  const out = [];
  for (const picture of article.querySelectorAll("picture.phone-figure")) {
    const img = picture.querySelector("img");
    const box = img.closest("figure, div.cell_output") || picture.parentElement;
    if (!img.complete) await img.decode().catch(() => null);
    const shown = img.getBoundingClientRect().width;
    const chosen = await pngChunks(img.currentSrc);
    out.push({
      src: img.getAttribute("src"),
      chosen: img.currentSrc,
      natural: img.naturalWidth,
      shown,
      column: article.getBoundingClientRect().width,
      scroll: box.scrollWidth - box.clientWidth,
      recorded: chosen.text,
      carriesPhone: chosen.phone,
    });
  }
  return out;
}"""
)


def _figures(visit_result):
    page = visit_result.page
    article = page.locator(ARTICLE).first
    return article.evaluate(PHONE_FIGURES)


def _figures_or_skip(visit_result, page_name):
    """The page's figures that have a phone version; the test is skipped if it has none."""
    figures = _figures(visit_result)
    if not figures:
        pytest.skip(f"{page_name} has no figure with a phone version")
    return figures


def test_phone_figures_show_stacked_without_scrolling(phone_visit, page_name):
    figures = _figures_or_skip(phone_visit(page_name), page_name)
    bad = []
    for f in figures:
        if not f["chosen"].endswith("-phone.png"):
            bad.append(f"{f['src']}: the phone shows {f['chosen']}, not its phone version")
            continue
        bad += phone_fit_problems(f["src"], f)
    assert not bad, f"{page_name} at 390 px:" + listing(bad)


def test_desktop_shows_the_desktop_image_without_the_phone_one(visit, page_name):
    figures = _figures_or_skip(visit(page_name), page_name)
    bad = []
    for f in figures:
        if f["chosen"].endswith("-phone.png"):
            bad.append(f"{f['src']}: 1280 px shows the phone version")
        elif f["carriesPhone"]:
            bad.append(f"{f['src']}: the desktop PNG still carries the phone version")
    assert not bad, f"{page_name} at 1280 px:" + listing(bad)


def test_the_grids_of_heads_have_phone_versions(phone_visit):
    figures = _figures(phone_visit(GRID_PAGE))
    assert figures, f"{GRID_PAGE}: no figure with a phone version"
    assert all(f["chosen"].endswith("-phone.png") for f in figures)


def test_named_figures_fit_a_phone(phone_visit, page_name):
    if page_name not in MUST_FIT:
        pytest.skip(f"{page_name} names no figure that must fit a phone")
    page = phone_visit(page_name).page
    bad = []
    for name in MUST_FIT[page_name]:
        figure = page.locator(f"figure#{name}")
        if figure.count() != 1:
            bad.append(f"{name}: not on the page")
            continue
        f = figure.evaluate(NAMED_FIGURE)
        if not f["chosen"].endswith("-phone.png"):
            bad.append(f"{name}: the phone shows {f['chosen']}, not a phone version")
        bad += phone_fit_problems(name, f)
    assert not bad, f"{page_name} at 390 px:" + listing(bad)


def test_named_explorers_fit_a_phone(phone_visit, page_name):
    if page_name not in EXPLORERS_MUST_FIT:
        pytest.skip(f"{page_name} names no explorer that must fit a phone")
    from test_phone_explorers import _phone_problems, _shown, _wait_for_phone_frames

    page = phone_visit(page_name).page
    _wait_for_phone_frames(page)
    bad = _phone_problems(_shown(page), "as loaded")
    assert not bad, f"{page_name} at 390 px:" + listing(bad)
