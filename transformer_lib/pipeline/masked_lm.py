"""BERT's masked-language-model input: which tokens to hide, and what to put in their place.

Taught in chapter 14. An encoder-only model sees its whole input, so it cannot be trained
to predict the next token; BERT (Devlin et al., 2019, §3.1) instead picks 15% of the
tokens as targets and corrupts the input there: 80% of the picked tokens become a
``[MASK]`` token, 10% a random token and 10% stay as they are, so that the model cannot
rely on ``[MASK]``, which never occurs in real text. The loss is taken at the picked
positions only.

Shapes: B batch, T length.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

import torch
from torch import Tensor

from .tokenizer import SPECIAL_TOKENS

__all__ = ["IGNORE_INDEX", "MaskedTokens", "mask_tokens"]

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
