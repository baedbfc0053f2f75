"""The whole encoder–decoder Transformer (§3, Figure 1). Taught in chapter 8."""

from __future__ import annotations

import torch
from torch import Tensor, nn

from .config import TransformerConfig
from .embedding import TokenEmbedding
from .layers import Decoder, Encoder, KVCache
from .masks import causal_mask, combine_masks, padding_mask
from .positional import positional_encoding

ATTENTION_KINDS = ("encoder", "decoder", "cross")


def init_parameters(
    model: nn.Module, embeddings, generator: nn.Linear, config: TransformerConfig
) -> None:
    """The library's initialisation, shared by the encoder–decoder and the decoder-only model.

    Xavier-uniform for every matrix except embeddings; token embeddings ``N(0, d_model^-0.5)``
    with a zero ``<pad>`` row; a zero output bias. Tie the output weight *after* this call.
    """
    for name, p in model.named_parameters():
        if p.dim() > 1 and "embed" not in name:
            nn.init.xavier_uniform_(p)
    for emb in embeddings:
        # std d_model^-0.5: after the √d_model scale each embedding has unit-size entries.
        nn.init.normal_(emb.weight, std=config.d_model**-0.5)
        with torch.no_grad():
            emb.weight[config.pad_id].zero_()
    nn.init.zeros_(generator.bias)


def check_id_matrix(ids: Tensor, name: str) -> None:
    """Raise a clear error unless ``ids`` is a non-empty ``(batch, length)`` tensor."""
    if not isinstance(ids, Tensor) or ids.dim() != 2:
        shape = tuple(ids.shape) if isinstance(ids, Tensor) else type(ids).__name__
        raise ValueError(
            f"{name} must be a (batch, length) tensor of token ids, got {shape}. "
            f"For one sentence use ids.unsqueeze(0)."
        )
    if ids.size(1) == 0:
        raise ValueError(f"{name} is empty (length 0); it needs at least one token.")


class Transformer(nn.Module):
    """Token ids in, next-token logits out.

    Args:
        config: a :class:`TransformerConfig` (e.g. ``TransformerConfig.tiny(vocab_size)``).

    Shape:
        ``src (B, S)`` and ``tgt (B, T)`` long → logits ``(B, T, V)``. Padding masks (from
        ``config.pad_id``) and the causal mask are built here.

    Example:
        >>> model = Transformer(TransformerConfig.tiny(vocab_size=100))
        >>> src = torch.randint(4, 100, (2, 7)); tgt = torch.randint(4, 100, (2, 5))
        >>> model(src, tgt).shape
        torch.Size([2, 5, 100])
    """

    def __init__(self, config: TransformerConfig):
        super().__init__()
        c = self.config = config
        self.src_embed = TokenEmbedding(c.vocab_size, c.d_model, c.pad_id)
        self.tgt_embed = (
            self.src_embed
            if c.share_embeddings
            else TokenEmbedding(c.vocab_size, c.d_model, c.pad_id)
        )
        # added to the embeddings; for "rope" nothing (the rotation is in self-attention)
        self.positional = positional_encoding(c.positional, c.max_len, c.d_model)
        self.embed_dropout = nn.Dropout(c.dropout)
        self.encoder = Encoder(c)
        self.decoder = Decoder(c)
        self.generator = nn.Linear(c.d_model, c.vocab_size)  # pre-softmax projection
        self._reset_parameters()
        if c.share_embeddings:  # §3.4: one matrix for both embeddings and the output layer
            self.generator.weight = self.tgt_embed.weight

    def _reset_parameters(self) -> None:
        init_parameters(self, {self.src_embed, self.tgt_embed}, self.generator, self.config)

    # ---- helpers -------------------------------------------------------------------------
    def _check_ids(self, ids: Tensor, name: str) -> None:
        check_id_matrix(ids, name)

    def _embed(self, embed: TokenEmbedding, ids: Tensor, offset: int = 0) -> Tensor:
        return self.embed_dropout(self.positional(embed(ids), offset))  # (B, L, D)

    # ---- the two halves ----------------------------------------------------------------
    def encode(self, src: Tensor, return_attention: bool = False):
        """Encode source ids ``(B, S)`` → ``(memory (B, S, D), src_mask (B, 1, 1, S))``.

        With ``return_attention=True`` a third item lists each layer's weights ``(B, H, S, S)``.
        """
        self._check_ids(src, "src")
        src_mask = padding_mask(src, self.config.pad_id)  # (B, 1, 1, S)
        memory, weights = self.encoder(self._embed(self.src_embed, src), src_mask, return_attention)
        return (memory, src_mask, weights) if return_attention else (memory, src_mask)

    def decode(
        self,
        tgt: Tensor,
        memory: Tensor,
        src_mask: Tensor | None,
        cache: KVCache | None = None,
        return_attention: bool = False,
    ):
        """Decode target ids ``(B, T)`` against ``memory`` → logits ``(B, T, V)``.

        With a ``cache`` (see :meth:`new_cache`) ``tgt`` holds only the *new* steps; earlier
        keys and values come from the cache. With ``return_attention=True`` also returns
        ``{"decoder": N × (B, H, T, T'), "cross": N × (B, H, T, S)}``.
        """
        self._check_ids(tgt, "tgt")
        if memory.size(0) != tgt.size(0):
            raise ValueError(
                f"src and tgt hold different numbers of sentences ({memory.size(0)} vs "
                f"{tgt.size(0)}): row b of tgt must be the translation of row b of src."
            )
        offset = 0 if cache is None else cache.length
        T = tgt.size(1)
        # Causal mask over all positions seen so far; padding only matters without a cache.
        self_mask = causal_mask(T, offset + T, device=tgt.device)  # (1, 1, T, offset+T)
        if cache is None:
            self_mask = combine_masks(self_mask, padding_mask(tgt, self.config.pad_id))
        x, self_ws, cross_ws = self.decoder(
            self._embed(self.tgt_embed, tgt, offset),
            memory,
            self_mask,
            src_mask,
            return_attention,
            cache,
        )
        if cache is not None:
            cache.length += T
        logits = self.generator(x)  # (B, T, V)
        if return_attention:
            return logits, {"decoder": self_ws, "cross": cross_ws}
        return logits

    def forward(self, src: Tensor, tgt: Tensor, return_attention: bool = False):
        """Teacher-forced pass: logits ``(B, T, V)`` for every target position.

        With ``return_attention=True`` returns ``(logits, attention)`` where ``attention`` maps
        ``"encoder"``, ``"decoder"`` and ``"cross"`` to per-layer lists of ``(B, H, Tq, Tk)``.
        """
        if return_attention:
            memory, src_mask, enc_ws = self.encode(src, return_attention=True)
            logits, attn = self.decode(tgt, memory, src_mask, return_attention=True)
            return logits, {"encoder": enc_ws, **attn}
        memory, src_mask = self.encode(src)
        return self.decode(tgt, memory, src_mask)

    # ---- decoding and inspection ---------------------------------------------------------
    def new_cache(self) -> KVCache:
        """An empty key/value cache for incremental decoding."""
        return KVCache(self.config.n_decoder_layers)

    def attention_modules(self, kind: str) -> list:
        """The MultiHeadAttention of every layer for ``kind`` in encoder / decoder / cross."""
        if kind == "encoder":
            return [layer.self_attn for layer in self.encoder.layers]
        if kind == "decoder":
            return [layer.self_attn for layer in self.decoder.layers]
        if kind == "cross":
            return [layer.cross_attn for layer in self.decoder.layers]
        raise ValueError(f"attention kind must be one of {ATTENTION_KINDS}, got {kind!r}")

    def set_head_gate(self, kind: str, layer: int, gate: Tensor | list | None) -> None:
        """Scale (1 = keep, 0 = switch off) each head of one attention layer; None resets."""
        modules = self.attention_modules(kind)
        if not 0 <= layer < len(modules):
            raise ValueError(f"layer must be in [0, {len(modules)}) for {kind!r}, got {layer}")
        if gate is not None:
            gate = torch.as_tensor(gate, dtype=torch.float32)
            if gate.shape != (self.config.n_heads,):
                raise ValueError(
                    f"gate must have one value per head ({self.config.n_heads}), "
                    f"got shape {tuple(gate.shape)}"
                )
        modules[layer].head_gate = gate

    def reset_head_gates(self) -> None:
        for kind in ATTENTION_KINDS:
            for m in self.attention_modules(kind):
                m.head_gate = None

    def set_fast_attention(self, fast: bool) -> None:
        """Choose ``F.scaled_dot_product_attention`` (True) or the readable path (False)."""
        for kind in ATTENTION_KINDS:
            for m in self.attention_modules(kind):
                m.fast = fast


def count_parameters(model: nn.Module) -> int:
    """Number of distinct trainable parameters (tied weights counted once)."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


def paper_parameter_counts(vocab_size: int = 37000) -> dict[str, int]:
    """Parameter counts of the paper's base and big models for a shared vocabulary."""
    from .config import TransformerConfig as C

    with torch.device("meta"):  # no memory is allocated for the weights
        return {
            name: count_parameters(Transformer(cfg))
            for name, cfg in (("base", C.base(vocab_size)), ("big", C.big(vocab_size)))
        }


__all__ = ["Transformer", "count_parameters", "paper_parameter_counts"]
