"""``torch.nn.Transformer`` made into a whole translation model, and its check-kit adapter.

``nn.Transformer`` is only the two stacks: it has no embeddings, no positional encoding and
no output layer, and its masks mean True = *blocked*. :class:`TorchTransformerModel` adds
what the paper puts around it (§3.4, §3.5): token embeddings multiplied by √d_model, the
sinusoidal table, dropout on their sum, and an output layer that shares the embedding
matrix. It is a model written without this library's layers, so the check kit has a second,
independent encoder–decoder to pass on; :func:`torch_adapter` is its adapter.
"""

from __future__ import annotations

import math
import warnings

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ...components.config import TransformerConfig
from ...components.positional import sinusoidal_positional_encoding
from .. import decoding
from .adapter import ModelAdapter
from .library import _training_parts

__all__ = ["TorchTransformerModel", "torch_adapter"]


class TorchTransformerModel(nn.Module):
    """``torch.nn.Transformer`` (batch first) with the paper's embeddings and output layer.

    Args:
        config: sizes, dropout, ``norm_first`` and special ids (the stacks always share one
            embedding matrix with the output layer, §3.4).

    Shape:
        ``src (B, S)``, ``tgt (B, T)`` long → logits ``(B, T, V)``; padding from
        ``config.pad_id``, causal mask built here.
    """

    def __init__(self, config: TransformerConfig):
        super().__init__()
        c = self.config = config
        self.embedding = nn.Embedding(c.vocab_size, c.d_model, padding_idx=c.pad_id)
        self.register_buffer("pe", sinusoidal_positional_encoding(c.max_len, c.d_model), False)
        self.dropout = nn.Dropout(c.dropout)
        with warnings.catch_warnings():  # its note that pre-LN disables nested tensors
            warnings.simplefilter("ignore", UserWarning)
            self.transformer = nn.Transformer(
                d_model=c.d_model,
                nhead=c.n_heads,
                num_encoder_layers=c.n_encoder_layers,
                num_decoder_layers=c.n_decoder_layers,
                dim_feedforward=c.d_ff,
                dropout=c.dropout,
                layer_norm_eps=c.layer_norm_eps,
                batch_first=True,
                norm_first=c.norm_first,
            )
        self.transformer.encoder.enable_nested_tensor = False  # keep padded positions dense
        self.transformer.encoder.use_nested_tensor = False
        self.generator = nn.Linear(c.d_model, c.vocab_size)
        nn.init.normal_(self.embedding.weight, std=c.d_model**-0.5)
        with torch.no_grad():
            self.embedding.weight[c.pad_id].zero_()
        nn.init.zeros_(self.generator.bias)
        self.generator.weight = self.embedding.weight  # one matrix, §3.4

    def embed(self, ids: Tensor) -> Tensor:
        """Token vectors × √d_model plus positions, then dropout: ``(B, L)`` → ``(B, L, D)``."""
        x = self.embedding(ids) * math.sqrt(self.config.d_model)
        return self.dropout(x + self.pe[: ids.size(1)])

    def encode(self, src: Tensor) -> tuple[Tensor, Tensor]:
        """``memory (B, S, D)`` and the source padding mask ``(B, S)`` (True = blocked)."""
        blocked = src == self.config.pad_id
        return self.transformer.encoder(self.embed(src), src_key_padding_mask=blocked), blocked

    def decode(self, tgt: Tensor, memory: Tensor, src_blocked: Tensor, cache=None) -> Tensor:
        """Logits ``(B, T, V)`` of the target prefix ``tgt`` against ``memory`` (no cache)."""
        if cache is not None:
            raise ValueError("TorchTransformerModel has no key/value cache; decode without one")
        T = tgt.size(1)
        out = self.transformer.decoder(
            self.embed(tgt),
            memory,
            tgt_mask=nn.Transformer.generate_square_subsequent_mask(
                T, device=tgt.device, dtype=torch.bool
            ),
            tgt_key_padding_mask=tgt == self.config.pad_id,
            memory_key_padding_mask=src_blocked,
        )
        return self.generator(out)

    def forward(self, src: Tensor, tgt: Tensor) -> Tensor:
        memory, blocked = self.encode(src)
        return self.decode(tgt, memory, blocked)


def _torch_attention(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None = None):
    """PyTorch's own attention, and its weights: attending to an identity matrix as the
    values returns the weights themselves (``mask``: True = may attend)."""
    eye = torch.eye(k.size(-2), dtype=q.dtype, device=q.device).expand(*k.shape[:-1], k.size(-2))
    weights = F.scaled_dot_product_attention(q, k, eye, attn_mask=mask)
    return weights @ v, weights


def torch_adapter(model: TorchTransformerModel) -> ModelAdapter:
    """The check-kit adapter of a :class:`TorchTransformerModel`.

    It has no attention weights, no key/value cache and no beam search (those checks are
    skipped), and no parity check (it *is* the reference); training is the library's.
    """
    c = model.config
    return ModelAdapter(
        forward=lambda src, tgt: model(src, tgt),
        arch="encoder-decoder",
        name="torch.nn.Transformer with embeddings and output layer",
        vocab_size=c.vocab_size,
        d_model=c.d_model,
        pad_id=c.pad_id,
        bos_id=c.bos_id,
        eos_id=c.eos_id,
        reserved_ids=(c.unk_id,),
        max_len=c.max_len,
        dropout=c.dropout,
        module=model,
        positional_table=lambda n: model.pe[:n],
        attention_function=_torch_attention,
        token_embedding=lambda ids: model.embedding(ids) * math.sqrt(c.d_model),
        embedding_matrices=lambda: {
            "embedding": model.embedding.weight,
            "output projection": model.generator.weight,
        },
        greedy=lambda src, n: decoding.greedy_decode(model, src, max_len=n + 1, use_cache=False),
        unavailable={
            "attention": "nn.Transformer does not return its attention weights",
            "torch_reference": "the model is torch.nn.Transformer itself",
            "cache_start": "nn.Transformer has no key/value cache",
            "cache_step": "nn.Transformer has no key/value cache",
            "cache_reorder": "nn.Transformer has no key/value cache",
            "beam": "the library's beam search decodes with a key/value cache",
        },
        **_training_parts(model, "encoder-decoder"),
    )
