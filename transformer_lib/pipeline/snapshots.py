"""Attention over training: small records of what the model does at points during a run.

The trainer calls :func:`attention_snapshot` every ``snapshot_every`` steps (and once
before the first step). Each record holds, for a few example sentences, the greedy
translation at that moment and the cross-attention of every decoder layer and head, so
that chapter 11 can show a translation and its alignment forming as training goes on.

Records are plain JSON (probabilities rounded to 3 decimals), a few kB per sentence.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import torch

from .decoding import encode_sources, greedy_decode

__all__ = [
    "SNAPSHOT_SENTENCES",
    "attention_snapshot",
    "read_snapshots",
]

#: The book's example sentences (chapter 11 and the attention explorers start with them).
SNAPSHOT_SENTENCES = (
    "The cat is sleeping on the sofa.",
    "The children are playing in the garden.",
    "I don't know where my keys are.",
)


@torch.no_grad()
def attention_snapshot(model, tokenizer, sentences, step: int) -> dict[str, Any]:
    """Translate ``sentences`` greedily and record the cross-attention of every head.

    The model is put in eval mode for the snapshot and restored afterwards; nothing
    random is drawn, so taking snapshots does not change the training run.

    Returns:
        ``{"step": step, "sentences": [{"source", "translation", "source_tokens",
        "target_tokens", "cross": [layer][head][T][S]}, ...]}`` where the T rows are the
        decoder's queries (the tokens fed in: ``<bos>`` and the translation so far) and
        the S columns the source tokens.
    """
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    pad = model.config.pad_id
    records = []
    for text, ids in zip(sentences, encode_sources(model, tokenizer, list(sentences))):
        src = torch.tensor([ids], dtype=torch.long, device=device)  # (1, S)
        hyp = [i for i in greedy_decode(model, src)[0].tolist() if i != pad]  # <bos> … <eos>
        tgt = torch.tensor([hyp[:-1] if len(hyp) > 1 else hyp], device=device)  # (1, T)
        _, attn = model(src, tgt, return_attention=True)
        records.append(
            {
                "source": text,
                "translation": tokenizer.decode(hyp),
                "source_tokens": [tokenizer.id_to_token(i) for i in ids],
                "target_tokens": [tokenizer.id_to_token(i) for i in tgt[0].tolist()],
                "cross": [
                    [[[round(float(p), 3) for p in row] for row in head] for head in layer[0]]
                    for layer in attn["cross"]
                ],  # (layers, H, T, S)
            }
        )
    model.train(was_training)
    return {"step": int(step), "sentences": records}


def read_snapshots(path: str | os.PathLike) -> list[dict[str, Any]]:
    """Read ``attention_snapshots.json`` written by the trainer (a list of records)."""
    return json.loads(Path(path).read_text(encoding="utf-8"))
