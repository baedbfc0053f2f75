"""Helpers used by the chapter notebooks."""

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
