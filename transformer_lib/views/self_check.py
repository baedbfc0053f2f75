"""Self-check questions at the end of a chapter, answered and checked in the page itself.

A chapter ends with a section headed ``## Self-check`` (a Markdown cell with that heading,
after the chapter's summary; only a bibliography may follow it) and one code cell whose
last line is a call of :func:`self_check` with 3 to 6 multiple-choice questions about the
chapter's key ideas::

    from transformer_lib.views.self_check import Choice, Question, self_check

    self_check([
        Question(
            "Why are the attention scores divided by $\\sqrt{d_k}$?",
            choices=[
                Choice("To keep their variance near 1 whatever $d_k$ is", correct=True,
                       why="A dot product of $d_k$ unit-variance terms has variance $d_k$."),
                Choice("To make each row of weights sum to one",
                       why="The softmax does that, with or without the scale."),
            ],
        ),
        Question("Which masks does the decoder's self-attention use?", multiple=True,
                 choices=[...]),
        ...
    ])

What the reader gets. Each question is a group of radio buttons (check boxes with
``multiple=True``: "choose every right answer"). Choosing an answer shows at once whether
it is right and why, from the choice's ``why``; every choice, right or wrong, has its own
explanation. Nothing needs a kernel, so it works the same in the built HTML book, in Colab,
in JupyterLab and in the classic Notebook:

* the output is one self-contained ``text/html`` block (inline ``<style>`` and a small
  inline script, nothing fetched) that Jupyter Book renders into the page;
* the feedback is shown by CSS alone (``:checked``), so it also works where scripts are
  stripped; the script, where it runs, puts the explanation into each question's polite
  live region (``role="status"``) as new text, the way screen readers announce reliably;
* verdicts are words ("B is right.", "B is not right."), not colours; the choices are
  native inputs in a ``<fieldset>`` whose ``<legend>`` is the question, so they work by
  keyboard (Tab to a question, arrow keys or Space to answer) with a visible focus ring;
* colours come from the page (text inherits, backgrounds are translucent), so the block
  reads in a light and a dark theme, and it reflows down to a 390-pixel phone screen;
* the output is the same for the same questions (its ids are a hash of the questions),
  so the book's execution cache stays valid and several quizzes on one page stay
  independent; give ``key`` to tell apart two quizzes with identical questions;
* the ``text/plain`` form lists the questions and choices without the answers.

Text. Question, choice and explanation texts are plain text with two kinds of markup:
```` `code` ```` for inline code and ``$...$`` for simple inline math, in the TeX that the
chapters' Markdown uses (letters, digits, ``_`` and ``^``, ``\\frac``, ``\\sqrt``,
``\\text``, ``\\mathrm``, ``\\mathbf``, Greek letters, common operators and relations).
Math is converted to MathML here, in Python, because MathJax does not typeset HTML
outputs everywhere (Colab's output frames have no MathJax); browsers draw MathML
natively and screen readers read it. An unsupported command raises ``ValueError`` that
names it. Write ``\\$`` for a literal dollar sign and ``\\``` for a literal backtick.

The right answer should not always sit in the same place: the choices are shown in the
order given, not shuffled (a shuffle would change the page at every build).
"""

from __future__ import annotations

import hashlib
import html
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass

from .mathml import tex_to_mathml

__all__ = ["Choice", "Question", "SelfCheck", "self_check"]

#: How many questions one self-check has (the book's convention) and choices per question.
MIN_QUESTIONS, MAX_QUESTIONS = 3, 6
MIN_CHOICES, MAX_CHOICES = 2, 6
_LETTERS = "ABCDEF"


def _excerpt(text: str, width: int = 50) -> str:
    text = " ".join(str(text).split())
    return repr(text if len(text) <= width else text[: width - 1] + "…")


@dataclass(frozen=True)
class Choice:
    """One answer a reader can choose.

    Args:
        text: what the reader chooses (inline markup: `` `code` ``, ``$math$``).
        correct: whether choosing it is right.
        why: the explanation shown when the reader chooses it, for a wrong answer as for a
            right one: what makes it right, or what is wrong with it.

    Example:
        >>> Choice("The softmax", correct=True, why="It turns each row into weights.").correct
        True
    """

    text: str
    correct: bool = False
    why: str = ""

    def __post_init__(self):
        if not isinstance(self.text, str) or not self.text.strip():
            raise ValueError(f"a Choice has an empty text ({self.text!r}): write the answer")
        if not isinstance(self.correct, bool):
            raise TypeError(
                f"Choice {_excerpt(self.text)}: correct must be True or False, not {self.correct!r}"
            )
        if not isinstance(self.why, str) or not self.why.strip():
            raise ValueError(
                f"Choice {_excerpt(self.text)} has no why: give the explanation the reader "
                "sees on choosing it (why=...)"
            )
        _inline_html(self.text)  # markup errors surface where the text is written
        _inline_html(self.why)


@dataclass(frozen=True)
class Question:
    """A multiple-choice question: one right answer, or several with ``multiple=True``.

    Args:
        text: the question (inline markup: `` `code` ``, ``$math$``).
        choices: 2 to 6 :class:`Choice` objects, shown in this order.
        multiple: ``False`` (default): exactly one choice is correct and the reader picks
            one (radio buttons). ``True``: one or more are correct and the reader picks
            every right one (check boxes); the question says how many there are.

    Raises:
        ValueError: empty text, too few or too many choices, two choices with the same
            text, no correct choice, or several in a single-answer question.

    Example:
        >>> q = Question("2 + 2?", choices=[Choice("4", correct=True, why="Yes."),
        ...                                 Choice("5", why="One too many.")])
        >>> len(q.choices)
        2
    """

    text: str
    choices: Sequence[Choice]
    multiple: bool = False

    def __post_init__(self):
        if not isinstance(self.text, str) or not self.text.strip():
            raise ValueError(f"a Question has an empty text ({self.text!r}): write the question")
        name = f"Question {_excerpt(self.text)}"
        if isinstance(self.choices, (str, Choice)) or not isinstance(self.choices, Sequence):
            raise TypeError(f"{name}: choices must be a list of Choice(...) objects")
        object.__setattr__(self, "choices", tuple(self.choices))
        for choice in self.choices:
            if not isinstance(choice, Choice):
                raise TypeError(
                    f"{name}: every choice must be a Choice(...), got {type(choice).__name__} "
                    f"{_excerpt(choice)}"
                )
        n = len(self.choices)
        if not MIN_CHOICES <= n <= MAX_CHOICES:
            raise ValueError(
                f"{name} has {n} choice{'s' if n != 1 else ''}: give {MIN_CHOICES} to {MAX_CHOICES}"
            )
        texts = [" ".join(c.text.split()) for c in self.choices]
        repeated = sorted({t for t in texts if texts.count(t) > 1})
        if repeated:
            raise ValueError(f"{name} offers the same choice twice: {_excerpt(repeated[0])}")
        right = [_LETTERS[i] for i, c in enumerate(self.choices) if c.correct]
        if not right:
            raise ValueError(
                f"{name} has no correct choice: mark the right one with Choice(..., correct=True)"
            )
        if not self.multiple and len(right) > 1:
            raise ValueError(
                f"{name} has {len(right)} correct choices ({', '.join(right)}) but is a "
                "single-answer question: keep one correct=True, or pass multiple=True to ask "
                "for every right answer"
            )
        _inline_html(self.text)


@dataclass(frozen=True)
class SelfCheck:
    """A chapter's self-check, as displayed: ``text/html`` for pages, ``text/plain`` else.

    Made by :func:`self_check`; the HTML is :meth:`_repr_html_`, the plain text ``repr``.
    """

    questions: tuple[Question, ...]
    key: str = ""

    @property
    def uid(self) -> str:
        """The id prefix of this quiz's elements: a hash of its questions and ``key``."""
        canon = [
            self.key,
            [
                [q.text, q.multiple, [[c.text, c.correct, c.why] for c in q.choices]]
                for q in self.questions
            ],
        ]
        digest = hashlib.sha256(json.dumps(canon, ensure_ascii=False).encode("utf-8"))
        return "sc-" + digest.hexdigest()[:10]

    def __repr__(self) -> str:
        n = len(self.questions)
        lines = [
            f"Self-check: {n} questions. Choose an answer in the rendered page to see "
            "whether it is right, and why.",
        ]
        for i, q in enumerate(self.questions, 1):
            lines.append("")
            lines.append(
                f"{i}. {' '.join(q.text.split())}" + (f" {_hint(q)}" if q.multiple else "")
            )
            for letter, c in zip(_LETTERS, q.choices):
                lines.append(f"   {letter}. {' '.join(c.text.split())}")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        uid = self.uid
        parts = [f'<div class="sc-quiz" id="{uid}">', f"<style>{_CSS}</style>"]
        parts.append(
            '<p class="sc-intro">Choose an answer to see whether it is right, and why.</p>'
        )
        for i, q in enumerate(self.questions, 1):
            parts.append(_question_html(q, f"{uid}-q{i}", i))
        parts.append(f"<script>{_SCRIPT.replace('__UID__', uid)}</script>")
        parts.append("</div>")
        return "\n".join(parts)


def self_check(questions: Sequence[Question], *, key: str = "") -> SelfCheck:
    """A chapter's self-check: 3 to 6 questions answered and checked in the page.

    Make it the last line of the cell under the chapter's ``## Self-check`` heading, so
    that Jupyter (and Jupyter Book, Colab) display it; ``IPython.display.display`` works
    too. See the module docstring for what the reader sees and the markup of the texts.

    Args:
        questions: 3 to 6 :class:`Question` objects, shown in this order.
        key: only needed when one page shows two quizzes with the same questions: a
            different ``key`` gives each its own ids.

    Returns:
        A :class:`SelfCheck`: HTML in a page, the questions without answers as plain text.

    Raises:
        ValueError: fewer than 3 or more than 6 questions, or the same question twice.
        TypeError: an item that is not a :class:`Question`.

    Example:
        >>> quiz = self_check([
        ...     Question(f"{n} + {n}?", choices=[Choice(str(2 * n), correct=True, why="Yes."),
        ...                                      Choice(str(2 * n + 1), why="One too many.")])
        ...     for n in (1, 2, 3)
        ... ])
        >>> print(repr(quiz).splitlines()[2])
        1. 1 + 1?
    """
    if isinstance(questions, (str, Question)) or not isinstance(questions, Sequence):
        raise TypeError("self_check takes a list of Question(...) objects")
    questions = tuple(questions)
    for q in questions:
        if not isinstance(q, Question):
            raise TypeError(
                f"self_check takes Question(...) objects, got {type(q).__name__} {_excerpt(q)}"
            )
    n = len(questions)
    if not MIN_QUESTIONS <= n <= MAX_QUESTIONS:
        raise ValueError(
            f"self_check got {n} question{'s' if n != 1 else ''}: a chapter's self-check has "
            f"{MIN_QUESTIONS} to {MAX_QUESTIONS} (split a longer list, or keep the key ideas)"
        )
    texts = [" ".join(q.text.split()) for q in questions]
    repeated = sorted({t for t in texts if texts.count(t) > 1})
    if repeated:
        raise ValueError(f"self_check asks the same question twice: {_excerpt(repeated[0])}")
    if not isinstance(key, str):
        raise TypeError(f"key must be a string, not {type(key).__name__}")
    return SelfCheck(questions, key)


# --- HTML ---------------------------------------------------------------------------------


def _hint(q: Question) -> str:
    n = sum(c.correct for c in q.choices)
    return f"(Choose every right answer: there {'is' if n == 1 else 'are'} {n}.)"


def _question_html(q: Question, qid: str, number: int) -> str:
    kind = "checkbox" if q.multiple else "radio"
    hint = f' <span class="sc-hint">{_hint(q)}</span>' if q.multiple else ""
    rows = [
        f'<fieldset class="sc-q" id="{qid}">',
        f"<legend>{number}. {_inline_html(q.text)}{hint}</legend>",
        '<div class="sc-choices">',
    ]
    whys = []
    for j, (letter, c) in enumerate(zip(_LETTERS, q.choices), 1):
        cid = f"{qid}-c{j}"
        rows.append(
            f'<input class="sc-input" type="{kind}" id="{cid}" name="{qid}" value="{letter}">'
            f'<label for="{cid}"><span class="sc-letter">{letter}.</span> '
            f"{_inline_html(c.text)}</label>"
        )
        verdict, mark, cls = (
            ("is right.", "\u2713", "sc-right")
            if c.correct
            else ("is not right.", "\u2717", "sc-wrong")
        )
        whys.append(
            f'<p class="sc-why {cls}"><strong><span aria-hidden="true">{mark} </span>'
            f"{letter} {verdict}</strong> {_inline_html(c.why)}</p>"
        )
    rows.append(
        '<div class="sc-feedback" role="status" aria-live="polite" aria-atomic="false">'
        f'<div class="sc-whys">{"".join(whys)}</div><div class="sc-said"></div></div>'
    )
    rows += ["</div>", "</fieldset>"]
    return "\n".join(rows)


# Without the script, the chosen explanation is revealed by CSS: the k-th input of a
# question, when checked, shows the k-th explanation (inputs and the feedback box are
# siblings). The script sets data-sc-js on the quiz and copies explanations into .sc-said.
_REVEAL = ",".join(
    f".sc-quiz:not([data-sc-js]) .sc-choices>input:nth-of-type({k}):checked~.sc-feedback"
    f" .sc-whys>.sc-why:nth-of-type({k})"
    for k in range(1, MAX_CHOICES + 1)
)

_CSS = (
    ".sc-quiz{margin:1em 0;line-height:1.5;max-width:100%}"
    ".sc-quiz .sc-intro{margin:0 0 .75em}"
    ".sc-quiz fieldset.sc-q{border:1px solid rgba(128,128,128,.6);border-radius:6px;"
    "margin:0 0 1em;padding:.4em .9em .8em;min-width:0}"
    ".sc-quiz legend{float:none;width:auto;max-width:100%;font-size:1em;font-weight:600;"
    "line-height:1.45;padding:0 .3em;margin:0 0 .3em;color:inherit;white-space:normal}"
    ".sc-quiz .sc-hint{font-weight:400;font-style:italic}"
    ".sc-quiz .sc-choices{display:grid;grid-template-columns:auto minmax(0,1fr);"
    "column-gap:.6em;row-gap:.4em;align-items:baseline}"
    ".sc-quiz input.sc-input{margin:0;width:1.1em;height:1.1em;cursor:pointer}"
    ".sc-quiz input.sc-input:focus-visible{outline:3px solid #1f6feb;outline-offset:2px}"
    ".sc-quiz input.sc-input:focus-visible+label{text-decoration:underline;"
    "text-underline-offset:.2em}"
    ".sc-quiz label{cursor:pointer;overflow-wrap:anywhere;margin:0;display:block}"
    ".sc-quiz input.sc-input:checked+label{font-weight:600}"
    ".sc-quiz .sc-letter{font-weight:600}"
    ".sc-quiz .sc-feedback{grid-column:1/-1}"
    ".sc-quiz .sc-why{display:none;margin:.45em 0 0;padding:.4em .8em;border-left:5px solid;"
    "border-radius:3px;background:rgba(128,128,128,.13);overflow-wrap:anywhere}"
    ".sc-quiz .sc-why.sc-right{border-left-color:#1a7f37}"
    ".sc-quiz .sc-why.sc-wrong{border-left-color:#cf222e}"
    # Inline code keeps the quiz's own text colour: themes colour it for their own
    # background, and the book's dark theme puts HTML outputs on a light one.
    ".sc-quiz code{color:inherit;background:rgba(128,128,128,.16);overflow-wrap:anywhere}"
    f"{_REVEAL},.sc-quiz[data-sc-js] .sc-said>.sc-why{{display:block}}"
)

# Adds the explanation of each newly chosen answer to the question's live region (and
# removes those no longer chosen), so a screen reader announces exactly the new one.
# The script finds its quiz as its parent (the book, JupyterLab, which re-creates an
# output's scripts in place) or else by id (the classic Notebook evaluates them from a
# copy in <head>); a second display of the same quiz takes the one not yet set up.
_SCRIPT = """(function () {
  var me = document.currentScript, parent = me && me.parentNode;
  var quiz = parent && parent.classList && parent.classList.contains("sc-quiz") ? parent
    : document.querySelector('[id="__UID__"]:not([data-sc-js])');
  if (!quiz || quiz.hasAttribute("data-sc-js")) return;
  function sync(question) {
    var inputs = question.querySelectorAll("input.sc-input");
    var whys = question.querySelectorAll(".sc-whys > .sc-why");
    var said = question.querySelector(".sc-said");
    for (var i = 0; i < inputs.length; i++) {
      var shown = said.querySelector('[data-sc-choice="' + i + '"]');
      if (inputs[i].checked && !shown) {
        var copy = whys[i].cloneNode(true);
        copy.setAttribute("data-sc-choice", String(i));
        var next = null;
        for (var j = i + 1; j < inputs.length && !next; j++) {
          next = said.querySelector('[data-sc-choice="' + j + '"]');
        }
        said.insertBefore(copy, next);
      } else if (!inputs[i].checked && shown) {
        said.removeChild(shown);
      }
    }
  }
  quiz.setAttribute("data-sc-js", "");
  var questions = quiz.querySelectorAll(".sc-q");
  for (var k = 0; k < questions.length; k++) sync(questions[k]);
  quiz.addEventListener("change", function (event) {
    var question = event.target.closest && event.target.closest(".sc-q");
    if (question) sync(question);
  });
})();"""


# --- Inline markup: `code` and $math$ -----------------------------------------------------


_STRONG = re.compile(r"\*\*(?=\S)(.+?)(?<=\S)\*\*")
_EM = re.compile(r"(?<![\w*])\*(?=[^\s*])(.+?)(?<=[^\s*])\*(?![\w*])")
_LITERAL_STAR = "\x00"


def _plain_html(text: str) -> str:
    """Escaped text with Markdown's ``**strong**`` and ``*emphasis*``."""
    escaped = html.escape(text)
    escaped = _STRONG.sub(r"<strong>\1</strong>", escaped)
    escaped = _EM.sub(r"<em>\1</em>", escaped)
    return escaped.replace(_LITERAL_STAR, "*")


def _inline_html(text: str) -> str:
    """HTML for a text with `` `code` `` spans, ``$math$`` (TeX subset -> MathML) and
    ``*emphasis*`` (``\\*`` for a literal asterisk)."""
    out: list[str] = []
    plain: list[str] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch == "\\" and i + 1 < n and text[i + 1] == "*":
            plain.append(_LITERAL_STAR)
            i += 2
        elif ch == "\\" and i + 1 < n and text[i + 1] in "$`":
            plain.append(text[i + 1])
            i += 2
        elif ch in "`$":
            end = text.find(ch, i + 1)
            if end < 0:
                what = "backtick (`)" if ch == "`" else "dollar sign ($)"
                raise ValueError(
                    f"unclosed {what} in {_excerpt(text, 70)}: close the "
                    f"{'code span' if ch == '`' else 'math'}, or write \\{ch} for a literal {ch}"
                )
            body = text[i + 1 : end]
            if not body.strip():
                raise ValueError(
                    f"empty {'code span' if ch == '`' else 'math'} in {_excerpt(text, 70)}"
                )
            out.append(_plain_html("".join(plain)))
            plain = []
            out.append(f"<code>{html.escape(body)}</code>" if ch == "`" else tex_to_mathml(body))
            i = end + 1
        else:
            plain.append(ch)
            i += 1
    out.append(_plain_html("".join(plain)))
    return "".join(out)
