"""Bridges to PyTorch's own modules, used to check this library against them.

``torch.nn.MultiheadAttention`` and ``torch.nn.Transformer`` store weights in the same
layout as this library (``in_proj_weight`` = [W^Q; W^K; W^V]), so copying is direct.
Their masks mean the opposite, though: for PyTorch's modules True = *blocked*. Convert
with :func:`to_torch_mask` at that boundary and nowhere else.
"""

from __future__ import annotations

import warnings

import torch
from torch import Tensor, nn

from .config import TransformerConfig
from .decoder_only import DecoderOnlyTransformer
from .layers import DecoderLayer, Encoder, EncoderLayer
from .masks import causal_mask
from .model import Transformer
from .multihead import MultiHeadAttention


def to_torch_mask(mask: Tensor) -> Tensor:
    """Our masks (True = may attend) → ``nn.MultiheadAttention`` masks (True = blocked)."""
    return ~mask


@torch.no_grad()
def copy_attention(
    src: nn.MultiheadAttention | MultiHeadAttention, dst: nn.MultiheadAttention | MultiHeadAttention
) -> None:
    """Copy W^Q, W^K, W^V, W^O and biases between the two attention implementations."""

    def tensors(m):
        if isinstance(m, nn.MultiheadAttention):
            if not m._qkv_same_embed_dim or m.in_proj_bias is None:
                raise ValueError(
                    "only nn.MultiheadAttention(d, h, bias=True) with kdim=vdim=d "
                    "has the same layout as this library"
                )
            return m.in_proj_weight, m.in_proj_bias, m.out_proj.weight, m.out_proj.bias
        return m.in_proj.weight, m.in_proj.bias, m.out_proj.weight, m.out_proj.bias

    for s, d in zip(tensors(src), tensors(dst)):
        if s.shape != d.shape:
            raise ValueError(
                f"shape mismatch {tuple(s.shape)} vs {tuple(d.shape)}: build both "
                "with the same d_model"
            )
        d.copy_(s)


def torch_attention_from(mha: MultiHeadAttention) -> nn.MultiheadAttention:
    """An ``nn.MultiheadAttention`` (batch_first) with the same weights as ``mha``."""
    ref = nn.MultiheadAttention(mha.d_model, mha.n_heads, dropout=mha.dropout, batch_first=True)
    copy_attention(mha, ref)
    return ref.train(mha.training)


@torch.no_grad()
def _copy_linear(src: nn.Module, dst: nn.Module) -> None:
    dst.weight.copy_(src.weight)
    dst.bias.copy_(src.bias)


def torch_transformer_from(model: Transformer) -> nn.Transformer:
    """An ``nn.Transformer`` (batch_first) holding the same encoder/decoder weights.

    ``nn.Transformer`` has no embeddings or output layer: feed it our embedded inputs and
    apply our ``generator`` to its output. It always ends each stack with a LayerNorm; in
    post-LN (the paper) this library does not, so that norm is replaced by an identity.
    """
    c: TransformerConfig = model.config
    _check_torch_can_mirror(c.activation, c.norm, c.positional)
    with warnings.catch_warnings():  # its note that pre-LN disables nested tensors
        warnings.simplefilter("ignore", UserWarning)
        ref = nn.Transformer(
            d_model=c.d_model,
            nhead=c.n_heads,
            num_encoder_layers=c.n_encoder_layers,
            num_decoder_layers=c.n_decoder_layers,
            dim_feedforward=c.d_ff,
            dropout=c.dropout,
            activation=c.activation,
            layer_norm_eps=c.layer_norm_eps,
            batch_first=True,
            norm_first=c.norm_first,
        )
    # Nested tensors would zero the padded positions of the encoder output; keep them dense.
    ref.encoder.enable_nested_tensor = False
    ref.encoder.use_nested_tensor = False
    for ours, theirs in zip(model.encoder.layers, ref.encoder.layers):
        _copy_encoder_layer(ours, theirs)
    for ours, theirs in zip(model.decoder.layers, ref.decoder.layers):
        _copy_decoder_layer(ours, theirs)
    for ours, theirs_name in ((model.encoder, "encoder"), (model.decoder, "decoder")):
        stack = getattr(ref, theirs_name)
        if c.norm_first:
            _copy_linear(ours.norm, stack.norm)
        else:
            stack.norm = nn.Identity()
    return ref.train(model.training)


def _check_torch_can_mirror(activation: str, norm: str, positional: str = "sinusoidal") -> None:
    """``nn.Transformer`` has ReLU or GELU and LayerNorm only, and its attention rotates
    nothing: refuse what it cannot hold."""
    if positional == "rope":
        raise ValueError(
            "torch.nn.Transformer cannot mirror positional='rope': its self-attention has no "
            "rotary positions (it only sees the vectors it is given, so positions must be added "
            "to the embeddings). Compare a model built with positional='sinusoidal' or 'learned'."
        )
    if activation not in ("relu", "gelu") or norm != "layer":
        raise ValueError(
            f"torch.nn.Transformer cannot mirror activation={activation!r}, norm={norm!r}: it "
            "has only a ReLU or GELU feed-forward network and LayerNorm. Compare a model built "
            "with activation='relu' or 'gelu' and norm='layer'."
        )


def _copy_encoder_layer(ours: EncoderLayer, theirs: nn.TransformerEncoderLayer) -> None:
    copy_attention(ours.self_attn, theirs.self_attn)
    _copy_linear(ours.ffn.linear1, theirs.linear1)
    _copy_linear(ours.ffn.linear2, theirs.linear2)
    _copy_linear(ours.attn_block.norm, theirs.norm1)
    _copy_linear(ours.ffn_block.norm, theirs.norm2)


def _copy_decoder_layer(ours: DecoderLayer, theirs: nn.TransformerDecoderLayer) -> None:
    copy_attention(ours.self_attn, theirs.self_attn)
    copy_attention(ours.cross_attn, theirs.multihead_attn)
    _copy_linear(ours.ffn.linear1, theirs.linear1)
    _copy_linear(ours.ffn.linear2, theirs.linear2)
    _copy_linear(ours.self_block.norm, theirs.norm1)
    _copy_linear(ours.cross_block.norm, theirs.norm2)
    _copy_linear(ours.ffn_block.norm, theirs.norm3)


def torch_reference_logits(
    model: Transformer, ref: nn.Transformer, src: Tensor, tgt: Tensor
) -> Tensor:
    """Logits ``(B, T, V)`` computed by ``nn.Transformer`` with our embeddings and generator."""
    pad = model.config.pad_id
    T = tgt.size(1)
    out = ref(
        model._embed(model.src_embed, src),
        model._embed(model.tgt_embed, tgt),
        tgt_mask=nn.Transformer.generate_square_subsequent_mask(T, dtype=torch.bool),
        src_key_padding_mask=src == pad,  # True = blocked, PyTorch's convention
        tgt_key_padding_mask=tgt == pad,
        memory_key_padding_mask=src == pad,
    )
    return model.generator(out)


def torch_encoder_from(stack: Encoder) -> nn.TransformerEncoder:
    """An ``nn.TransformerEncoder`` (batch_first) holding the same layer weights as ``stack``.

    Its optional final norm mirrors ours: a copy of ``stack.norm`` in pre-LN, none in
    post-LN (where this library's stack ends with the last layer's own LayerNorm).
    """
    first: EncoderLayer = stack.layers[0]
    _check_torch_can_mirror(
        first.ffn.activation,
        "layer" if _is_layer_norm(first) else "rms",
        "rope" if first.self_attn.rotary is not None else "sinusoidal",
    )
    pre_ln = isinstance(stack.norm, nn.LayerNorm)
    d_model = first.self_attn.d_model
    with warnings.catch_warnings():  # its note that pre-LN disables nested tensors
        warnings.simplefilter("ignore", UserWarning)
        layer = nn.TransformerEncoderLayer(
            d_model,
            first.self_attn.n_heads,
            dim_feedforward=first.ffn.linear1.out_features,
            dropout=first.self_attn.dropout,
            activation=first.ffn.activation,
            layer_norm_eps=first.attn_block.norm.eps,
            batch_first=True,
            norm_first=first.attn_block.norm_first,
        )
        norm = nn.LayerNorm(d_model, eps=stack.norm.eps) if pre_ln else None
        ref = nn.TransformerEncoder(layer, len(stack.layers), norm=norm, enable_nested_tensor=False)
    ref.use_nested_tensor = False  # keep padded positions dense, as ours are
    for ours, theirs in zip(stack.layers, ref.layers):
        _copy_encoder_layer(ours, theirs)
    if pre_ln:
        _copy_linear(stack.norm, ref.norm)
    return ref.train(stack.training)


def _is_layer_norm(layer: EncoderLayer) -> bool:
    return isinstance(layer.attn_block.norm, nn.LayerNorm)


def torch_decoder_only_from(model: DecoderOnlyTransformer) -> nn.TransformerEncoder:
    """``nn.TransformerEncoder`` with the weights of ``model``'s blocks (see
    :func:`torch_decoder_only_hidden` for running it with a causal mask)."""
    return torch_encoder_from(model.blocks)


def torch_decoder_only_hidden(
    model: DecoderOnlyTransformer, ref: nn.TransformerEncoder, ids: Tensor
) -> Tensor:
    """Hidden states ``(B, T, D)`` of ``ref`` on our embedded ``ids``, causal and padding
    masks converted to PyTorch's convention; compare with ``model.hidden_states(ids)``."""
    T = ids.size(1)
    x = model.embed_dropout(model.positional(model.embed(ids)))  # (B, T, D)
    return ref(
        x,
        mask=to_torch_mask(causal_mask(T, device=ids.device)[0, 0]),  # (T, T), True = blocked
        src_key_padding_mask=ids == model.config.pad_id,  # (B, T), True = blocked
    )
