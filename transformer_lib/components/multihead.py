"""Multi-head attention (§3.2.2). Taught in chapter 4.

    MultiHead(Q, K, V) = Concat(head_1, ..., head_h) W^O,
    head_i = Attention(Q W_i^Q, K W_i^K, V W_i^V)

The h projections W_i^Q (each d_model × d_k) are stored side by side as one
d_model × d_model matrix, and likewise for K and V; the three are stacked into one
``in_proj`` Linear so that self-attention needs a single matrix multiply (the same
layout as ``torch.nn.MultiheadAttention.in_proj_weight``).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .attention import check_mask, scaled_dot_product_attention
from .positional import RotaryPositionalEncoding


class MultiHeadAttention(nn.Module):
    """h attention heads in parallel, concatenated and mixed by W^O.

    Args:
        d_model: width of the input and output vectors.
        n_heads: number of heads h; each works in d_k = d_model / h dimensions.
        dropout: dropout on the attention weights (training only).
        fast: use ``F.scaled_dot_product_attention`` when weights are not requested
            (the readable :func:`scaled_dot_product_attention` is used otherwise).
        rotary: rotary positions (RoPE) for self-attention: rotate every head's queries and
            keys by their positions before the scores (values are not rotated). ``None``
            (default): positions are whatever the input vectors carry.

    Shape:
        query ``(B, Tq, D)``, key/value ``(B, Tk, D)``, mask broadcastable to
        ``(B, H, Tq, Tk)`` (bool, True = may attend) → output ``(B, Tq, D)`` and,
        with ``need_weights=True``, weights ``(B, H, Tq, Tk)``.

    Example:
        >>> mha = MultiHeadAttention(d_model=64, n_heads=4)
        >>> x = torch.randn(2, 5, 64)
        >>> out, w = mha(x, x, x, need_weights=True)
        >>> out.shape, w.shape
        (torch.Size([2, 5, 64]), torch.Size([2, 4, 5, 5]))
    """

    def __init__(
        self,
        d_model: int,
        n_heads: int,
        dropout: float = 0.0,
        fast: bool = True,
        rotary: RotaryPositionalEncoding | None = None,
    ):
        super().__init__()
        if d_model % n_heads != 0:
            raise ValueError(
                f"d_model={d_model} is not divisible by n_heads={n_heads}: each head needs "
                f"d_model / n_heads dimensions. Pick n_heads that divides d_model."
            )
        self.d_model, self.n_heads, self.d_head = d_model, n_heads, d_model // n_heads
        self.dropout = dropout
        self.fast = fast
        self.in_proj = nn.Linear(d_model, 3 * d_model)  # [W^Q; W^K; W^V], all heads side by side
        self.out_proj = nn.Linear(d_model, d_model)  # W^O
        self.rotary = rotary
        # Per-head multiplier on the head outputs before W^O (None = all 1). Used to
        # switch heads off and watch what changes (chapter 11).
        self.head_gate: Tensor | None = None

    def _split_heads(self, x: Tensor) -> Tensor:
        B, T, _ = x.shape
        return x.view(B, T, self.n_heads, self.d_head).transpose(1, 2)  # (B, H, T, Dk)

    def _project(
        self, query: Tensor, key: Tensor, value: Tensor, cache: dict | None, static_kv: bool
    ) -> tuple[Tensor, Tensor, Tensor]:
        """Q, K, V for every head, each (B, H, T, Dk), reusing/extending ``cache``."""
        if self.rotary is not None and static_kv:
            raise ValueError("rotary positions are for self-attention, not static_kv (cross)")
        if cache is None and query is key and key is value:  # self-attention: one matmul
            q, k, v = self.in_proj(query).chunk(3, dim=-1)  # 3 × (B, T, D)
            q, k, v = self._split_heads(q), self._split_heads(k), self._split_heads(v)
            if self.rotary is not None:  # positions 0 .. T-1
                q, k = self.rotary(q), self.rotary(k)
            return q, k, v
        w_q, w_kv = self.in_proj.weight.split([self.d_model, 2 * self.d_model])
        b_q, b_kv = self.in_proj.bias.split([self.d_model, 2 * self.d_model])
        q = self._split_heads(F.linear(query, w_q, b_q))
        if static_kv and cache is not None and "k" in cache:  # cross-attention: memory is fixed
            return q, cache["k"], cache["v"]
        if key is value:
            k, v = F.linear(key, w_kv, b_kv).chunk(2, dim=-1)  # 2 × (B, Tk, D)
        else:
            w_k, w_v = w_kv.chunk(2)
            b_k, b_v = b_kv.chunk(2)
            k, v = F.linear(key, w_k, b_k), F.linear(value, w_v, b_v)
        k, v = self._split_heads(k), self._split_heads(v)
        if self.rotary is not None:  # the new steps come after the cached ones
            past = cache["k"].size(2) if cache is not None and "k" in cache else 0
            q, k = self.rotary(q, past), self.rotary(k, past)  # cached keys are rotated already
        if cache is not None:
            if not static_kv and "k" in cache:  # incremental self-attention: append new steps
                k = torch.cat([cache["k"], k], dim=2)  # (B, H, t_past + Tq, Dk)
                v = torch.cat([cache["v"], v], dim=2)
            cache["k"], cache["v"] = k, v
        return q, k, v

    def forward(
        self,
        query: Tensor,
        key: Tensor,
        value: Tensor,
        mask: Tensor | None = None,
        need_weights: bool = False,
        cache: dict | None = None,
        static_kv: bool = False,
    ) -> tuple[Tensor, Tensor | None]:
        """Attend from ``query`` positions to ``key``/``value`` positions.

        ``cache`` (a dict, used while decoding one token at a time) keeps the keys and
        values already computed; ``static_kv=True`` marks cross-attention, whose keys and
        values come from the encoder memory and are computed only once.
        """
        if query.dim() != 3 or query.size(-1) != self.d_model:
            raise ValueError(
                f"query must have shape (B, Tq, d_model={self.d_model}), got {tuple(query.shape)}"
            )
        if key.dim() != 3 or key.size(-1) != self.d_model or key.shape != value.shape:
            raise ValueError(
                f"key and value must both have shape (B, Tk, d_model={self.d_model}), got "
                f"{tuple(key.shape)} and {tuple(value.shape)}"
            )
        q, k, v = self._project(query, key, value, cache, static_kv)
        if mask is not None:
            check_mask(mask, (q.size(0), self.n_heads, q.size(2), k.size(2)))
        p = self.dropout if self.training else 0.0
        if need_weights or not self.fast:
            out, weights = scaled_dot_product_attention(q, k, v, mask, dropout_p=p)
        else:
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=p)
            weights = None
        if self.head_gate is not None:
            out = out * self.head_gate.to(out).view(1, -1, 1, 1)  # (B, H, Tq, Dk)
        B, H, Tq, Dk = out.shape
        out = out.transpose(1, 2).reshape(B, Tq, H * Dk)  # concatenate heads: (B, Tq, D)
        return self.out_proj(out), (weights if need_weights else None)
