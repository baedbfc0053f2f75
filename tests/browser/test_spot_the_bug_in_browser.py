"""Chapter 13's "spot the bug" in the built book, in headless Chromium, with no kernel.

On the built page a reader picks a wrong and then the right suspect for a mystery model, by
mouse and, for another mystery, by keyboard alone (Tab to the group, Space, arrow keys).
Each time the verdict for the chosen suspect appears in words, names the check that would
have told, and is put into the mystery's live region as new text; choosing again replaces
it. The figures are shown at least as wide as their smallest text needs, on a desktop and
on a phone, and nothing of the block runs off a 390-pixel screen.
"""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.browser

PAGE = "chapters/13_debugging"


@pytest.fixture
def page(browser_context, book_server):
    page = browser_context.new_page()
    page.goto(f"{book_server}/{PAGE}.html", wait_until="load")
    page.wait_for_selector(".stb-quiz[data-sc-js]", timeout=15_000)  # its script has run
    yield page
    page.close()


def _verdicts(mystery) -> list[bool]:
    """For each suspect, in order, whether it is the right one (from the page's own data)."""
    return mystery.locator(".sc-whys > .sc-why").evaluate_all(
        "els => els.map(e => e.classList.contains('sc-right'))"
    )


def _said(mystery) -> str:
    """What the live region holds now (the verdicts of the chosen suspect)."""
    return mystery.locator('[role="status"] .sc-said').inner_text()


TELLS = "The check that would have told you:"


def _check_verdict(mystery, right: bool) -> None:
    said = _said(mystery)
    assert ("is right." in said) == right and ("is not right." in said) != right, said
    assert TELLS in said, said
    assert said.count(TELLS) == 1, "only the chosen suspect's verdict"
    shown = mystery.locator(".sc-feedback .sc-why:visible")
    assert shown.count() == 1 and shown.first.inner_text() == said


def test_the_page_has_mysteries_with_suspects(page):
    mysteries = page.locator(".stb-quiz .stb-mystery")
    assert mysteries.count() >= 3
    for i in range(mysteries.count()):
        m = mysteries.nth(i)
        assert m.locator("img").count() >= 2
        assert m.locator("fieldset legend").count() == 1
        assert sum(_verdicts(m)) == 1 and len(_verdicts(m)) >= 3
        assert _said(m) == ""  # nothing chosen, nothing said


def test_a_wrong_and_then_the_right_suspect_by_mouse(page):
    m = page.locator(".stb-quiz .stb-mystery").nth(0)
    verdicts = _verdicts(m)
    right, wrong = verdicts.index(True), verdicts.index(False)
    labels = m.locator(".sc-choices > label")
    labels.nth(wrong).click()
    assert m.locator("input.sc-input").nth(wrong).is_checked()
    _check_verdict(m, right=False)
    labels.nth(right).click()
    assert not m.locator("input.sc-input").nth(wrong).is_checked()
    _check_verdict(m, right=True)
    assert "Yes:" in _said(m)


def test_a_wrong_and_the_right_suspect_by_keyboard(page):
    m = page.locator(".stb-quiz .stb-mystery").nth(1)
    verdicts = _verdicts(m)
    m.locator(".stb-title").click()  # a starting point for Tab, not a control
    first = m.locator("input.sc-input").nth(0)
    # A figure too wide for the column is a scrollable box that Tab visits first.
    for _ in range(4):
        page.keyboard.press("Tab")
        if first.evaluate("e => e === document.activeElement"):
            break
    assert first.evaluate("e => e === document.activeElement"), "Tab reaches the suspects"
    page.keyboard.press("Space")
    assert first.is_checked()
    _check_verdict(m, right=verdicts[0])
    seen = {verdicts[0]}
    for i in range(1, len(verdicts)):  # arrow keys move the choice down the list
        page.keyboard.press("ArrowDown")
        assert m.locator("input.sc-input").nth(i).is_checked()
        _check_verdict(m, right=verdicts[i])
        seen.add(verdicts[i])
    assert seen == {True, False}


@pytest.mark.parametrize("width", [1280, 390])
def test_the_figures_stay_readable_and_nothing_runs_off(page, width):
    page.set_viewport_size({"width": width, "height": 900})
    page.wait_for_timeout(200)
    quiz = page.locator(".stb-quiz").first
    too_narrow = quiz.evaluate(
        """q => [...q.querySelectorAll('img')].filter(
            i => i.getBoundingClientRect().width + 0.5 < +i.dataset.readableWidth
        ).map(i => i.alt.slice(0, 60))"""
    )
    assert not too_narrow, f"figures shrunk below readable at {width} px: {too_narrow}"
    overflow = quiz.evaluate(
        """q => { const edge = document.documentElement.clientWidth;
                  return [...q.querySelectorAll('*')].filter(
                      e => e.getBoundingClientRect().right > edge + 1
                  ).map(e => e.tagName + '.' + e.className).slice(0, 5); }"""
    )
    assert not overflow, f"parts of the block run off a {width}-pixel screen: {overflow}"
