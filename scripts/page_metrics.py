"""How long each built page is for a reader who opens no fold: screens, words, code lines.

    python scripts/page_metrics.py                 # the book in _build/html
    python scripts/page_metrics.py --json out.json --book-dir path/to/other/book
    python scripts/page_metrics.py --page chapters/09_training    # one page (repeatable)

Every page of ``_toc.yml`` is opened in headless Chromium at 1280 × 900 with every fold
closed (``<details>`` of code cells and listings, dropdowns), and measured:

* **screens**: the page's height divided by 900 px;
* **words**: words of visible prose in the article (headings, paragraphs, lists, tables and
  admonitions, Markdown that cells print; a typeset formula counts as one word; not code,
  printouts or figure images);
* **code lines**: visible lines of code (cell inputs and library listings).

The book's guides for a chapter's core path are at most 20 screens, about 2,500 words and
about 120 lines of code: guides for a review of the page, not limits (nothing a reader needs
to follow the story is folded away to meet them).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

WIDTH, HEIGHT = 1280, 900

#: Run in the page: close every fold, then count what a reader sees.
MEASURE = """
() => {
  for (const d of document.querySelectorAll('article details[open]')) d.open = false;
  const article = document.querySelector('article') || document.body;
  const visible = (el) => {
    if (!el.getClientRects().length) return false;
    for (let e = el; e && e !== article; e = e.parentElement) {
      if (e.tagName === 'DETAILS' && !e.open && !e.contains(el.closest('summary'))) {
        return false;
      }
      const s = getComputedStyle(e);
      if (s.display === 'none' || s.visibility === 'hidden') return false;
    }
    return true;
  };
  const code = '.cell_input pre, .source-listing pre, div.highlight pre';
  let codeLines = 0;
  for (const pre of article.querySelectorAll(code)) {
    if (pre.closest('.cell_output') && !pre.closest('.source-listing')) continue;
    if (!visible(pre)) continue;
    codeLines += pre.innerText.replace(/\\n+$/, '').split('\\n').length;
  }
  const prose = 'h1, h2, h3, h4, p, li, td, th, dt, dd, figcaption, .admonition-title';
  let words = 0;
  const count = (text) => (text.match(/[\\p{L}\\p{N}][\\p{L}\\p{N}'’.,-]*/gu) || []).length;
  const seen = new Set();
  for (const el of article.querySelectorAll(prose)) {
    if (el.closest('pre, .cell_input, .highlight, .source-listing, script, style')) continue;
    // In a cell's output, Markdown is rendered straight into the output's container;
    // other outputs sit in an .output block: keep only its HTML (explorers, quizzes).
    const out = el.closest('.cell_output') && el.closest('.output');
    if (out && !out.matches('.text_markdown, .text_html')) continue;
    if (!visible(el)) continue;
    // Count each text once: a <p> inside an <li> belongs to the <li>.
    if ([...seen].some((s) => s.contains(el))) continue;
    seen.add(el);
    // A typeset formula counts as one word, not one per symbol that MathJax draws.
    words += count(el.innerText);
    for (const m of el.querySelectorAll('mjx-container, math')) {
      if (!m.parentElement.closest('mjx-container, math')) words -= count(m.innerText) - 1;
    }
  }
  const height = document.documentElement.scrollHeight;
  return {height, words, codeLines};
}
"""


def measure(book_dir: Path, html: Path | None = None, only: list[str] | None = None) -> list[dict]:
    from book_pages import toc_pages
    from playwright.sync_api import sync_playwright

    html = html or book_dir / "_build" / "html"
    rows = []
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=os.environ.get("CHROMIUM", "/usr/bin/chromium"),
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run"],
        )  # fmt: skip
        page = browser.new_page(viewport={"width": WIDTH, "height": HEIGHT})
        names = toc_pages(book_dir)
        unknown = sorted(set(only or ()) - set(names))
        if unknown:
            raise SystemExit(f"not pages of _toc.yml: {', '.join(unknown)}; choose from {names}")
        for name in names:
            if only and name not in only:
                continue
            path = html / f"{name}.html"
            if not path.is_file():
                raise SystemExit(f"{path} is missing: build the book first (make book)")
            page.goto(path.as_uri(), wait_until="load")
            page.wait_for_timeout(300)
            m = page.evaluate(MEASURE)
            rows.append({
                "page": name,
                "screens": round(m["height"] / HEIGHT, 1),
                "words": m["words"],
                "code_lines": m["codeLines"],
            })  # fmt: skip
        browser.close()
    return rows


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--book-dir", type=Path, default=ROOT, help="the book (its _toc.yml)")
    p.add_argument("--html", type=Path, help="the built pages (default: BOOK/_build/html)")
    p.add_argument("--json", type=Path, help="also write the rows here")
    p.add_argument(
        "--page", action="append", help="measure only this page (e.g. chapters/09_training)"
    )
    args = p.parse_args(argv)
    rows = measure(args.book_dir, args.html, args.page)
    print("| page | screens at 1280 × 900 | visible words | visible code lines |")
    print("|---|---|---|---|")
    for r in rows:
        print(f"| {r['page']} | {r['screens']} | {r['words']:,} | {r['code_lines']} |")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
