"""Every page for readers with a screen reader or a keyboard, and in dark mode.

* **axe-core** (``_static/vendor/axe-core``, injected by the tests) finds no violation of
  any impact of the WCAG 2.1 A and AA rules on any page, at 1280 px and on the phone
  (390 px, touch).
* **Dark mode.** The book offers the theme's dark mode. Figures, explorers and attention
  views keep the light background they are drawn for (the colours of their maps and lines
  carry meaning): in dark mode they sit on light panels with dark text. In dark mode every
  page passes axe-core's colour-contrast rule, every explorer, attention view and
  translator box is light with dark text. With ``BOOK_SCREENSHOTS=1`` (``make
  screenshots``) screenshots of each are saved under ``_build/screenshots/dark/`` for a
  person to look at.
"""

from __future__ import annotations

import pytest
from page_checks import (
    ANIMATIONS_SETTLED,
    SAVE_SCREENSHOTS,
    SCREENSHOTS,
    axe,
    wait_for_translators,
)

pytestmark = pytest.mark.browser

#: What must stay light in dark mode: the explorers, bertviz views, translator boxes.
PANELS = ".transformer-explorer, .bertviz, [data-live-translate]"
DARK_SHOTS_PER_PAGE = 4


def _report(violations: list[dict]) -> str:
    lines = []
    for v in violations:
        lines.append(f"{v['id']} ({v['impact']}, {len(v['nodes'])} nodes): {v['help']}")
        lines += [f"    {n}" for n in v["nodes"][:4]]
    return "\n  " + "\n  ".join(lines)


def test_axe_finds_nothing_at_desktop_width(visit, page_name):
    page = visit(page_name).page
    wait_for_translators(page)
    violations = axe(page)
    assert not violations, f"{page_name} at 1280 px:" + _report(violations)


def test_axe_finds_nothing_on_a_phone(phone_visit, page_name):
    page = phone_visit(page_name).page
    wait_for_translators(page)
    violations = axe(page)
    assert not violations, f"{page_name} at 390 px:" + _report(violations)


# Luminance of the panel's background and of its text (WCAG's relative luminance).
PANEL_COLOURS = """(selector) => {
  function rgb(s) { const m = s.match(/[\\d.]+/g) || []; return m.slice(0, 4).map(Number); }
  function lum([r, g, b]) {
    const f = c => (c /= 255) <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
    return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
  }
  function background(el) {
    for (let e = el; e; e = e.parentElement) {
      const c = rgb(getComputedStyle(e).backgroundColor);
      if (c.length === 3 || c[3] > 0.5) return c;
    }
    return [255, 255, 255];
  }
  return [...document.querySelectorAll(selector)].filter(e => e.getClientRects().length)
    .map(e => ({
      what: (e.className && String(e.className).split(" ").find(c => c !== "lm-Widget"))
        || e.tagName.toLowerCase(),
      background: lum(background(e)),
      text: lum(rgb(getComputedStyle(e).color)),
    }));
}"""


def _theme_settled(page) -> None:
    """After a change of theme: until its colour transitions have ended."""
    page.evaluate(ANIMATIONS_SETTLED)


def _save_panels(page, page_name: str) -> None:
    """Screenshots of the page's first few panels, as dark mode shows them."""
    shots = page.locator(PANELS)
    folder = SCREENSHOTS / "dark"
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(min(shots.count(), DARK_SHOTS_PER_PAGE)):
        if shots.nth(i).is_visible():
            name = f"{page_name.replace('/', '_')}-{i}.png"
            shots.nth(i).screenshot(path=str(folder / name), scale="css")


def test_dark_mode_keeps_figures_explorers_and_views_readable(visit, page_name):
    page = visit(page_name).page
    wait_for_translators(page)
    page.evaluate("() => { document.documentElement.dataset.theme = 'dark'; }")
    try:
        _theme_settled(page)
        contrast = axe(page, rules=["color-contrast"])
        panels = page.evaluate(PANEL_COLOURS, PANELS)
        dark_panels = [p["what"] for p in panels if p["background"] < 0.6 or p["text"] > 0.2]
        if SAVE_SCREENSHOTS:
            _save_panels(page, page_name)
    finally:
        page.evaluate("() => { document.documentElement.dataset.theme = 'light'; }")
        _theme_settled(page)
    assert not contrast, f"{page_name} in dark mode:" + _report(contrast)
    assert not dark_panels, f"{page_name}: panels not light in dark mode: {dark_panels}"


def test_back_to_top_button_is_readable_once_shown(phone_context, book_server):
    """The theme shows "Back to top" when a reader scrolls back up; the shared pages of the
    other tests never scroll so, so axe would not see it there."""
    page = phone_context.new_page()
    try:
        page.goto(f"{book_server}/chapters/01_why_attention.html", wait_until="load")
        page.mouse.wheel(0, 4000)
        page.wait_for_timeout(300)
        page.mouse.wheel(0, -1500)
        button = page.locator("#pst-back-to-top")
        button.wait_for(state="visible", timeout=10_000)
        violations = axe(page, rules=["color-contrast"], context="#pst-back-to-top")
        assert not violations, "Back to top:" + _report(violations)
    finally:
        page.close()
