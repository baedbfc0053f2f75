"""BERT's masked-language-model input: which tokens to hide, and what to put in their place.

Taught in chapter 14. An encoder-only model sees its whole input, so it cannot be trained
to predict the next token; BERT (Devlin et al., 2019, §3.1) instead picks 15% of the
tokens as targets and corrupts the input there: 80% of the picked tokens become a
``[MASK]`` token, 10% a random token and 10% stay as they are, so that the model cannot
rely on ``[MASK]``, which never occurs in real text. The loss is taken at the picked
positions only.

:class:`MaskedLanguageModel` is the small encoder-only model that chapter 14 trains this
way (``scripts/masked_lm_train.py`` writes ``data/masked_lm.pt``): the library's encoder
stack with a padding mask only, so that every position reads the whole sentence.
:func:`masked_accuracy` hides each token of some sentences in turn and counts the model's
right guesses; :func:`guess_masked` lists its likeliest fillers for one hidden token.

Shapes: B batch, T length.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import NamedTuple

import torch
from torch import Tensor, nn

from ..components.config import TransformerConfig
from ..components.embedding import TokenEmbedding
from ..components.layers import Encoder
from ..components.masks import padding_mask
from ..components.model import check_id_matrix, init_parameters
from ..components.positional import positional_encoding
from .batching import pad_sequences
from .tokenizer import BOS_ID, EOS_ID, SPECIAL_TOKENS

__all__ = [
    "IGNORE_INDEX",
    "MASK_TOKEN",
    "MaskedLanguageModel",
    "MaskedTokens",
    "mask_tokens",
    "guess_masked",
    "load_masked_lm",
    "masked_accuracy",
    "masked_lm_batch",
    "one_mask_at_a_time",
    "shipped_masked_lm_path",
]

#: Target id of the positions that are not predicted (``F.cross_entropy``'s default).
IGNORE_INDEX = -100


class MaskedTokens(NamedTuple):
    """What :func:`mask_tokens` returns; all tensors ``(B, T)`` like the ids."""

    inputs: Tensor  # the corrupted ids the model reads
    targets: Tensor  # the original id where selected, IGNORE_INDEX elsewhere
    selected: Tensor  # bool: a target position
    how: Tensor  # int: 0 not selected, 1 [MASK], 2 random token, 3 kept


def mask_tokens(
    ids: Tensor,
    mask_id: int,
    vocab_size: int,
    rate: float = 0.15,
    special_ids: Iterable[int] = range(len(SPECIAL_TOKENS)),
    seed: int | None = None,
) -> MaskedTokens:
    """Pick BERT's masked-LM targets in ``ids`` and corrupt the input there.

    Each token that is not special (padding, ``<bos>`` …) is picked with probability
    ``rate``; a picked token becomes ``mask_id`` with probability 0.8, a random
    non-special token of the vocabulary with 0.1, and stays itself with 0.1.

    Args:
        ids: ``(B, T)`` (or ``(T,)``) integer token ids.
        mask_id: the ``[MASK]`` token's id (it may be ``vocab_size``: a new token).
        vocab_size: V; random replacements are drawn from ``0 … V−1``, specials left out.
        rate: the share of tokens picked (BERT: 0.15), in (0, 1].
        special_ids: ids never picked and never drawn as replacements; by default the
            tokenizer's special tokens (``<pad>``, ``<unk>``, ``<bos>``, ``<eos>``, ``<sep>``).
        seed: makes the draw reproducible; ``None`` uses torch's global generator.

    Returns:
        :class:`MaskedTokens` ``(inputs, targets, selected, how)``.

    Raises:
        ValueError: ``rate`` outside (0, 1], ids that are not integers, or no
            non-special token in the vocabulary to draw replacements from.

    Example:
        >>> out = mask_tokens(torch.tensor([[2, 10, 11, 12, 3, 0]]), mask_id=100,
        ...                   vocab_size=100, rate=1.0, seed=0)
        >>> out.selected.tolist()  # every token but <bos>, <eos> and <pad>
        [[False, True, True, True, False, False]]
    """
    if not 0.0 < rate <= 1.0:
        raise ValueError(f"rate must be in (0, 1] (BERT uses 0.15), got {rate}")
    if ids.dtype.is_floating_point or ids.dtype == torch.bool:
        raise ValueError(f"ids must be integer token ids, got dtype {ids.dtype}")
    special = torch.tensor(sorted(set(special_ids)), dtype=torch.long)
    vocab = torch.arange(vocab_size)
    candidates = vocab[~torch.isin(vocab, special)]  # ids a random replacement may take
    if len(candidates) == 0:
        raise ValueError("the vocabulary has no non-special token to draw replacements from")
    gen = torch.Generator().manual_seed(seed) if seed is not None else None
    cpu = ids.detach().cpu().long()
    eligible = ~torch.isin(cpu, special)  # never padding or other special tokens
    selected = eligible & (torch.rand(cpu.shape, generator=gen) < rate)
    u = torch.rand(cpu.shape, generator=gen)  # which of the three corruptions
    how = torch.where(u < 0.8, 1, torch.where(u < 0.9, 2, 3)) * selected
    random_ids = candidates[torch.randint(len(candidates), cpu.shape, generator=gen)]
    inputs = torch.where(how == 1, mask_id, torch.where(how == 2, random_ids, cpu))
    targets = torch.where(selected, cpu, IGNORE_INDEX)
    return MaskedTokens(*(t.to(ids.device) for t in (inputs, targets, selected, how)))


# ---- a small encoder-only model that restores the masked tokens ---------------------------

#: How the ``[MASK]`` token is printed; its id is the first one after the tokenizer's.
MASK_TOKEN = "[MASK]"


class MaskedLanguageModel(nn.Module):
    """An encoder-only (BERT-style) model: token ids in, a guess for every position out.

    Built from the library's parts: the token embedding (×√d_model) plus positional
    encoding (§3.4, §3.5), the encoder stack with only a padding mask, so that every
    position reads the whole sentence both ways, and an output layer tied to the
    embedding (§3.4). ``config.vocab_size`` counts the ``[MASK]`` token, whose id is
    ``config.vocab_size - 1`` (:attr:`mask_id`); it is never a prediction.

    Shape:
        ``ids (B, T)`` long → logits ``(B, T, V)``, V = ``config.vocab_size``.

    Example:
        >>> model = MaskedLanguageModel(TransformerConfig.tiny(vocab_size=101))
        >>> model(torch.randint(5, 100, (2, 7))).shape
        torch.Size([2, 7, 101])
    """

    arch = "encoder-only"

    def __init__(self, config: TransformerConfig):
        super().__init__()
        c = self.config = config
        self.mask_id = c.vocab_size - 1
        self.embed = TokenEmbedding(c.vocab_size, c.d_model, c.pad_id)
        self.positional = positional_encoding(c.positional, c.max_len, c.d_model)
        self.embed_dropout = nn.Dropout(c.dropout)
        self.encoder = Encoder(c)
        self.generator = nn.Linear(c.d_model, c.vocab_size)
        init_parameters(self, [self.embed], self.generator, c)
        self.generator.weight = self.embed.weight  # tied, as in the translator

    def hidden_states(self, ids: Tensor) -> Tensor:
        """The encoder's output ``(B, T, D)``; padding is the only thing masked."""
        check_id_matrix(ids, "ids")
        mask = padding_mask(ids, self.config.pad_id)  # (B, 1, 1, T), True = may attend
        x = self.embed_dropout(self.positional(self.embed(ids)))  # (B, T, D)
        return self.encoder(x, mask)[0]  # (B, T, D)

    def forward(self, ids: Tensor) -> Tensor:
        return self.generator(self.hidden_states(ids))  # (B, T, V)

    def logits_at(self, ids: Tensor, where: Tensor) -> Tensor:
        """Logits ``(N, V)`` at the ``N`` positions where the bool ``where (B, T)`` is True,
        with ``[MASK]`` and the special tokens ruled out (they are never an answer)."""
        logits = self.generator(self.hidden_states(ids)[where])  # (N, V)
        logits[:, : len(SPECIAL_TOKENS)] = float("-inf")
        logits[:, self.mask_id] = float("-inf")
        return logits


def masked_lm_batch(sentences: Sequence[Sequence[int]], pad_id: int = 0) -> Tensor:
    """``<bos>`` + ids + ``<eos>`` for each sentence, right-padded: ``(B, T)``."""
    return pad_sequences([torch.tensor([BOS_ID, *s, EOS_ID]) for s in sentences], pad_id)


def one_mask_at_a_time(batch: Tensor, mask_id: int) -> tuple[Tensor, Tensor, Tensor]:
    """Every non-special token of ``batch (B, T)`` hidden once, alone, behind ``[MASK]``.

    Returns ``inputs (N, T)`` (row n: one sentence with one token masked), ``where
    (N, T)`` (bool, the masked position) and ``targets (N,)`` (the hidden ids): N is the
    number of non-special tokens in the batch.
    """
    special = torch.arange(len(SPECIAL_TOKENS))
    rows, cols = torch.nonzero(~torch.isin(batch, special), as_tuple=True)
    inputs = batch[rows].clone()  # (N, T)
    where = torch.zeros_like(inputs, dtype=torch.bool)
    where[torch.arange(len(rows)), cols] = True
    targets = inputs[where]  # (N,)
    inputs[where] = mask_id
    return inputs, where, targets


@torch.no_grad()
def masked_accuracy(
    model: MaskedLanguageModel,
    sentences: Sequence[Sequence[int]],
    word_ids: Iterable[int] = (),
    k: int = 5,
) -> dict[str, int]:
    """Mask each token of each sentence in turn; count the model's top-1 and top-``k`` hits.

    Args:
        model: the masked language model (put in eval mode for the count).
        sentences: token ids, without ``<bos>``/``<eos>`` (:func:`masked_lm_batch` adds them).
        word_ids: token ids counted again on their own (``"word_*"``), e.g. those that
            hold a letter, so that punctuation can be left out.
        k: how many guesses count for ``"top5"`` (the key keeps its name).

    Returns:
        ``{"tokens", "top1", "top5", "word_tokens", "word_top1", "word_top5"}``: masked
        tokens and hits.
    """
    was_training = model.training
    model.eval()
    words = torch.tensor(sorted(set(word_ids)), dtype=torch.long)
    keys = ("tokens", "top1", "top5", "word_tokens", "word_top1", "word_top5")
    counts = dict.fromkeys(keys, 0)
    try:
        for start in range(0, len(sentences), 64):
            batch = masked_lm_batch(sentences[start : start + 64], model.config.pad_id)
            inputs, where, targets = one_mask_at_a_time(batch, model.mask_id)
            best = model.logits_at(inputs, where).topk(k, dim=-1).indices  # (N, k)
            hit = best == targets[:, None]  # (N, k)
            for prefix, keep in [("", slice(None)), ("word_", torch.isin(targets, words))]:
                counts[prefix + "tokens"] += int(hit[keep].size(0))
                counts[prefix + "top1"] += int(hit[keep][:, 0].sum())
                counts[prefix + "top5"] += int(hit[keep].any(-1).sum())
    finally:
        model.train(was_training)
    return counts


def shipped_masked_lm_path() -> Path:
    """``masked_lm.pt`` in the shipped data (chapter 14's model)."""
    from .corpus import shipped_data_dir

    return shipped_data_dir() / "masked_lm.pt"


def load_masked_lm(path: str | os.PathLike | None = None) -> tuple[MaskedLanguageModel, dict]:
    """The model of a ``scripts/masked_lm_train.py`` checkpoint (default: the shipped one),
    in eval mode, and the checkpoint dict (``config``, ``tokenizer_sha256``, ``state``)."""
    path = Path(path) if path is not None else shipped_masked_lm_path()
    ckpt = torch.load(path, map_location="cpu", weights_only=True)
    model = MaskedLanguageModel(TransformerConfig.from_dict(ckpt["config"]))
    model.load_state_dict(ckpt["model"])
    return model.eval(), ckpt


@torch.no_grad()
def guess_masked(
    model: MaskedLanguageModel, ids: Sequence[int], position: int, k: int = 5
) -> list[tuple[int, float]]:
    """Hide token ``position`` of one sentence (ids without ``<bos>``/``<eos>``) behind
    ``[MASK]``; the model's ``k`` likeliest ids there, with their probabilities."""
    batch = masked_lm_batch([ids], model.config.pad_id)  # (1, T + 2)
    where = torch.zeros_like(batch, dtype=torch.bool)
    where[0, position + 1] = True  # + 1: after <bos>
    batch[where] = model.mask_id
    probs = model.logits_at(batch, where).softmax(-1)[0]  # (V,)
    top = probs.topk(k)
    return list(zip(top.indices.tolist(), top.values.tolist()))
