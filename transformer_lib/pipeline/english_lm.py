"""A small causal language model of English: the decoder-only model, loss on every token.

Chapter 12's translator (``data/decoder_only.pt``) is trained with the loss on the German
side only, so it never learned to write English. :func:`english_lm_config` gives a tiny
:class:`~transformer_lib.components.decoder_only.DecoderOnlyTransformer` that
``scripts/english_lm_train.py`` trains the way GPT is trained, on one language: each
sequence is ``<bos> sentence <eos>`` (the English sentences of the training split, once
each, :func:`~transformer_lib.pipeline.masked_lm.masked_lm_batch` builds the batch), and
every prediction after ``<bos>`` counts, ``<eos>`` included. It writes
``data/english_lm.pt``.

:func:`sentence_nll` sums the model's negative log-likelihood over such sequences (the
perplexity per token is ``exp(nll / tokens)``); :func:`write_sentences` samples sentences
from ``<bos>`` or from a prompt with :func:`~transformer_lib.pipeline.generation.generate`,
one seed per sentence, so that each sample can be reproduced alone.

Shapes: B batch, T length, V vocabulary size.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import torch
import torch.nn.functional as F

from ..components.config import TransformerConfig
from ..components.decoder_only import DecoderOnlyTransformer, build_model
from .generation import decode_for_display, generate
from .masked_lm import masked_lm_batch
from .tokenizer import BOS_ID, PAD_ID, SEP_ID

__all__ = [
    "NEVER_WRITTEN",
    "english_lm_config",
    "load_english_lm",
    "sentence_nll",
    "shipped_english_lm_path",
    "write_sentences",
]

#: Ids the sampler never writes: padding, ``<bos>`` and ``<sep>`` (as in chapter 12).
NEVER_WRITTEN = (PAD_ID, BOS_ID, SEP_ID)


def english_lm_config(
    vocab_size: int, max_len: int, d_model: int = 96, n_heads: int = 4, n_layers: int = 3
) -> TransformerConfig:
    """The tiny decoder-only config of the shipped English model (post-LN, sinusoids,
    tied output layer, ``d_ff = 4 d_model``)."""
    return TransformerConfig(
        vocab_size=vocab_size,
        d_model=d_model,
        n_heads=n_heads,
        d_ff=4 * d_model,
        n_encoder_layers=0,
        n_decoder_layers=n_layers,
        dropout=0.1,
        max_len=max_len,
    )


@torch.no_grad()
def sentence_nll(
    model: DecoderOnlyTransformer, sentences: Sequence[Sequence[int]], batch_size: int = 256
) -> tuple[float, int]:
    """Summed negative log-likelihood (nats) of ``<bos> sentence <eos>`` sequences.

    Args:
        model: a causal model (no prefix).
        sentences: token ids without special tokens.

    Returns:
        ``(nll, tokens)``: every predicted token counts, the sentence's and ``<eos>``
        (not ``<bos>``, which is given); the perplexity per token is ``exp(nll / tokens)``.
    """
    was_training = model.training
    model.eval()
    pad = model.config.pad_id
    total, n = 0.0, 0
    for start in range(0, len(sentences), batch_size):
        ids = masked_lm_batch(sentences[start : start + batch_size], pad)  # (B, T)
        logits = model(ids[:, :-1])  # (B, T-1, V)
        target = ids[:, 1:]  # (B, T-1)
        total += F.cross_entropy(
            logits.flatten(0, 1), target.flatten(), ignore_index=pad, reduction="sum"
        ).item()
        n += int((target != pad).sum())
    model.train(was_training)
    return total, n


def write_sentences(
    model: DecoderOnlyTransformer,
    tokenizer,
    seeds: Sequence[int],
    prompt: str = "",
    temperature: float = 0.7,
    top_p: float | None = 0.9,
) -> list[str]:
    """One sampled sentence per seed, from ``<bos>`` (and ``prompt``) to ``<eos>``.

    The text returned includes the prompt. Sampling as in chapter 12: ``temperature`` 0.7,
    nucleus ``top_p`` 0.9, never ``<pad>``, ``<bos>`` or ``<sep>``; a sentence ends at
    ``<eos>`` or when the context (``config.max_len``) is full.
    """
    start = [tokenizer.bos_id, *tokenizer.encode(prompt)]
    out = []
    for seed in seeds:
        ids = generate(
            model,
            start,
            max_new_tokens=model.config.max_len,
            temperature=temperature,
            top_p=top_p,
            seed=int(seed),
            eos_id=tokenizer.eos_id,
            never=NEVER_WRITTEN,
        )
        out.append(decode_for_display(tokenizer, ids.tolist()))
    return out


def shipped_english_lm_path() -> Path:
    """``english_lm.pt`` in the shipped data (chapter 12's English language model)."""
    from .corpus import shipped_data_dir

    return shipped_data_dir() / "english_lm.pt"


def load_english_lm(
    path: str | os.PathLike | None = None,
) -> tuple[DecoderOnlyTransformer, dict]:
    """The model of a ``scripts/english_lm_train.py`` checkpoint (default: the shipped one),
    in eval mode, and the checkpoint dict (``config``, ``tokenizer_sha256``, ``state``)."""
    path = Path(path) if path is not None else shipped_english_lm_path()
    ckpt = torch.load(path, map_location="cpu", weights_only=True)
    model = build_model(ckpt["config"])
    model.load_state_dict(ckpt["model"])
    return model.eval(), ckpt
