"""The chapters' self-check quizzes: the HTML they render, their plain text, their errors,
and how Jupyter shows them (a notebook executed in a real kernel).

The same HTML is opened in headless Chromium by ``tests/browser/test_self_check.py``.
"""

from __future__ import annotations

import ast
import json
import re
import sys
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path

import pytest

from transformer_lib.views.self_check import (
    MAX_CHOICES,
    Choice,
    Question,
    self_check,
    tex_to_mathml,
)

sys.path.insert(0, str(Path(__file__).resolve().parent))
from book_pages import ROOT, toc_pages  # noqa: E402


def _questions(right=(0, 1, 0)):
    """Three questions: a radio one with math and code, a multi-answer one, a third."""
    return [
        Question(
            "Why are the scores divided by $\\sqrt{d_k}$?",
            choices=[
                Choice(
                    "To keep their variance near 1 whatever $d_k$ is",
                    correct=right[0] == 0,
                    why="A sum of $d_k$ unit-variance products has variance $d_k$.",
                ),
                Choice(
                    "To make each row of weights sum to one",
                    correct=right[0] == 1,
                    why="The `softmax` does that, with or without the scale.",
                ),
            ],
        ),
        Question(
            "Which positions does the decoder's self-attention mask block?",
            multiple=True,
            choices=[
                Choice("Later positions", correct=True, why="The causal mask blocks them."),
                Choice("Padding", correct=True, why="The padding mask blocks them."),
                Choice("The query's own position", why="A token may attend to itself."),
            ],
        ),
        Question(
            "What does `nn.MultiheadAttention` give for a row with every key blocked?",
            choices=[
                Choice("Zeros", correct=right[2] == 0, why="SDPA gives zeros there."),
                Choice("NaN", correct=right[2] == 1, why="The softmax of all $-\\infty$ is 0/0."),
                Choice("An error", correct=right[2] == 2, why="It raises nothing."),
            ],
        ),
    ]


class _Tree(HTMLParser):
    """Every element of an HTML fragment with its attributes, parent chain and text."""

    VOID = {"input", "br", "img", "meta", "link", "hr", "mspace"}

    def __init__(self, html: str):
        super().__init__(convert_charrefs=True)
        self.elements: list[dict] = []
        self.stack: list[dict] = []
        self.feed(html)
        self.close()
        assert not self.stack, f"unclosed elements: {[e['tag'] for e in self.stack]}"

    def handle_starttag(self, tag, attrs):
        element = {"tag": tag, "attrs": dict(attrs), "parents": list(self.stack), "text": ""}
        self.elements.append(element)
        if tag not in self.VOID:
            self.stack.append(element)

    def handle_endtag(self, tag):
        assert self.stack and self.stack[-1]["tag"] == tag, f"</{tag}> closes the wrong element"
        self.stack.pop()

    def handle_data(self, data):
        for element in self.stack:
            element["text"] += data

    def find(self, tag=None, cls=None, inside=None):
        found = []
        for e in self.elements:
            if tag and e["tag"] != tag:
                continue
            if cls and cls not in e["attrs"].get("class", "").split():
                continue
            if inside is not None and inside not in e["parents"]:
                continue
            found.append(e)
        return found


def test_html_structure_one_fieldset_per_question_with_native_inputs_and_a_live_region():
    quiz = self_check(_questions())
    tree = _Tree(quiz._repr_html_())
    (root,) = tree.find(cls="sc-quiz")
    assert root["attrs"]["id"] == quiz.uid and re.fullmatch(r"sc-[0-9a-f]{10}", quiz.uid)
    fieldsets = tree.find("fieldset")
    assert len(fieldsets) == 3
    ids = [e["attrs"]["id"] for e in tree.elements if "id" in e["attrs"]]
    assert len(ids) == len(set(ids)), "ids repeat within one quiz"
    names = set()
    for q, fieldset in zip(_questions(), fieldsets):
        (legend,) = tree.find("legend", inside=fieldset)
        assert legend["parents"][-1] is fieldset  # the question names its group
        inputs = tree.find("input", inside=fieldset)
        assert [i["attrs"]["type"] for i in inputs] == [
            "checkbox" if q.multiple else "radio"
        ] * len(q.choices)
        (name,) = {i["attrs"]["name"] for i in inputs}  # one group per question
        names.add(name)
        labels = tree.find("label", inside=fieldset)
        assert [lab["attrs"]["for"] for lab in labels] == [i["attrs"]["id"] for i in inputs]
        assert [lab["text"].split(".")[0] for lab in labels] == list("ABCDEF"[: len(q.choices)])
        (live,) = tree.find(cls="sc-feedback", inside=fieldset)
        assert live["attrs"]["role"] == "status" and live["attrs"]["aria-live"] == "polite"
        whys = tree.find(cls="sc-why", inside=live)
        assert len(whys) == len(q.choices)
        for letter, choice, why in zip("ABCDEF", q.choices, whys):
            # The verdict is a word, not only a colour; the mark beside it is not read out.
            verdict = f"{letter} is right." if choice.correct else f"{letter} is not right."
            assert verdict in why["text"]
            assert ("sc-right" if choice.correct else "sc-wrong") in why["attrs"]["class"]
        if q.multiple:
            assert "there are 2" in legend["text"]
    assert len(names) == 3
    # Math is MathML (drawn without MathJax), code is <code>.
    assert tree.find("math", inside=tree.find("legend")[0])
    assert tree.find("msqrt")
    assert any("softmax" in c["text"] for c in tree.find("code"))


def test_html_is_self_contained_and_deterministic():
    html = self_check(_questions())._repr_html_()
    assert html == self_check(_questions())._repr_html_()  # same questions, same bytes
    assert html.count("<style>") == 1 and html.count("<script>") == 1
    script = html[html.index("<script>") :]
    assert f'[id="{self_check(_questions()).uid}"]' in script  # finds its quiz by id too
    for external in ("src=", "href=", "@import", "url(", "http:", "https:", "//cdn"):
        assert external not in html, f"{external} in the self-check HTML"
    # Every input's choice gets a reveal rule: the CSS covers the largest allowed question.
    assert html.count(":checked~.sc-feedback") == MAX_CHOICES


def test_quizzes_on_one_page_have_disjoint_ids():
    a = self_check(_questions())
    b = self_check(_questions(right=(1, 1, 2)))  # same texts, other answers
    c = self_check(_questions(), key="second")  # identical questions, told apart by key
    pages = [_Tree(q._repr_html_()) for q in (a, b, c)]
    id_sets = [{e["attrs"]["id"] for e in t.elements if "id" in e["attrs"]} for t in pages]
    name_sets = [{e["attrs"]["name"] for e in t.find("input")} for t in pages]
    for i in range(3):
        for j in range(i + 1, 3):
            assert not id_sets[i] & id_sets[j]
            assert not name_sets[i] & name_sets[j]


def test_plain_text_lists_questions_and_choices_but_not_the_answers():
    quiz = self_check(_questions())
    text = repr(quiz)
    assert text.startswith("Self-check: 3 questions.")
    for q in _questions():
        assert " ".join(q.text.split()) in text
        for c in q.choices:
            assert c.text in text
            assert c.why not in text
    assert not re.search(r"\b[A-F] is (not )?right", text) and "correct" not in text.lower()
    # Which choice is right changes the HTML, not the plain text.
    other = self_check(_questions(right=(1, 1, 2)))
    assert repr(other) == text and other._repr_html_() != quiz._repr_html_()


def test_ipython_shows_html_and_plain_text():
    from IPython.core.interactiveshell import InteractiveShell

    quiz = self_check(_questions())
    data, _ = InteractiveShell.instance().display_formatter.format(quiz)
    assert data["text/html"] == quiz._repr_html_()
    assert data["text/plain"] == repr(quiz)


def test_markup_escapes_html_and_keeps_code_literal():
    q = Question(
        "Is <b>this</b> bold, and what is `x<y` or \\$5?",
        choices=[
            Choice("No & never", correct=True, why="Text is escaped."),
            Choice("Yes", why="No."),
        ],
    )
    html = self_check([q, *_questions()[1:], _questions()[0]])._repr_html_()
    assert "<b>this</b>" not in html and "&lt;b&gt;this&lt;/b&gt;" in html
    assert "<code>x&lt;y</code>" in html and "$5" in html and "No &amp; never" in html


def test_markdown_emphasis_is_rendered_and_a_literal_star_kept():
    q = Question(
        "Is a *cat* on the **mat**, is 2 * 3 = 6, and what is `a*b*`, or \\*this\\*?",
        choices=[
            Choice("Yes", correct=True, why="Half *cat*, half *mat*."),
            Choice("No", why="No."),
        ],
    )
    html = self_check([q, *_questions()[1:], _questions()[0]])._repr_html_()
    assert "a <em>cat</em> on the <strong>mat</strong>" in html
    assert "2 * 3 = 6" in html and "<code>a*b*</code>" in html
    assert "or *this*?" in html and "Half <em>cat</em>, half <em>mat</em>." in html
    assert "*cat*" not in html


@pytest.mark.parametrize(
    "tex, tag",
    [
        ("\\sqrt{d_k}", "msqrt"),
        ("\\frac{QK^\\top}{\\sqrt{d_k}}", "mfrac"),
        ("x_i^2", "msubsup"),
        ("\\mathrm{softmax}(x)", "mi"),
        ("\\text{two words}", "mtext"),
        ("PE_{(pos, 2i)} = \\sin(pos / 10000^{2i/d})", "msub"),
        ("\\mathbf{x} \\in \\mathbb{R}^{512}", "msup"),
        ("\\left( a + b \\right)", "mo"),
    ],
)
def test_tex_to_mathml_gives_wellformed_mathml(tex, tag):
    mathml = tex_to_mathml(tex)
    root = ET.fromstring(mathml)  # well-formed: every element closed, text escaped
    assert root.tag == "math" and root.find(f".//{tag}") is not None
    assert "\\" not in mathml  # no TeX left for MathJax to find


def test_tex_to_mathml_renders_what_it_is_given():
    assert "<mtext>two words</mtext>" in tex_to_mathml("\\text{two words}")
    frac = ET.fromstring(tex_to_mathml("\\frac{a}{b}")).find(".//mfrac")
    assert [e.text for e in frac.iter("mi")] == ["a", "b"]
    assert "\u2212" in tex_to_mathml("-x") and "\u221e" in tex_to_mathml("\\infty")
    assert "\u03b1" in tex_to_mathml("\\alpha") and "\u2264" in tex_to_mathml("a \\le b")


@pytest.mark.parametrize(
    "tex, message",
    [
        ("\\foo", "\\\\foo is not supported"),
        ("x_1_2", "two subscripts"),
        ("x^1^2", "two superscripts"),
        ("{x", "not closed"),
        ("x}", "no matching"),
        ("\\frac{a}", "argument is missing"),
        ("\\text x", "in braces"),
        ("\\sqrt[3]{x}", "not supported"),
        ("a & b", "not supported"),
    ],
)
def test_tex_to_mathml_rejects_what_it_cannot_draw(tex, message):
    with pytest.raises(ValueError, match=message):
        tex_to_mathml(tex)


def _two(correct=(True, False)):
    return [Choice("yes", correct=correct[0], why="a"), Choice("no", correct=correct[1], why="b")]


@pytest.mark.parametrize(
    "make, error, message",
    [
        (lambda: Question("Q?", choices=_two((False, False))), ValueError, "no correct choice"),
        (
            lambda: Question("Q?", choices=_two((True, True))),
            ValueError,
            "2 correct choices \\(A, B\\) but is a single-answer question.*multiple=True",
        ),
        (lambda: Question("   ", choices=_two()), ValueError, "empty text"),
        (lambda: Question("Q?", choices=_two()[:1]), ValueError, "1 choice: give 2 to 6"),
        (
            lambda: Question("Q?", choices=[Choice(f"c{i}", i == 0, "w") for i in range(7)]),
            ValueError,
            "7 choices: give 2 to 6",
        ),
        (
            lambda: Question("Q?", choices=[Choice("a", True, "w"), Choice(" a ", False, "w")]),
            ValueError,
            "same choice twice",
        ),
        (lambda: Question("Q?", choices=["yes", "no"]), TypeError, "must be a Choice"),
        (lambda: Question("Q?", choices=Choice("a", True, "w")), TypeError, "a list of Choice"),
        (lambda: Choice("", correct=True, why="w"), ValueError, "empty text"),
        (lambda: Choice("a", correct=True), ValueError, "has no why"),
        (lambda: Choice("a", correct="yes", why="w"), TypeError, "True or False"),
        (lambda: Choice("costs $5", why="w"), ValueError, "unclosed dollar sign"),
        (lambda: Choice("a `b", why="w"), ValueError, "unclosed backtick"),
        (lambda: Choice("a", why="see $\\foo$"), ValueError, "\\\\foo is not supported"),
        (lambda: self_check(_questions()[:2]), ValueError, "got 2 questions: .* 3 to 6"),
        (lambda: self_check(_questions() * 3), ValueError, "got 9 questions"),
        (lambda: self_check(_questions()[:1] * 3), ValueError, "same question twice"),
        (lambda: self_check(["Q?"] * 3), TypeError, "takes Question"),
        (lambda: self_check(_questions()[0]), TypeError, "a list of Question"),
    ],
)
def test_bad_input_gets_a_clear_error(make, error, message):
    with pytest.raises(error, match=message):
        make()


def test_multiple_answer_questions_accept_several_right_choices():
    q = Question("Which?", choices=_two((True, True)), multiple=True)
    assert sum(c.correct for c in q.choices) == 2
    with pytest.raises(ValueError, match="no correct choice"):
        Question("Which?", choices=_two((False, False)), multiple=True)


# --- In a kernel, as Jupyter, Colab and the book's build run it ----------------------------

_QUIZ_CELL = """\
from transformer_lib.views.self_check import Choice, Question, self_check

q = [
    Question(f"What is {n} + {n}?", choices=[
        Choice(f"{2 * n}", correct=True, why="Add them."),
        Choice(f"{2 * n + 1}", why="One too many."),
    ])
    for n in (1, 2, 3)
]
self_check(q)
"""


def test_a_notebook_kernel_outputs_the_same_html(tmp_path):
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell(_QUIZ_CELL),
        nbformat.v4.new_code_cell("from IPython.display import display\ndisplay(self_check(q))"),
    ]
    NotebookClient(
        nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    ).execute()
    result, shown = (cell.outputs for cell in nb.cells)
    assert [o.output_type for o in result] == ["execute_result"]  # the cell's value
    assert [o.output_type for o in shown] == ["display_data"]  # display() works too

    namespace: dict = {}
    exec(_QUIZ_CELL.rsplit("\n", 2)[0], namespace)
    expected = self_check(namespace["q"])
    for output in (result[0], shown[0]):
        assert output.data["text/html"] == expected._repr_html_()
        assert output.data["text/plain"] == repr(expected)
    # What a notebook stores is plain JSON (Colab and Jupyter read it back as saved).
    assert json.loads(nbformat.writes(nb))["cells"][0]["outputs"][0]["data"]["text/html"]


# --- The convention in the chapters --------------------------------------------------------

# Chapters written before the self-check existed. Remove a chapter from this set when it
# gains its self-check (the test then fails as XPASS until it is removed).
CHAPTERS_WITHOUT_SELF_CHECK_YET: set[str] = set()  # every chapter has one now
_END_MATTER = {"Bibliography", "References"}


def _chapters():
    return [p for p in toc_pages(ROOT) if p.startswith("chapters/")]


@pytest.mark.parametrize(
    "chapter",
    [
        pytest.param(
            c,
            marks=pytest.mark.xfail(
                c in CHAPTERS_WITHOUT_SELF_CHECK_YET, reason="no self-check yet", strict=True
            ),
        )
        for c in _chapters()
    ],
)
def test_chapter_ends_with_a_self_check(chapter):
    """``## Self-check``, then one cell that calls ``self_check``; only end matter after."""
    nb = json.loads((ROOT / f"{chapter}.ipynb").read_text(encoding="utf-8"))
    headings = []  # (cell index, level-2 heading)
    for i, cell in enumerate(nb["cells"]):
        if cell["cell_type"] == "markdown":
            for line in "".join(cell["source"]).splitlines():
                if line.startswith("## "):
                    headings.append((i, line[3:].strip()))
    at = [i for i, h in headings if h == "Self-check"]
    assert len(at) == 1, f"{chapter}: {len(at)} '## Self-check' headings, expected 1"
    after = [h for i, h in headings if i > at[0]]
    assert set(after) <= _END_MATTER, f"{chapter}: sections after the self-check: {after}"
    code = [
        "".join(c["source"])
        for c in nb["cells"][at[0] + 1 :]
        if c["cell_type"] == "code" and "self_check(" in "".join(c["source"])
    ]
    assert len(code) == 1, f"{chapter}: {len(code)} self_check cells after the heading"


def _text_length(node) -> int:
    """Characters of a choice's text as written: a string, or an f-string whose
    replacement fields count 4 characters each (their value needs the chapter's cells)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return len(node.value)
    assert isinstance(node, ast.JoinedStr), f"choice text is not a string: {ast.dump(node)}"
    return sum(len(v.value) if isinstance(v, ast.Constant) else 4 for v in node.values)


def _self_check_questions(chapter: str) -> list[tuple[str, list[tuple[int, bool]]]]:
    """The chapter's self-check questions, read from the notebook's source without running
    it: each question's text and, per choice, the length of its text and whether it is right."""
    nb = json.loads((ROOT / f"{chapter}.ipynb").read_text(encoding="utf-8"))
    (source,) = [
        "".join(c["source"])
        for c in nb["cells"]
        if c["cell_type"] == "code" and "self_check(" in "".join(c["source"])
    ]
    calls = [
        n
        for n in ast.walk(ast.parse(source))
        if isinstance(n, ast.Call) and getattr(n.func, "id", None) == "Question"
    ]
    questions = []
    for call in sorted(calls, key=lambda n: (n.lineno, n.col_offset)):
        (choices,) = [k.value for k in call.keywords if k.arg == "choices"]
        rows = []
        for choice in choices.elts:
            correct = [k.value for k in choice.keywords if k.arg == "correct"]
            rows.append(
                (_text_length(choice.args[0]), bool(correct and ast.literal_eval(correct[0])))
            )
        text = call.args[0]
        questions.append(
            (text.value if isinstance(text, ast.Constant) else ast.unparse(text), rows)
        )
    return questions


@pytest.mark.parametrize("chapter", _chapters())
def test_the_right_answer_is_not_usually_the_longest(chapter):
    """A reader must not be able to guess by length: across a chapter's self-check the
    right answer (any right one, in a multi-answer question) is the longest choice, or ties
    with it, in at most half of the questions."""
    questions = _self_check_questions(chapter)
    longest = [
        f"{i}: {text[:60]!r}"
        for i, (text, rows) in enumerate(questions)
        if any(correct and n == max(m for m, _ in rows) for n, correct in rows)
    ]
    assert len(longest) <= len(questions) / 2, (
        f"{chapter}: the right answer is the longest choice in {len(longest)} of "
        f"{len(questions)} questions: " + "; ".join(longest)
    )
