"""Tutorial bugs in training, each written as a small override of one library function.

As in :mod:`.bugs_model`, every override is the library's code with one mistake, marked
``# BUG``, and runs only while :func:`~.planting.plant` has put it in place.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from .. import tasks
from ..batching import batch_indices, collate
from ..lm_batching import collate_decoder_only
from ..objectives import LabelSmoothingLoss, smoothed_targets
from ..tasks import model_pad_id


def label_smoothing_counting_padding(self, logits, target):
    q = smoothed_targets(target.reshape(-1), self.vocab_size, self.smoothing, pad_id=None)  # BUG
    log_p = F.log_softmax(logits.reshape(-1, self.vocab_size).float(), dim=-1)  # (N, V)
    return F.kl_div(log_p, q, reduction="none").sum(-1).mean()  # BUG: <pad> rows in the mean


def noam_lr_wrong_exponents(step: int, d_model: int, warmup: int, factor: float = 1.0) -> float:
    step = max(int(step), 1)
    return factor * d_model**-0.5 * min(step**-0.5, step * warmup**-0.5)  # BUG: warmup^-1.5


def adam_with_pytorch_defaults(model):
    return torch.optim.Adam(model.parameters(), lr=1.0)  # BUG: betas (0.9, 0.999), eps 1e-8


def batch_loss_unshifted(model, items, criterion, device):
    src, tgt = collate(items, model_pad_id(model))
    src, tgt = src.to(device), tgt.to(device)
    gold = tgt[:, :-1]  # BUG: the token the decoder reads, not the next one (tgt[:, 1:])
    logits = model(src, tgt[:, :-1])  # (B, T-1, V), teacher forcing
    loss = criterion(logits, gold)
    pad = model_pad_id(model)
    n_tgt = int((gold != pad).sum())
    return loss, n_tgt, n_tgt + int((src != pad).sum())


def decoder_only_loss_unshifted(model, batch, criterion, prefix_lm):
    pad = getattr(model, "module", model).config.pad_id
    ids, loss_mask, prefix_len = batch
    logits = model(ids[:, :-1], prefix_len=prefix_len if prefix_lm else None)  # (B, L-1, V)
    target = ids[:, :-1].masked_fill(~loss_mask, pad)  # BUG: ids[:, 1:] is the next token
    return criterion(logits, target)


@torch.no_grad()
def decoder_only_validation_unshifted(self, model, dataset, max_tokens, smoothing):
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
        kl_sum += float(tasks.decoder_only_loss(model, batch, criterion, self.prefix_lm)) * n
        prefix = batch.prefix_len if self.prefix_lm else None
        logits = model(batch.ids[:, :-1], prefix_len=prefix)  # (B, L-1, V)
        target = batch.ids[:, :-1].masked_fill(~batch.loss_mask, pad)  # BUG: ids[:, 1:]
        nll = F.cross_entropy(logits.flatten(0, 1).float(), target.flatten(), ignore_index=pad)
        nll_sum += float(nll) * n
        n_tokens += n
    model.train(was_training)
    nll = nll_sum / max(n_tokens, 1)
    return {"val_loss": kl_sum / max(n_tokens, 1), "val_nll": nll, "val_ppl": math.exp(nll)}
