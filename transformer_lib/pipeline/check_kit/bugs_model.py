"""Tutorial bugs in the model, each written as a small override of one library component.

Nothing here runs unless planted: :func:`~.planting.plant` puts one override in the place the
library looks it up and restores the original afterwards. Each override is the library's
code with the one mistake a from-scratch tutorial makes, marked ``# BUG``; the rest is kept
as it is, so that the check that fails points at that mistake alone.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ...components.config import TransformerConfig
from ...components.model import Transformer
from ...components.multihead import MultiHeadAttention

# The originals that two overrides extend (read before any bug is planted).
_CONFIG_INIT = vars(TransformerConfig)["__init__"]
_TRANSFORMER_INIT = vars(Transformer)["__init__"]


# ---- positional encoding (§3.5) -------------------------------------------------------------
def single_frequency_encoding(max_len: int, d_model: int, dtype=torch.float32) -> Tensor:
    position = torch.arange(max_len, dtype=torch.float64).unsqueeze(1)  # (L, 1)
    two_i = torch.arange(0, d_model, 2)  # integer "2i"
    frequency = 1.0 / (10000.0 ** (two_i // d_model))  # BUG: 2i // d_model is 0 for every i
    angle = position * frequency  # (L, D/2): one frequency for every pair
    pe = torch.zeros(max_len, d_model, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(angle)
    pe[:, 1::2] = torch.cos(angle[:, : d_model // 2])
    return pe.to(dtype)


def swapped_sin_cos_encoding(max_len: int, d_model: int, dtype=torch.float32) -> Tensor:
    position = torch.arange(max_len, dtype=torch.float64).unsqueeze(1)  # (L, 1)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)
    angle = position / (10000.0 ** (two_i / d_model))  # (L, D/2)
    pe = torch.zeros(max_len, d_model, dtype=torch.float64)
    pe[:, 0::2] = torch.cos(angle)  # BUG: cos on the even dimensions ...
    pe[:, 1::2] = torch.sin(angle[:, : d_model // 2])  # ... and sin on the odd ones
    return pe.to(dtype)


# ---- scaled dot-product attention (§3.2.1), as a from-scratch model writes it ----------------
def attention_without_scale(query, key, value, mask=None, dropout_p=0.0):
    scores = query @ key.transpose(-2, -1)  # BUG: not divided by math.sqrt(d_k)
    if mask is not None:
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    weights = scores.softmax(dim=-1)
    return F.dropout(weights, p=dropout_p) @ value, weights


def attention_divided_by_d_k(query, key, value, mask=None, dropout_p=0.0):
    d_k = query.size(-1)
    scores = query @ key.transpose(-2, -1) / d_k  # BUG: d_k, not math.sqrt(d_k)
    if mask is not None:
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    weights = scores.softmax(dim=-1)
    return F.dropout(weights, p=dropout_p) @ value, weights


def attention_softmax_over_queries(query, key, value, mask=None, dropout_p=0.0):
    d_k = query.size(-1)
    scores = query @ key.transpose(-2, -1) / d_k**0.5  # (B, H, Tq, Tk)
    if mask is not None:
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    weights = scores.softmax(dim=-2)  # BUG: normalises over the queries, not the keys (dim=-1)
    return F.dropout(weights, p=dropout_p) @ value, weights


# ---- masks (§3.2.3) ----------------------------------------------------------------------
def causal_mask_off_by_one(tq: int, tk: int | None = None, device=None) -> Tensor:
    tk = tq if tk is None else tk
    full = torch.ones(tq, tk, dtype=torch.bool, device=device)
    return full.tril(diagonal=tk - tq + 1)[None, None]  # BUG: + 1 lets position t see t + 1


def padding_mask_ignoring_padding(tokens: Tensor, pad_id: int = 0) -> Tensor:
    return torch.ones_like(tokens, dtype=torch.bool)[:, None, None, :]  # BUG: pads stay visible


def padding_mask_inverted(tokens: Tensor, pad_id: int = 0) -> Tensor:
    return (tokens == pad_id)[:, None, None, :]  # BUG: True on the pads (True = blocked habit)


# ---- multi-head attention (§3.2.2) -------------------------------------------------------------
def split_heads_without_transpose(self, x: Tensor) -> Tensor:
    B, T, _ = x.shape
    return x.reshape(B, self.n_heads, T, self.d_head)  # BUG: (B, T, H, Dk), then .transpose(1, 2)


class HeadsMergedWithoutTranspose(MultiHeadAttention):
    """Multi-head attention whose heads are concatenated by a plain reshape.

    The library's forward concatenates the heads correctly; a hook on ``out_proj`` (W^O)
    turns that back into what ``out.reshape(B, Tq, D)`` of ``(B, H, Tq, Dk)`` gives.
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.out_proj.register_forward_pre_hook(self._merge_without_transpose)

    def _merge_without_transpose(self, out_proj: nn.Module, inputs: tuple) -> tuple:
        (merged,) = inputs  # (B, Tq, D), heads concatenated per position
        B, Tq, _ = merged.shape
        heads = merged.view(B, Tq, self.n_heads, self.d_head).transpose(1, 2)  # (B, H, Tq, Dk)
        return (heads.reshape(B, Tq, self.d_model),)  # BUG: no .transpose(1, 2) first


# ---- embeddings (§3.4) --------------------------------------------------------------------------
def embedding_without_scale(self, ids: Tensor) -> Tensor:
    return self.embedding(ids)  # BUG: not multiplied by self.scale = √d_model


def transformer_init_untied(self, config) -> None:
    _TRANSFORMER_INIT(self, config)
    self.generator = nn.Linear(config.d_model, config.vocab_size)  # BUG: a matrix of its own


# ---- layers (§3.1, §3.3) ------------------------------------------------------------------------
def encoder_layer_ffn_without_residual(self, x, mask=None, need_weights=False, cache=None):
    self_cache = None if cache is None else cache.setdefault("self", {})
    x, weights = self.attn_block(
        x, lambda h: self.self_attn(h, h, h, mask, need_weights, cache=self_cache)
    )
    x = self.ffn_block.norm(self.ffn_block.dropout(self.ffn(x)))  # BUG: LayerNorm(FFN(x)), no x +
    return x, weights


def config_init_pre_ln_by_default(self, *args, norm_first: bool = True, **kwargs) -> None:
    # BUG: norm_first defaults to True; the paper (§3.1) is post-LN, pre-LN an option
    _CONFIG_INIT(self, *args, norm_first=norm_first, **kwargs)


def feed_forward_dropout_always_on(self, x: Tensor) -> Tensor:
    hidden = F.dropout(self.linear1(x).relu(), p=self.dropout.p)  # BUG: training=True by default
    return self.linear2(hidden)


# ---- the decoder's cross-attention (§3.2.3) ------------------------------------------------------
def decoder_layer_cross_attending_to_itself(
    self, x, memory, self_mask=None, cross_mask=None, need_weights=False, cache=None
):
    self_cache = None if cache is None else cache.setdefault("self", {})
    cross_cache = None if cache is None else cache.setdefault("cross", {})
    x, self_w = self.self_block(
        x, lambda h: self.self_attn(h, h, h, self_mask, need_weights, cache=self_cache)
    )
    x, cross_w = self.cross_block(
        x,  # BUG: keys and values from the decoder's own h (and its mask), not from memory
        lambda h: self.cross_attn(h, h, h, self_mask, need_weights, cache=cross_cache),
    )
    x, _ = self.ffn_block(x, self.ffn)
    return x, self_w, cross_w


def decoder_without_cross_mask(
    self, x, memory, self_mask=None, cross_mask=None, need_weights=False, cache=None
):
    self_ws, cross_ws = [], []
    for i, layer in enumerate(self.layers):
        layer_cache = None if cache is None else cache.layers[i]
        x, sw, cw = layer(x, memory, self_mask, None, need_weights, layer_cache)  # BUG: no mask
        self_ws.append(sw)
        cross_ws.append(cw)
    return self.norm(x), self_ws, cross_ws


# ---- incremental decoding ------------------------------------------------------------------------
def embed_ignoring_cache_offset(self, embed, ids: Tensor, offset: int = 0) -> Tensor:
    return self.embed_dropout(self.positional(embed(ids)))  # BUG: offset dropped: position 0


def learned_positions_ignoring_offset(self, x: Tensor, offset: int = 0) -> Tensor:
    return x + self.embedding.weight[: x.size(1)]  # BUG: rows from 0, not from offset


def reorder_a_copy(self, index: Tensor) -> None:
    for layer in self.layers:
        for kind in layer.values():
            # BUG: rebinds a new local dict; the cache keeps the old hypotheses' tensors
            kind = {name: tensor.index_select(0, index) for name, tensor in kind.items()}
