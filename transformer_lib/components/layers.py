"""Encoder and decoder layers and stacks (§3.1). Taught in chapter 8.

An encoder layer is self-attention then a feed-forward network; a decoder layer adds
cross-attention to the encoder's output between the two, and its self-attention is
masked so that position i sees only positions ≤ i.
"""

from __future__ import annotations

from torch import Tensor, nn

from .config import TransformerConfig
from .feedforward import PositionwiseFeedForward, SublayerConnection, make_norm
from .multihead import MultiHeadAttention
from .positional import RotaryPositionalEncoding


def _sublayer(c: TransformerConfig) -> SublayerConnection:
    """One residual sub-layer as the config asks: post-/pre-LN, LayerNorm or RMSNorm."""
    return SublayerConnection(c.d_model, c.dropout, c.norm_first, c.layer_norm_eps, c.norm)


def _self_attention(c: TransformerConfig) -> MultiHeadAttention:
    """Self-attention as the config asks: with rotary positions when ``positional="rope"``."""
    rotary = RotaryPositionalEncoding(c.max_len, c.d_head) if c.positional == "rope" else None
    return MultiHeadAttention(c.d_model, c.n_heads, c.dropout, rotary=rotary)


class EncoderLayer(nn.Module):
    """Self-attention → FFN, each wrapped in residual + dropout + LayerNorm.

    Shape: ``x (B, S, D)``, ``mask (B, 1, 1, S)`` → ``(B, S, D)`` and weights ``(B, H, S, S)``.

    With a causal mask this is exactly the block of a decoder-only model (self-attention and
    FFN, no cross-attention); ``cache`` (a dict, one per layer) then keeps the keys and values
    of earlier positions for incremental decoding, as in :class:`DecoderLayer`.
    """

    def __init__(self, config: TransformerConfig):
        super().__init__()
        c = config
        self.self_attn = _self_attention(c)
        self.ffn = PositionwiseFeedForward(c.d_model, c.d_ff, c.dropout, c.activation)
        self.attn_block = _sublayer(c)
        self.ffn_block = _sublayer(c)

    def forward(
        self,
        x: Tensor,
        mask: Tensor | None = None,
        need_weights: bool = False,
        cache: dict | None = None,
    ):
        self_cache = None if cache is None else cache.setdefault("self", {})
        x, weights = self.attn_block(
            x, lambda h: self.self_attn(h, h, h, mask, need_weights, cache=self_cache)
        )
        x, _ = self.ffn_block(x, self.ffn)
        return x, weights


class DecoderLayer(nn.Module):
    """Masked self-attention → cross-attention → FFN.

    Shape: ``x (B, T, D)``, ``memory (B, S, D)``, ``self_mask (B, 1, T, T)``,
    ``cross_mask (B, 1, 1, S)`` → ``(B, T, D)``, self weights ``(B, H, T, T)`` and cross
    weights ``(B, H, T, S)``.
    """

    def __init__(self, config: TransformerConfig):
        super().__init__()
        c = config
        self.self_attn = _self_attention(c)
        self.cross_attn = MultiHeadAttention(c.d_model, c.n_heads, c.dropout)
        self.ffn = PositionwiseFeedForward(c.d_model, c.d_ff, c.dropout, c.activation)
        self.self_block = _sublayer(c)
        self.cross_block = _sublayer(c)
        self.ffn_block = _sublayer(c)

    def forward(
        self,
        x: Tensor,
        memory: Tensor,
        self_mask: Tensor | None = None,
        cross_mask: Tensor | None = None,
        need_weights: bool = False,
        cache: dict | None = None,
    ):
        self_cache = None if cache is None else cache.setdefault("self", {})
        cross_cache = None if cache is None else cache.setdefault("cross", {})
        x, self_w = self.self_block(
            x, lambda h: self.self_attn(h, h, h, self_mask, need_weights, cache=self_cache)
        )
        x, cross_w = self.cross_block(
            x,
            lambda h: self.cross_attn(
                h, memory, memory, cross_mask, need_weights, cache=cross_cache, static_kv=True
            ),
        )
        x, _ = self.ffn_block(x, self.ffn)
        return x, self_w, cross_w


class Encoder(nn.Module):
    """N encoder layers (plus a final LayerNorm in pre-LN, where the stack ends un-normed).

    Args:
        config: the hyper-parameters.
        n_layers: number of layers; default ``config.n_encoder_layers``. The decoder-only
            model reuses this stack with ``config.n_decoder_layers`` causal layers.

    Shape: ``x (B, S, D)``, ``mask`` broadcastable to ``(B, 1, S, S)`` → ``(B, S, D)``.
    With a :class:`KVCache` (incremental decoding), ``x`` holds only the new positions.
    """

    def __init__(self, config: TransformerConfig, n_layers: int | None = None):
        super().__init__()
        n = config.n_encoder_layers if n_layers is None else n_layers
        self.layers = nn.ModuleList(EncoderLayer(config) for _ in range(n))
        self.norm = final_norm(config)

    def forward(
        self,
        x: Tensor,
        mask: Tensor | None = None,
        need_weights: bool = False,
        cache: KVCache | None = None,
    ):
        weights = []
        for i, layer in enumerate(self.layers):
            layer_cache = None if cache is None else cache.layers[i]
            x, w = layer(x, mask, need_weights, layer_cache)
            weights.append(w)
        return self.norm(x), weights  # (B, S, D), N × (B, H, S, S) or None


def final_norm(config: TransformerConfig) -> nn.Module:
    """The norm after the last layer of a pre-LN stack (``config.norm``: LayerNorm or
    RMSNorm); nothing (identity) in post-LN, where every sub-layer already ends with one."""
    if config.norm_first:
        return make_norm(config.d_model, config.norm, config.layer_norm_eps)
    return nn.Identity()


class Decoder(nn.Module):
    """N decoder layers (plus a final LayerNorm in pre-LN)."""

    def __init__(self, config: TransformerConfig):
        super().__init__()
        self.layers = nn.ModuleList(DecoderLayer(config) for _ in range(config.n_decoder_layers))
        self.norm = final_norm(config)

    def forward(
        self,
        x: Tensor,
        memory: Tensor,
        self_mask: Tensor | None = None,
        cross_mask: Tensor | None = None,
        need_weights: bool = False,
        cache: KVCache | None = None,
    ):
        self_ws, cross_ws = [], []
        for i, layer in enumerate(self.layers):
            layer_cache = None if cache is None else cache.layers[i]
            x, sw, cw = layer(x, memory, self_mask, cross_mask, need_weights, layer_cache)
            self_ws.append(sw)
            cross_ws.append(cw)
        return self.norm(x), self_ws, cross_ws  # (B, T, D), N × (B,H,T,T), N × (B,H,T,S)


class KVCache:
    """Keys and values of the decoder's past steps, one dict per layer.

    Decoding one token at a time, self-attention appends the new step's key and value
    instead of recomputing all earlier ones, and cross-attention projects the encoder
    memory only once. ``length`` counts the target positions already processed.
    """

    def __init__(self, n_layers: int):
        self.layers: list[dict] = [{} for _ in range(n_layers)]
        self.length = 0

    def reorder(self, index) -> None:
        """Keep batch rows ``index`` (beam search: follow the surviving hypotheses)."""
        for layer in self.layers:
            for kind in layer.values():
                for name, tensor in kind.items():
                    kind[name] = tensor.index_select(0, index)
