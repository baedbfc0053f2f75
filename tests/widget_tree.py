"""Helpers shared by the explorer tests: walk a widget tree, and a translator to test with."""

from __future__ import annotations

import torch


def find_widgets(w, cls) -> list:
    """Every widget of class ``cls`` under ``w`` (``w`` included), depth first."""
    found = [w] if isinstance(w, cls) else []
    for child in getattr(w, "children", ()):
        found += find_widgets(child, cls)
    return found


def shipped_or_random_translator():
    """The shipped translator; before it exists, a tiny random model with the shipped tokenizer."""
    from transformer_lib.pipeline.checkpoints import MissingCheckpointError
    from transformer_lib.pipeline.pretrained import Translator, load_pretrained

    try:
        return load_pretrained()
    except MissingCheckpointError:
        from transformer_lib import Transformer, TransformerConfig
        from transformer_lib.pipeline.tokenizer import Tokenizer

        tok = Tokenizer.load()
        torch.manual_seed(0)
        return Translator(Transformer(TransformerConfig.tiny(tok.vocab_size)), tok)
