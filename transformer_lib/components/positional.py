"""Positional encodings (§3.5). Taught in chapter 5; rotary positions in chapter 14.

    PE(pos, 2i)   = sin(pos / 10000^(2i / d_model))
    PE(pos, 2i+1) = cos(pos / 10000^(2i / d_model))

Each sin/cos pair turns at its own frequency 1 / 10000^(2i/d_model): from one turn per
2π positions (i = 0) to one turn per 2π·10000^((d_model−2)/d_model) positions for the last
pair (about 54,400 for d_model = 128); 2π·10000 is only the limit as d_model grows.

Rotary position embeddings (RoPE, Su et al. 2021) add nothing to the embeddings: inside
self-attention they rotate each pair of dimensions (2i, 2i+1) of a query or key at
position m by the angle m·ω_i, ω_i = 10000^(−2i/d_k), so that q_m·k_n depends on the
positions only through m − n.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

#: The choices of ``TransformerConfig.positional``: added tables, or rotations inside attention.
POSITIONALS = ("sinusoidal", "learned", "rope")


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


class NoPositionalEncoding(nn.Module):
    """Add nothing (``positional="rope"``: positions enter inside self-attention, see
    :class:`RotaryPositionalEncoding`); only check the length against ``max_len``."""

    def __init__(self, max_len: int, d_model: int):
        super().__init__()
        self.max_len = max_len

    def forward(self, x: Tensor, offset: int = 0) -> Tensor:
        _check_length(x.size(1), offset, self.max_len)
        return x


def positional_encoding(kind: str, max_len: int, d_model: int) -> nn.Module:
    """The module a model applies to its embeddings for ``TransformerConfig.positional``."""
    classes = {
        "sinusoidal": SinusoidalPositionalEncoding,
        "learned": LearnedPositionalEncoding,
        "rope": NoPositionalEncoding,
    }
    if kind not in classes:
        raise ValueError(f"positional={kind!r} must be one of {POSITIONALS}")
    return classes[kind](max_len, d_model)


def rotate_pairs(x: Tensor, cos: Tensor, sin: Tensor) -> Tensor:
    """Rotate each pair ``(x[..., 2i], x[..., 2i+1])`` by the angle whose cosine and sine
    are ``cos[..., i]`` and ``sin[..., i]`` (broadcast against ``x[..., 0::2]``)."""
    even, odd = x[..., 0::2], x[..., 1::2]  # (..., L, Dk/2) each
    # stack the rotated pairs back side by side: (..., L, Dk/2, 2) → (..., L, Dk)
    return torch.stack((even * cos - odd * sin, even * sin + odd * cos), dim=-1).flatten(-2)


class RotaryPositionalEncoding(nn.Module):
    """Rotary position embedding (RoPE) of queries or keys, one table per head width.

    Args:
        max_len: the longest sequence (positions ``0 .. max_len − 1``).
        d_head: the width d_k of one head; must be even (the rotations act on pairs).
        base: 10000, as in the paper's sinusoids (ω_i = base^(−2i/d_k)).

    Shape:
        ``(B, H, L, Dk)`` → ``(B, H, L, Dk)``; position ``offset + j`` for row ``j`` (with a
        KV cache, the new steps start at the number of cached ones).

    Example:
        >>> rope = RotaryPositionalEncoding(max_len=16, d_head=8)
        >>> q = torch.randn(1, 2, 5, 8)
        >>> rope(q).shape
        torch.Size([1, 2, 5, 8])
    """

    def __init__(self, max_len: int, d_head: int, base: float = 10000.0):
        super().__init__()
        if d_head % 2:
            raise ValueError(
                f"rotary positions need an even head width, got d_head={d_head}: choose "
                "d_model and n_heads so that d_model / n_heads is even"
            )
        self.max_len = max_len
        position = torch.arange(max_len, dtype=torch.float64).unsqueeze(1)  # (L, 1)
        omega = base ** (-torch.arange(0, d_head, 2, dtype=torch.float64) / d_head)  # (Dk/2,)
        angle = position * omega  # (L, Dk/2): m · ω_i
        # Buffers rebuilt from the formula (not in the state_dict), like the sinusoidal table.
        self.register_buffer("cos", angle.cos().float(), persistent=False)
        self.register_buffer("sin", angle.sin().float(), persistent=False)

    def forward(self, x: Tensor, offset: int = 0) -> Tensor:
        L = x.size(-2)
        _check_length(L, offset, self.max_len)
        cos = self.cos[offset : offset + L].to(x.dtype)  # (L, Dk/2)
        sin = self.sin[offset : offset + L].to(x.dtype)
        return rotate_pairs(x, cos, sin)
