"""Attention masks (§3.2.3). Taught in chapter 6.

Every mask here is boolean with **True = may attend** and broadcasts to
``(B, H, Tq, Tk)``: rows are queries, columns are keys.
"""

from __future__ import annotations

import torch
from torch import Tensor


def padding_mask(tokens: Tensor, pad_id: int = 0) -> Tensor:
    """``(B, L)`` token ids → ``(B, 1, 1, L)``: True where the key is a real token."""
    if tokens.dim() != 2:
        raise ValueError(f"tokens must have shape (B, L), got {tuple(tokens.shape)}")
    return (tokens != pad_id)[:, None, None, :]  # (B, 1, 1, L)


def causal_mask(tq: int, tk: int | None = None, device: torch.device | str | None = None) -> Tensor:
    """``(1, 1, Tq, Tk)``: query i may attend to key j only if j ≤ i.

    With ``tk > tq`` the queries are the *last* ``tq`` positions of ``tk`` (incremental
    decoding with a cache of ``tk - tq`` earlier steps).
    """
    tk = tq if tk is None else tk
    if tk < tq:
        raise ValueError(f"causal_mask needs tk >= tq, got tq={tq}, tk={tk}")
    full = torch.ones(tq, tk, dtype=torch.bool, device=device)
    return full.tril(diagonal=tk - tq)[None, None]  # (1, 1, Tq, Tk)


def combine_masks(*masks: Tensor | None) -> Tensor | None:
    """Logical AND of masks that broadcast together (None entries are skipped)."""
    result = None
    for m in masks:
        if m is not None:
            result = m if result is None else result & m
    return result


def decoder_mask(tgt: Tensor, pad_id: int = 0) -> Tensor:
    """Decoder self-attention mask ``(B, 1, T, T)``: causal AND not padding."""
    return combine_masks(padding_mask(tgt, pad_id), causal_mask(tgt.size(1), device=tgt.device))
