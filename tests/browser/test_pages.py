"""Every page of the built book, opened in headless Chromium (marker: ``browser``).

The checks are generic so that they keep holding as chapters are written: math is
typeset, each bertviz view draws, each precomputed-slider explorer (an ``IntSlider``
jslinked to a ``Stack``, in a box with CSS class ``static-explorer``) changes its figure
when the slider moves, and nothing is fetched from anywhere but the local server.
"""

import http.server
import threading
import time

import conftest
import pytest

pytestmark = pytest.mark.browser


def _listing(items) -> str:
    return "\n  " + "\n  ".join(items) if items else " none"


def test_page_loads_offline_without_errors(visit, page_name):
    v = visit(page_name)
    assert not v.foreign_requests, f"{page_name}: requests to other hosts:" + _listing(
        v.foreign_requests
    )
    assert not v.failures, f"{page_name}: failed requests:" + _listing(v.failures)
    assert not v.console_errors, f"{page_name}: console errors:" + _listing(v.console_errors)
    assert v.page.locator("main h1").count() >= 1, f"{page_name}: no title rendered"


def test_math_is_typeset(visit, page_name):
    page = visit(page_name).page
    n_math = page.locator(".math").count()
    if n_math == 0:
        pytest.skip(f"{page_name} has no math")
    typeset = page.locator("mjx-container").count()
    assert typeset >= n_math, f"{page_name}: {n_math} math elements, {typeset} typeset"
    assert page.locator("mjx-merror").count() == 0, f"{page_name}: MathJax reported an error"
    # Raw TeX delimiters left in the text mean MathJax did not run on that element.
    raw = page.locator(".math").evaluate_all(
        "els => els.filter(e => !e.querySelector('mjx-container')).map(e => e.textContent)"
    )
    assert not raw, f"{page_name}: math left as raw TeX:" + _listing(raw[:5])


def test_widgets_render(visit, page_name):
    page = visit(page_name).page
    n_views = page.locator('script[type="application/vnd.jupyter.widget-view+json"]').count()
    if n_views == 0:
        pytest.skip(f"{page_name} has no widgets")
    rendered = page.locator(".jupyter-widgets-view, .jupyter-widgets.widget-container").count()
    assert rendered >= 1, f"{page_name}: {n_views} saved widget views, none rendered"
    errors = page.locator(".jupyter-widgets .widget-error, .jp-RenderedText[data-mime-type*=err]")
    assert errors.count() == 0, f"{page_name}: a widget failed to render"


def test_bertviz_views_draw(visit, page_name):
    page = visit(page_name).page
    views = page.locator('.bertviz, div[id^="bertviz-"]')
    if views.count() == 0:
        pytest.skip(f"{page_name} has no bertviz view")
    empty = views.evaluate_all(
        "els => els.filter(e => !e.querySelector('svg')).map(e => e.id || e.className)"
    )
    assert not empty, f"{page_name}: bertviz views without an svg:" + _listing(empty)


IMAGE_SOURCES = """box => Array.from(box.querySelectorAll('img'))
    .filter(img => img.offsetParent !== null)
    .map(img => img.getAttribute('src'))"""

# Controls an explorer may link to its frames: sliders (IntSlider, SelectionSlider),
# dropdowns and toggle buttons.
CONTROLS = (
    ".noUi-handle, .ui-slider-handle, input[type=range], select, .widget-toggle-buttons button"
)


def _actuate(control) -> str:
    """Move one control to another value, the way a reader would; describe what was done."""
    kind = control.evaluate(
        "e => e.tagName === 'SELECT' ? 'select' : e.tagName === 'BUTTON' ? 'button' : 'slider'"
    )
    if kind == "select":
        n, current = control.evaluate("e => [e.options.length, e.selectedIndex]")
        if n < 2:
            return ""
        control.select_option(index=(current + 1) % n)
        return f"dropdown -> option {(current + 1) % n}"
    if kind == "button":
        if "mod-active" in (control.get_attribute("class") or ""):
            return ""
        control.click()
        return f"toggle button {control.inner_text()!r}"
    at_max = control.evaluate(
        "e => e.hasAttribute('aria-valuemax')"
        " && e.getAttribute('aria-valuenow') === e.getAttribute('aria-valuemax')"
    )
    key = "ArrowLeft" if at_max else "ArrowRight"
    control.focus()
    control.press(key)
    return f"slider {key}"


def test_static_explorers_respond(visit, page_name):
    """In each precomputed explorer, some control changes the figure without a kernel."""
    page = visit(page_name).page
    explorers = page.locator(".static-explorer")
    if explorers.count() == 0:
        pytest.skip(f"{page_name} has no static explorer")
    for i in range(explorers.count()):
        box = explorers.nth(i)
        box.scroll_into_view_if_needed()
        controls = box.locator(CONTROLS)
        assert controls.count() > 0, f"{page_name}: explorer {i} has no control"
        tried = []
        for j in range(controls.count()):
            before = box.evaluate(IMAGE_SOURCES)
            assert before, f"{page_name}: explorer {i} shows no image"
            action = _actuate(controls.nth(j))
            if not action:
                continue
            page.wait_for_timeout(300)
            after = box.evaluate(IMAGE_SOURCES)
            tried.append(action)
            if after and after != before:
                break
        else:
            pytest.fail(
                f"{page_name}: no control of explorer {i} changed its figure (tried: {tried})"
            )


class _SlowFileHandler(http.server.BaseHTTPRequestHandler):
    """A page that asks for a file which takes longer to arrive than the page may keep
    loading."""

    def do_GET(self):  # noqa: N802 - the name http.server calls
        if self.path.startswith("/slow-file"):
            time.sleep(3)
            body, kind = b"late", "text/plain"
        else:
            body = (  # asked for after the load event, which does not wait for it
                b"<html><body><h1>t</h1><script>"
                b"addEventListener('load', () => fetch('/slow-file'));</script></body></html>"
            )
            kind = "text/html"
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format, *args):  # noqa: A002 - signature of the base class
        pass


def test_a_file_that_never_arrives_is_named_among_the_failures(browser_context, monkeypatch):
    """The wait for a quiet network ends, and says which file the page was still waiting
    for, instead of a bare timeout."""
    server = conftest._BookServer(("127.0.0.1", 0), _SlowFileHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setattr(conftest, "LOADING_LIMIT_S", 1.0)
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        v = conftest._visitor(browser_context, url, None, {})("slow")
        v.page.close()
    finally:
        server.shutdown()
        server.server_close()
    assert any("/slow-file: still loading after" in f for f in v.failures), v.failures
