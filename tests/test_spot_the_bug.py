""" "Spot the bug" (views.spot_the_bug and views.debugging.mystery): the HTML a static page
needs (native radio inputs with labels, a live region, verdicts in words, figures with alt
text that stay readable on a phone), clear errors for what cannot work, and mysteries
whose verdicts come from the planted bugs and the kit's findings on the trained model."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import matplotlib
import pytest

matplotlib.use("Agg")

from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from transformer_lib.pipeline.check_kit import CHECKS, PLANTED_BUGS  # noqa: E402
from transformer_lib.views import debugging  # noqa: E402
from transformer_lib.views.explorers.frames import figure_to_png  # noqa: E402
from transformer_lib.views.self_check import Choice, Question  # noqa: E402
from transformer_lib.views.spot_the_bug import (  # noqa: E402
    PHONE_COLUMN_PX,
    Mystery,
    SpotTheBug,
    png_width,
    readable_width,
    spot_the_bug,
)


def _png(width_in: float = 3.5, fontsize: float = 11) -> bytes:
    fig = Figure(figsize=(width_in, 2.5))
    FigureCanvasAgg(fig)
    ax = fig.subplots()
    ax.plot([0, 1, 2], [3, 1, 2])
    ax.set_title("a loss curve", fontsize=fontsize)
    ax.set_xlabel("step", fontsize=fontsize)
    ax.tick_params(labelsize=fontsize)
    return figure_to_png(fig)


def _question(right: int = 1) -> Question:
    names = ["no_sqrt_dk", "causal_mask_off_by_one", "untied_weights"]
    return Question(
        "Which bug does it have?",
        choices=[
            Choice(PLANTED_BUGS[n].mistake, correct=i == right, why=f"explanation {i} about `{n}`")
            for i, n in enumerate(names)
        ],
    )


def _mystery(title: str = "Mystery model A", **kw) -> Mystery:
    figures = kw.pop("figures", [(_png(), "A line falling from 3 to 1, then 2.", "The loss")])
    return Mystery(title, question=_question(**kw), figures=figures, evidence=["BLEU `0.4`"])


class _Tree(HTMLParser):
    """The elements of a piece of HTML: (tag, attributes) in document order."""

    def __init__(self, text: str):
        super().__init__()
        self.elements: list[tuple[str, dict]] = []
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        self.elements.append((tag, dict(attrs)))


def test_the_html_has_radio_groups_labels_a_live_region_and_figures():
    block = spot_the_bug([_mystery(), _mystery("Mystery model B", right=2)])
    html = block._repr_html_()
    elements = _Tree(html).elements
    radios = [a for t, a in elements if t == "input" and a.get("type") == "radio"]
    assert len(radios) == 6 and len({a["name"] for a in radios}) == 2
    labels = {a.get("for") for t, a in elements if t == "label"}
    assert {a["id"] for a in radios} <= labels  # every input has its label
    assert sum(t == "fieldset" for t, _ in elements) == 2
    assert sum(t == "legend" for t, _ in elements) == 2
    live = [a for t, a in elements if a.get("role") == "status"]
    assert len(live) == 2 and all(a.get("aria-live") == "polite" for a in live)
    images = [a for t, a in elements if t == "img"]
    assert len(images) == 2 and all(a["src"].startswith("data:image/png;base64,") for a in images)
    assert all(len(a["alt"].split()) >= 4 for a in images)
    assert html.count("<figcaption>") == 2 and "<script>" in html
    # Verdicts are words (and a mark hidden from screen readers), not only a colour.
    assert html.count("is right.") == 2 and html.count("is not right.") == 4
    assert "<code>0.4</code>" in html  # inline markup in the evidence
    # The sections are named by their titles.
    sections = [a for t, a in elements if t == "section"]
    ids = {a.get("id") for _, a in elements}
    assert all(a["aria-labelledby"] in ids for a in sections)


def test_the_output_is_deterministic_and_ids_are_unique_per_block():
    one, two = spot_the_bug([_mystery()]), spot_the_bug([_mystery()])
    assert one._repr_html_() == two._repr_html_()
    other = spot_the_bug([_mystery()], key="again")
    assert other.uid != one.uid
    ids = re.findall(r'id="([^"]+)"', one._repr_html_())
    assert len(ids) == len(set(ids))


def test_the_plain_text_lists_the_suspects_without_the_answers():
    text = repr(spot_the_bug([_mystery()]))
    assert "Mystery model A" in text and "A. " in text and "C. " in text
    assert "explanation" not in text and "is right" not in text


def test_the_css_reveals_the_chosen_verdict_without_a_script():
    html = spot_the_bug([_mystery()])._repr_html_()
    for k in (1, 2, 3):
        assert (
            f"input:nth-of-type({k}):checked~.sc-feedback .sc-whys>.sc-why:nth-of-type({k})" in html
        )
    assert "flex-wrap:wrap" in html  # figures wrap on a narrow screen


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda: Mystery(" ", question=_question()), "needs a title"),
        (
            lambda: Mystery(
                "M",
                question=Question(
                    "Which?",
                    multiple=True,
                    choices=[Choice("a", correct=True, why="y"), Choice("b", why="n")],
                ),
            ),
            "one bug",
        ),
        (lambda: _mystery(figures=[(b"GIF89a", "A chart of the loss falling.", "c")]), "PNG"),
        (lambda: _mystery(figures=[(_png(), "chart", "c")]), "alt text"),
        (lambda: _mystery(figures=[(_png(), "A chart of the loss falling.", " ")]), "caption"),
        (lambda: _mystery(figures=[(_png(8.0, 8), "A chart of the loss.", "c")]), "readable"),
    ],
)
def test_what_cannot_work_is_refused_with_a_clear_message(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def test_the_block_itself_checks_its_list():
    with pytest.raises(ValueError, match="1 to 8"):
        spot_the_bug([])
    with pytest.raises(TypeError, match="Mystery"):
        spot_the_bug([_question()])
    with pytest.raises(ValueError, match="called 'Mystery model A'"):
        spot_the_bug([_mystery(), _mystery()])
    assert isinstance(spot_the_bug([_mystery()]), SpotTheBug)


def test_a_png_without_a_text_record_is_refused():
    import io

    from PIL import Image

    out = io.BytesIO()
    Image.new("RGB", (20, 20)).save(out, format="PNG")
    with pytest.raises(ValueError, match="records no text size"):
        _mystery(figures=[(out.getvalue(), "A plain black square image.", "c")])


def test_readable_width_scales_with_the_smallest_text():
    small, large = _png(3.5, 8), _png(3.5, 14)
    assert png_width(small) == png_width(large)
    assert readable_width(small) > readable_width(large)


# ---- mysteries from the stored runs -----------------------------------------------------------
@pytest.fixture(scope="module")
def runs():
    return debugging.load_runs()["runs"]


def test_a_mystery_from_the_runs_says_which_check_tells(runs):
    suspects = ["unshifted_target", "causal_mask_off_by_one", "no_sqrt_dk"]
    m = debugging.mystery(runs, "causal_mask_off_by_one", suspects, title="Mystery", kind="decoder")
    check = PLANTED_BUGS["causal_mask_off_by_one"].caught_by[0][0]
    right = [c for c in m.question.choices if c.correct]
    assert [c.text for c in right] == [PLANTED_BUGS["causal_mask_off_by_one"].mistake]
    for choice in m.question.choices:
        assert f"`{check}`" in choice.why  # every verdict names the check that tells
        assert choice.why.startswith("Yes") == choice.correct
    failed = runs["causal_mask_off_by_one"]["kit"]["failed"]
    wrong = dict(zip(suspects, m.question.choices))["no_sqrt_dk"]
    own = PLANTED_BUGS["no_sqrt_dk"].caught_by[0][0]
    assert ("passes" in wrong.why) == (own not in failed)
    assert CHECKS[check].title in right[0].why
    assert len(m.figures) == 3
    for png, alt, caption in m.figures:
        assert readable_width(png) <= PHONE_COLUMN_PX and alt and caption
    block = spot_the_bug([m])._repr_html_()
    assert "causal_mask_off_by_one" not in block.split("<fieldset")[0]  # not named before


def test_a_mystery_needs_its_answer_among_the_suspects(runs):
    with pytest.raises(ValueError, match="among the suspects"):
        debugging.mystery(runs, "no_sqrt_dk", ["untied_weights"], title="M")
