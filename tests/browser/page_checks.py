"""What several browser tests share: viewports, axe-core, and measurements of a page.

``axe(page)`` runs axe-core (vendored in ``_static/vendor/axe-core``; injected here, the
book's pages never load it).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from book_pages import BOOK_DIR, ROOT  # noqa: E402

SCREENSHOTS = BOOK_DIR / "_build" / "screenshots"
#: ``BOOK_SCREENSHOTS=1`` (``make screenshots``) saves screenshots there for a person to
#: look at: every page visited, full length, and the dark-mode panels.
SAVE_SCREENSHOTS = os.environ.get("BOOK_SCREENSHOTS", "") not in ("", "0")
DESKTOP = {"width": 1280, "height": 900}
PHONE = {"width": 390, "height": 844}
TABLET = {"width": 768, "height": 1024}
AXE_JS = ROOT / "_static" / "vendor" / "axe-core" / "axe.min.js"
#: The axe-core rules the book must pass: WCAG 2.1, levels A and AA.
AXE_TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]
#: The smallest text, in CSS pixels, that any figure or explorer may show.
MIN_TEXT_PX = 9.0
ARTICLE = "main .bd-article"


def wait_for_translators(page, timeout: float = 60_000) -> None:
    """Until every in-browser translator box on the page has translated (it draws its
    figures after its first translation) or said why it could not load."""
    if page.locator("[data-live-translate]").count():
        page.wait_for_function(
            "() => [...document.querySelectorAll('[data-live-translate]')].every("
            "b => b.hasAttribute('data-runs') || b.hasAttribute('data-load-error'))",
            timeout=timeout,
        )


def listing(items) -> str:
    """Failure details, one per indented line."""
    return "\n  " + "\n  ".join(items)


# Returns, for each visible image of the article, its source, its natural width and the
# width at which it is shown, and the text size recorded in its PNG (read in the page:
# blob: and data: sources are readable only there).
IMAGE_TEXT_SIZES = """async (article) => {
  const key = "smallest-text-px";
  async function recorded(src) {
    const bytes = new Uint8Array(await (await fetch(src)).arrayBuffer());
    const view = new DataView(bytes.buffer);
    if (view.getUint32(0) !== 0x89504e47) return "not a PNG";
    for (let at = 8; at + 8 <= bytes.length; ) {
      const length = view.getUint32(at);
      const kind = String.fromCharCode(...bytes.slice(at + 4, at + 8));
      if (kind === "IDAT") break;
      if (kind === "tEXt") {
        const text = new TextDecoder("latin1").decode(bytes.slice(at + 8, at + 8 + length));
        const [name, value] = text.split("\\0");
        if (name === key) return value;
      }
      at += 12 + length;
    }
    return null;
  }
  const out = [];
  for (const img of article.querySelectorAll("img")) {
    const box = img.getBoundingClientRect();
    if (!img.offsetParent || box.width === 0) continue;
    const src = img.currentSrc || img.src;
    out.push({
      src: img.getAttribute("src").slice(0, 80),
      alt: img.getAttribute("alt"),
      natural: img.naturalWidth,
      shown: box.width,
      recorded: await recorded(src),
    });
  }
  return out;
}"""

SVG_AND_CANVAS_TEXT = """(article) => {
  const out = [];
  for (const text of article.querySelectorAll("svg text")) {
    if (!text.textContent.trim() || !text.getClientRects().length) continue;
    const m = text.getScreenCTM();
    const px = parseFloat(getComputedStyle(text).fontSize) * Math.hypot(m.a, m.b);
    out.push({what: "svg text " + JSON.stringify(text.textContent.trim().slice(0, 30)), px});
  }
  const sizes = window.__canvasTextPx || new Map();
  for (const canvas of article.querySelectorAll("canvas")) {
    const shown = canvas.getBoundingClientRect().width;
    if (!shown || !sizes.has(canvas)) continue;
    out.push({what: "canvas", px: sizes.get(canvas) * shown / canvas.width});
  }
  return out;
}"""


# Two frames (so that transitions just triggered have started), then until every running
# animation and transition has ended (at most 3 s). Colours measured half-way through a
# transition (a theme change; the theme's "Back to top" button fading in after a scroll)
# are neither the old nor the new ones.
ANIMATIONS_SETTLED = """async () => {
  const frame = () => new Promise((r) => requestAnimationFrame(() => r()));
  await frame(); await frame();
  const done = Promise.all(document.getAnimations().map((a) => a.finished.catch(() => null)));
  await Promise.race([done, new Promise((r) => setTimeout(r, 3000))]);
  await frame();
}"""


def axe(page, rules: list[str] | None = None, context: object = None) -> list[dict]:
    """Run axe-core on ``page``: its violations of the WCAG 2.1 A and AA rules (or only of
    ``rules``), each ``{id, impact, help, nodes: [target and HTML, ...]}``.

    axe is injected into the page (the book never loads it). It is evaluated with no AMD
    ``define`` in sight, as the widget pages load require.js. It runs once the page's
    animations and transitions have ended (:data:`ANIMATIONS_SETTLED`).
    """
    page.evaluate(ANIMATIONS_SETTLED)
    if not page.evaluate("() => Boolean(window.axe)"):
        page.evaluate(
            "source => (new Function('define', 'module', 'exports', source))()",
            AXE_JS.read_text(encoding="utf-8"),
        )
    options = (
        {"runOnly": {"type": "rule", "values": rules}}
        if rules
        else {"runOnly": {"type": "tag", "values": AXE_TAGS}}
    )
    options["resultTypes"] = ["violations"]
    return page.evaluate(
        """async ([context, options]) => {
            const result = await axe.run(context || document, options);
            return result.violations.map(v => ({
                id: v.id, impact: v.impact, help: v.help,
                nodes: v.nodes.map(n => n.target.join(" ") + " :: " + n.html.slice(0, 160)),
            }));
        }""",
        [context, options],
    )


# Text of the explorers and translator boxes themselves (labels, readouts, buttons): the
# smallest computed font size of any visible text.
HTML_TEXT_SIZES = """() => {
  const out = [];
  for (const box of document.querySelectorAll(".transformer-explorer, [data-live-translate]")) {
    const walker = document.createTreeWalker(box, NodeFilter.SHOW_TEXT);
    while (walker.nextNode()) {
      const node = walker.currentNode;
      const el = node.parentElement;
      if (!node.textContent.trim() || !el.getClientRects().length) continue;
      if (el.closest(".visually-hidden")) continue;
      out.push({what: "text " + JSON.stringify(node.textContent.trim().slice(0, 30)),
                px: parseFloat(getComputedStyle(el).fontSize)});
    }
  }
  return out;
}"""

# What a reader of a narrow screen would miss, with the page's width:
# * "page": something makes the page itself wider than the screen (it scrolls sideways);
# * "cut": content hidden by a box that does not scroll (overflow hidden/clip), or text cut
#   short inside its own box (a readout, a label, a button);
# * "hidden scroll": a box that scrolls sideways without showing that it does (book.js
#   marks such boxes "scrolls-x" and fades the side with more to see).
CUT_OFF = """() => {
  const article = document.querySelector("main .bd-article");
  const vw = document.documentElement.clientWidth;
  const out = [];
  const what = e => e.tagName.toLowerCase() + "." +
    String(e.className.baseVal ?? e.className).split(" ").filter(c => c && c !== "lm-Widget")
      .slice(0, 2).join(".") + " " + JSON.stringify((e.textContent || e.getAttribute("alt")
      || "").trim().slice(0, 50));
  const clips = e => ["hidden", "clip"].includes(getComputedStyle(e).overflowX);
  const scrolls = e => ["auto", "scroll"].includes(getComputedStyle(e).overflowX);
  const cue = e => {
    const s = getComputedStyle(e);
    const mask = s.maskImage || s.webkitMaskImage || "none";
    const atEnd = e.scrollLeft + e.clientWidth >= e.scrollWidth - 1;
    return e.classList.contains("scrolls-x") && (atEnd || mask !== "none");
  };
  const selector = [
    "pre", "mjx-container[display='true']", "table", "img", "svg", "canvas", ".bertviz",
    ".jupyter-widgets", ".widget-readout", ".widget-label", "button", "select", "input",
    "h1", "h2", "h3", "h4", "p", "li", "code", "figcaption", ".lt-output",
  ].join(", ");
  const seen = new Set();
  for (const e of article.querySelectorAll(selector)) {
    const box = e.getBoundingClientRect();
    if (box.width === 0 || !e.getClientRects().length || e.closest(".visually-hidden")) continue;
    // (A text field scrolls its own value; an svg draws outside its box by design.)
    const own = !["svg", "INPUT", "SELECT"].includes(e.tagName);
    if (own && clips(e) && e.scrollWidth > e.clientWidth + 1) {
      out.push(`cut: ${what(e)} shows ${e.clientWidth} of ${e.scrollWidth} px`);
      continue;
    }
    if (scrolls(e) && e.scrollWidth > e.clientWidth + 1) {
      if (!cue(e) && !seen.has(e)) out.push(`hidden scroll: ${what(e)}`);
      seen.add(e);
      continue;
    }
    let a = e.parentElement;
    while (a && a !== document.documentElement && getComputedStyle(a).overflowX === "visible") {
      a = a.parentElement;
    }
    if (a && a !== document.documentElement && a !== document.body) {
      const c = a.getBoundingClientRect();
      if (box.right > c.right + 1 || box.left < c.left - 1) {
        if (clips(a)) {
          out.push(`cut: ${what(e)} (${Math.round(box.width)} px) inside ${what(a)}`
            + ` (${Math.round(c.width)} px, overflow hidden)`);
        } else if (!cue(a) && !seen.has(a)) {
          out.push(`hidden scroll: ${what(a)} holding ${what(e)}`);
          seen.add(a);
        }
        continue;
      }
    }
    if (box.right > vw + 1) out.push(`page: ${what(e)} ends at ${Math.round(box.right)} px`);
  }
  const width = document.documentElement.scrollWidth;
  if (width > vw + 1) out.push(`page: the page is ${width} px wide in a ${vw} px window`);
  return {width, vw, problems: out};
}"""


# A function for page scripts: the smallest text size a PNG records (its
# "smallest-text-px" tEXt chunk, or null) and whether it carries a phone version (a
# "phOn" chunk), read from the image's bytes.
PNG_CHUNKS_JS = """
async function pngChunks(src) {
  const bytes = new Uint8Array(await (await fetch(src)).arrayBuffer());
  const view = new DataView(bytes.buffer);
  const out = {text: null, phone: false};
  for (let at = 8; at + 8 <= bytes.length; ) {
    const length = view.getUint32(at);
    const kind = String.fromCharCode(...bytes.slice(at + 4, at + 8));
    if (kind === "tEXt") {
      const text = new TextDecoder("latin1").decode(bytes.slice(at + 8, at + 8 + length));
      const [name, value] = text.split("\\0");
      if (name === "smallest-text-px") out.text = value;
    }
    if (kind === "phOn") out.phone = true;
    at += 12 + length;
  }
  return out;
}
"""


def phone_fit_problems(name: str, shown: dict) -> list[str]:
    """What keeps an image shown on a phone from reading well: its box scrolls sideways,
    it is wider than the column, or its smallest text (recorded in the PNG) is under
    MIN_TEXT_PX CSS px as shown. ``shown`` has ``scroll``, ``shown`` and ``column`` (CSS
    px), ``natural`` (image px) and ``recorded`` (the PNG's smallest text, image px)."""
    bad = []
    if shown["scroll"] > 1:
        bad.append(f"{name}: its box scrolls {shown['scroll']} px sideways")
    if shown["shown"] > shown["column"] + 1:
        bad.append(f"{name}: {shown['shown']:.0f} px wide in a {shown['column']:.0f} px column")
    if shown["recorded"] in (None, "none"):
        bad.append(f"{name}: the image shown records no text size")
    elif float(shown["recorded"]) * shown["shown"] / shown["natural"] < MIN_TEXT_PX:
        px = float(shown["recorded"]) * shown["shown"] / shown["natural"]
        bad.append(f"{name}: text {px:.1f} px")
    return bad
