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
