"""Scaled dot-product attention, Eq. (1) of the paper (§3.2.1). Taught in chapter 3.

    Attention(Q, K, V) = softmax(Q Kᵀ / √d_k) V

Masks are boolean and mean **True = may attend**, like ``tokens != pad`` and
``torch.nn.functional.scaled_dot_product_attention``.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor


def check_mask(mask: Tensor, shape: tuple[int, ...]) -> None:
    """Raise a clear error unless ``mask`` is boolean and broadcasts to ``shape`` (B, H, Tq, Tk)."""
    if not isinstance(mask, Tensor):
        raise TypeError(f"mask must be a torch.Tensor of dtype bool, got {type(mask).__name__}")
    if mask.dtype != torch.bool:
        raise TypeError(
            f"mask must have dtype torch.bool (True = may attend), got {mask.dtype}. "
            "Build it with transformer_lib.padding_mask / causal_mask, or convert an additive "
            "float mask with `mask == 0`."
        )
    target = tuple(shape)
    if mask.dim() > len(target) or any(
        m not in (1, t) for m, t in zip(mask.shape[::-1], target[::-1])
    ):
        raise ValueError(
            f"mask of shape {tuple(mask.shape)} does not broadcast to (B, H, Tq, Tk) = {target}. "
            "Use (B, 1, 1, Tk) for padding, (1, 1, Tq, Tk) for a causal mask, or (B, 1, Tq, Tk)."
        )


def scaled_dot_product_attention(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    mask: Tensor | None = None,
    dropout_p: float = 0.0,
) -> tuple[Tensor, Tensor]:
    """The readable path of Eq. (1): returns the output *and* the attention weights.

    Args:
        query: ``(B, H, Tq, Dk)`` — or any ``(..., Tq, Dk)``.
        key: ``(B, H, Tk, Dk)``.
        value: ``(B, H, Tk, Dv)``.
        mask: optional bool tensor broadcastable to ``(B, H, Tq, Tk)``; True = may attend.
        dropout_p: dropout on the attention weights (pass 0.0 in eval mode).

    Returns:
        ``(output (B, H, Tq, Dv), weights (B, H, Tq, Tk))``. A query row whose keys are all
        masked gets zero weights and a zero output (never NaN).

    Example:
        >>> q = k = v = torch.randn(2, 4, 5, 16)
        >>> out, w = scaled_dot_product_attention(q, k, v)
        >>> out.shape, w.shape
        (torch.Size([2, 4, 5, 16]), torch.Size([2, 4, 5, 5]))
    """
    if query.size(-1) != key.size(-1):
        raise ValueError(
            f"query and key must have the same last dimension d_k, got {query.size(-1)} "
            f"and {key.size(-1)}"
        )
    if key.size(-2) != value.size(-2):
        raise ValueError(
            f"key and value must have the same length Tk, got {key.size(-2)} and {value.size(-2)}"
        )
    d_k = query.size(-1)
    scores = query @ key.transpose(-2, -1) / math.sqrt(d_k)  # (B, H, Tq, Tk)
    if mask is not None:
        check_mask(mask, tuple(scores.shape))
        # The most negative finite value, not -inf: a fully masked row stays finite.
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    weights = scores.softmax(dim=-1)  # (B, H, Tq, Tk), each row sums to 1
    if mask is not None:
        # A row with no key to attend to would be uniform over padding: make it zero instead.
        weights = weights.masked_fill(~mask.any(dim=-1, keepdim=True), 0.0)
    # Dropout acts on the weights used for the output; the returned weights stay a distribution.
    dropped = F.dropout(weights, p=dropout_p) if dropout_p > 0.0 else weights
    return dropped @ value, weights  # (B, H, Tq, Dv), (B, H, Tq, Tk)
