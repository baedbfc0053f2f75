"""Fixtures that open the built book in headless Chromium, served from 127.0.0.1 only.

Every page listed in ``_toc.yml`` is loaded once per test session at desktop width
(``visit``, 1280 x 900) and once on a phone (``phone_visit``, 390 x 844, touch, a mobile
viewport; the tablet checks resize that page to 768 x 1024); what the browser reported
(console messages, uncaught errors, every request, failed responses) is kept for the
tests in ``test_pages.py``. With ``BOOK_SCREENSHOTS=1`` (``make screenshots``), a
full-page screenshot of each page is saved under ``_build/screenshots/`` (``phone/`` for
the phone), for a person to look at. Helpers shared by the test files (axe-core, viewports,
measurements) are in ``page_checks.py``.

Needs ``make book`` first (``make test`` does it) and Debian's ``chromium`` at
``/usr/bin/chromium`` (``CHROMIUM`` overrides the path). ``BOOK_DIR`` points the tests at
another book folder.
"""

from __future__ import annotations

import functools
import http.server
import os
import shutil
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from book_pages import BOOK_DIR, HTML_DIR, toc_pages  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from page_checks import DESKTOP, PHONE, SAVE_SCREENSHOTS, SCREENSHOTS  # noqa: E402

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    # The session keeps every page open, most of them in background tabs: run their timers
    # and rendering as a reader's foreground tab would.
    "--disable-background-timer-throttling",
    "--disable-backgrounding-occluded-windows",
    "--disable-renderer-backgrounding",
]

LOCAL_HOST = "127.0.0.1"
# Schemes that never leave the page.
LOCAL_SCHEMES = {"data", "blob", "about", "javascript"}


#: A test that uses one of these runs in the phone's browser (marker ``phone``).
PHONE_FIXTURES = {"phone_visit", "phone_context"}

#: ``make test`` runs the browser tests in three parts, each a pytest process with a
#: browser of its own, at each width (``scripts/run_tests.py``), so that no single
#: process is left running long after the others. A test of one page (``page_name``) is
#: in that page's part, marked ``part_2`` or ``part_3`` (no mark: part 1); the parts are
#: balanced by the time their pages' tests took. A page loads once in the part that has it.
PAGE_PARTS = {
    "chapters/02_tokens_and_embeddings": 2,
    "chapters/08_encoder_decoder": 2,
    "chapters/10_decoding_and_evaluation": 2,
    "chapters/11_inside_the_trained_model": 2,
    "chapters/04_multi_head_attention": 3,
    "chapters/05_positional_encoding": 3,
    "chapters/07_feed_forward_and_layer_norm": 3,
    "chapters/12_decoder_only": 3,
    "chapters/14_where_next": 3,
}
#: The part of the other tests, by file: with the fixture or page they share (the small
#: book of test_folds.py and the self-check's pages; the in-browser translator, which
#: opens chapter 4's page; the grids of heads, also chapter 4's).
FILE_PARTS = {
    "test_folds.py": 2,
    "test_self_check_in_browser.py": 2,
    "test_live_model.py": 3,
    "test_phone_figures.py": 3,
    "test_phone_explorers.py": 3,
}


def browser_part(item) -> int:
    """Which part (1, 2 or 3) a browser test is run in by ``make test``."""
    callspec = getattr(item, "callspec", None)
    if callspec is not None and "page_name" in callspec.params:
        return PAGE_PARTS.get(callspec.params["page_name"], 1)
    return FILE_PARTS.get(item.path.name, 1)


def pytest_collection_modifyitems(config, items):
    here = Path(__file__).parent
    for item in items:
        if here in item.path.parents:
            item.add_marker(pytest.mark.browser)
            if PHONE_FIXTURES & set(getattr(item, "fixturenames", ())):
                item.add_marker(pytest.mark.phone)
            part = browser_part(item)
            if part > 1:
                item.add_marker(getattr(pytest.mark, f"part_{part}"))


def pytest_terminal_summary(terminalreporter):
    """Say loudly when the browser tests could not run, rather than a quiet 's'."""
    skipped = terminalreporter.stats.get("skipped", [])
    if any("browser/" in getattr(r, "nodeid", "") for r in skipped):
        reason = _skip_reason()
        if reason:
            terminalreporter.write_line(
                f"WARNING: the browser tests were skipped: {reason}", yellow=True, bold=True
            )


def _skip_reason() -> str | None:
    if not (HTML_DIR / "index.html").is_file():
        return f"the book is not built ({HTML_DIR}/index.html missing): run `make book`"
    if not (Path(CHROMIUM).is_file() or shutil.which(CHROMIUM)):
        return (
            f"Chromium not found at {CHROMIUM}: `apt-get install chromium` "
            "(`make test` installs it when run as root)"
        )
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "playwright is not installed: `make venv`"
    return None


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 - signature of the base class
        pass


class _BookServer(http.server.ThreadingHTTPServer):
    # The default accept queue holds 5 connections. Chromium opens a new one for every
    # file (HTTP/1.0), several at once; when a busy machine leaves this thread no time to
    # accept them, a full queue drops the handshake, which the browser then repeats after
    # 1, 2, 4, ... s, and a page can wait a minute for one file.
    request_queue_size = 128
    daemon_threads = True


@pytest.fixture(scope="session")
def book_server():
    """Serve ``_build/html`` on a free port of 127.0.0.1 for the whole session."""
    reason = _skip_reason()
    if reason:
        pytest.skip(reason)
    handler = functools.partial(_QuietHandler, directory=str(HTML_DIR))
    server = _BookServer((LOCAL_HOST, 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://{LOCAL_HOST}:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="session")
def playwright_driver(book_server):
    """The session's one Playwright (a process can run only one sync Playwright)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        yield pw


def _guard(route):
    # Recorded by the page listeners below; aborting keeps the tests offline even on a
    # machine that has a network.
    if _is_local(route.request.url):
        route.continue_()
    else:
        route.abort()


def _offline_and_recording(context) -> None:
    """Block other hosts (``_guard``) and record canvas text sizes on every page."""
    context.route("**/*", _guard)
    context.add_init_script(CANVAS_TEXT_RECORDER)


@pytest.fixture(scope="session")
def browser_context(playwright_driver):
    """A headless Chromium with a fresh profile; requests to other hosts are blocked."""
    profile = tempfile.mkdtemp(prefix="book-chromium-")
    context = playwright_driver.chromium.launch_persistent_context(
        profile,
        executable_path=CHROMIUM,
        args=CHROMIUM_ARGS,
        headless=True,
        viewport=DESKTOP,
        service_workers="block",
    )
    _offline_and_recording(context)
    try:
        yield context
    finally:
        context.close()
        shutil.rmtree(profile, ignore_errors=True)


@pytest.fixture(scope="session")
def phone_context(playwright_driver):
    """A phone: 390 x 844 CSS pixels, a mobile viewport and a touch screen (Chromium's
    device emulation), in a browser of its own; other hosts blocked as above."""
    browser = playwright_driver.chromium.launch(
        executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True
    )
    context = browser.new_context(
        viewport=PHONE, is_mobile=True, has_touch=True, device_scale_factor=1
    )
    _offline_and_recording(context)
    try:
        yield context
    finally:
        context.close()
        browser.close()


# Canvas text cannot be measured after it is drawn: record the size of every string a
# page draws on a canvas in the canvas's own pixels (font size x the scale of the
# transform), smallest per canvas. The test multiplies by how the page shows the canvas.
CANVAS_TEXT_RECORDER = """
(() => {
  const sizes = new Map();
  window.__canvasTextPx = sizes;
  for (const name of ["fillText", "strokeText"]) {
    const draw = CanvasRenderingContext2D.prototype[name];
    CanvasRenderingContext2D.prototype[name] = function (text, ...rest) {
      const match = /([0-9.]+)px/.exec(this.font);
      if (match && String(text).trim()) {
        const m = this.getTransform();
        const px = parseFloat(match[1]) * Math.hypot(m.a, m.b);
        sizes.set(this.canvas, Math.min(sizes.get(this.canvas) ?? Infinity, px));
      }
      return draw.call(this, text, ...rest);
    };
  }
})();
"""


def _is_local(url: str) -> bool:
    parts = urlsplit(url)
    return parts.scheme in LOCAL_SCHEMES or parts.hostname == LOCAL_HOST


@dataclass
class PageVisit:
    """What one page load produced."""

    name: str
    url: str
    page: object  # playwright Page, still open
    console: list[tuple[str, str]] = field(default_factory=list)  # (type, text)
    errors: list[str] = field(default_factory=list)  # uncaught exceptions
    requests: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)  # HTTP >= 400 or failed requests
    loading: dict[object, float] = field(default_factory=dict)  # request -> when it started

    def started(self, request) -> None:
        self.requests.append(request.url)
        self.loading[request] = time.monotonic()

    def ended(self, request) -> None:
        self.loading.pop(request, None)

    def failed(self, request) -> None:
        self.ended(request)
        self.failures.append(f"{request.url}: {request.failure}")

    @property
    def console_errors(self) -> list[str]:
        return [text for kind, text in self.console if kind == "error"] + self.errors

    @property
    def foreign_requests(self) -> list[str]:
        return [url for url in self.requests if not _is_local(url)]


def _visitor(context, server: str, shots: Path, visits: dict[str, PageVisit]):
    """``visit(name)``: the page of a ``_toc.yml`` entry, loaded once in ``context``."""

    def _visit(name: str) -> PageVisit:
        if name in visits:
            visits[name].page.bring_to_front()  # as a reader would see it: in front
            return visits[name]
        page = context.new_page()
        result = PageVisit(name=name, url=f"{server}/{name}.html", page=page)
        page.on("console", lambda m: result.console.append((m.type, m.text)))
        page.on("pageerror", lambda e: result.errors.append(f"uncaught: {e}"))
        page.on("request", result.started)
        page.on("requestfinished", result.ended)
        page.on("requestfailed", result.failed)
        page.on(
            "response",
            lambda r: (
                result.failures.append(f"{r.url}: HTTP {r.status}") if r.status >= 400 else None
            ),
        )
        # A shared, busy machine can take long to load a page with hundreds of frames.
        page.set_default_timeout(90_000)
        page.goto(result.url, wait_until="load")
        _settle(page, result)
        if SAVE_SCREENSHOTS:  # about 2 s a page: only when a person will look at them
            shot = shots / f"{name}.png"
            shot.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(shot), full_page=True, scale="css")
        visits[name] = result
        return result

    return _visit


@pytest.fixture(scope="session")
def visit(browser_context, book_server):
    """``visit(name)`` loads the page of a ``_toc.yml`` entry once (1280 x 900) and returns
    a PageVisit."""
    visits: dict[str, PageVisit] = {}
    yield _visitor(browser_context, book_server, SCREENSHOTS, visits)
    for v in visits.values():
        v.page.close()


@pytest.fixture(scope="session")
def phone_visit(phone_context, book_server):
    """``phone_visit(name)``: the page loaded once on the phone (390 x 844, touch)."""
    visits: dict[str, PageVisit] = {}
    yield _visitor(phone_context, book_server, SCREENSHOTS / "phone", visits)
    for v in visits.values():
        v.page.close()


#: How long the network must be quiet for a page to count as loaded, and how long a page
#: may keep loading before what it still waits for is recorded as a failed request.
QUIET_S = 0.5
LOADING_LIMIT_S = 60.0


def _quiet(page, result: PageVisit) -> None:
    """Wait until no request of the page has been open for QUIET_S (Playwright's
    "networkidle", counted here so that a file that never arrives is named, in
    ``result.failures``, instead of ending the test with a bare timeout)."""
    start = time.monotonic()
    quiet_since = None
    while True:
        now = time.monotonic()
        if result.loading:
            quiet_since = None
        elif quiet_since is None:
            quiet_since = now
        elif now - quiet_since >= QUIET_S:
            return
        if now - start > LOADING_LIMIT_S:
            result.failures += [
                f"{request.url}: still loading after {now - since:.0f} s"
                for request, since in result.loading.items()
            ]
            return
        page.wait_for_timeout(100)


def _settle(page, result: PageVisit) -> None:
    """Wait until MathJax has typeset, widgets have rendered and the network is quiet."""
    _quiet(page, result)
    page.evaluate(
        """async () => {
            const mj = window.MathJax;
            if (mj && mj.startup && mj.startup.promise) { await mj.startup.promise; }
        }"""
    )
    if page.locator('script[type="application/vnd.jupyter.widget-view+json"]').count():
        # The widget manager renders after the load event.
        page.wait_for_selector(".jupyter-widgets", state="attached", timeout=60_000)
    _quiet(page, result)
    page.wait_for_timeout(300)


def pytest_generate_tests(metafunc):
    if "page_name" in metafunc.fixturenames:
        metafunc.parametrize("page_name", toc_pages(BOOK_DIR))
