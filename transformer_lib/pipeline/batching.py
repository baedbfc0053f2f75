"""Sentence pairs as tensors: the dataset, padding, and token-budget batches (§5.1).

Taught in chapter 9. :class:`TranslationDataset` turns ``(english, german)`` pairs into
token-id tensors and :func:`token_batches` packs them into padded batches of roughly
equal length under a token budget, as in §5.1 of the paper (sentence pairs batched by
approximate length, about 25,000 source and 25,000 target tokens per batch).

Shapes: B batch, S source length, T target length.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:  # pragma: no cover - only for type checkers
    from .tokenizer import Tokenizer

__all__ = ["TranslationDataset", "batch_indices", "collate", "pad_sequences", "token_batches"]


# --------------------------------------------------------------------------------------
# Tensors and batching
# --------------------------------------------------------------------------------------


class TranslationDataset(torch.utils.data.Dataset):
    """Sentence pairs encoded as token-id tensors.

    The source is encoded without special tokens; the target is wrapped as
    ``<bos> ... <eos>`` so that the decoder input is ``tgt[:, :-1]`` and the
    prediction target is ``tgt[:, 1:]`` (teacher forcing, chapter 9).

    Args:
        pairs: ``(english, german)`` tuples.
        tokenizer: A :class:`~transformer_lib.tokenizer.Tokenizer` shared by both languages.
        max_len: If set, pairs whose source or target (with ``<bos>``/``<eos>``) is
            longer than this many tokens are dropped; use the model's ``max_len``.
            The number dropped is in :attr:`n_dropped`.

    Attributes:
        pairs: The pairs kept, aligned with the tensors.
        src: One ``(S_i,)`` long tensor per pair.
        tgt: One ``(T_i,)`` long tensor per pair, starting with ``<bos>``, ending with ``<eos>``.
        pad_id: The tokenizer's padding id (0).

    Examples:
        >>> ds = TranslationDataset([("Hi.", "Hallo!")], tokenizer)  # doctest: +SKIP
        >>> src, tgt = ds[0]  # doctest: +SKIP
    """

    def __init__(
        self,
        pairs: Sequence[tuple[str, str]],
        tokenizer: Tokenizer,
        max_len: int | None = None,
    ) -> None:
        src_ids = tokenizer.encode_batch([en for en, _ in pairs])
        tgt_ids = tokenizer.encode_batch([de for _, de in pairs], add_bos=True, add_eos=True)
        self.pairs: list[tuple[str, str]] = []
        self.src: list[torch.Tensor] = []
        self.tgt: list[torch.Tensor] = []
        self.n_dropped = 0
        for pair, s, t in zip(pairs, src_ids, tgt_ids):
            if not s or (max_len is not None and (len(s) > max_len or len(t) > max_len)):
                self.n_dropped += 1
                continue
            self.pairs.append((pair[0], pair[1]))
            self.src.append(torch.tensor(s, dtype=torch.long))
            self.tgt.append(torch.tensor(t, dtype=torch.long))
        self.pad_id: int = tokenizer.pad_id

    def __len__(self) -> int:
        return len(self.src)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        return self.src[index], self.tgt[index]

    @property
    def lengths(self) -> list[tuple[int, int]]:
        """``(source length, target length)`` of every example, in tokens."""
        return [(len(s), len(t)) for s, t in zip(self.src, self.tgt)]  # cheap: O(N) len() calls


def pad_sequences(seqs: Sequence[torch.Tensor], pad_id: int = 0) -> torch.Tensor:
    """Stack 1-D id tensors of different lengths into one right-padded matrix.

    Args:
        seqs: 1-D long tensors.
        pad_id: The id to pad with.

    Returns:
        ``(B, L)`` long tensor, ``L`` the longest length.
    """
    if len(seqs) == 0:
        raise ValueError("pad_sequences got no sequences; a batch needs at least one example.")
    longest = max(len(s) for s in seqs)
    out = torch.full((len(seqs), longest), pad_id, dtype=torch.long)
    for i, s in enumerate(seqs):
        out[i, : len(s)] = s
    return out


def collate(
    examples: Sequence[tuple[torch.Tensor, torch.Tensor]], pad_id: int = 0
) -> tuple[torch.Tensor, torch.Tensor]:
    """Pad a list of ``(src, tgt)`` examples into a batch (usable as a DataLoader ``collate_fn``).

    Args:
        examples: ``(src (S_i,), tgt (T_i,))`` pairs, as returned by
            :class:`TranslationDataset`.
        pad_id: The padding id (the tokenizer's ``<pad>``, 0).

    Returns:
        ``(src (B, S), tgt (B, T))`` long tensors, right-padded with ``pad_id``.
    """
    return (
        pad_sequences([s for s, _ in examples], pad_id),
        pad_sequences([t for _, t in examples], pad_id),
    )


def _as_length(item: int | Sequence[int]) -> int:
    return int(item) if isinstance(item, int) else max(int(x) for x in item)


def batch_indices(
    lengths: Sequence[int | Sequence[int]],
    max_tokens: int = 2048,
    shuffle: bool = True,
    seed: int = 0,
    bucket_size: int = 4096,
) -> list[list[int]]:
    """Group example indices into batches of similar length under a token budget.

    A batch of ``B`` examples whose longest sequence has ``L`` tokens costs ``B * L``
    (the size of its padded tensor); every batch satisfies ``B * L <= max_tokens``.

    With ``shuffle=True`` the examples are shuffled, cut into buckets of
    ``bucket_size``, sorted by length inside each bucket (so little padding is
    wasted), packed greedily, and the batches are shuffled again, all with a
    ``random.Random(seed)`` so the same seed gives the same epoch. Pass a different
    seed per epoch (e.g. ``seed=epoch``). With ``shuffle=False`` all examples are
    sorted by length (ties keep input order): useful for fast evaluation.

    Args:
        lengths: Length of each example: an ``int``, or a ``(src_len, tgt_len)`` pair
            whose maximum is used.
        max_tokens: Token budget per batch (padded tensor size).
        shuffle: Shuffle examples and batches (training) or not (evaluation).
        seed: Seed for the shuffles.
        bucket_size: How many shuffled examples are sorted together.

    Returns:
        A list of batches, each a list of example indices; every index appears
        exactly once.

    Raises:
        ValueError: An example alone is longer than ``max_tokens``.
    """
    sizes = [_as_length(x) for x in lengths]
    too_long = [i for i, n in enumerate(sizes) if n > max_tokens]
    if too_long:
        i = too_long[0]
        raise ValueError(
            f"Example {i} has {sizes[i]} tokens, more than max_tokens={max_tokens}, so it "
            f"fits in no batch ({len(too_long)} such examples). Raise max_tokens or drop long "
            f"pairs with TranslationDataset(..., max_len=...)."
        )
    rng = random.Random(seed)
    order = list(range(len(sizes)))
    if shuffle:
        rng.shuffle(order)
        buckets = [order[i : i + bucket_size] for i in range(0, len(order), bucket_size)]
    else:
        buckets = [order]

    batches: list[list[int]] = []
    for bucket in buckets:
        bucket = sorted(bucket, key=lambda i: sizes[i])  # stable: ties keep order
        batch: list[int] = []
        longest = 0
        for i in bucket:
            new_longest = max(longest, sizes[i])
            if batch and (len(batch) + 1) * new_longest > max_tokens:
                batches.append(batch)
                batch, new_longest = [], sizes[i]
            batch.append(i)
            longest = new_longest
        if batch:
            batches.append(batch)
    if shuffle:
        rng.shuffle(batches)
    return batches


def token_batches(
    dataset_or_lengths: TranslationDataset | Sequence[int | Sequence[int]],
    max_tokens: int = 2048,
    shuffle: bool = True,
    seed: int = 0,
    bucket_size: int = 4096,
) -> Iterator[tuple[torch.Tensor, torch.Tensor] | list[int]]:
    """Yield padded batches of similar-length pairs, each within a token budget.

    Given a :class:`TranslationDataset`, yields ``(src (B, S), tgt (B, T))`` long
    tensors padded with the dataset's ``pad_id`` (0), with ``B * max(S, T) <= max_tokens``.
    Given a plain sequence of lengths, yields the index lists instead (see
    :func:`batch_indices`, which documents the bucketing and the seed).

    Args:
        dataset_or_lengths: A :class:`TranslationDataset`, or per-example lengths.
        max_tokens: Token budget per batch.
        shuffle: Shuffle for training; ``False`` sorts by length for evaluation.
        seed: Seed; the same seed gives the same batches.
        bucket_size: How many shuffled examples are length-sorted together.

    Returns:
        An iterator over batches (one epoch).
    """
    if isinstance(dataset_or_lengths, TranslationDataset):
        ds = dataset_or_lengths
        for idx in batch_indices(ds.lengths, max_tokens, shuffle, seed, bucket_size):
            yield collate([ds[i] for i in idx], ds.pad_id)
    else:
        yield from batch_indices(dataset_or_lengths, max_tokens, shuffle, seed, bucket_size)
