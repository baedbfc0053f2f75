"""The self-check quizzes in headless Chromium, without building the whole book.

A standalone page holds two quizzes straight from ``self_check(...)._repr_html_()``; a
second copy has its scripts stripped, as a sanitising viewer would. A small book built
with the book's own configuration (the ``minibook`` fixture of ``test_folds.py``) shows a
quiz the way myst-nb renders a cell's output in the theme. For every question a right and
a wrong answer, by mouse and by keyboard alone, must give the right feedback, and the
live region must receive it as new text; axe-core must find no WCAG 2.1 A/AA violation, at
1280 and at 390 pixels, in a light and in a dark page.

axe-core is the copy vendored under ``_static/vendor/`` (``AXE_JS`` points elsewhere);
without it the axe checks are skipped and say why.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
# The fixtures chromium_context and minibook, shared with the fold tests.
from test_folds import (  # noqa: E402, F401
    PAGE_TIMEOUT_MS,
    chromium_context_fixture,
    minibook_fixture,
    serve,
)

from transformer_lib.views.self_check import Choice, Question, self_check  # noqa: E402

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]


def _axe_path() -> Path | None:
    if os.environ.get("AXE_JS"):
        return Path(os.environ["AXE_JS"])
    found = sorted((ROOT / "_static" / "vendor").glob("**/axe.min.js"))
    return found[0] if found else None


def _quizzes():
    first = self_check(
        [
            Question(
                "Why are the scores divided by $\\sqrt{d_k}$?",
                choices=[
                    Choice(
                        "To keep their variance near 1 whatever $d_k$ is",
                        correct=True,
                        why="A sum of $d_k$ unit-variance products has variance $d_k$.",
                    ),
                    Choice(
                        "To make each row of weights sum to one",
                        why="The `softmax` does that, with or without the scale.",
                    ),
                ],
            ),
            Question(
                "Which positions does the decoder's self-attention mask block?",
                multiple=True,
                choices=[
                    Choice("Later positions", correct=True, why="The causal mask blocks them."),
                    Choice("The query's own position", why="A token may attend to itself."),
                    Choice("Padding", correct=True, why="The padding mask blocks them."),
                ],
            ),
            Question(
                "What does `nn.MultiheadAttention` give for a row with every key blocked?",
                choices=[
                    Choice("Zeros", why="SDPA gives zeros there; MultiheadAttention does not."),
                    Choice("NaN", correct=True, why="The softmax of a row of $-\\infty$ is 0/0."),
                    Choice("An error", why="It raises nothing."),
                ],
            ),
        ]
    )
    second = self_check(
        [
            Question(
                f"Question {n} of the second quiz: which number is {n}?",
                choices=[
                    Choice(str(k), correct=k == n, why=f"{k} is {'' if k == n else 'not '}{n}.")
                    for k in range(1, 7)
                ],
            )
            for n in (6, 1, 3, 5)
        ]
    )
    return first, second


def _page_html(quizzes, dark: bool = False, scripts: bool = True) -> str:
    body = "\n".join(
        f"<h2>Self-check {i}</h2>\n{q._repr_html_()}" for i, q in enumerate(quizzes, 1)
    )
    if not scripts:
        body = re.sub(r"<script>.*?</script>", "", body, flags=re.S)
    style = "body{font:16px/1.5 sans-serif;margin:0 auto;max-width:46em;padding:0 1em;" + (
        "background:#121212;color:#e6e6e6;color-scheme:dark}" if dark else "color:#222}"
    )
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>Self-check page</title><style>{style}</style>"
        '<link rel="icon" href="data:,"></head>'
        f"<body><main><h1>A chapter</h1><p>Some text before.</p>{body}</main></body></html>"
    )


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    """Standalone pages served from 127.0.0.1: light, dark, and with scripts stripped."""
    folder = tmp_path_factory.mktemp("self-check-pages")
    quizzes = _quizzes()
    (folder / "light.html").write_text(_page_html(quizzes), encoding="utf-8")
    (folder / "dark.html").write_text(_page_html(quizzes, dark=True), encoding="utf-8")
    (folder / "noscript.html").write_text(_page_html(quizzes, scripts=False), encoding="utf-8")
    (folder / "empty.html").write_text(_page_html([]), encoding="utf-8")
    with serve(folder) as url:
        yield url, quizzes


def _open(context, url, width=1280):
    page = context.new_page()
    page.set_default_timeout(PAGE_TIMEOUT_MS)
    page.set_default_navigation_timeout(PAGE_TIMEOUT_MS)
    page.set_viewport_size({"width": width, "height": 900})
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.goto(url, wait_until="load")
    page.errors = errors
    return page


def _feedback(page, quiz_index: int, question_index: int) -> str:
    """The text a reader sees in one question's live region (what is displayed)."""
    region = page.locator(".sc-quiz").nth(quiz_index).locator(".sc-q").nth(question_index)
    return " ".join(region.locator(".sc-feedback").inner_text().split())


def _expected(choice, letter: str) -> str:
    text = re.sub(r"\$[^$]*\$", "", choice.why).replace("`", "")
    verdict = f"{letter} is right." if choice.correct else f"{letter} is not right."
    return verdict, " ".join(text.split()[:3])  # the verdict and the start of the why


def _assert_shows(page, qz, qn, choices_letters, quiz):
    text = _feedback(page, qz, qn)
    question = quiz.questions[qn]
    for j, letter in enumerate("ABCDEF"[: len(question.choices)]):
        verdict, why = _expected(question.choices[j], letter)
        if letter in choices_letters:
            assert verdict in text and why in text, f"quiz {qz} q{qn + 1}: {letter}: {text!r}"
        else:
            assert verdict not in text, f"quiz {qz} q{qn + 1}: {letter} shown: {text!r}"


def _right_and_wrong(question):
    right = next(j for j, c in enumerate(question.choices) if c.correct)
    wrong = next(j for j, c in enumerate(question.choices) if not c.correct)
    return right, wrong


@pytest.mark.parametrize("variant", ["light", "noscript"])
def test_a_right_and_a_wrong_answer_by_mouse(chromium_context, pages, variant):
    url, quizzes = pages
    page = _open(chromium_context, f"{url}/{variant}.html")
    if variant == "light":
        assert page.locator(".sc-quiz[data-sc-js]").count() == 2  # the script ran
    else:
        assert page.locator("script").count() == 0 and page.locator("[data-sc-js]").count() == 0
    for qz, quiz in enumerate(quizzes):
        for qn, question in enumerate(quiz.questions):
            labels = page.locator(".sc-quiz").nth(qz).locator(".sc-q").nth(qn).locator("label")
            right, wrong = _right_and_wrong(question)
            labels.nth(wrong).click()
            _assert_shows(page, qz, qn, {"ABCDEF"[wrong]}, quiz)
            labels.nth(right).click()
            if question.multiple:  # check boxes: both stay chosen, both explained
                _assert_shows(page, qz, qn, {"ABCDEF"[wrong], "ABCDEF"[right]}, quiz)
                labels.nth(wrong).click()  # unchoosing takes its explanation away
            _assert_shows(page, qz, qn, {"ABCDEF"[right]}, quiz)
        # Answering one quiz leaves the other untouched.
        if qz == 0:
            assert all(_feedback(page, 1, qn) == "" for qn in range(len(quizzes[1].questions)))
    assert not page.errors, page.errors
    page.close()


def _tab_to(page, quiz_index: int, question_index: int, limit: int = 60) -> None:
    for _ in range(limit):
        page.keyboard.press("Tab")
        inside = page.evaluate(
            """([qz, qn]) => {
                const q = document.querySelectorAll(".sc-quiz")[qz].querySelectorAll(".sc-q")[qn];
                return q.contains(document.activeElement);
            }""",
            [quiz_index, question_index],
        )
        if inside:
            return
    raise AssertionError(f"Tab never reached question {question_index + 1} of quiz {quiz_index}")


def _focused(page) -> dict:
    return page.evaluate(
        """() => {
            const el = document.activeElement, s = getComputedStyle(el);
            const q = el.closest(".sc-q");
            return { type: el.type, index: Array.from(q.querySelectorAll("input")).indexOf(el),
                     checked: el.checked, outline: s.outlineStyle,
                     width: parseFloat(s.outlineWidth) };
        }"""
    )


def test_a_right_and_a_wrong_answer_by_keyboard_alone(chromium_context, pages):
    url, quizzes = pages
    page = _open(chromium_context, f"{url}/light.html")
    for qz, quiz in enumerate(quizzes):
        for qn, question in enumerate(quiz.questions):
            _tab_to(page, qz, qn)
            now = _focused(page)
            assert now["outline"] != "none" and now["width"] >= 2, f"no focus ring: {now}"
            assert now["index"] == 0 and not now["checked"]
            right, wrong = _right_and_wrong(question)
            if question.multiple:
                # Space ticks a box; Tab moves to the next one.
                for j in range(max(right, wrong) + 1):
                    if j in (right, wrong):
                        page.keyboard.press("Space")
                    if j < max(right, wrong):
                        page.keyboard.press("Tab")
                _assert_shows(page, qz, qn, {"ABCDEF"[right], "ABCDEF"[wrong]}, quiz)
                page.keyboard.press("Space")  # untick the last one
                last = max(right, wrong)
                _assert_shows(page, qz, qn, {"ABCDEF"[min(right, wrong)]}, quiz)
                assert _focused(page)["index"] == last
            else:
                # Space chooses the focused radio button; each arrow key chooses the next
                # one, until a choice of the other verdict than A's has been explained.
                page.keyboard.press("Space")
                _assert_shows(page, qz, qn, {"A"}, quiz)
                for k in range(1, len(question.choices)):
                    page.keyboard.press("ArrowDown")
                    _assert_shows(page, qz, qn, {"ABCDEF"[k]}, quiz)
                    assert _focused(page)["index"] == k and _focused(page)["checked"]
                    if question.choices[k].correct != question.choices[0].correct:
                        break
                else:
                    raise AssertionError(f"quiz {qz} q{qn + 1}: no choice of the other verdict")
    assert not page.errors, page.errors
    page.close()


# Records what is added to each live region: a screen reader announces additions.
_WATCH = """() => {
  window.__added = [];
  document.querySelectorAll("[aria-live]").forEach((region, i) => {
    new MutationObserver((records) => {
      for (const r of records) for (const n of r.addedNodes) {
        window.__added.push([i, n.textContent.replace(/\\s+/g, " ").trim()]);
      }
    }).observe(region, { childList: true, subtree: true, characterData: true });
  });
}"""


def test_the_live_region_receives_each_new_explanation(chromium_context, pages):
    url, quizzes = pages
    page = _open(chromium_context, f"{url}/light.html")
    regions = page.locator(".sc-feedback")
    assert regions.count() == sum(len(q.questions) for q in quizzes)
    for k in range(regions.count()):
        region = regions.nth(k)
        assert region.get_attribute("role") == "status"
        assert region.get_attribute("aria-live") == "polite"
    page.evaluate(_WATCH)
    quiz = quizzes[0]
    question = quiz.questions[0]
    labels = page.locator(".sc-quiz").first.locator(".sc-q").first.locator("label")
    labels.nth(1).click()
    labels.nth(0).click()
    added = page.evaluate("window.__added")
    assert [i for i, _ in added] == [0, 0]  # one addition per answer, in the right region
    assert added[0][1].startswith("✗ B is not right. The softmax does that")
    assert added[1][1].startswith("✓ A is right. A sum of")
    # What the accessibility tree exposes is the current explanation, once; the hidden
    # copies that the page keeps for the no-script case are not in it.
    tree = page.locator(".sc-feedback").first.aria_snapshot()
    assert tree.count("A is right.") == 1 and "B is not right" not in tree, tree
    assert "✓" not in tree  # the mark is decoration; the words carry the verdict
    assert question.choices[0].correct
    page.close()


def _axe(page, selector: str | None = None) -> list[str]:
    path = _axe_path()
    if path is None or not path.is_file():
        pytest.skip(
            "axe-core is not vendored under _static/vendor/ (axe.min.js) and AXE_JS is not "
            "set: the accessibility scan cannot run"
        )
    page.add_script_tag(content=path.read_text(encoding="utf-8"))
    violations = page.evaluate(
        """async (selector) => {
            const context = selector ? { include: [selector] } : document;
            const result = await axe.run(context, {
                runOnly: { type: "tag", values: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"] },
            });
            return result.violations.map((v) => `${v.id} (${v.impact}): ${v.help} at ` +
                v.nodes.slice(0, 3).map((n) => n.target.join(" ")).join(", "));
        }""",
        selector,
    )
    return violations


def _answer_some(page):
    """Choose a wrong answer in every question of the first quiz (feedback shown)."""
    for fieldset in page.locator(".sc-quiz").first.locator(".sc-q").all():
        fieldset.locator("label").nth(1).click()


@pytest.mark.parametrize("width", [1280, 390])
@pytest.mark.parametrize("variant", ["light", "dark"])
def test_axe_finds_no_violations(chromium_context, pages, variant, width):
    url, _ = pages
    page = _open(chromium_context, f"{url}/{variant}.html", width)
    _answer_some(page)
    violations = _axe(page)
    assert not violations, "\n".join(violations)
    page.close()


def test_it_reads_at_390_pixels(chromium_context, pages):
    url, _ = pages
    page = _open(chromium_context, f"{url}/light.html", 390)
    _answer_some(page)
    overflow = page.evaluate(
        """() => {
            const width = document.documentElement.clientWidth;
            const wide = Array.from(document.querySelectorAll(".sc-quiz *")).filter((el) => {
                const r = el.getBoundingClientRect();
                return r.width > 0 && (r.right > width + 0.5 || r.left < -0.5);
            }).map((el) => el.tagName + "." + el.className);
            return { scroll: document.documentElement.scrollWidth, width, wide };
        }"""
    )
    assert overflow["scroll"] <= overflow["width"], overflow
    assert not overflow["wide"], overflow
    sizes = page.locator(".sc-quiz label, .sc-quiz legend, .sc-why").evaluate_all(
        "els => els.map(e => parseFloat(getComputedStyle(e).fontSize))"
    )
    assert min(sizes) >= 16, f"text smaller than 16 px at 390 px: {min(sizes)}"
    # Each choice's text sits beside its button, not under it.
    rows = (
        page.locator(".sc-quiz")
        .first.locator(".sc-q")
        .first.evaluate(
            """(q) => Array.from(q.querySelectorAll("input")).map((i) => {
            const a = i.getBoundingClientRect(), b = i.nextElementSibling.getBoundingClientRect();
            return [a.right <= b.left, a.top < b.bottom];
        })"""
        )
    )
    assert all(beside and level for beside, level in rows), rows
    page.close()


def test_math_is_drawn_without_mathjax(chromium_context, pages):
    url, _ = pages
    page = _open(chromium_context, f"{url}/light.html")
    page.locator(".sc-quiz").first.locator("label").first.click()  # shows math in a why
    boxes = page.locator(
        ".sc-quiz legend math, .sc-quiz label math, .sc-quiz .sc-said math"
    ).evaluate_all(
        "els => els.map(e => { const r = e.getBoundingClientRect(); return [r.width, r.height]; })"
    )
    assert len(boxes) == 4 and all(w > 5 and h > 5 for w, h in boxes), boxes
    assert "\\sqrt" not in page.locator(".sc-quiz").first.inner_text()
    page.close()


# How notebook front ends put an HTML output into the page. JupyterLab sets innerHTML on
# a detached node and re-creates each script in place before attaching it; the classic
# Notebook (jQuery's html()) inserts the content, then runs each script from a copy that
# it appends to <head> and removes at once, so document.currentScript is not the output's.
_INSERT = {
    "jupyterlab": """(html) => {
        const host = document.createElement("div");
        host.innerHTML = html;
        host.querySelectorAll("script").forEach((old) => {
            const script = document.createElement("script");
            script.textContent = old.textContent;
            old.replaceWith(script);
        });
        document.querySelector("main").appendChild(host);
    }""",
    "classic": """(html) => {
        const host = document.createElement("div");
        document.querySelector("main").appendChild(host);
        host.innerHTML = html;
        host.querySelectorAll("script").forEach((old) => {
            const script = document.createElement("script");
            script.text = old.textContent;
            document.head.appendChild(script).parentNode.removeChild(script);
        });
    }""",
}


@pytest.mark.parametrize("front_end", sorted(_INSERT))
def test_the_script_finds_its_quiz_in_notebook_front_ends(chromium_context, pages, front_end):
    url, quizzes = pages
    page = _open(chromium_context, f"{url}/empty.html")
    page.evaluate(_INSERT[front_end], quizzes[0]._repr_html_())
    quiz = page.locator(".sc-quiz")
    assert quiz.count() == 1 and quiz.get_attribute("data-sc-js") is not None, front_end
    page.evaluate(_WATCH)
    quiz.locator(".sc-q").first.locator("label").nth(1).click()
    added = page.evaluate("window.__added")
    assert len(added) == 1 and added[0][1].startswith("✗ B is not right."), added
    assert not page.errors, page.errors
    page.close()


# --- In the theme, as myst-nb renders the cell's output --------------------------------------


@pytest.mark.parametrize("theme, width", [("light", 1280), ("dark", 390)])
def test_in_the_built_page(minibook, theme, width):
    page = minibook.open("quiz", width)
    if theme == "dark":  # what the theme's switch does
        page.evaluate(
            "document.documentElement.dataset.theme = 'dark';"
            "document.documentElement.dataset.mode = 'dark'"
        )
    quiz = page.locator(".cell_output .sc-quiz")
    assert quiz.count() == 1 and quiz.get_attribute("data-sc-js") is not None
    heading = page.locator("h2", has_text="Self-check")
    assert heading.count() == 1
    assert heading.evaluate("(h, q) => !!(h.compareDocumentPosition(q) & 4)", quiz.element_handle())
    # The theme's Bootstrap styles float legends and enlarge them: the quiz undoes that.
    legend = quiz.locator("legend").first.evaluate(
        "l => [getComputedStyle(l).float, parseFloat(getComputedStyle(l).fontSize),"
        " parseFloat(getComputedStyle(l.closest('.sc-quiz')).fontSize)]"
    )
    assert legend[0] == "none" and legend[1] == legend[2], legend
    for fieldset in quiz.locator(".sc-q").all():
        labels = fieldset.locator("label")
        labels.nth(1).click()
        text = " ".join(fieldset.locator(".sc-feedback").inner_text().split())
        assert re.match(r"(✗ B is not right|✓ B is right)\. \w", text), text
        if fieldset.locator("input[type=checkbox]").count():
            labels.nth(1).click()  # untick B
        labels.nth(0).click()
        text = " ".join(fieldset.locator(".sc-feedback").inner_text().split())
        assert re.match(r"(✗ A is not right|✓ A is right)\. \w", text), text
        assert "B is" not in text
    scroll = page.evaluate(
        "[document.documentElement.scrollWidth, document.documentElement.clientWidth]"
    )
    assert scroll[0] <= scroll[1], scroll
    violations = _axe(page, ".sc-quiz")
    assert not violations, "\n".join(violations)
    page.close()
