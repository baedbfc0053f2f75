"""Helpers used by the chapter notebooks."""

import inspect
import textwrap

import pytest
import torch

from transformer_lib import MultiHeadAttention
from transformer_lib.views.notebook import markdown_table, setup_notebook, show_source


def test_show_source_renders_library_code_and_cuts_excerpts():
    full = show_source(MultiHeadAttention).data
    assert full.startswith("class MultiHeadAttention")
    part = show_source(MultiHeadAttention.forward, start="q, k, v =", stop="p = self.dropout")
    assert part.data.startswith("q, k, v = self._project")  # dedented excerpt
    assert "p = self.dropout" not in part.data
    with pytest.raises(ValueError, match="does not occur"):
        show_source(MultiHeadAttention, start="no such line")


def test_show_source_html_fits_the_page_without_changing_the_code():
    import re

    from IPython.display import Code

    listing = show_source(MultiHeadAttention.forward)
    assert isinstance(listing, Code) and repr(listing) == listing.data  # plain text: the source
    html = listing._repr_html_()
    lines = listing.data.splitlines()
    assert max(len(line) for line in lines) > 80  # long enough to need fitting
    assert "white-space:pre-wrap" in html  # long lines wrap instead of scrolling
    rows = re.findall(r'<span style="display:block;padding-left:(\d+)ch;text-indent:-\1ch">', html)
    assert len(rows) == len(lines)
    indents = [len(line) - len(line.lstrip(" ")) + 4 for line in lines]
    assert [int(r) for r in rows] == indents  # a wrapped line hangs under its own indent
    size = float(re.search(r"font-size:([\d.]+)px", html).group(1))
    assert 13 * 0.86 <= size < 13  # drawn a little smaller than 13 px, never below 86 %
    short = show_source(MultiHeadAttention.forward, start="q, k, v =", stop="if mask")
    short = short._repr_html_()
    assert "font-size:13.0px" in short  # short listings keep the normal size


def test_setup_notebook_seeds_and_sets_threads():
    before = torch.get_num_threads()
    try:
        device = setup_notebook(seed=3)
        assert device in ("cpu", "cuda") and torch.get_num_threads() == 1
        a = torch.rand(3)
        setup_notebook(seed=3)
        assert torch.equal(a, torch.rand(3))
    finally:
        torch.set_num_threads(before)


def test_markdown_table_escapes_subwords_but_not_code():
    md = markdown_table(["token", "id"], [["<unk>", "`1`"], ["▁Tom_x", 5]]).data
    assert "\\<unk\\>" in md and "`1`" in md and "▁Tom\\_x" in md
    assert md.splitlines()[1] == "|---|---|"
    # Text after a code span is literal too: a <pad> there is not swallowed as HTML.
    mixed = markdown_table(["bug"], [["`mask_off`: attends to <pad> and `x` *once*"]]).data
    assert "`mask_off`: attends to \\<pad\\> and `x` \\*once\\*" in mixed


def _split_fold(html: str) -> tuple[str, str, str]:
    """(before the fold, the summary, inside the fold) of a folded listing's HTML."""
    import re

    match = re.fullmatch(
        r'(.*)<details class="source-fold"><summary>(.*?)</summary>(.*)</details>', html, re.S
    )
    assert match, "no single labelled fold at the end of the listing"
    return match.groups()


def test_show_source_cuts_an_excerpt_by_line_numbers():
    import inspect

    from transformer_lib.pipeline.batching import batch_indices

    lines = inspect.getsource(batch_indices).splitlines()
    part = show_source(batch_indices, lines=(2, 4))
    assert part.data.splitlines() == [line.strip() for line in lines[1:4]]  # dedented
    assert show_source(batch_indices, lines=(1, len(lines))).data == "\n".join(lines)
    with pytest.raises(
        ValueError, match=f"outside the source of batch_indices \\(lines 1 to {len(lines)}"
    ):
        show_source(batch_indices, lines=(1, len(lines) + 1))
    with pytest.raises(ValueError, match="outside"):
        show_source(batch_indices, lines=(3, 2))
    with pytest.raises(ValueError, match="either lines"):
        show_source(batch_indices, lines=(1, 2), start="def")


def test_show_source_folds_the_whole_source_under_a_label():
    import inspect

    from transformer_lib.pipeline.batching import batch_indices

    whole = inspect.getsource(batch_indices).rstrip("\n")
    n = len(whole.splitlines())
    listing = show_source(batch_indices, start="def batch_indices", stop='"""', fold_whole=True)
    assert listing.data.startswith("def batch_indices(") and '"""' not in listing.data
    assert repr(listing) == listing.data  # plain text: the excerpt only
    assert listing.whole == whole
    assert listing.label == f"Show the whole `batch_indices` source ({n} lines)"
    before, summary, inside = _split_fold(listing._repr_html_())
    assert before.count("<style>") == 1 and "source-fold" in before  # one style, inline
    assert before.count('class="source-listing highlight"') == 1  # the excerpt, visible
    assert inside.count('class="source-listing highlight"') == 1  # the whole, folded
    assert inside.count("display:block") == n and before.count("display:block") > 0
    assert summary == (
        '<span class="source-fold-show">Show the whole <code>batch_indices</code> source '
        f'({n} lines)</span><span class="source-fold-hide">Hide the whole '
        "<code>batch_indices</code> source</span>"
    )


def test_show_source_can_fold_a_whole_listing_with_its_own_label():
    listing = show_source(MultiHeadAttention, fold_whole=True)
    assert listing.data == listing.whole and listing.data.startswith("class MultiHeadAttention")
    assert listing.label.startswith("Show the `MultiHeadAttention` source (")
    before, _, inside = _split_fold(listing._repr_html_())
    assert 'class="source-listing' not in before and 'class="source-listing' in inside

    custom = show_source(
        MultiHeadAttention.forward, stop="if mask", fold_whole=True, label="How `forward` masks"
    )
    _, summary, _ = _split_fold(custom._repr_html_())
    assert summary.count("How <code>forward</code> masks") == 2  # not a Show/Hide label
    for bad, message in [
        (dict(label="x"), "pass fold_whole=True"),
        (dict(fold_whole=True, label="  "), "label is empty"),
        (dict(fold_whole=True, label="the `x source"), "unclosed backtick"),
        (dict(start="def forward", stop="def forward"), "excerpt of .* is empty"),
    ]:
        with pytest.raises(ValueError, match=message):
            show_source(MultiHeadAttention.forward, **bad)


def test_show_source_without_a_fold_is_unchanged():
    plain = show_source(MultiHeadAttention.forward)
    assert not hasattr(plain, "whole") and "<details" not in plain._repr_html_()
    assert plain._repr_html_().startswith("<style>") and plain._repr_html_().count("<style>") == 1


def test_a_listing_says_which_file_and_lines_it_shows():
    from transformer_lib.components import multihead

    source, first = inspect.getsourcelines(MultiHeadAttention.forward)
    part = show_source(MultiHeadAttention.forward, lines=(2, 4))
    assert part.where == (
        f"From `transformer_lib/components/multihead.py`, lines {first + 1}–{first + 3}"
    )
    file_lines = inspect.getsource(multihead).splitlines()
    assert file_lines[first : first + 3] == [line.rstrip("\n") for line in source[1:4]]
    html = part._repr_html_()
    assert (
        '<p class="library-source-title">From <code>transformer_lib/components/multihead.py' in html
    )
    assert html.index("library-source-title") < html.index('class="source-listing')
    folded = show_source(MultiHeadAttention, fold_whole=True)
    assert folded.where.startswith("From `transformer_lib/components/multihead.py`, lines ")
    assert "library-source-title" in folded._repr_html_()
    assert show_source(textwrap.dedent).where == ""  # not the library's: no title


def test_a_decorated_function_names_its_own_file():
    from transformer_lib.pipeline import decoding

    assert hasattr(decoding.greedy_decode, "__wrapped__"), "greedy_decode is decorated"
    _, first = inspect.getsourcelines(decoding.greedy_decode)
    assert show_source(decoding.greedy_decode, lines=(1, 2)).where == (
        f"From `transformer_lib/pipeline/decoding.py`, lines {first}–{first + 1}"
    )
    assert show_source(decoding.greedy_decode, lines=(2, 2)).where == (
        f"From `transformer_lib/pipeline/decoding.py`, line {first + 1}"
    )  # one line is "line n", not "lines n–n"
