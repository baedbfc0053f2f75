"""Every explorer by keyboard alone, and as a screen reader meets it (1280 px).

For each explorer box on each page (``.transformer-explorer``):

* it is a group named by its title, and every control in it (slider, button, menu, text
  box) has a name in the browser's accessibility tree that contains its visible label;
* Tab reaches every enabled control in turn, and each shows a visible focus indicator
  (an outline or ring of at least 2 px);
* from the keyboard alone (arrow keys on a slider or menu, Enter on a button) the frame
  changes, the new frame's alt text differs from the old one, and the change is announced
  in the explorer's live region.
"""

from __future__ import annotations

import re

import pytest
from page_checks import listing

pytestmark = pytest.mark.browser

CONTROLS = (
    "[role=slider], select, button, input:not([type=hidden]), textarea, [contenteditable=true]"
)
FOCUS_STYLE = """e => { const s = getComputedStyle(e);
  const ring = s.outlineStyle !== 'none' && parseFloat(s.outlineWidth) >= 2;
  return ring || (s.boxShadow !== 'none' && /\\d+px/.test(s.boxShadow)); }"""
SHOWN_ALT = """box => Array.from(box.querySelectorAll('img')).filter(i => i.offsetParent !== null)
  .map(i => i.getAttribute('alt') || '')"""
UNNAMED = re.compile(r"^\s*- (slider|button|combobox|textbox|checkbox|spinbutton)\s*(\[|:|$)")


def _explorers(visit, page_name):
    page = visit(page_name).page
    boxes = page.locator(".transformer-explorer")
    if boxes.count() == 0:
        pytest.skip(f"{page_name} has no explorer")
    return page, boxes


def test_every_explorer_control_is_named(visit, page_name):
    page, boxes = _explorers(visit, page_name)
    problems = []
    for i in range(boxes.count()):
        box = boxes.nth(i)
        tree = box.aria_snapshot()
        first = tree.splitlines()[0] if tree else ""
        if not re.match(r'^- group "[^"]{3,}"', first):
            problems.append(f"explorer {i}: not a named group ({first!r})")
        problems += [
            f"explorer {i}: unnamed {line.strip()!r}"
            for line in tree.splitlines()
            if UNNAMED.match(line)
        ]
        for slider in box.locator(".widget-slider").all():
            label = slider.locator(".widget-label").inner_text().strip()
            name = slider.locator("[role=slider]").get_attribute("aria-label") or ""
            if label and label not in name:
                problems.append(f"explorer {i}: slider {label!r} named {name!r}")
            value = slider.locator("[role=slider]").get_attribute("aria-valuetext") or ""
            readout = slider.locator(".widget-readout").inner_text().strip()
            if readout and value != readout:
                problems.append(f"explorer {i}: slider {label!r} says {value!r}, shows {readout!r}")
    assert not problems, f"{page_name}:" + listing(problems)


def _press_to_change(control) -> str:
    kind = control.evaluate(
        "e => e.getAttribute('role') === 'slider' ? 'slider' : e.tagName.toLowerCase()"
    )
    if kind == "slider":
        at_max = control.get_attribute("aria-valuenow") == control.get_attribute("aria-valuemax")
        key = "ArrowLeft" if at_max else "ArrowRight"
    elif kind == "select":
        n, current = control.evaluate("e => [e.options.length, e.selectedIndex]")
        if n < 2:
            return ""
        key = "ArrowUp" if current == n - 1 else "ArrowDown"
    elif kind == "button":
        if "mod-active" in (control.get_attribute("class") or ""):
            return ""
        key = "Enter"
    else:
        return ""
    control.press(key)
    return f"{kind}: {key}"


def test_every_explorer_works_by_keyboard_alone(visit, page_name):
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    page, boxes = _explorers(visit, page_name)
    problems = []
    for i in range(boxes.count()):
        box = boxes.nth(i)
        box.scroll_into_view_if_needed()
        enabled = [
            c
            for c in box.locator(CONTROLS).all()
            if c.is_visible() and c.is_enabled() and c.evaluate("e => e.tabIndex >= 0")
        ]
        if not enabled:
            continue
        # Walk the box with Tab from its first control, as a keyboard reader would.
        enabled[0].focus()
        page.keyboard.press("Shift+Tab")
        page.keyboard.press("Tab")
        reached = []
        for _ in range(len(enabled) + 8):
            inside = box.evaluate("b => b.contains(document.activeElement)")
            if not inside:
                break
            if not page.evaluate(f"() => document.activeElement.matches({CONTROLS!r})"):
                page.keyboard.press("Tab")
                continue
            focused = page.evaluate_handle("() => document.activeElement")
            reached.append(focused)
            if not focused.evaluate(FOCUS_STYLE):
                problems.append(
                    f"explorer {i}: no visible focus on "
                    + focused.evaluate("e => e.outerHTML.slice(0, 90)")
                )
            page.keyboard.press("Tab")
        missed = [
            c.evaluate("e => e.outerHTML.slice(0, 90)")
            for c in enabled
            if not any(c.evaluate("(e, r) => e === r", r) for r in reached)
        ]
        problems += [f"explorer {i}: Tab never reaches {m}" for m in missed]
        if "static-explorer" not in (box.get_attribute("class") or ""):
            continue
        tried, changed = [], False
        for control in enabled:
            before = box.evaluate(SHOWN_ALT)
            control.focus()
            action = _press_to_change(control)
            if not action:
                continue
            tried.append(action)
            try:  # the new frame, described (explorer-alt.js runs after the widget redraws)
                page.wait_for_function(
                    "([box, before]) => { const alts = Array.from(box.querySelectorAll("
                    "'img[data-described]')).filter(i => i.offsetParent !== null)"
                    ".map(i => i.getAttribute('alt')); return alts.length && "
                    "JSON.stringify(alts) !== JSON.stringify(before); }",
                    arg=[box.element_handle(), before],
                    timeout=3_000,
                )
            except PlaywrightTimeout:
                continue
            after = box.evaluate(SHOWN_ALT)
            changed = True
            break
        if not changed:
            problems.append(f"explorer {i}: no key changed its frame's description ({tried})")
            continue
        announced = box.locator(".explorer-announcer")
        page.wait_for_function(
            "e => e && e.textContent.startsWith('Now shown:')",
            arg=announced.element_handle(),
            timeout=3_000,
        )
        said = announced.inner_text()
        if not any(said.removeprefix("Now shown: ") in alt for alt in after):
            problems.append(f"explorer {i}: announced {said!r}, frame says {after}")
    assert not problems, f"{page_name}:" + listing(problems)


def test_attention_views_work_by_keyboard_alone(visit, page_name):
    """bertviz's head squares and thumbnails: reached by Tab, pressed by Enter."""
    page = visit(page_name).page
    views = page.locator(".bertviz")
    if views.count() == 0:
        pytest.skip(f"{page_name} has no attention view")
    problems = []
    for i in range(views.count()):
        view = views.nth(i)
        buttons = view.locator("svg [role=button]")
        if buttons.count() == 0:
            problems.append(f"view {i}: nothing in it can be pressed by keyboard")
            continue
        first = buttons.first
        first.scroll_into_view_if_needed()
        first.focus()
        name = first.get_attribute("aria-label") or ""
        if len(name) < 8:
            problems.append(f"view {i}: a button named {name!r}")
        if not first.evaluate(FOCUS_STYLE):
            problems.append(f"view {i}: no visible focus on {name!r}")
        if "head-view" in (view.get_attribute("class") or ""):
            before = first.get_attribute("aria-pressed")
            first.press("Enter")
            after = first.get_attribute("aria-pressed")
            first.press("Enter")
            if before == after or first.get_attribute("aria-pressed") != before:
                problems.append(f"view {i}: Enter did not switch {name!r} ({before}, {after})")
        else:
            first.press("Enter")
            shown = view.locator(".detail").count()
            first.press("Enter")
            if not shown or view.locator(".detail").count():
                problems.append(f"view {i}: Enter did not open and close {name!r}")
    assert not problems, f"{page_name}:" + listing(problems)
