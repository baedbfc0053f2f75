"""Positional encodings (§3.5). Taught in chapter 5.

    PE(pos, 2i)   = sin(pos / 10000^(2i / d_model))
    PE(pos, 2i+1) = cos(pos / 10000^(2i / d_model))

Each sin/cos pair turns at its own frequency 1 / 10000^(2i/d_model): from one turn per
2π positions (i = 0) to one turn per 2π·10000^((d_model−2)/d_model) positions for the last
pair (about 54,400 for d_model = 128); 2π·10000 is only the limit as d_model grows.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn


def sinusoidal_positional_encoding(
    max_len: int, d_model: int, dtype: torch.dtype = torch.float32
) -> Tensor:
    """The paper's table of position vectors, ``(max_len, d_model)``.

    Example:
        >>> pe = sinusoidal_positional_encoding(50, 16)
        >>> pe.shape
        torch.Size([50, 16])
    """
    if max_len <= 0 or d_model <= 0:
        raise ValueError(f"max_len and d_model must be positive, got {max_len} and {d_model}")
    position = torch.arange(max_len, dtype=torch.float64).unsqueeze(1)  # (L, 1)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)  # (ceil(D/2),) the "2i" of the formula
    frequency = 1.0 / (10000.0 ** (two_i / d_model))  # one frequency per sin/cos pair
    angle = position * frequency  # (L, ceil(D/2))
    pe = torch.zeros(max_len, d_model, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(angle)
    pe[:, 1::2] = torch.cos(angle[:, : d_model // 2])  # odd d_model: one sin column more
    return pe.to(dtype)


def _check_length(length: int, offset: int, max_len: int) -> None:
    if offset + length > max_len:
        raise ValueError(
            f"sequence of length {offset + length} is longer than the positional table "
            f"(max_len={max_len}). Shorten or split the input, or build the model with a "
            f"larger TransformerConfig.max_len."
        )


class SinusoidalPositionalEncoding(nn.Module):
    """Add the fixed sinusoidal table to a batch of embeddings.

    Shape:
        ``(B, L, D)`` → ``(B, L, D)``; ``offset`` shifts positions (incremental decoding).
    """

    def __init__(self, max_len: int, d_model: int):
        super().__init__()
        self.max_len = max_len
        # A buffer, not a parameter: it moves with .to(device) and is never trained; being
        # non-persistent, it stays out of the state_dict and is rebuilt from the formula.
        self.register_buffer(
            "pe", sinusoidal_positional_encoding(max_len, d_model), persistent=False
        )

    def forward(self, x: Tensor, offset: int = 0) -> Tensor:
        _check_length(x.size(1), offset, self.max_len)
        return x + self.pe[offset : offset + x.size(1)]  # (B, L, D) + (L, D)


class LearnedPositionalEncoding(nn.Module):
    """A trained vector per position (the paper's alternative, Table 3 row E)."""

    def __init__(self, max_len: int, d_model: int):
        super().__init__()
        self.max_len = max_len
        self.embedding = nn.Embedding(max_len, d_model)
        nn.init.normal_(self.embedding.weight, std=0.02)

    @property
    def pe(self) -> Tensor:
        return self.embedding.weight

    def forward(self, x: Tensor, offset: int = 0) -> Tensor:
        _check_length(x.size(1), offset, self.max_len)
        return x + self.embedding.weight[offset : offset + x.size(1)]  # (B, L, D) + (L, D)
