"""Token embeddings scaled by √d_model, and weight sharing (§3.4). Taught in chapter 2."""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn


def check_token_ids(ids: Tensor, vocab_size: int, name: str = "token ids") -> None:
    """Raise a clear error unless ``ids`` are integer ids in ``[0, vocab_size)``."""
    if not isinstance(ids, Tensor):
        raise TypeError(f"{name} must be a torch.Tensor of integer ids, got {type(ids).__name__}")
    if ids.dtype not in (torch.int64, torch.int32, torch.int16, torch.uint8, torch.int8):
        raise TypeError(
            f"{name} must be integer token ids (torch.long), got dtype {ids.dtype}. "
            "Encode text with the tokenizer first."
        )
    if ids.numel() and (int(ids.min()) < 0 or int(ids.max()) >= vocab_size):
        raise ValueError(
            f"{name} contain values outside the vocabulary [0, {vocab_size}) "
            f"(min {int(ids.min())}, max {int(ids.max())}). Use the tokenizer the model was "
            "trained with, or build the model with a larger vocab_size."
        )


def _tracing() -> bool:
    """True while ``torch.export`` (or, before torch 2.7, the compiler under it) traces a
    graph: the ids are symbolic then and their values cannot be checked."""
    compiler = getattr(torch, "compiler", None)
    is_exporting = getattr(compiler, "is_exporting", None)  # torch >= 2.7
    if is_exporting is not None:
        return bool(is_exporting())
    is_compiling = getattr(compiler, "is_compiling", None)
    return bool(is_compiling is not None and is_compiling())


class TokenEmbedding(nn.Module):
    """Look up a d_model vector per token id and multiply it by √d_model.

    The paper multiplies the embedding weights by √d_model (§3.4) without saying why.
    A plausible reason, measured in chapter 2: with small initial weights, the token
    vectors would otherwise be much shorter than the positional encoding added next.
    ``padding_idx`` starts the ``<pad>`` row at zero and sends it no gradient from the
    look-up; with shared weights the output layer still trains it.

    Shape:
        ``(B, L)`` long → ``(B, L, D)``.
    """

    def __init__(self, vocab_size: int, d_model: int, pad_id: int | None = 0):
        super().__init__()
        self.vocab_size, self.d_model = vocab_size, d_model
        self.embedding = nn.Embedding(vocab_size, d_model, padding_idx=pad_id)
        self.scale = math.sqrt(d_model)

    @property
    def weight(self) -> nn.Parameter:
        return self.embedding.weight

    def forward(self, ids: Tensor) -> Tensor:
        # The check reads the ids' values, which a graph being exported (ONNX, for the
        # in-browser translator) does not have; the exported graph skips it.
        if not _tracing():
            check_token_ids(ids, self.vocab_size)
        return self.embedding(ids) * self.scale  # (B, L, D)
