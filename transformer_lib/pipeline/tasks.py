"""What one training step computes, per architecture, and the validation loss.

The trainer's loop is the same for every model; a *task* says how a batch of sentence
pairs becomes a loss. The encoder–decoder uses teacher forcing (chapter 9).
"""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..components.decoder_only import DecoderOnlyTransformer
from ..components.decoder_only import build_model as build_any
from .batching import TranslationDataset, batch_indices, collate
from .evaluation import evaluate_pairs
from .lm_batching import DecoderOnlyDataset, collate_decoder_only, decoder_only_loss
from .objectives import LabelSmoothingLoss
from .snapshots import SNAPSHOT_SENTENCES, attention_snapshot

__all__ = [
    "DecoderOnlyTask",
    "EncoderDecoderTask",
    "build_model",
    "evaluate_loss",
    "evaluate_model",
    "make_datasets",
    "task_for",
]


@torch.no_grad()
def evaluate_loss(
    model: nn.Module,
    dataset,
    max_tokens: int = 4096,
    smoothing: float = 0.1,
    device: torch.device | str | None = None,
) -> dict[str, float]:
    """Validation loss over a :class:`~transformer_lib.data.TranslationDataset`.

    Returns:
        ``{"val_loss": label-smoothed KL (the training objective), "val_nll": plain
        cross-entropy per token (nats), "val_ppl": exp(val_nll)}``.
    """
    device = next(model.parameters()).device if device is None else torch.device(device)
    was_training = model.training
    model.eval()
    pad = model.config.pad_id
    criterion = LabelSmoothingLoss(model.config.vocab_size, smoothing, pad)
    kl_sum = nll_sum = 0.0
    n_tokens = 0
    for idx in batch_indices(dataset.lengths, max_tokens, shuffle=False):
        src, tgt = collate([dataset[i] for i in idx], dataset.pad_id)
        src, tgt = src.to(device), tgt.to(device)
        logits = model(src, tgt[:, :-1])  # (B, T-1, V)
        gold = tgt[:, 1:]
        n = int((gold != pad).sum())
        kl_sum += float(criterion(logits, gold)) * n
        nll_sum += (
            float(F.cross_entropy(logits.flatten(0, 1).float(), gold.flatten(), ignore_index=pad))
            * n
        )
        n_tokens += n
    model.train(was_training)
    nll = nll_sum / max(n_tokens, 1)
    return {"val_loss": kl_sum / max(n_tokens, 1), "val_nll": nll, "val_ppl": math.exp(nll)}


class EncoderDecoderTask:
    """Teacher forcing for the encoder–decoder: source in, ``tgt[:, :-1]`` in, ``tgt[:, 1:]``
    predicted."""

    @staticmethod
    def batch_loss(model, items, criterion, device) -> tuple[Tensor, int, int]:
        src, tgt = collate(items, model_pad_id(model))
        src, tgt = src.to(device), tgt.to(device)
        gold = tgt[:, 1:]  # (B, T-1): the next token at every position
        logits = model(src, tgt[:, :-1])  # (B, T-1, V), teacher forcing
        loss = criterion(logits, gold)
        pad = model_pad_id(model)
        n_tgt = int((gold != pad).sum())
        return loss, n_tgt, n_tgt + int((src != pad).sum())

    @staticmethod
    def evaluate_loss(model, dataset, max_tokens, smoothing) -> dict[str, float]:
        return evaluate_loss(model, dataset, max_tokens, smoothing)

    @staticmethod
    def snapshot(model, tokenizer, step: int) -> dict[str, Any]:
        return attention_snapshot(model, tokenizer, SNAPSHOT_SENTENCES, step)


def model_pad_id(model: nn.Module) -> int:
    inner = getattr(model, "module", model)  # DistributedDataParallel keeps the model here
    return inner.config.pad_id


class DecoderOnlyTask:
    """The decoder-only translator: one sequence ``English <sep> German <eos>`` per pair,
    the loss on the German part only (:mod:`.lm_batching`)."""

    def __init__(self, prefix_lm: bool):
        self.prefix_lm = prefix_lm

    def batch_loss(self, model, items, criterion, device) -> tuple[Tensor, int, int]:
        pad = model_pad_id(model)
        batch = collate_decoder_only(items, pad).to(device)
        loss = decoder_only_loss(model, batch, criterion, self.prefix_lm)
        return loss, batch.n_target_tokens, int((batch.ids != pad).sum())

    @torch.no_grad()
    def evaluate_loss(self, model, dataset, max_tokens, smoothing) -> dict[str, float]:
        was_training = model.training
        model.eval()
        device = next(model.parameters()).device
        pad = model.config.pad_id
        criterion = LabelSmoothingLoss(model.config.vocab_size, smoothing, pad)
        kl_sum = nll_sum = 0.0
        n_tokens = 0
        for idx in batch_indices(dataset.lengths, max_tokens, shuffle=False):
            batch = collate_decoder_only([dataset[i] for i in idx], pad).to(device)
            n = batch.n_target_tokens
            kl_sum += float(decoder_only_loss(model, batch, criterion, self.prefix_lm)) * n
            prefix = batch.prefix_len if self.prefix_lm else None
            logits = model(batch.ids[:, :-1], prefix_len=prefix)  # (B, L-1, V)
            target = batch.ids[:, 1:].masked_fill(~batch.loss_mask, pad)
            nll = F.cross_entropy(logits.flatten(0, 1).float(), target.flatten(), ignore_index=pad)
            nll_sum += float(nll) * n
            n_tokens += n
        model.train(was_training)
        nll = nll_sum / max(n_tokens, 1)
        return {"val_loss": kl_sum / max(n_tokens, 1), "val_nll": nll, "val_ppl": math.exp(nll)}

    @staticmethod
    def snapshot(model, tokenizer, step: int) -> dict[str, Any] | None:
        return None  # attention snapshots are recorded for the encoder–decoder only


def task_for(model: nn.Module, run: dict[str, Any] | None = None):
    """The training task that fits ``model``'s architecture."""
    if isinstance(model, DecoderOnlyTransformer):
        return DecoderOnlyTask(model.prefix_lm)
    return EncoderDecoderTask()


def build_model(run: dict[str, Any], config) -> nn.Module:
    """A fresh model of the run's architecture (``run["arch"]``, ``run["prefix_lm"]``)."""
    return build_any(
        {**config.to_dict(), "arch": run.get("arch"), "prefix_lm": run.get("prefix_lm", False)}
    )


def make_datasets(run: dict[str, Any], splits, tokenizer, config):
    """``(train, valid)`` datasets in the form the run's architecture trains on."""
    if run.get("arch") == "decoder-only":
        return tuple(
            DecoderOnlyDataset(splits[name], tokenizer, max_len=config.max_len)
            for name in ("train", "valid")
        )
    return tuple(
        TranslationDataset(splits[name], tokenizer, max_len=config.max_len)
        for name in ("train", "valid")
    )


def evaluate_model(model, tokenizer, pairs, beam: int = 1, alpha: float = 0.6, limit=None):
    """BLEU and chrF of either architecture on ``pairs`` (see :mod:`.evaluation`)."""
    model.eval()
    return evaluate_pairs(model, tokenizer, pairs, beam, alpha, limit)
