"""Labelled folds: on every page of the built book, every fold says what is inside and opens.

The book keeps machinery (long listings, bookkeeping cells, side measurements) in the
page but folded, behind a label that says what is inside. A fold is any of

* a code cell tagged ``hide-input``/``hide-output``/``hide-cell`` (myst-nb's
  ``<details class="hide">``; its label comes from the cell's metadata
  ``mystnb: {code_prompt_show: ..., code_prompt_hide: ...}``),
* a ``{dropdown}`` directive (sphinx-design's ``<details class="sd-dropdown">``, label =
  its title),
* the fold of ``show_source(..., fold_whole=True)`` (``<details class="source-fold">``
  inside the cell's output),
* and, not used by the book's convention but checked all the same, ``{toggle}`` and
  admonitions with ``:class: dropdown`` (sphinx-togglebutton, made by a script).

For each fold on each page the tests check that its visible label is not a generic one
("Show code cell source", "Click to show") and is not shared by another fold of the page
(Show/Hide aside), that it opens and closes by mouse and by keyboard alone (Enter,
Space), and that a screen reader announces it by that label (WCAG 2.5.3, label in
name). Pages that still have generic labels are listed in
``PAGES_WITH_GENERIC_FOLD_LABELS``: their test is an expected failure that reports the
unlabelled folds (``pytest -rx``), and it fails as XPASS once the page is labelled, so the
list only shrinks.

A small book built here with the book's own ``_config.yml`` (the ``minibook`` fixture,
also used by ``test_self_check_in_browser.py``) shows the convention passing these
checks and the generic folds failing them, so the checks are tested without the full
book.
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
# The same flags as conftest.py: headless, as root, with no background traffic.
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

PAGE_TIMEOUT_MS = 120_000

# Built pages whose folds still carry generic labels: none now, and the set may only shrink
# (a page listed here is a strict expected failure, so a labelled one fails as XPASS).
PAGES_WITH_GENERIC_FOLD_LABELS: set[str] = set()

# myst-nb 1.4 writes <summary aria-label="Toggle hidden content"> on every cell fold, so a
# screen reader hears that instead of the label: fixed in the book's Sphinx extension by
# dropping the attribute; until then the name test reports it as an expected failure.
MYSTNB_FIXED_NAME = "Toggle hidden content"

GENERIC_LABEL = re.compile(
    r"^((show|hide)( code)?( cell)?( (content|source|input|output|outputs|code|details|more))?"
    r"|click to (show|hide)|toggle( hidden content)?|details|more|show more|code|output"
    r"|source|hidden content|)$"
)

# Finds the folds in the page's article, marks each with data-fold-check="i" and returns
# what the tests need: kind, visible label (text that is displayed), accessible name of
# the control, whether it is open, and whether its content is shown.
_FIND_FOLDS = """() => {
  const article = document.querySelector("article.bd-article") || document.querySelector("main")
    || document.body;
  const visible = (node) => {
    if (node.nodeType === Node.TEXT_NODE) return node.textContent;
    if (node.nodeType !== Node.ELEMENT_NODE) return "";
    const style = getComputedStyle(node);
    if (style.display === "none" || style.visibility === "hidden") return "";
    if (node.tagName === "svg" || node.getAttribute("aria-hidden") === "true") return "";
    return Array.from(node.childNodes).map(visible).join("");
  };
  const clean = (s) => s.replace(/\\s+/g, " ").trim();
  const nameOf = (el) => {
    if (!el) return "";
    const by = el.getAttribute("aria-labelledby");
    if (by) return clean(by.split(/\\s+/).map((id) => {
      const t = document.getElementById(id); return t ? visible(t) : ""; }).join(" "));
    if (el.hasAttribute("aria-label")) return clean(el.getAttribute("aria-label"));
    return clean(visible(el));
  };
  const kindOf = (d) => {
    const cell = d.closest("div.cell");
    if (d.classList.contains("hide") && cell) {
      const tag = ["hide-cell", "hide-input", "hide-output"].find(
        (t) => cell.classList.contains("tag_" + t));
      return "code cell (" + (tag || "hidden") + ")";
    }
    if (d.classList.contains("sd-dropdown")) return "{dropdown}";
    if (d.classList.contains("source-fold")) return "show_source fold";
    if (d.classList.contains("toggle-details")) return "{toggle}";
    return "<details>";
  };
  const folds = [];
  article.querySelectorAll("details").forEach((d) => {
    const summary = d.querySelector(":scope > summary");
    folds.push({ el: d, kind: kindOf(d), control: summary,
                 label: clean(summary ? visible(summary) : "") });
  });
  article.querySelectorAll(".admonition.toggle").forEach((a) => {
    const title = a.querySelector(":scope > .admonition-title");
    folds.push({ el: a, kind: "admonition dropdown",
                 control: a.querySelector("button.toggle-button"),
                 label: clean(title ? visible(title) : "") });
  });
  return folds.map((f, i) => {
    f.el.setAttribute("data-fold-check", String(i));
    const where = f.el.closest("section[id]");
    return { index: i, kind: f.kind, label: f.label, name: nameOf(f.control),
             hasControl: !!f.control, section: where ? where.id : "" };
  });
}"""

# Whether fold i is open and its content displayed.
_STATE = """(i) => {
  // Not opacity: myst-nb fades content in, and a background tab does not run animations.
  const seen = { checkVisibilityCSS: true };
  const el = document.querySelector(`[data-fold-check="${i}"]`);
  if (el.tagName === "DETAILS") {
    const content = Array.from(el.children).find((c) => c.tagName !== "SUMMARY");
    return { open: el.open, shown: !!content && content.checkVisibility(seen) };
  }
  const content = Array.from(el.children).find((c) => !c.classList.contains("admonition-title"));
  const open = !el.classList.contains("toggle-hidden");
  return { open, shown: !!content && content.checkVisibility(seen) };
}"""

# Whether an element has the focus, and draws a focus indicator (outline or box shadow).
_FOCUS = """(el) => {
  const style = getComputedStyle(el);
  const outline = style.outlineStyle !== "none" && parseFloat(style.outlineWidth) > 0;
  return { focused: document.activeElement === el,
           ring: outline || (style.boxShadow && style.boxShadow !== "none") };
}"""

# Opens every closed fold around fold i (so a nested fold can be reached); its state.
_PREPARE = f"""(i) => {{
  let el = document.querySelector(`[data-fold-check="${{i}}"]`).parentElement;
  while (el) {{
    if (el.tagName === "DETAILS" && !el.open) el.open = true;
    el = el.parentElement;
  }}
  return ({_STATE})(i);
}}"""

# Puts fold i back as it was found.
_RESTORE = f"""([i, open]) => {{
  if (({_STATE})(i).open === open) return;
  const el = document.querySelector(`[data-fold-check="${{i}}"]`);
  if (el.tagName === "DETAILS") el.open = open;
  else el.querySelector("button.toggle-button").click();
}}"""


def _settle(page, i: int, open_: bool) -> dict | None:
    """None once fold i is ``open_`` and shown accordingly, else its state after 1 s."""
    expect = "true" if open_ else "false"
    try:
        page.wait_for_function(
            f"(i) => {{ const s = ({_STATE})(i); return s.open === {expect} "
            f"&& s.shown === {expect}; }}",
            arg=i,
            timeout=1000,
            polling=20,
        )
        return None
    except Exception as error:  # playwright's TimeoutError: report the state as it is
        if "Timeout" not in type(error).__name__:
            raise
    return page.evaluate(_STATE, i)


def find_folds(page) -> list[dict]:
    """Every fold in the page's article (see the module docstring), numbered in order."""
    return page.evaluate(_FIND_FOLDS)


def describe(fold: dict) -> str:
    where = f" in #{fold['section']}" if fold["section"] else ""
    return f"fold {fold['index'] + 1} ({fold['kind']}{where}) labelled {fold['label']!r}"


def label_problems(folds: list[dict]) -> list[str]:
    return [
        f"{describe(f)}: a generic label; say what is inside"
        for f in folds
        if GENERIC_LABEL.match(f["label"].lower().rstrip(".:"))
    ]


def _label_key(label: str) -> str:
    """What tells two folds apart: the label without its Show/Hide verb (an open fold of
    myst-nb or ``show_source`` reads "Hide ...", a closed one "Show ..."), case and
    spacing."""
    return re.sub(r"^(show|hide)\s+", "", " ".join(label.split()).lower())


def duplicate_label_problems(folds: list[dict]) -> list[str]:
    """Labels that two or more folds of one page share: a reader who opens one cannot tell
    from the label which it is (empty labels are :func:`label_problems`' concern)."""
    by_label: dict[str, list[dict]] = {}
    for f in folds:
        if _label_key(f["label"]):
            by_label.setdefault(_label_key(f["label"]), []).append(f)
    return [
        f"{len(same)} folds share the label {same[0]['label']!r}: "
        + ", ".join(describe(f) for f in same)
        + "; give each a label that says what only it holds"
        for same in by_label.values()
        if len(same) > 1
    ]


def name_problems(folds: list[dict]) -> list[str]:
    """Folds whose control a screen reader does not announce by the visible label."""
    problems = []
    for f in folds:
        if not f["hasControl"]:
            problems.append(f"{describe(f)}: no control to open it")
        elif f["label"].lower() not in f["name"].lower():
            problems.append(f"{describe(f)}: announced as {f['name']!r}, not by its label")
    return problems


def _click(control) -> None:
    """A mouse click on the fold's control. Playwright first waits until the control is
    visible and "stable" (the same box over two animation frames); on a busy machine a
    long page still decoding its images can keep it waiting for minutes. After 5 s the
    click goes to the control's centre anyway: what the test checks is that it opens."""
    try:
        control.click(timeout=5_000)
    except Exception as error:  # playwright's TimeoutError
        if "Timeout" not in type(error).__name__:
            raise
        control.scroll_into_view_if_needed()
        control.click(force=True)


# Clicks, in one go, the controls of the folds ``indices`` (each first checked to be drawn,
# with a size), then returns each fold's state before the click; ``problem`` if its control
# is not drawn (it is not clicked then).
_CLICK_ALL = f"""(indices) => {{
  const controls = indices.map((i) => {{
    const el = document.querySelector(`[data-fold-check="${{i}}"]`);
    return el.tagName === "DETAILS" ? el.querySelector(":scope > summary")
      : el.querySelector("button.toggle-button");
  }});
  const before = indices.map((i) => ({_STATE})(i));
  const drawn = controls.map((c) => {{
    const box = c.getBoundingClientRect();
    return c.checkVisibility({{ checkVisibilityCSS: true }}) && box.width > 0 && box.height > 0;
  }});
  controls.forEach((c, k) => {{ if (drawn[k]) c.click(); }});
  return before.map((b, k) => Object.assign(b, {{ drawn: drawn[k] }}));
}}"""

# The folds ``indices`` whose state is not ``open`` (a list of booleans, one per fold),
# once they all are or after 1 s: [index, state] pairs.
_NOT_YET = f"""([indices, open]) => indices.map((i, k) => [i, ({_STATE})(i), open[k]])
  .filter(([i, s, o]) => s.open !== o || s.shown !== o).map(([i, s]) => [i, s])"""


def _nested(page, i: int) -> bool:
    return page.evaluate(
        """(i) => { const el = document.querySelector(`[data-fold-check="${i}"]`);
                    return !!el.parentElement.closest("details, .admonition.toggle"); }""",
        i,
    )


def opening_problems(page, folds: list[dict], keyboard: str = "each kind") -> list[str]:
    """Toggle each fold by a click; the first fold of each kind on the page (or, with
    ``keyboard="every"``, every fold) also twice by keyboard alone (Enter, then Space).

    Folds of one kind are the same element with the same script and style (a myst-nb
    cell's ``<details>``, a dropdown's, sphinx-togglebutton's button), so what the mouse
    and the keys do is a property of the kind; each click or key press re-lays out a long
    page, which made this check the costliest browser test. So the first fold of each kind
    (and every nested fold) is clicked with the mouse, as a reader would, and pressed by
    keyboard; the others of its kind are checked to be drawn, with a size, and then clicked
    all at once by script (the same click event, without moving a mouse to each), and their
    states read once. The keyboard reaches a control by Shift+Tab and Tab, so the check of
    a visible focus indicator sees what a keyboard user sees. Folds are left as they were
    found.
    """
    problems = []
    page.bring_to_front()  # a background tab does not run the page's transitions
    by_hand: set[str] = set()
    together = []
    for f in folds:
        if not f["hasControl"]:
            continue
        if keyboard == "every" or f["kind"] not in by_hand or _nested(page, f["index"]):
            by_hand.add(f["kind"])
            problems += _toggle_by_hand(page, f)
        else:
            together.append(f)
    if together:
        problems += _toggle_together(page, together)
    return problems


def _toggle_together(page, folds: list[dict]) -> list[str]:
    """Click the folds by script, all at once; each must turn to the other state."""
    before = page.evaluate(_CLICK_ALL, [f["index"] for f in folds])
    problems, checked = [], []
    for f, b in zip(folds, before):
        if b["open"] != b["shown"]:
            problems.append(f"{describe(f)}: open={b['open']} but content shown={b['shown']}")
        elif not b["drawn"]:
            problems.append(f"{describe(f)}: its control is not drawn")
        else:
            checked.append((f, not b["open"]))
    args = [[f["index"] for f, _ in checked], [want for _, want in checked]]
    try:
        page.wait_for_function(
            f"(args) => ({_NOT_YET})(args).length === 0", arg=args, timeout=1000, polling=20
        )
    except Exception as error:  # playwright's TimeoutError: report the states as they are
        if "Timeout" not in type(error).__name__:
            raise
        wrong = {i: state for i, state in page.evaluate(_NOT_YET, args)}
        for f, want in checked:
            if f["index"] in wrong:
                s = wrong[f["index"]]
                problems.append(
                    f"{describe(f)}: a click did not {'open' if want else 'close'} it "
                    f"(open={s['open']}, content shown={s['shown']})"
                )
    for f, b in zip(folds, before):
        page.evaluate(_RESTORE, [f["index"], b["open"]])
    return problems


def _toggle_by_hand(page, f: dict) -> list[str]:
    """Click fold ``f`` with the mouse, then press Enter and Space on its control."""
    problems = []
    i = f["index"]
    before = page.evaluate(_PREPARE, i)
    if before["open"] != before["shown"]:
        return [f"{describe(f)}: open={before['open']} but content shown={before['shown']}"]
    control = page.locator(
        f'[data-fold-check="{i}"] > summary, [data-fold-check="{i}"] button.toggle-button'
    ).first
    state = before["open"]
    for step in ("click", "Enter", "Space"):
        if step == "click":
            _click(control)
        else:
            if step == "Enter":  # leave the control and come back to it by keyboard
                page.keyboard.press("Shift+Tab")
                page.keyboard.press("Tab")
                focus = control.evaluate(_FOCUS)
                if not focus["focused"]:
                    problems.append(f"{describe(f)}: its control cannot take the focus by Tab")
                    break
                if not focus["ring"]:
                    problems.append(f"{describe(f)}: no visible focus indicator on its control")
            page.keyboard.press(step)
        wrong = _settle(page, i, not state)
        if wrong is not None:
            what = "a click" if step == "click" else f"the key {step}"
            problems.append(
                f"{describe(f)}: {what} did not {'close' if state else 'open'} it "
                f"(open={wrong['open']}, content shown={wrong['shown']})"
            )
            break
        state = not state
    page.evaluate(_RESTORE, [i, before["open"]])
    return problems


def _listing(items) -> str:
    return "\n  " + "\n  ".join(items)


# --- On the built book (fixtures from conftest.py) -----------------------------------------


def _folds_or_skip(visit, page_name):
    page = visit(page_name).page
    folds = find_folds(page)
    if not folds:
        pytest.skip(f"{page_name} has no folds")
    return page, folds


def test_every_fold_has_a_label_that_says_what_is_inside(visit, page_name, request):
    page, folds = _folds_or_skip(visit, page_name)
    if page_name in PAGES_WITH_GENERIC_FOLD_LABELS:
        request.applymarker(
            pytest.mark.xfail(reason="folds not labelled yet", strict=True, raises=AssertionError)
        )
    problems = label_problems(folds)
    assert not problems, f"{page_name}: {len(problems)} of {len(folds)} folds:" + _listing(problems)


def test_every_fold_label_is_unique_on_its_page(visit, page_name):
    _, folds = _folds_or_skip(visit, page_name)  # the page loaded once for all the tests
    problems = duplicate_label_problems(folds)
    assert not problems, f"{page_name}:" + _listing(problems)


def test_duplicate_fold_labels_are_reported():
    def fold(index, label, kind="code cell (hide-input)"):
        return {"index": index, "kind": kind, "label": label, "section": "a-section"}

    folds = [
        fold(0, "Show the code that builds the table"),
        fold(1, "Show the whole `Transformer` source (150 lines)", "show_source fold"),
        fold(2, "Hide the code  that builds the table"),  # open: the same label
        fold(3, "Show the code that builds the table of the presets"),
        fold(4, "Show the whole `Transformer` source (150 lines)", "show_source fold"),
        fold(5, ""),  # no label: label_problems reports it, not this check
        fold(6, ""),
    ]
    problems = duplicate_label_problems(folds)
    assert len(problems) == 2, problems
    assert problems[0].startswith("2 folds share the label 'Show the code that builds the table'")
    assert "fold 1 (" in problems[0] and "fold 3 (" in problems[0]
    assert "fold 4 (" not in problems[0]
    assert "fold 2 (" in problems[1] and "fold 5 (" in problems[1]
    assert duplicate_label_problems(folds[:2] + folds[3:4]) == []


def test_every_fold_opens_by_click_and_each_kind_by_keyboard(visit, page_name):
    page, folds = _folds_or_skip(visit, page_name)
    problems = opening_problems(page, folds)
    assert not problems, f"{page_name}:" + _listing(problems)


def test_every_fold_is_announced_by_its_label(visit, page_name):
    _, folds = _folds_or_skip(visit, page_name)
    problems = name_problems(folds)
    known = [p for p in problems if "code cell" in p and repr(MYSTNB_FIXED_NAME) in p]
    if problems and len(known) == len(problems):
        pytest.xfail(
            f"{page_name}: myst-nb names {len(known)} cell folds {MYSTNB_FIXED_NAME!r} "
            "(its <summary aria-label>), not by their labels"
        )
    assert not problems, f"{page_name}:" + _listing(problems)


# --- A small book, built with the book's own configuration ---------------------------------


def _cell(source, tags=(), label=None):
    import nbformat

    meta = {"tags": list(tags)} if tags else {}
    if label:
        meta["mystnb"] = {"code_prompt_show": f"Show {label}", "code_prompt_hide": f"Hide {label}"}
    return nbformat.v4.new_code_cell(source, metadata=meta)


QUIZ_CELL = """\
from transformer_lib.views.self_check import Choice, Question, self_check

self_check([
    Question("Why are the scores divided by $\\\\sqrt{d_k}$?", choices=[
        Choice("To keep their variance near 1 whatever $d_k$ is", correct=True,
               why="A sum of $d_k$ unit-variance products has variance $d_k$."),
        Choice("To make each row of weights sum to one",
               why="The `softmax` does that, with or without the scale."),
    ]),
    Question("Which positions does the decoder's self-attention mask block?", multiple=True,
             choices=[
        Choice("Later positions", correct=True, why="The causal mask blocks them."),
        Choice("Padding", correct=True, why="The padding mask blocks them."),
        Choice("The query's own position", why="A token may attend to itself."),
    ]),
    Question("What does `nn.MultiheadAttention` give for a row with every key blocked?",
             choices=[
        Choice("Zeros", why="SDPA gives zeros there; MultiheadAttention does not."),
        Choice("NaN", correct=True, why="The softmax of a row of $-\\\\infty$ is 0/0."),
        Choice("An error", why="It raises nothing."),
    ]),
])
"""


def _write_minibook(book: Path) -> None:
    import nbformat

    for name in ("_static", "scripts", "references.bib"):
        (book / name).symlink_to(ROOT / name)
    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    config["exclude_patterns"] = ["_build", "_static", "scripts", "**.ipynb_checkpoints"]
    config["execute"]["execute_notebooks"] = "force"
    (book / "_config.yml").write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    toc = {
        "format": "jb-book",
        "root": "intro",
        "chapters": [{"file": "quiz"}, {"file": "labelled"}, {"file": "generic"}],
    }
    (book / "_toc.yml").write_text(yaml.safe_dump(toc), encoding="utf-8")
    (book / "intro.md").write_text("# A small book\n\nThree pages.\n", encoding="utf-8")

    def notebook(name, cells):
        nb = nbformat.v4.new_notebook()
        nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3"}
        nb.cells = cells
        nbformat.write(nb, book / f"{name}.ipynb")

    md = nbformat.v4.new_markdown_cell
    notebook(
        "quiz",
        [
            md("# Quiz\n\nScaled scores, $QK^\\top/\\sqrt{d_k}$.\n\n## Self-check"),
            _cell(QUIZ_CELL),
        ],
    )
    notebook(
        "labelled",
        [
            md("# Labelled folds"),
            _cell("print('figure code')", ["hide-input"], "the code that draws the figure"),
            _cell("print('step 1: loss 9.1')", ["hide-output"], "the training log"),
            _cell("bookkeeping = 1", ["hide-cell"], "the bookkeeping cell"),
            _cell(
                "from transformer_lib.pipeline.batching import batch_indices\n"
                "from transformer_lib.views.notebook import show_source\n\n"
                "show_source(batch_indices, lines=(1, 6), fold_whole=True)"
            ),
            md(
                "```{dropdown} Going deeper: where the variance comes from\n"
                "Each product $q_i k_i$ has variance 1.\n```"
            ),
        ],
    )
    notebook(
        "generic",
        [
            md("# Generic folds"),
            _cell("print('default label')", ["hide-input"]),
            md("```{toggle}\nToggled prose.\n```"),
            md(":::{admonition} A worked example\n:class: dropdown\nThe body.\n:::"),
        ],
    )


@contextlib.contextmanager
def serve(directory: Path):
    """Serve a folder on a free port of 127.0.0.1; yields the base URL."""

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, format, *args):  # noqa: A002 - signature of the base class
            pass

    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(Quiet, directory=str(directory))
    )
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


# test_self_check_in_browser.py imports the two fixtures below, and pytest registers an
# imported fixture once per module: each keeps its one instance here, so that a session
# builds one small book and runs one Playwright; the first to set up tears down last.
_SHARED: dict[str, object] = {}


@contextlib.contextmanager
def _shared(key: str, make):
    if key in _SHARED:
        yield _SHARED[key]
        return
    with make() as value:
        _SHARED[key] = value
        try:
            yield value
        finally:
            del _SHARED[key]


@pytest.fixture(scope="session", name="chromium_context")
def chromium_context_fixture(request):
    """A headless Chromium context that reaches 127.0.0.1 only.

    The one of ``conftest.py`` when the book is built (only one sync Playwright can run in
    a process), else one of its own with the same flags and the same offline guard.
    """
    with _shared("chromium", lambda: _chromium_context(request)) as context:
        yield context


@contextlib.contextmanager
def _chromium_context(request):
    try:
        book_context = request.getfixturevalue("browser_context")
    except (pytest.skip.Exception, pytest.FixtureLookupError):  # the book is not built
        book_context = None
    if book_context is not None:
        yield book_context
        return
    if not (Path(CHROMIUM).is_file() or shutil.which(CHROMIUM)):
        pytest.skip(f"Chromium not found at {CHROMIUM}: `make chromium`")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("playwright is not installed: `make venv`")
    profile = tempfile.mkdtemp(prefix="chromium-")
    try:
        with sync_playwright() as pw:
            context = pw.chromium.launch_persistent_context(
                profile,
                executable_path=CHROMIUM,
                args=CHROMIUM_ARGS,
                headless=True,
                viewport={"width": 1280, "height": 900},
                service_workers="block",
            )
            context.route(
                "**/*",
                lambda route: (
                    route.continue_()
                    if route.request.url.startswith(
                        ("http://127.0.0.1:", "data:", "blob:", "about:")
                    )
                    else route.abort()
                ),
            )
            try:
                yield context
            finally:
                context.close()
    finally:
        shutil.rmtree(profile, ignore_errors=True)


@dataclass
class MiniBook:
    root: Path  # the built HTML
    base_url: str
    context: object  # playwright BrowserContext

    def open(self, name: str, width: int = 1280):
        page = self.context.new_page()
        page.set_default_timeout(PAGE_TIMEOUT_MS)  # generous: the machine may be busy
        page.set_default_navigation_timeout(PAGE_TIMEOUT_MS)
        page.set_viewport_size({"width": width, "height": 900})
        page.goto(f"{self.base_url}/{name}.html", wait_until="load")
        return page


@pytest.fixture(scope="session", name="minibook")
def minibook_fixture(chromium_context, tmp_path_factory):
    """A four-page book built by ``jupyter-book`` with the book's ``_config.yml``.

    Pages: ``quiz`` (a self-check under ``## Self-check``), ``labelled`` (one fold of each
    kind, labelled as the book's convention says), ``generic`` (a default cell label,
    ``{toggle}``, an admonition dropdown). Served from 127.0.0.1.
    """
    with _shared("minibook", lambda: _minibook(tmp_path_factory)) as (html, url):
        yield MiniBook(html, url, chromium_context)


@contextlib.contextmanager
def _minibook(tmp_path_factory):
    book = tmp_path_factory.mktemp("minibook")
    _write_minibook(book)
    jb = Path(sys.executable).with_name("jupyter-book")
    run = subprocess.run(
        [str(jb), "build", str(book), "-W", "--keep-going"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    log = (run.stdout + run.stderr)[-4000:]
    assert run.returncode == 0, "the small book did not build:\n" + log
    html = book / "_build" / "html"
    with serve(html) as url:
        yield html, url


def test_the_convention_gives_labelled_folds_that_open(minibook):
    page = minibook.open("labelled")
    folds = find_folds(page)
    kinds = sorted(f["kind"] for f in folds)
    assert kinds == sorted(
        [
            "code cell (hide-input)",
            "code cell (hide-output)",
            "code cell (hide-cell)",
            "show_source fold",
            "{dropdown}",
        ]
    ), json.dumps(folds, indent=1)
    labels = {f["kind"]: f["label"] for f in folds}
    assert labels["code cell (hide-input)"] == "Show the code that draws the figure"
    assert labels["code cell (hide-output)"] == "Show the training log"
    assert labels["show_source fold"].startswith("Show the whole batch_indices source (")
    assert labels["{dropdown}"] == "Going deeper: where the variance comes from"
    assert label_problems(folds) == []
    assert duplicate_label_problems(folds) == []
    assert opening_problems(page, folds, keyboard="every") == []
    # Only myst-nb's own aria-label can hide a label from a screen reader here.
    names = name_problems(folds)
    assert all("code cell" in p and repr(MYSTNB_FIXED_NAME) in p for p in names), names
    # Each fold is closed again after the checks, as the reader found it.
    assert not any(page.evaluate(_STATE, f["index"])["open"] for f in folds)
    page.close()


def test_folds_clicked_together_are_each_checked(minibook):
    """Beyond the first of its kind, folds are clicked by script, all at once: one that
    does not open and one whose control is not drawn are each reported by name."""
    page = minibook.open("labelled")
    page.evaluate(
        """() => {
            const first = document.querySelector("details.sd-dropdown");
            for (const name of ["works", "stays shut", "has no control drawn"]) {
                const copy = first.cloneNode(true);
                const text = document.createTreeWalker(copy.querySelector("summary"), 4);
                while (text.nextNode()) {
                    if (text.currentNode.textContent.includes("Going deeper")) {
                        text.currentNode.textContent = "Going deeper: a copy that " + name;
                    }
                }
                first.parentElement.appendChild(copy);
                if (name === "stays shut") {
                    copy.querySelector("summary").addEventListener(
                        "click", (e) => e.preventDefault());
                }
                if (name === "has no control drawn") {
                    copy.querySelector("summary").style.display = "none";
                }
            }
        }"""
    )
    folds = find_folds(page)
    copies = folds[-3:]  # the one whose control is not drawn shows no label either
    assert [f["kind"] for f in copies] == ["{dropdown}"] * 3, json.dumps(folds, indent=1)
    assert [f["label"] for f in copies[:2]] == [
        "Going deeper: a copy that works",
        "Going deeper: a copy that stays shut",
    ]
    problems = opening_problems(page, folds)
    assert len(problems) == 2, problems
    shut, hidden = sorted(problems, key=lambda p: "not drawn" in p)
    assert "a copy that stays shut" in shut and "a click did not open it" in shut
    assert hidden.startswith(f"fold {copies[2]['index'] + 1} ({{dropdown}}")
    assert hidden.endswith("its control is not drawn")
    assert not any(page.evaluate(_STATE, f["index"])["open"] for f in folds)
    page.close()


def test_generic_folds_are_reported(minibook):
    page = minibook.open("generic")
    folds = find_folds(page)
    assert sorted(f["kind"] for f in folds) == [
        "admonition dropdown",
        "code cell (hide-input)",
        "{toggle}",
    ]
    problems = label_problems(folds)
    assert len(problems) == 2  # "Show code cell source" and "Click to show"
    assert any("'Show code cell source'" in p for p in problems)
    assert any("'Click to show'" in p for p in problems)
    assert duplicate_label_problems(folds) == []  # generic, but each once
    # The admonition's label is its title, but its button is announced generically.
    names = name_problems(folds)
    assert any("admonition dropdown" in p and "'Toggle hidden content'" in p for p in names)
    # They open by click and keyboard, but sphinx-togglebutton's button hides its focus.
    (problem,) = opening_problems(page, folds, keyboard="every")
    assert "admonition dropdown" in problem and "no visible focus indicator" in problem
    page.close()
