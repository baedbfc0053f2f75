"""Every page on a phone (390 x 844) and a tablet (768 x 1024), with a touch screen.

Chromium's device emulation (a mobile viewport, touch) opens each page once as a phone;
the tablet checks resize that same page. On both:

* **No sideways page.** The page is never wider than the screen: long inline code and
  headings wrap.
* **Nothing cut off.** A display equation, table, code listing, printout, figure or
  explorer frame wider than the column scrolls inside its own box, and shows that it does
  (``_static/book.js`` marks it and fades the side with more to see); no box hides
  content, and no readout, label or button is cut short.
* **Readable.** The smallest text of every figure and explorer frame, as shown, is at
  least :data:`~page_checks.MIN_TEXT_PX` CSS pixels, and so is the text of the explorers
  and translator boxes themselves.
* **Touch.** Every precomputed explorer changes its frame when a control is tapped, and
  its readouts stay in view; the translator takes typed text, translates on a tap, picks
  the kind, layer and head, and switches a head off by touch.

With ``BOOK_SCREENSHOTS=1`` (``make screenshots``), full-page phone screenshots are
saved under ``_build/screenshots/phone/``.
"""

from __future__ import annotations

import pytest
from page_checks import (
    ARTICLE,
    CUT_OFF,
    HTML_TEXT_SIZES,
    IMAGE_TEXT_SIZES,
    MIN_TEXT_PX,
    PHONE,
    SVG_AND_CANVAS_TEXT,
    TABLET,
    listing,
    wait_for_translators,
)

pytestmark = pytest.mark.browser

IMAGE_SOURCES = """box => Array.from(box.querySelectorAll('img'))
    .filter(img => img.offsetParent !== null).map(img => img.getAttribute('src'))"""


def _ready(page) -> None:
    wait_for_translators(page)
    page.evaluate("() => document.querySelectorAll('details').forEach(d => (d.open = true))")
    page.wait_for_timeout(250)  # book.js marks the boxes that scroll after a change


def _too_small(page) -> list[str]:
    article = page.locator(ARTICLE).first
    out = []
    for img in article.evaluate(IMAGE_TEXT_SIZES):
        if img["recorded"] in (None, "not a PNG"):
            out.append(f"{img['src']}: no text size recorded")
        elif img["recorded"] != "none":
            px = float(img["recorded"]) * img["shown"] / img["natural"]
            if px < MIN_TEXT_PX:
                out.append(
                    f"{img['src']}: {px:.1f} px (shown at {img['shown'] / img['natural']:.0%});"
                    f" alt {(img['alt'] or '')[:50]!r}"
                )
    items = article.evaluate(SVG_AND_CANVAS_TEXT) + page.evaluate(HTML_TEXT_SIZES)
    out += [f"{i['what']}: {i['px']:.1f} px" for i in items if i["px"] < MIN_TEXT_PX]
    return out


def _layout_problems(page, label: str) -> list[str]:
    result = page.evaluate(CUT_OFF)
    return [f"[{label}] {p}" for p in result["problems"]] + [
        f"[{label}] text under {MIN_TEXT_PX:g} px: {p}" for p in _too_small(page)
    ]


def test_phone_layout(phone_visit, page_name):
    page = phone_visit(page_name).page
    _ready(page)
    problems = _layout_problems(page, "390 px")
    assert not problems, f"{page_name} on a phone:" + listing(problems)


def test_tablet_layout(phone_visit, page_name):
    page = phone_visit(page_name).page
    _ready(page)
    page.set_viewport_size(TABLET)
    try:
        page.wait_for_timeout(400)
        problems = _layout_problems(page, "768 px")
    finally:
        page.set_viewport_size(PHONE)
        page.wait_for_timeout(300)
    assert not problems, f"{page_name} on a tablet:" + listing(problems)


def _tap_to_change(page, control) -> str:
    """Change one control of an explorer by touch, as a finger would; say what was done."""
    kind = control.evaluate(
        "e => e.tagName === 'SELECT' ? 'select' : e.tagName === 'BUTTON' ? 'button' : 'slider'"
    )
    if kind == "button":
        if "mod-active" in (control.get_attribute("class") or ""):
            return ""
        control.tap()
        return f"tapped button {control.inner_text()!r}"
    if kind == "select":
        n, current = control.evaluate("e => [e.options.length, e.selectedIndex]")
        if n < 2:
            return ""
        control.tap()
        control.select_option(index=(current + 1) % n)
        return "tapped a menu and picked the next option"
    track = control.locator("xpath=ancestor::*[contains(@class, 'noUi-target')]").first
    box = track.bounding_box()
    now, top = (float(control.get_attribute(a) or 0) for a in ("aria-valuenow", "aria-valuemax"))
    x = box["x"] + box["width"] * (0.15 if now > top / 2 else 0.85)
    page.touchscreen.tap(x, box["y"] + box["height"] / 2)
    return "tapped the slider's track"


def test_explorers_work_by_touch_with_readouts_in_view(phone_visit, page_name):
    page = phone_visit(page_name).page
    _ready(page)
    explorers = page.locator(".static-explorer")
    if explorers.count() == 0:
        pytest.skip(f"{page_name} has no precomputed explorer")
    problems = []
    width = page.evaluate("() => document.documentElement.clientWidth")
    for i in range(explorers.count()):
        box = explorers.nth(i)
        box.scroll_into_view_if_needed()
        for readout in box.locator(".widget-readout").all():
            r = readout.bounding_box()
            if not readout.inner_text().strip() or r is None or r["width"] < 4:
                problems.append(f"explorer {i}: a readout is empty or not shown")
            elif r["x"] < 0 or r["x"] + r["width"] > width + 1:
                problems.append(f"explorer {i}: readout {readout.inner_text()!r} off screen")
        controls = box.locator(".noUi-handle, select, .widget-toggle-buttons button")
        tried = []
        for j in range(controls.count()):
            before = box.evaluate(IMAGE_SOURCES)
            action = _tap_to_change(page, controls.nth(j))
            if not action:
                continue
            page.wait_for_timeout(300)
            tried.append(action)
            if box.evaluate(IMAGE_SOURCES) != before:
                break
        else:
            problems.append(f"explorer {i}: no tap changed its frame (tried: {tried})")
    assert not problems, f"{page_name} by touch:" + listing(problems)


BOX = "[data-live-translate]"


def test_translator_works_by_touch(phone_visit, page_name):
    page = phone_visit(page_name).page
    if page.locator(BOX).count() == 0:
        pytest.skip(f"{page_name} has no translator box")
    _ready(page)
    box = page.locator(BOX).first
    assert box.get_attribute("data-load-error") is None, box.inner_text()

    def answered(action) -> None:
        runs = int(box.get_attribute("data-runs") or 0)
        action()
        page.wait_for_function(
            "([sel, n]) => Number(document.querySelector(sel).getAttribute('data-runs')) > n",
            arg=[BOX, runs],
            timeout=15_000,
        )

    field = box.locator('[data-testid="live-translate-input"]')
    field.tap()
    field.fill("The cat is sleeping.")
    answered(lambda: box.locator('[data-testid="live-translate-button"]').tap())
    assert box.locator('[data-testid="live-translate-output"]').inner_text().strip()
    figure = box.locator('[data-testid="live-attention"]')
    for testid in ("kind", "layer", "head"):  # each menu set to its last option
        menu = box.locator(f'[data-testid="live-attention-{testid}"]')
        menu.tap()
        value = menu.locator("option").last.get_attribute("value")
        menu.select_option(value)
        assert figure.get_attribute(f"data-{testid}") == value
    switch = box.locator('[data-testid="live-head-switch"]').first
    switch.scroll_into_view_if_needed()
    answered(lambda: switch.tap())
    assert not switch.is_checked()
    assert "1 head off" in box.locator('[data-testid="live-translate-baseline"]').inner_text()
    answered(lambda: switch.tap())
    assert switch.is_checked()
    # The maps fit the phone or scroll in their own box; their labels stay readable.
    canvas = figure.locator("canvas").first
    assert canvas.bounding_box()["width"] > 50
    problems = [p for p in _layout_problems(page, "390 px") if "lt-" in p or "canvas" in p]
    assert not problems, listing(problems)
