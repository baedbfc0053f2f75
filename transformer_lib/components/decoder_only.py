"""A decoder-only Transformer built from the same parts as the encoder–decoder.

Drop the encoder and the cross-attention from Figure 1 of the paper and what is left of a
decoder layer is masked self-attention followed by the feed-forward network (§3.1, §3.2.3)
— which is an :class:`~transformer_lib.components.layers.EncoderLayer` given a causal
mask. This model therefore reuses the :class:`~transformer_lib.components.layers.Encoder`
stack (with ``config.n_decoder_layers`` layers), the token embedding and positional
encodings (§3.4, §3.5), the shared output matrix (§3.4) and the key/value cache.

For translation it reads one sequence ``English <sep> German <eos>`` and is trained to
predict the German part (see ``transformer_lib.pipeline.lm_batching``). Trained as a
*prefix LM*, the ``English <sep>`` prefix attends both ways, like an encoder, and the
German part stays causal (:func:`~transformer_lib.components.masks.prefix_lm_mask`).

Shapes: B batch, T length, D d_model, H heads, V vocabulary size.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor, nn

from .config import TransformerConfig
from .embedding import TokenEmbedding
from .layers import Encoder, KVCache
from .masks import causal_mask, combine_masks, padding_mask, prefix_lm_mask
from .model import Transformer, check_id_matrix, count_parameters, init_parameters
from .positional import positional_encoding

#: Names of the two architectures, as recorded in a checkpoint's config (``"arch"``).
ARCHITECTURES = ("encoder-decoder", "decoder-only")


class DecoderOnlyTransformer(nn.Module):
    """Token ids in, next-token logits out, with one causal self-attention stack.

    Args:
        config: a :class:`TransformerConfig`. ``n_decoder_layers`` is the number of blocks
            (``n_encoder_layers`` is not used); ``norm_first`` chooses post-LN (the paper,
            default) or pre-LN (which ends the stack with a LayerNorm, as the encoder
            does); ``positional`` chooses sinusoidal, learned or rotary positions; with
            ``share_embeddings`` (default) the output layer reuses the embedding matrix.
        prefix_lm: whether the model is (to be) trained as a prefix LM. Only recorded
            here, for the decoding functions and checkpoints; :meth:`forward` uses a prefix
            only when given ``prefix_len``.

    Shape:
        ``ids (B, T)`` long → logits ``(B, T, V)``.

    Example:
        >>> model = DecoderOnlyTransformer(TransformerConfig.tiny(vocab_size=100))
        >>> model(torch.randint(4, 100, (2, 7))).shape
        torch.Size([2, 7, 100])
    """

    arch = "decoder-only"

    def __init__(self, config: TransformerConfig, prefix_lm: bool = False):
        super().__init__()
        c = self.config = config
        if c.n_decoder_layers < 1:
            raise ValueError(
                "a decoder-only model needs at least one block: set "
                f"TransformerConfig.n_decoder_layers >= 1 (got {c.n_decoder_layers})"
            )
        self.prefix_lm = bool(prefix_lm)
        self.embed = TokenEmbedding(c.vocab_size, c.d_model, c.pad_id)
        # added to the embeddings; for "rope" nothing (the rotation is in self-attention)
        self.positional = positional_encoding(c.positional, c.max_len, c.d_model)
        self.embed_dropout = nn.Dropout(c.dropout)
        # The same stack as the encoder; the causal mask makes it a decoder.
        self.blocks = Encoder(c, n_layers=c.n_decoder_layers)
        self.generator = nn.Linear(c.d_model, c.vocab_size)  # pre-softmax projection
        init_parameters(self, [self.embed], self.generator, c)
        if c.share_embeddings:  # §3.4: the embedding matrix is also the output layer
            self.generator.weight = self.embed.weight

    # ---- masks ---------------------------------------------------------------------------
    def attention_mask(
        self, ids: Tensor, prefix_len: Tensor | int | None = None, offset: int = 0
    ) -> Tensor:
        """The default self-attention mask for ``ids (B, T)`` after ``offset`` cached steps.

        Causal (or prefix-LM with ``prefix_len``), AND not padding when ``offset == 0``
        (with a cache, as in :meth:`Transformer.decode`, earlier keys are taken as real).
        Boolean, True = may attend; shape ``(B or 1, 1, T, offset + T)``.
        """
        B, T = ids.shape
        if prefix_len is None:
            mask = causal_mask(T, offset + T, device=ids.device)  # (1, 1, T, offset+T)
        else:
            if isinstance(prefix_len, int):
                prefix_len = torch.full((B,), prefix_len, dtype=torch.long)
            if prefix_len.shape != (B,):
                raise ValueError(
                    f"prefix_len must have one entry per row, shape ({B},), got "
                    f"{tuple(prefix_len.shape)}"
                )
            mask = prefix_lm_mask(prefix_len.to(ids.device), T, offset + T)  # (B, 1, T, T')
        if offset == 0:
            mask = combine_masks(mask, padding_mask(ids, self.config.pad_id))
        return mask

    # ---- forward -------------------------------------------------------------------------
    def hidden_states(
        self,
        ids: Tensor,
        mask: Tensor | None = None,
        prefix_len: Tensor | int | None = None,
        return_attention: bool = False,
        cache: KVCache | None = None,
    ):
        """The last block's output ``(B, T, D)``, before the output projection.

        Arguments as in :meth:`forward`; with ``return_attention=True`` also returns the
        per-layer weights.
        """
        check_id_matrix(ids, "ids")
        if mask is not None and prefix_len is not None:
            raise ValueError("give either mask or prefix_len, not both (prefix_len builds a mask)")
        offset = 0 if cache is None else cache.length
        if mask is None:
            mask = self.attention_mask(ids, prefix_len, offset)
        x = self.embed_dropout(self.positional(self.embed(ids), offset))  # (B, T, D)
        x, weights = self.blocks(x, mask, return_attention, cache)  # (B, T, D)
        if cache is not None:
            cache.length += ids.size(1)
        return (x, weights) if return_attention else x

    def forward(
        self,
        ids: Tensor,
        mask: Tensor | None = None,
        prefix_len: Tensor | int | None = None,
        return_attention: bool = False,
        cache: KVCache | None = None,
    ):
        """Logits ``(B, T, V)`` for the token after each position.

        Args:
            ids: ``(B, T)`` token ids, right-padded with ``config.pad_id``. With a ``cache``
                only the *new* positions (their positions start at ``cache.length``).
            mask: optional bool mask broadcastable to ``(B, H, T, cache.length + T)``, True =
                may attend. Default: causal AND not padding (see :meth:`attention_mask`).
            prefix_len: ``(B,)`` (or an int for all rows): make the default mask a prefix-LM
                mask, the first ``prefix_len`` positions attending both ways.
            return_attention: also return each layer's weights ``(B, H, T, cache.length+T)``.
            cache: a :meth:`new_cache` to decode incrementally; it is updated in place.

        Returns:
            logits, or ``(logits, {"decoder": [per-layer weights]})``.
        """
        out = self.hidden_states(ids, mask, prefix_len, return_attention, cache)
        if return_attention:
            x, weights = out
            return self.generator(x), {"decoder": weights}
        return self.generator(out)  # (B, T, V)

    # ---- decoding and inspection ---------------------------------------------------------
    def new_cache(self) -> KVCache:
        """An empty key/value cache for incremental decoding (one dict per block)."""
        return KVCache(len(self.blocks.layers))

    def attention_modules(self, kind: str = "decoder") -> list:
        """The self-attention module of every block (the only kind here: ``"decoder"``)."""
        if kind != "decoder":
            raise ValueError(f"a decoder-only model has only 'decoder' attention, got {kind!r}")
        return [layer.self_attn for layer in self.blocks.layers]

    def set_fast_attention(self, fast: bool) -> None:
        """Choose ``F.scaled_dot_product_attention`` (True) or the readable path (False)."""
        for m in self.attention_modules():
            m.fast = fast

    @classmethod
    def parameter_count(cls, config: TransformerConfig) -> int:
        """Trainable parameters of this architecture for ``config`` (tied weights once).

        Counted on the meta device (no memory allocated); comparable with
        ``count_parameters(Transformer(config))``.
        """
        with torch.device("meta"):
            return count_parameters(cls(config))


def parameter_counts(config: TransformerConfig) -> dict[str, int]:
    """Parameters of the encoder–decoder and of the decoder-only model for one config.

    The decoder-only model has ``n_decoder_layers`` blocks; to compare at equal depth, give
    it ``config.replace(n_decoder_layers=n_encoder_layers + n_decoder_layers)``.
    """
    with torch.device("meta"):
        enc_dec = count_parameters(Transformer(config))
    return {
        "encoder-decoder": enc_dec,
        "decoder-only": DecoderOnlyTransformer.parameter_count(config),
    }


def model_config_dict(model: nn.Module) -> dict[str, Any]:
    """The config dict a checkpoint should store to rebuild ``model`` with :func:`build_model`.

    ``model.config.to_dict()`` plus, for a decoder-only model, ``"arch": "decoder-only"``
    and ``"prefix_lm"``. An encoder–decoder gives the plain dict (old checkpoints stay valid).
    """
    data = model.config.to_dict()
    if isinstance(model, DecoderOnlyTransformer):
        data.update(arch=DecoderOnlyTransformer.arch, prefix_lm=model.prefix_lm)
    return data


def build_model(config: dict[str, Any] | TransformerConfig, arch: str | None = None) -> nn.Module:
    """A fresh model from a config dict (as :func:`model_config_dict` writes) or config.

    Args:
        config: a :class:`TransformerConfig`, or its dict with optional ``"arch"``
            (``"encoder-decoder"``, the default, or ``"decoder-only"``) and ``"prefix_lm"``.
        arch: overrides the dict's ``"arch"``.

    Returns:
        A :class:`Transformer` or a :class:`DecoderOnlyTransformer` (randomly initialised).
    """
    prefix_lm = False
    if isinstance(config, TransformerConfig):
        cfg = config
    else:
        data = dict(config)
        arch = data.pop("arch", "encoder-decoder") if arch is None else arch
        data.pop("arch", None)
        prefix_lm = bool(data.pop("prefix_lm", False))
        cfg = TransformerConfig.from_dict(data)
    arch = arch or "encoder-decoder"
    if arch == "encoder-decoder":
        if prefix_lm:
            raise ValueError("prefix_lm applies only to arch='decoder-only'")
        return Transformer(cfg)
    if arch == "decoder-only":
        return DecoderOnlyTransformer(cfg, prefix_lm=prefix_lm)
    raise ValueError(f"arch must be one of {ARCHITECTURES}, got {arch!r}")


__all__ = [
    "ARCHITECTURES",
    "DecoderOnlyTransformer",
    "build_model",
    "model_config_dict",
    "parameter_counts",
]
