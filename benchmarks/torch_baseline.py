"""A plain ``torch.nn.Transformer`` translator of the library's size, for the benchmarks.

It shares nothing with ``transformer_lib``'s model code: PyTorch's own encoder–decoder,
wrapped in scaled, tied token embeddings with sinusoidal positions (§3.4, §3.5) and an
output layer, as a reader would write it around ``nn.Transformer``.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from transformer_lib import TransformerConfig, sinusoidal_positional_encoding


class TorchBaseline(nn.Module):
    """``nn.Transformer`` with scaled, tied embeddings and an output layer."""

    def __init__(self, c: TransformerConfig):
        super().__init__()
        self.pad_id, self.bos_id, self.eos_id = c.pad_id, c.bos_id, c.eos_id
        self.max_len, self.scale = c.max_len, math.sqrt(c.d_model)
        self.embed = nn.Embedding(c.vocab_size, c.d_model, padding_idx=c.pad_id)
        self.register_buffer("pe", sinusoidal_positional_encoding(c.max_len, c.d_model))
        self.dropout = nn.Dropout(c.dropout)
        self.transformer = nn.Transformer(
            c.d_model,
            c.n_heads,
            c.n_encoder_layers,
            c.n_decoder_layers,
            c.d_ff,
            c.dropout,
            batch_first=True,
            norm_first=c.norm_first,
        )
        self.generator = nn.Linear(c.d_model, c.vocab_size)
        self.generator.weight = self.embed.weight
        # nn.Transformer initialises its own layers (Xavier); the embedding gets the usual
        # N(0, d_model^-0.5), so that entries are of unit size after the √d_model scale.
        nn.init.normal_(self.embed.weight, std=c.d_model**-0.5)
        nn.init.zeros_(self.generator.bias)
        with torch.no_grad():
            self.embed.weight[c.pad_id].zero_()

    def _emb(self, ids: Tensor) -> Tensor:
        return self.dropout(self.embed(ids) * self.scale + self.pe[: ids.size(1)])  # (B, L, D)

    def forward(self, src: Tensor, tgt: Tensor) -> Tensor:
        T = tgt.size(1)
        out = self.transformer(
            self._emb(src),
            self._emb(tgt),
            tgt_mask=nn.Transformer.generate_square_subsequent_mask(T, dtype=torch.bool),
            src_key_padding_mask=src == self.pad_id,
            tgt_key_padding_mask=tgt == self.pad_id,
            memory_key_padding_mask=src == self.pad_id,
        )
        return self.generator(out)  # (B, T, V)

    @torch.no_grad()
    def greedy(self, src: Tensor, extra: int = 50) -> Tensor:
        """Greedy decoding, the whole prefix recomputed at every step (no cache).

        At most ``S + extra`` tokens including ``<bos>`` (capped at ``max_len``), as the
        library's decoders do; ``<pad>`` and ``<bos>`` are never chosen.
        """
        pad_mask = src == self.pad_id  # (B, S), True = blocked (PyTorch's convention)
        memory = self.transformer.encoder(self._emb(src), src_key_padding_mask=pad_mask)
        B = src.size(0)
        ys = torch.full((B, 1), self.bos_id, dtype=torch.long)
        done = torch.zeros(B, dtype=torch.bool)
        for _ in range(min(src.size(1) + extra, self.max_len) - 1):
            T = ys.size(1)
            out = self.transformer.decoder(
                self._emb(ys),
                memory,
                tgt_mask=nn.Transformer.generate_square_subsequent_mask(T, dtype=torch.bool),
                memory_key_padding_mask=pad_mask,
            )
            logits = self.generator(out[:, -1])  # (B, V)
            logits[:, [self.pad_id, self.bos_id]] = float("-inf")
            nxt = logits.argmax(-1).masked_fill(done, self.pad_id)
            ys = torch.cat([ys, nxt[:, None]], dim=1)
            done |= nxt == self.eos_id
            if done.all():
                break
        return ys
