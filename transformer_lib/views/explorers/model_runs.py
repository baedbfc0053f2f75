"""One sentence through the trained model: its translation and every attention map.

Shared by :func:`~transformer_lib.views.explorers.attention.attention_explorer` and
:func:`~transformer_lib.views.explorers.ablation.head_ablation_explorer` (chapter 11):
:func:`_translate` explains input the model cannot take with an
:class:`~transformer_lib.views.explorers.frames.InputProblem`, and :func:`_heads_off`
switches heads off for the length of a ``with`` block.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .frames import InputProblem

__all__ = ["EXAMPLE_SENTENCES", "MAX_TOKENS"]


#: English sentences of the kind the shipped model was trained on (short, everyday).
EXAMPLE_SENTENCES = (
    "The cat is sleeping on the sofa.",
    "I don't know where my keys are.",
    "We will go to the beach tomorrow if it doesn't rain.",
    "She gave her brother a book for his birthday.",
    "Tom has lived in Berlin for three years.",
)

#: Longest source (in tokens) the attention explorers take: longer maps are unreadable, and
#: the model was trained on sentences of at most a few dozen tokens.
MAX_TOKENS = 40

_KINDS = ("encoder", "decoder", "cross")
_KIND_TITLES = {
    "encoder": "encoder self-attention",
    "decoder": "decoder self-attention (masked)",
    "cross": "encoder–decoder (cross) attention",
}
_KIND_SHORT = {"encoder": "encoder self", "decoder": "decoder self", "cross": "cross"}


@functools.lru_cache(maxsize=1)
def _shipped_translator():
    from ...pipeline.pretrained import load_pretrained

    return load_pretrained()


def _as_translator(translator):
    """A :class:`~transformer_lib.pipeline.pretrained.Translator`: the shipped one by default."""
    from ...pipeline.pretrained import Translator

    if translator is None:
        return _shipped_translator()
    if isinstance(translator, tuple) and len(translator) == 2:  # (model, tokenizer)
        return Translator(*translator)
    if not all(hasattr(translator, a) for a in ("model", "tokenizer", "translate")):
        raise TypeError(
            "translator must be a transformer_lib.Translator (see load_pretrained) "
            f"or a (model, tokenizer) pair, got {type(translator).__name__}"
        )
    return translator


@dataclass
class _Run:
    """One sentence through the model: its translation and every attention map."""

    source: str
    src_tokens: list[str]
    tgt_tokens: list[str]  # decoder input: <bos> + the translation's tokens
    translation: str
    attention: dict[str, list[np.ndarray]]  # kind -> per layer (H, Tq, Tk)
    notes: list[str] = field(default_factory=list)
    written_tokens: list[str] = field(default_factory=list)  # what row i wrote: <eos> last

    def maps(self, kind: str, layer: int) -> tuple[np.ndarray, list[str], list[str]]:
        """``(weights (H, Tq, Tk), query tokens, key tokens)`` of one layer."""
        q = self.src_tokens if kind == "encoder" else self.tgt_tokens
        k = self.tgt_tokens if kind == "decoder" else self.src_tokens
        return self.attention[kind][layer], q, k


def _translate(translator, text: Any) -> _Run:
    """Greedy translation of ``text`` with the attention maps of the teacher-forced pass.

    :meth:`Translator.translate` with ``return_attention=True`` runs
    ``model(src, <bos> + translation, return_attention=True)``. Input it cannot take is
    explained with an :class:`InputProblem`; a sentence longer than :data:`MAX_TOKENS` is
    cut, with a note.
    """
    if not isinstance(text, str) or not text.strip():
        raise InputProblem("Type an English sentence into the box (it is empty).")
    text = " ".join(text.split())
    tok, model = translator.tokenizer, translator.model
    enc = tok.backend.encode(text, add_special_tokens=False)
    ids, offsets = list(enc.ids), list(enc.offsets)
    if not ids:
        raise InputProblem("The sentence has no tokens the model can read.")
    if all(i == tok.unk_id or not piece.strip("\u2581") for i, piece in zip(ids, enc.tokens)):
        raise InputProblem(
            "None of these characters occurred in the training data (English and German "
            "text), so the model would see only <unk>. Try an English sentence."
        )
    notes = []
    limit = min(MAX_TOKENS, model.config.max_len)
    if len(ids) > limit:
        notes.append(
            f"The sentence has {len(ids)} tokens; only the first {limit} are translated (the "
            f"model was trained on short sentences, and longer maps are unreadable)."
        )
        text = text[: offsets[limit - 1][1]]
        ids, offsets = ids[:limit], offsets[:limit]
    unknown = [text[a:b] for i, (a, b) in zip(ids, offsets) if i == tok.unk_id]
    if unknown:
        notes.append(
            "Never seen in training, so the model reads it as <unk>: "
            + " ".join(dict.fromkeys(unknown))
        )
    result = translator.translate(text, return_attention=True)  # greedy
    if not result.target_tokens or result.target_tokens[-1] != "<eos>":
        notes.append(
            f"The model stopped after {len(result.target_tokens)} tokens without ending the "
            "sentence."
        )
    elif len(result.target_tokens) == 1:
        notes.append("The model's translation is empty (it ended the sentence at once).")
    attention = {
        kind: [np.asarray(a.detach().float().cpu()) for a in result.attention[kind]]
        for kind in _KINDS
    }  # kind -> N x (H, Tq, Tk)
    return _Run(
        source=text,
        src_tokens=list(result.source_tokens),
        tgt_tokens=list(result.decoder_input_tokens),
        translation=result.text,
        attention=attention,
        notes=notes,
        written_tokens=list(result.target_tokens),
    )


@contextlib.contextmanager
def _heads_off(model, off: Sequence[tuple[str, int, int]]) -> Iterator[None]:
    """Switch the listed ``(kind, layer, head)`` off; restore every gate afterwards."""
    import torch

    saved = {kind: [m.head_gate for m in model.attention_modules(kind)] for kind in _KINDS}
    try:
        gates: dict[tuple[str, int], torch.Tensor] = {}
        for kind, layer, head in off:
            gate = gates.setdefault((kind, layer), torch.ones(model.config.n_heads))
            gate[head] = 0.0
        for (kind, layer), gate in gates.items():
            model.set_head_gate(kind, layer, gate)
        yield
    finally:
        for kind, old in saved.items():
            for layer, gate in enumerate(old):
                model.set_head_gate(kind, layer, gate)
