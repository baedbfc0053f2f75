"""The built book (``make book``): every chapter has a page, a figure, and no remote assets.

Skips when ``_build/html`` does not exist; ``make test`` always builds first. A chapter
still marked as a placeholder (class ``chapter-placeholder``) fails the figure check.
"""

from __future__ import annotations

import html as html_lib
import importlib.util
import json
import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from book_pages import BOOK_DIR, HTML_DIR, toc_pages  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
PLACEHOLDER_MARK = "chapter-placeholder"


PAGES = toc_pages()
CHAPTERS = [p for p in PAGES if p.startswith("chapters/")]

built = pytest.mark.skipif(
    not (HTML_DIR / "index.html").is_file(),
    reason=f"the book is not built ({HTML_DIR}/index.html missing): run `make book`",
)


def _html(page: str) -> str:
    return (HTML_DIR / f"{page}.html").read_text(encoding="utf-8")


def _main_content(html: str) -> str:
    """The article body, without the theme's navigation and footer."""
    start = html.find('<article class="bd-article"')
    end = html.find("</article>", start)
    return html[start:end] if start != -1 else html


def test_toc_lists_the_fourteen_chapters():
    assert len(CHAPTERS) == 14
    numbers = [int(Path(c).name.split("_", 1)[0]) for c in CHAPTERS]
    assert numbers == list(range(1, 15)), "chapters out of order in _toc.yml"
    for chapter in CHAPTERS:
        assert (BOOK_DIR / f"{chapter}.ipynb").is_file(), f"{chapter}.ipynb is missing"


@built
@pytest.mark.parametrize("page", PAGES)
def test_every_toc_page_was_built(page):
    assert (HTML_DIR / f"{page}.html").is_file(), f"no HTML page for {page}"


@built
@pytest.mark.parametrize("chapter", CHAPTERS)
def test_chapter_has_a_figure(chapter):
    body = _main_content(_html(chapter))
    assert PLACEHOLDER_MARK not in body, f"{chapter} is still a placeholder"
    assert re.search(r"<img\b", body), f"{chapter} has no figure (<img>)"


@built
@pytest.mark.parametrize("page", PAGES)
def test_every_numbered_figure_shows_a_picture(page):
    """A figure's caption comes from its cell's metadata, whatever the cell prints: a
    cell whose plot was taken out but whose ``mystnb.figure`` stayed shows a caption over
    text. Every ``<figure>`` of the article holds an image (or a drawing)."""
    body = _main_content(_html(page))
    empty = [
        re.search(r'\bid="([^"]*)"', figure).group(1) if 'id="' in figure else figure[:80]
        for figure in re.findall(r"<figure\b.*?</figure>", body, flags=re.S)
        if not re.search(r"<(img|svg|canvas|picture)\b", figure)
    ]
    assert not empty, f"{page}: figures with a caption but no picture: {empty}"


@built
@pytest.mark.parametrize("page", PAGES)
def test_no_remote_scripts_or_styles(page):
    """Every script and stylesheet the page loads comes from the book itself."""
    html = _html(page)
    remote = re.findall(r"<script[^>]*\bsrc=\"(https?:[^\"]+)\"", html)
    remote += re.findall(r"<link[^>]*rel=\"stylesheet\"[^>]*href=\"(https?:[^\"]+)\"", html)
    assert not remote, f"{page} loads remote assets: {remote}"
    assert "THEBE_JS_URL" not in html, "the duplicated sphinx-thebe snippet is back"


@built
def test_vendored_files_are_only_loaded_where_needed():
    # Jupyter Book adds every .js under _static to every page; the book's extension
    # removes the vendored ones. The intro has math but no widgets.
    html = _html(PAGES[0])
    vendored = re.findall(r"<script[^>]*\bsrc=\"(?:\.\./)*_static/vendor/([^\"?]+)", html)
    assert vendored == ["mathjax/tex-chtml.js"]
    assert "FontAwesomeConfig" in html


@built
@pytest.mark.parametrize("page", PAGES)
def test_widget_pages_use_the_vendored_manager(page):
    html = _html(page)
    if "application/vnd.jupyter.widget-state+json" not in html:
        pytest.skip(f"{page} has no widgets")
    srcs = re.findall(r"<script[^>]*\bsrc=\"([^\"?]+)", html)
    assert any(s.endswith("_static/vendor/requirejs/require.js") for s in srcs)
    assert any(s.endswith("_static/vendor/html-manager/embed-amd.js") for s in srcs)
    assert "require.config(" in html


def test_vendored_javascript_matches_manifest():
    spec = importlib.util.spec_from_file_location("vendor_js", ROOT / "scripts" / "vendor_js.py")
    vendor_js = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("vendor_js", vendor_js)  # dataclasses look their module up
    spec.loader.exec_module(vendor_js)
    assert vendor_js.check() == []
    size = sum(p.stat().st_size for p in vendor_js.VENDOR.rglob("*") if p.is_file())
    assert size < 15e6, f"vendored JavaScript grew to {size / 1e6:.1f} MB"


@built
@pytest.mark.parametrize("page", PAGES)
def test_live_translator_script_only_on_pages_with_a_box(page):
    """The in-browser translator's loader is added where a box is, and nowhere else; its
    heavy files (model, WebAssembly) are never <script> tags of a page: it adds them."""
    html = _html(page)
    loads = re.findall(r"<script[^>]*\bsrc=\"(?:\.\./)*_static/live/([^\"?]+)", html)
    has_box = "data-live-translate" in _main_content(html)
    assert loads == (["live-translate.js"] if has_box else []), loads
    if has_box:
        assert '<link rel="icon" href="data:,">' in html


@built
def test_live_translator_on_the_first_page_and_in_chapter_11():
    for page in (PAGES[0], "chapters/11_inside_the_trained_model"):
        assert "data-live-translate" in _main_content(_html(page)), page
    generated = HTML_DIR / "_static" / "live" / "generated"
    for name in ("model.js", "ort-wasm.js", "ort-loader.js", "tokenizers.js"):
        assert (generated / name).is_file(), f"{name} missing: `make book` writes it"


def test_the_book_runs_chapters_outside_the_repository():
    """Chapters execute in a fresh temporary folder (as in Colab, where the working
    directory is not the repository), so no chapter may rely on relative paths."""
    import yaml

    config = yaml.safe_load((BOOK_DIR / "_config.yml").read_text(encoding="utf-8"))
    assert config["execute"]["run_in_temp"] is True
    assert config["execute"]["allow_errors"] is False


def _cells_tagged(html: str, tag: str) -> list[str]:
    """The HTML of each code cell with ``tag`` (myst-nb gives cells a ``tag_...`` class)."""
    starts = [m.start() for m in re.finditer(r'<div class="cell[ "]', html)] + [len(html)]
    return [
        html[a:b]
        for a, b in zip(starts, starts[1:])
        if re.match(rf'<div class="cell[^"]*\btag_{re.escape(tag)}\b', html[a:])
    ]


@built
@pytest.mark.parametrize("chapter", CHAPTERS)
def test_chapter_ran_top_to_bottom_like_run_all(chapter):
    """The book build is each chapter's "Run all": the whole notebook runs with the
    reader's unanswered exercise stubs (a cell that raises fails the build). On the page,
    each stub's check says that it is not attempted yet, and each hidden solution's
    check passes."""
    notebook = json.loads((BOOK_DIR / f"{chapter}.ipynb").read_text(encoding="utf-8"))
    n_stubs = sum("exercise-stub" in c["metadata"].get("tags", []) for c in notebook["cells"])
    body = _main_content(_html(chapter))
    stubs = _cells_tagged(body, "exercise-stub")
    assert len(stubs) == n_stubs > 0, f"{chapter}: {len(stubs)} stub cells on the page"
    for stub in stubs:
        assert "not attempted yet" in stub, f"{chapter}: a stub's check did not run"
    for solution in _cells_tagged(body, "hide-cell"):
        assert "not attempted yet" not in solution, f"{chapter}: a solution fails its check"
    errors = re.findall(r'<div class="[^"]*\b(?:traceback|stderr)\b', body)
    assert not errors, f"{chapter}: a cell shows an error or writes to stderr"


@built
@pytest.mark.parametrize("page", PAGES)
def test_no_raw_tex_in_the_text(page):
    """Dollar math is typeset only in Markdown cells: Markdown printed by a code cell is
    rendered as GitHub Markdown (``nb_render_markdown_format: gfm``), where ``$x$`` stays
    as it is. Such text must use plain characters instead."""
    body = _main_content(_html(page))
    for pattern in (r"<script.*?</script>", r"<pre.*?</pre>", r'<(span|div) class="math.*?</\1>'):
        body = re.sub(pattern, "", body, flags=re.S)
    text = html_lib.unescape(re.sub(r"<[^>]+>", "", body))
    raw = re.findall(r"\$[^$\n]{1,80}\$", text)
    assert not raw, f"{page}: raw TeX left in the text: {raw[:5]}"


@built
@pytest.mark.parametrize("page", PAGES)
def test_every_link_in_the_page_leads_to_a_file_of_the_book(page):
    """Every relative link of the article opens a file of the built book. A link to a
    ``.ipynb`` written in Markdown cells becomes a link to its page, but one inside a cell's
    *output* (``display(Markdown(...))``) is left as it is and leads nowhere."""
    body = _main_content(_html(page))
    here = (HTML_DIR / f"{page}.html").parent
    broken = []
    for href in re.findall(r"<a\b[^>]*\bhref=\"([^\"]+)\"", body):
        target = html_lib.unescape(href).split("#", 1)[0].split("?", 1)[0]
        if not target or re.match(r"[a-z][a-z0-9+.-]*:", target):  # same page, or a URL
            continue
        if not (here / target).exists():
            broken.append(href)
    assert not broken, f"{page} links to files the book does not have: {broken}"


def _book_title() -> str:
    import yaml

    config = yaml.safe_load((BOOK_DIR / "_config.yml").read_text(encoding="utf-8"))
    return config["title"]


@built
@pytest.mark.parametrize("page", PAGES)
def test_browser_tab_title_names_the_book_once(page):
    """Sphinx writes ``<title>`` as the page's title, " — " and the book's (``html_title``,
    from ``title`` in ``_config.yml``). The front page's heading is the book's title, so
    there the tab would read it twice: the intro gives its ``<title>`` a name of its own
    with the ``{title}`` directive, and keeps its heading."""
    found = re.search(r"<title>(.*?)</title>", _html(page), flags=re.S)
    assert found, f"{page} has no <title>"
    title = html_lib.unescape(found.group(1)).strip()
    parts = [part.strip() for part in title.split("\u2014")]
    assert title.count(_book_title()) == 1, f"{page}: tab title {title!r}"
    assert len(parts) == len(set(parts)), f"{page}: tab title repeats itself: {title!r}"
