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


def prefix_lm_mask(
    prefix_len: Tensor, tq: int, tk: int | None = None, device: torch.device | str | None = None
) -> Tensor:
    """Prefix-LM mask ``(B, 1, Tq, Tk)``: a bidirectional prefix, causal after it.

    Key j is visible to query i if ``j ≤ i`` (causal) or ``j < prefix_len[b]``: the first
    ``prefix_len[b]`` positions of row b (e.g. ``English <sep>``) attend to each other both
    ways and never to anything after the prefix; later positions are causal and see the
    whole prefix. ``prefix_len = 0`` (or 1) gives the plain causal mask.

    As in :func:`causal_mask`, ``tk > tq`` means the queries are the last ``tq`` of ``tk``
    positions (incremental decoding); ``prefix_len`` counts absolute positions.

    Args:
        prefix_len: ``(B,)`` integer tensor of prefix lengths.
        tq: number of query positions.
        tk: number of key positions (default ``tq``).
    """
    if not isinstance(prefix_len, Tensor) or prefix_len.dim() != 1:
        raise ValueError(
            "prefix_len must be a (B,) integer tensor with one prefix length per row, got "
            f"{tuple(prefix_len.shape) if isinstance(prefix_len, Tensor) else prefix_len!r}"
        )
    if prefix_len.is_floating_point() or prefix_len.dtype == torch.bool:
        raise TypeError(f"prefix_len must hold integers, got dtype {prefix_len.dtype}")
    if prefix_len.numel() and int(prefix_len.min()) < 0:
        raise ValueError(f"prefix_len must be >= 0, got {prefix_len.tolist()}")
    device = prefix_len.device if device is None else device
    causal = causal_mask(tq, tk, device=device)  # (1, 1, Tq, Tk)
    keys = torch.arange(causal.size(-1), device=device)  # (Tk,)
    in_prefix = keys[None, :] < prefix_len.to(device)[:, None]  # (B, Tk)
    return causal | in_prefix[:, None, None, :]  # (B, 1, Tq, Tk)
