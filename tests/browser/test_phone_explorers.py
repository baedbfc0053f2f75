"""Precomputed explorers on a phone: each frame's panels stacked in one column.

A static explorer frame of several panels too wide for a phone's column carries a phone
version (``transformer_lib.views.explorers.frames.figure_to_png``, with the rules of
``transformer_lib.views.phone_layout``); on a screen up to 600 px wide
``_static/explorer-alt.js`` shows that version in place of the frame the widget manager
drew. On a phone (390 x 844) the shown frame of each explorer of chapters 1-6 must be
its phone version, fit the column without sideways scrolling, keep its smallest text at
least :data:`~page_checks.MIN_TEXT_PX` CSS px and its alt text; so must the frame shown
after a control is moved. At 1280 px the desktop frame is shown. (Chapter 2's BPE frames
have one panel: they draw their phone version themselves, the tokens in shorter rows.)
"""

from __future__ import annotations

import pytest
from page_checks import ARTICLE, PNG_CHUNKS_JS, listing, phone_fit_problems
from test_screens import _ready, _tap_to_change

pytestmark = pytest.mark.browser

CHAPTERS = [
    "chapters/01_why_attention",
    "chapters/02_tokens_and_embeddings",
    "chapters/03_scaled_dot_product_attention",
    "chapters/04_multi_head_attention",
    "chapters/05_positional_encoding",
    "chapters/06_masks",
]

# The shown frame of every precomputed explorer: its sizes, the text size recorded in
# the PNG it shows, whether that PNG carries a phone version, how far the frames' box
# scrolls sideways, and its alt text next to the one explorer-alt.js gives it.
SHOWN_FRAMES = (
    """async (article) => {
"""
    + PNG_CHUNKS_JS
    + """
  const out = [];
  for (const box of article.querySelectorAll(".static-explorer")) {
    const img = Array.from(box.querySelectorAll("img.explorer-frame"))
      .find(i => i.offsetParent !== null);
    if (!img) { out.push(null); continue; }
    if (!img.complete) await img.decode().catch(() => null);
    const frames = img.closest(".explorer-frames");
    const source = box.querySelector(".explorer-alt");
    const n = Number((/frame-(\\d+)/.exec(img.className) || [0, -1])[1]);
    const own = JSON.parse(source.getAttribute("data-frames") || "[]")[n];
    const common = source.textContent.trim();
    const chosen = await pngChunks(img.src);
    out.push({
      src: img.getAttribute("src"),
      frame: n,
      phoneShown: img.hasAttribute("data-phone-frame"),
      natural: img.naturalWidth,
      shown: img.getBoundingClientRect().width,
      column: article.getBoundingClientRect().width,
      scroll: frames.scrollWidth - frames.clientWidth,
      recorded: chosen.text,
      carriesPhone: chosen.phone,
      alt: img.getAttribute("alt"),
      expectedAlt: own ? own + ". " + common : common,
    });
  }
  return out;
}"""
)

# Until every explorer's shown frame is no longer being read (explorer-alt.js).
PHONE_SETTLED = """(article) => Array.from(article.querySelectorAll(".static-explorer"))
  .every(box => Array.from(box.querySelectorAll("img.explorer-frame"))
    .filter(i => i.offsetParent !== null)
    .every(i => i.hasAttribute("data-phone-frame") && i.complete && i.naturalWidth > 0))"""


def _shown(page):
    return page.locator(ARTICLE).first.evaluate(SHOWN_FRAMES)


def _wait_for_phone_frames(page, timeout_ms: int = 5000) -> None:
    article = page.locator(ARTICLE).first
    for _ in range(timeout_ms // 100):
        if article.evaluate(PHONE_SETTLED):
            return
        page.wait_for_timeout(100)


def _phone_problems(frames, when: str) -> list[str]:
    bad = []
    for i, f in enumerate(frames):
        if f is None:
            bad.append(f"explorer {i} ({when}): no frame shown")
            continue
        name = f"explorer {i}, frame {f['frame']} ({when})"
        if not f["phoneShown"] or f["carriesPhone"]:
            bad.append(f"{name}: shows the desktop frame ({f['natural']} px wide)")
        bad += phone_fit_problems(name, f)
        if f["alt"] != f["expectedAlt"]:
            bad.append(f"{name}: alt {f['alt']!r} is not its description")
    return bad


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_explorer_frames_fit_a_phone_before_and_after_a_change(phone_visit, chapter):
    page = phone_visit(chapter).page
    _ready(page)
    explorers = page.locator(".static-explorer")
    assert explorers.count(), f"{chapter} has no precomputed explorer"
    _wait_for_phone_frames(page)
    bad = _phone_problems(_shown(page), "as loaded")
    for i in range(explorers.count()):
        box = explorers.nth(i)
        box.scroll_into_view_if_needed()
        before = _shown(page)[i]
        controls = box.locator(".noUi-handle, select, .widget-toggle-buttons button")
        tried = []
        for j in range(controls.count()):
            action = _tap_to_change(page, controls.nth(j))
            if not action:
                continue
            tried.append(action)
            page.wait_for_timeout(300)
            _wait_for_phone_frames(page)
            after = _shown(page)[i]
            if after and before and after["frame"] != before["frame"]:
                bad += [p for p in _phone_problems([after], action) if p]
                break
        else:
            bad.append(f"explorer {i}: no tap changed its frame (tried: {tried})")
    assert not bad, f"{chapter} at 390 px:" + listing(bad)


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_a_wide_screen_shows_the_desktop_frames(visit, chapter):
    page = visit(chapter).page
    page.wait_for_timeout(300)
    bad = []
    for i, f in enumerate(_shown(page)):
        if f is None:
            bad.append(f"explorer {i}: no frame shown")
        elif f["phoneShown"] or not f["carriesPhone"]:
            bad.append(f"explorer {i}, frame {f['frame']}: not the desktop frame")
        elif f["alt"] != f["expectedAlt"]:
            bad.append(f"explorer {i}, frame {f['frame']}: alt {f['alt']!r}")
    assert not bad, f"{chapter} at 1280 px:" + listing(bad)
