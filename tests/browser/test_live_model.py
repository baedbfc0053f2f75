"""The in-browser translator (``_static/live``) in headless Chromium, over http and file://.

The expected translations are computed here with PyTorch (``greedy_decode``, one sentence
at a time, as the page decodes), by the model with exactly the weights the page runs
(``onnx_export.with_stored_precision``: float16-stored weights); agreement with the
float32 checkpoint is printed too. Sentences are typed into the page's text box; the page
must give the same German, switch heads off exactly as ``set_head_gate`` does, load and
answer quickly, stay offline and say clearly what is wrong with bad input or a missing
model. Timings and sizes are printed (``pytest -s``) for benchmarks/README.md.
"""

from __future__ import annotations

import gzip
import json
import statistics
import sys
import time
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from book_pages import HTML_DIR  # noqa: E402
from page_checks import wait_for_translators  # noqa: E402

pytestmark = pytest.mark.browser

INTRO = "intro"
CHAPTER = "chapters/11_inside_the_trained_model"
N_TYPED = 20  # sentences typed into the box, per scheme
N_API = 200  # sentences translated through window.liveTranslate (http only)
FIRST_TRANSLATION_S = 3.0
MEDIAN_LATENCY_MS = 150.0
PAGE_WEIGHT_GZIP = 8e6
ALLOWED_SCHEMES = {"file", "data", "blob", "about"}

BOX = "[data-live-translate]"
INPUT = '[data-testid="live-translate-input"]'
OUTPUT = '[data-testid="live-translate-output"]'
STATUS = '[data-testid="live-translate-status"]'
FIGURE = '[data-testid="live-attention"]'
MAP = '[data-testid="live-attention-map"]'


# ----------------------------------------------------------------------- expectations
GENERATED = HTML_DIR / "_static" / "live" / "generated"


@pytest.fixture(scope="module")
def translator():
    from transformer_lib.pipeline.pretrained import load_pretrained

    return load_pretrained()


@pytest.fixture(scope="module")
def page_model(translator):
    """PyTorch with exactly the weights the built page runs (float16-stored ones rounded)."""
    from transformer_lib.pipeline.onnx_export import with_stored_precision

    text = (GENERATED / "model.js").read_text(encoding="utf-8")
    meta = json.loads(text[text.index("] = ") + 4 : text.rstrip().rindex(";")])["meta"]
    return with_stored_precision(translator.model, meta["weights"])


def _greedy(model, tokenizer, text: str) -> str:
    from transformer_lib.pipeline.decoding import greedy_decode

    ids = tokenizer.encode(text)
    return tokenizer.decode(greedy_decode(model, torch.tensor([ids]))[0])


@pytest.fixture(scope="module")
def test_sentences(corpus_path):
    from transformer_lib.pipeline.corpus import group_references, read_pairs, split_pairs

    pairs, _ = read_pairs(corpus_path)
    test = [en for en, _ in group_references(split_pairs(pairs)["test"])]
    return test[:: max(1, len(test) // N_API)][:N_API]


@pytest.fixture(scope="module")
def expected(page_model, translator, test_sentences):
    """PyTorch's greedy translation of each test sentence (the page's weights)."""
    return {s: _greedy(page_model, translator.tokenizer, s) for s in test_sentences}


@pytest.fixture(scope="module")
def expected_float32(translator, test_sentences):
    """The float32 checkpoint's greedy translations, for the agreement printed."""
    return {s: _greedy(translator.model, translator.tokenizer, s) for s in test_sentences}


@pytest.fixture(scope="module")
def gate_cases(page_model, translator, test_sentences):
    """(sentence, (kind, layer, head), PyTorch's output with that head off): three heads that
    change the translation and one that does not."""
    model, tok = page_model, translator.tokenizer
    changing, unchanged = [], []
    for text in test_sentences[:: max(1, len(test_sentences) // 25)]:
        base = _greedy(model, tok, text)
        for kind in ("cross", "encoder", "decoder"):
            for layer in range(len(model.attention_modules(kind))):
                for head in range(model.config.n_heads):
                    gate = torch.ones(model.config.n_heads)
                    gate[head] = 0.0
                    model.set_head_gate(kind, layer, gate)
                    try:
                        out = _greedy(model, tok, text)
                    finally:
                        model.reset_head_gates()
                    case = (text, (kind, layer, head), out)
                    if out != base and len(changing) < 3 and text not in {c[0] for c in changing}:
                        changing.append(case)
                    elif out == base and not unchanged:
                        unchanged.append(case)
        if len(changing) == 3 and unchanged:
            break
    assert len(changing) == 3, "no head changes any translation: nothing to test"
    return changing + unchanged


# ----------------------------------------------------------------------- pages
def _local(url: str, server: str) -> bool:
    parts = urlsplit(url)
    return parts.scheme in ALLOWED_SCHEMES or url.startswith(server)


class LivePage:
    """One page with a translator box, and what the browser reported while it was open."""

    def __init__(self, context, url: str, server: str, cold: bool = True, breakage=None):
        self.url = url
        self.console: list[tuple[str, str]] = []
        self.errors: list[str] = []
        self.requests: list[str] = []
        self.failures: list[str] = []
        page = self.page = context.new_page()
        if cold:  # measure a first visit: nothing from the HTTP cache
            context.new_cdp_session(page).send("Network.setCacheDisabled", {"cacheDisabled": True})

        def guard(route):
            url = route.request.url
            if breakage and url.split("?")[0].endswith(breakage[0]):
                route.fulfill(**breakage[1])
            elif _local(url, server):
                route.continue_()
            else:
                route.abort()

        page.route("**/*", guard)  # page routes come before the context's (which blocks file:)
        page.on("console", lambda m: self.console.append((m.type, m.text)))
        page.on("pageerror", lambda e: self.errors.append(str(e)))
        page.on("request", lambda r: self.requests.append(r.url))
        page.on("requestfailed", lambda r: self.failures.append(f"{r.url}: {r.failure}"))
        page.on(
            "response",
            lambda r: (
                self.failures.append(f"{r.url}: HTTP {r.status}") if r.status >= 400 else None
            ),
        )
        t0 = time.perf_counter()
        page.goto(url, wait_until="domcontentloaded")
        self.goto_s = time.perf_counter() - t0

    def wait_first(self, timeout_ms: int = 20_000) -> None:
        self.page.wait_for_function(
            f"() => {{ const b = document.querySelector('{BOX}');"
            " return b && (b.hasAttribute('data-runs') || b.hasAttribute('data-load-error')); }",
            timeout=timeout_ms,
        )

    def runs(self) -> int:
        return int(self.page.get_attribute(BOX, "data-runs") or 0)

    def act(self, action) -> float:
        """Do ``action`` (type, click, ...), wait for the box to answer; return its ms."""
        before = self.runs()
        action()
        self.page.wait_for_function(
            f"n => Number(document.querySelector('{BOX}').getAttribute('data-runs')) > n",
            arg=before,
            timeout=10_000,
        )
        return float(self.page.get_attribute(BOX, "data-last-ms") or "nan")

    def translate(self, text: str) -> tuple[str, float]:
        def go():
            self.page.fill(INPUT, text)
            self.page.press(INPUT, "Enter")

        ms = self.act(go)
        return self.page.inner_text(OUTPUT), ms

    def switch(self, kind: str, layer: int, head: int):
        return self.page.locator(
            f'[data-testid="live-head-switch"][data-kind="{kind}"]'
            f'[data-layer="{layer}"][data-head="{head}"]'
        )

    @property
    def console_errors(self) -> list[str]:
        return [t for kind, t in self.console if kind == "error"] + self.errors

    def loaded_files(self) -> list[Path]:
        """The files the translator's loader fetched (its own script and what it adds)."""
        out = []
        for url in self.requests:
            path = unquote(urlsplit(url).path)
            if "/_static/live/" in path or "/_static/vendor/onnxruntime-web/" in path:
                rel = path.split("/_static/", 1)[1]
                out.append(HTML_DIR / "_static" / rel)
        return sorted(set(out))


@pytest.fixture(scope="module")
def open_live(browser_context, book_server):
    pages: list[LivePage] = []

    def _open(name: str, scheme: str = "http", **kw) -> LivePage:
        if scheme == "http":
            url = f"{book_server}/{name}.html"
        else:
            url = (HTML_DIR / f"{name}.html").resolve().as_uri()
        live = LivePage(browser_context, url, book_server, **kw)
        pages.append(live)
        return live

    yield _open
    for p in pages:
        p.page.close()


@pytest.fixture(scope="module", params=["http", "file"])
def intro(request, open_live):
    """The first page, loaded once per scheme, with its first translation done."""
    live = open_live(INTRO, request.param)
    live.wait_first()
    live.scheme = request.param
    return live


# ----------------------------------------------------------------------- tests
def _first_translation_s(live: LivePage) -> float:
    """Seconds from the start of navigation until the first translation was drawn."""
    return live.page.evaluate("() => window.liveTranslate.timings.first") / 1000


@pytest.mark.timing  # make test runs it alone, after the other suites
def test_first_load_is_fast_light_offline_and_clean(intro, open_live):
    page = intro.page
    assert page.get_attribute(BOX, "data-load-error") is None, page.inner_text(STATUS)
    timings = page.evaluate("() => window.liveTranslate.timings")
    files = intro.loaded_files()
    names = {f.name for f in files}
    assert {"live-translate.js", "model.js", "ort-wasm.js", "ort.wasm.min.js"} <= names, names
    weight = sum(len(gzip.compress(f.read_bytes(), 6)) for f in files)
    # The machine running the tests is often shared: a load over budget is tried again on a
    # fresh page (up to three in all) and the best counts; every time is printed.
    times = [_first_translation_s(intro)]
    while min(times) > FIRST_TRANSLATION_S and len(times) < 3:
        again = open_live(INTRO, intro.scheme)
        again.wait_first()
        times.append(_first_translation_s(again))
        again.page.close()
    print(
        f"\n[{intro.scheme}] first translation {', '.join(f'{t:.2f}' for t in times)} s after "
        f"navigation (first load: scripts in at {timings['scripts'] / 1000:.2f} s, "
        f"model ready {timings['engine'] / 1000:.2f} s); translator files "
        f"{weight / 1e6:.2f} MB gzip in {len(files)} files"
    )
    assert min(times) <= FIRST_TRANSLATION_S
    assert weight <= PAGE_WEIGHT_GZIP
    foreign = [u for u in intro.requests if not _local(u, intro.url.split("/intro")[0])]
    assert not foreign, foreign
    assert not intro.failures, intro.failures
    assert not intro.console_errors, intro.console_errors
    assert page.inner_text(OUTPUT).strip(), "the example sentence was not translated"


def test_typed_sentences_translate_like_pytorch(intro, expected, expected_float32):
    texts = list(expected)[:: max(1, len(expected) // N_TYPED)][:N_TYPED]
    assert len(texts) >= 20
    latencies, wrong, as_float32 = [], [], 0
    for text in texts:
        got, ms = intro.translate(text)
        latencies.append(ms)
        as_float32 += got == expected_float32[text]
        if got != expected[text]:
            wrong.append((text, got, expected[text]))
    median = statistics.median(latencies)
    print(
        f"\n[{intro.scheme}] {len(texts) - len(wrong)}/{len(texts)} typed sentences as PyTorch "
        f"({as_float32} as the float32 checkpoint); "
        f"translation + redraw median {median:.1f} ms, max {max(latencies):.1f} ms"
    )
    assert not wrong, wrong
    assert median <= MEDIAN_LATENCY_MS
    assert not intro.console_errors, intro.console_errors


def test_switching_heads_off_matches_pytorch(intro, gate_cases, page_model, translator):
    for text, (kind, layer, head), want in gate_cases:
        base, _ = intro.translate(text)
        assert base == _greedy(page_model, translator.tokenizer, text)
        box = intro.switch(kind, layer, head)
        if not box.is_visible():
            intro.page.click(f"{BOX} details.lt-switches > summary")
        intro.act(lambda box=box: box.uncheck())
        got = intro.page.inner_text(OUTPUT)
        assert got == want, (text, kind, layer, head)
        assert (got != base) == (want != base)
        note = intro.page.inner_text('[data-testid="live-translate-baseline"]')
        assert "1 head off" in note and base in note
        figure = intro.page.locator(FIGURE)
        assert figure.get_attribute("data-kind")  # still drawn
        intro.act(lambda box=box: box.check())
        assert intro.page.inner_text(OUTPUT) == base


def test_attention_figure_follows_the_controls(intro, translator):
    page = intro.page
    text = "I have never seen this film."
    intro.translate(text)
    c = translator.model.config
    src = translator.tokenizer.encode(text)
    figure = page.locator(FIGURE)
    kinds = {
        "encoder": c.n_encoder_layers,
        "decoder": c.n_decoder_layers,
        "cross": c.n_decoder_layers,
    }
    for kind, n_layers in kinds.items():
        page.select_option('[data-testid="live-attention-kind"]', kind)
        layers = page.locator('[data-testid="live-attention-layer"] option').count()
        assert layers == n_layers
        page.select_option('[data-testid="live-attention-layer"]', str(n_layers - 1))
        # One large map of the head picked, and every head of the layer small, to pick by.
        thumbs = figure.locator('[data-testid="live-head-thumb"]')
        assert thumbs.count() == c.n_heads
        thumbs.nth(0).click()
        assert page.locator('[data-testid="live-attention-head"]').input_value() == "0"
        assert figure.get_attribute("data-head") == "0"
        page.select_option('[data-testid="live-attention-head"]', str(c.n_heads - 1))
        assert figure.locator("canvas.lt-large").count() == 1
        assert figure.locator(".lt-thumb.lt-picked").get_attribute("data-head") == str(
            c.n_heads - 1
        )
        assert figure.get_attribute("data-kind") == kind
        assert figure.get_attribute("data-layer") == str(n_layers - 1)
        tq, tk = map(int, figure.get_attribute("data-shape").split("x"))
        if kind in ("encoder", "cross"):
            assert tk == len(src)
        if kind == "encoder":
            assert tq == len(src)
        else:
            assert tq >= 1 and (kind == "cross" or tq == tk)
        width = figure.locator("canvas.lt-large").evaluate("c => c.width")
        assert width > 50
    # The cells are coloured (not a blank canvas): the top-left pixel row of the grid
    # holds some of the colour map's colours.
    distinct = figure.locator("canvas.lt-large").evaluate(
        """c => { const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
                  const s = new Set(); for (let i = 0; i < d.length; i += 4 * 7)
                  s.add(d[i] + ',' + d[i + 1] + ',' + d[i + 2]); return s.size; }"""
    )
    assert distinct > 5


def _spoken(token: str) -> str:
    return token.replace("\u2581", "") or token


def _shown_map(page) -> dict:
    """The weights of the map drawn large, from a fresh translation of the box's sentence
    (the page's tensors, read here; the box's own description code is not used)."""
    return page.evaluate(
        """async sel => { const f = document.querySelector(sel);
            const kind = f.dataset.kind, layer = Number(f.dataset.layer),
                  head = Number(f.dataset.head);
            const text = document.querySelector('[data-testid=live-translate-input]').value;
            const r = await window.liveTranslate.translate(text);
            const t = r.attention[kind], [L, H, Tq, Tk] = t.dims, o = (layer * H + head) * Tq * Tk;
            return { kind, layer, head, Tq, Tk, w: Array.from(t.data.slice(o, o + Tq * Tk)),
                     src: r.source.tokens, read: r.decoderTokens, written: r.writtenTokens }; }""",
        FIGURE,
    )


@pytest.mark.parametrize("kind", ["cross", "encoder", "decoder"])
def test_the_large_map_is_described_from_its_weights(intro, kind):
    """The screen reader's text names, for every row, the key with the largest weight (as
    computed here from the page's tensors), the kind, layer and head; the axes are named."""
    page = intro.page
    intro.translate("The children are playing in the garden.")
    page.select_option('[data-testid="live-attention-kind"]', kind)
    page.select_option('[data-testid="live-attention-head"]', "1")
    m = _shown_map(page)
    label = page.get_attribute(MAP, "aria-label")
    assert page.get_attribute(MAP, "role") == "img"
    assert f"layer {m['layer']}, head 1" in label and m["head"] == 1
    assert "Rows are queries" in label and "columns are keys" in label
    rows = m["src"] if kind == "encoder" else m["written"][: m["Tq"]]
    cols = m["read"] if kind == "decoder" else m["src"]
    word = "row" if kind == "encoder" else "writes"
    described = label.split("Brightest key of each row: ", 1)[1].rstrip(".").split("; ")
    assert len(described) == m["Tq"]
    for i, said in enumerate(described):
        row = m["w"][i * m["Tk"] : (i + 1) * m["Tk"]]
        j = max(range(m["Tk"]), key=row.__getitem__)
        assert said == f"{word} {_spoken(rows[i])}: {_spoken(cols[j])} {row[j]:.2f}", (i, said)
    hint = page.inner_text('[data-testid="live-attention-hint"]')
    assert hint.startswith("What to look for") and len(hint.splitlines()) >= 2


def test_the_large_map_is_readable_and_fits_a_phone(intro, phone_context, book_server):
    """Token labels of the large map are drawn at 11 px or more and the canvas is shown at
    the size it was drawn for (not shrunk by CSS); at 390 px the box does not scroll
    sideways."""
    page = intro.page
    intro.translate("The children are playing in the garden.")
    page.select_option('[data-testid="live-attention-kind"]', "cross")

    def measured(p):
        return p.locator(f"{FIGURE} canvas.lt-large").evaluate(
            """c => ({ font: Number(c.dataset.fontPx), drawn: c.width / devicePixelRatio,
                      shown: c.getBoundingClientRect().width,
                      box: c.closest('[data-live-translate]').clientWidth,
                      boxScroll: c.closest('[data-live-translate]').scrollWidth,
                      fig: c.closest('.lt-figure').clientWidth,
                      figScroll: c.closest('.lt-figure').scrollWidth })"""
        )

    desk = measured(page)
    assert desk["font"] >= 11
    assert abs(desk["shown"] - desk["drawn"]) <= 1, desk
    assert desk["shown"] >= 300, desk  # drawn large, not as a thumbnail
    phone = phone_context.new_page()
    try:
        phone.goto(f"{book_server}/{INTRO}.html", wait_until="domcontentloaded")
        wait_for_translators(phone)
        got = measured(phone)
        print(f"\n[{intro.scheme}] large map: desktop {desk}, phone {got}")
        assert got["font"] >= 11 and abs(got["shown"] - got["drawn"]) <= 1, got
        assert got["boxScroll"] <= got["box"] and got["figScroll"] <= got["fig"], got
        assert phone.evaluate("() => document.documentElement.scrollWidth") <= 390
    finally:
        phone.close()


def test_bad_input_is_explained(intro, translator):
    page = intro.page
    max_len = translator.model.config.max_len
    intro.translate("")
    assert "empty" in page.inner_text(STATUS).lower()
    assert page.get_attribute(STATUS, "data-state") == "error"
    assert page.inner_text(OUTPUT) == ""
    intro.translate("word " * (max_len + 5))
    status = page.inner_text(STATUS)
    assert f"at most {max_len}" in status and "split" in status
    got, _ = intro.translate("这是一个中文句子。")
    status = page.inner_text(STATUS)
    assert "only English in Latin script" in status
    assert page.get_attribute(STATUS, "data-state") == "warning"
    # The share of unknown characters is Python's (Tokenizer.unknown_share).
    texts = [
        "这是一个中文句子。",
        "Tom mag 寿司 sehr.",
        "😀 Tom is lazy",
        "Привет мир",
        "u\u0308ber alles",
        "tabs\there",
        "½ cup",
        "Tom is lazy.",
    ]
    shares = page.evaluate(
        """async texts => { const e = await window.liveTranslate.ready;
            return texts.map(t => e.unknownShare(t)); }""",
        texts,
    )
    for text, share in zip(texts, shares):
        assert share == pytest.approx(translator.tokenizer.unknown_share(text)), text
    intro.translate("Tom is lazy.")
    assert page.get_attribute(STATUS, "data-state") == "ok"


ANNOUNCER = '[data-testid="live-translate-announcer"]'
FOCUS_RING = """e => { const s = getComputedStyle(e);
  return (s.outlineStyle !== 'none' && parseFloat(s.outlineWidth) >= 2)
    || /\\d+px/.test(s.boxShadow); }"""


def _unknown_by_offsets(tokenizer, text: str) -> list[str]:
    """The characters of ``text`` under an <unk> token (the tokenizer's own offsets)."""
    from transformer_lib.pipeline.tokenizer import UNK_ID

    enc = tokenizer.backend.encode(text, add_special_tokens=False)
    found: dict[str, None] = {}
    for i, (a, b) in zip(enc.ids, enc.offsets):
        if i == UNK_ID:
            found.update((ch, None) for ch in text[a:b] if not ch.isspace())
    return list(found)


def test_unusable_characters_are_named(intro, translator):
    """Any character that becomes <unk> is named (itself and its code point), and an
    input with no letter is flagged; both as a warning the screen reader hears."""
    page = intro.page
    intro.translate("I like 🍕 very much.")
    status = page.inner_text(STATUS)
    assert page.get_attribute(STATUS, "data-state") == "warning"
    assert "🍕" in status and "U+1F355" in status and "<unk>" in status
    assert "drops or garbles" in status  # one character of many: not "meaningless"
    page.wait_for_function(
        "sel => document.querySelector(sel).textContent.includes('U+1F355')", arg=ANNOUNCER
    )
    assert page.inner_text(ANNOUNCER).startswith("German: ")
    intro.translate("?!... 42")
    assert page.get_attribute(STATUS, "data-state") == "warning"
    assert "no letter" in page.inner_text(STATUS)
    intro.translate("Tom is lazy.")
    assert page.get_attribute(STATUS, "data-state") == "ok"
    texts = [
        "I like 🍕 very much.",
        "Tom mag 寿司 sehr.",
        "Привет, Tom!",
        "Tom is lazy.",
        "naïve café",
        "½ cup of ☕",
        "?!...",
    ]
    got = page.evaluate(
        """async texts => { const e = await window.liveTranslate.ready;
            return texts.map(t => e.unknownCharacters(t)); }""",
        texts,
    )
    tok = translator.tokenizer
    for text, chars in zip(texts, got):
        assert chars == _unknown_by_offsets(tok, text), text
    from transformer_lib.pipeline import tokenizer as tokenizer_module

    same_rule = getattr(tokenizer_module, "unknown_characters", None)
    if same_rule is not None:  # the library's own function, where it has one
        assert got == [same_rule(tok, t) for t in texts]


def test_keyboard_alone_translates_announces_and_switches_heads(intro):
    page = intro.page
    # The box's first view, whatever the tests before left picked (the page is shared).
    page.select_option('[data-testid="live-attention-kind"]', "cross")
    page.locator(INPUT).focus()
    page.keyboard.press("Control+A")
    page.keyboard.type("The children are playing in the garden.")
    intro.act(lambda: page.keyboard.press("Enter"))
    output = page.inner_text(OUTPUT)
    page.wait_for_function(
        "([sel, text]) => document.querySelector(sel).textContent === 'German: ' + text",
        arg=[ANNOUNCER, output],
    )
    order = []
    for _ in range(8):  # Translate, the three menus, the switches' summary, a switch
        page.keyboard.press("Tab")
        focused = page.evaluate_handle("() => document.activeElement")
        order.append(focused.evaluate("e => e.dataset.testid || e.tagName.toLowerCase()"))
        assert focused.evaluate(FOCUS_RING), f"no visible focus on {order[-1]}"
        if order[-1] == "live-attention-kind":
            page.keyboard.press("ArrowUp")  # cross -> decoder self-attention
            assert page.get_attribute(FIGURE, "data-kind") == "decoder"
        if order[-1] == "summary" and not focused.evaluate("e => e.parentElement.open"):
            page.keyboard.press("Enter")  # unfold the switches
            assert focused.evaluate("e => e.parentElement.open")
        if order[-1] == "live-head-switch":
            intro.act(lambda: page.keyboard.press("Space"))
            page.wait_for_function(
                "sel => document.querySelector(sel).textContent.includes('1 head off')",
                arg=ANNOUNCER,
            )
            intro.act(lambda: page.keyboard.press("Space"))
            break
    assert order[:4] == [
        "live-translate-button",
        "live-attention-kind",
        "live-attention-layer",
        "live-attention-head",
    ], order
    assert "live-head-switch" in order, order
    assert page.locator(MAP).get_attribute("aria-label").count("writes") >= 1


def test_page_api_matches_pytorch_on_the_test_split(intro, expected, expected_float32):
    """Every test sentence through window.liveTranslate (tokenizer, model, detokenizer)."""
    if intro.scheme != "http":
        pytest.skip("checked once")
    texts = list(expected)
    got = intro.page.evaluate(
        """async texts => { const out = [];
            for (const t of texts) { out.push((await window.liveTranslate.translate(t)).text); }
            return out; }""",
        texts,
    )
    same = sum(g == expected[t] for g, t in zip(got, texts))
    as_float32 = sum(g == expected_float32[t] for g, t in zip(got, texts))
    print(
        f"\n[http] page API: {same}/{len(texts)} test-split sentences as PyTorch with the "
        f"page's weights, {as_float32}/{len(texts)} as the float32 checkpoint"
    )
    assert same == len(texts), [(t, g, expected[t]) for g, t in zip(got, texts) if g != expected[t]]


@pytest.mark.parametrize(
    "breakage",
    [
        ("generated/model.js", {"status": 404, "body": "not found"}),
        ("generated/model.js", {"status": 200, "body": "window.LIVE_TRANSLATE_FILES = {"}),
        ("generated/ort-wasm.js", {"status": 200, "body": "/* empty */"}),
    ],
    ids=["missing-model", "damaged-model", "missing-wasm"],
)
def test_a_model_that_fails_to_load_says_so(open_live, breakage):
    live = open_live(INTRO, "http", breakage=breakage)
    live.wait_first()
    status = live.page.inner_text(STATUS)
    assert live.page.get_attribute(BOX, "data-load-error") == "true"
    assert "could not be loaded" in status and "make book" in status
    assert live.page.is_visible(STATUS)
    assert live.page.locator(INPUT).is_disabled()


def test_chapter_11_has_a_working_box_with_every_switch(open_live, translator, page_model):
    live = open_live(CHAPTER, "file")
    live.wait_first(timeout_ms=30_000)
    page = live.page
    assert page.get_attribute(BOX, "data-load-error") is None, page.inner_text(STATUS)
    c = translator.model.config
    n = (c.n_encoder_layers + 2 * c.n_decoder_layers) * c.n_heads
    assert page.locator('[data-testid="live-head-switch"]').count() == n
    got, _ = live.translate("Tom is lazy.")
    assert got == _greedy(page_model, translator.tokenizer, "Tom is lazy.")
    # The box sits under the static attention explorer, whose text box stays disabled.
    order = page.evaluate(
        """() => { const box = document.querySelector('[data-live-translate]');
                   const ex = Array.from(document.querySelectorAll('.static-explorer'));
                   return ex.length ? ex[0].compareDocumentPosition(box) : 0; }"""
    )
    assert order & 4, "the in-browser box should follow the first explorer"
    assert not live.console_errors, live.console_errors
    assert not live.failures, live.failures


def test_chapter_4_box_opens_on_the_encoder_self_attention(visit):
    """Chapter 4 is about the encoder's heads: its box shows them first (data-kind)."""
    page = visit("chapters/04_multi_head_attention").page
    wait_for_translators(page)
    box = page.locator(BOX).first
    assert box.get_attribute("data-load-error") is None, box.inner_text()
    assert box.get_attribute("data-kind") == "encoder"
    assert box.locator('[data-testid="live-attention-kind"]').input_value() == "encoder"
    assert box.locator('[data-testid="live-attention"]').get_attribute("data-kind") == "encoder"
    assert box.locator('[data-testid="live-attention-layer"]').input_value() == "0"
