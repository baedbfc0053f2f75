"""Sentence pairs as single sequences, for a decoder-only translator.

The encoder–decoder reads the source and writes the target with separate stacks
(:mod:`~transformer_lib.pipeline.batching`). A decoder-only model reads one sequence per pair

    English-ids  <sep>  German-ids  <eos>

and is trained to predict the German part: position t predicts token t + 1, and only the
predictions of German tokens and of the final ``<eos>`` count in the loss (the English is
given, never predicted). The *prefix* is ``English <sep>``, ``prefix_len = len(English) + 1``
tokens; a prefix LM lets it attend both ways
(:func:`~transformer_lib.components.masks.prefix_lm_mask`).

:class:`DecoderOnlyDataset` has ``.lengths`` for
:func:`~transformer_lib.pipeline.batching.batch_indices`, :func:`collate_decoder_only`
pads a batch, and :func:`decoder_only_loss` is the label-smoothed training loss (§5.4).

Shapes: B batch, L sequence length (English + ``<sep>`` + German + ``<eos>``), V vocabulary.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple

import torch
from torch import Tensor

from .batching import pad_sequences

if TYPE_CHECKING:  # pragma: no cover - only for type checkers
    from .objectives import LabelSmoothingLoss
    from .tokenizer import Tokenizer

__all__ = [
    "DecoderOnlyBatch",
    "DecoderOnlyDataset",
    "collate_decoder_only",
    "decoder_only_loss",
    "join_pair",
    "loss_mask_for",
]


def join_pair(
    src_ids: Sequence[int], tgt_ids: Sequence[int], sep_id: int, eos_id: int
) -> tuple[list[int], int]:
    """``English <sep> German <eos>`` as one id list, and its prefix length.

    Args:
        src_ids: English ids, no special tokens.
        tgt_ids: German ids, no special tokens.

    Returns:
        ``(ids, prefix_len)`` with ``prefix_len = len(src_ids) + 1`` (through ``<sep>``).

    Example:
        >>> join_pair([7, 8], [9], sep_id=4, eos_id=3)
        ([7, 8, 4, 9, 3], 3)
    """
    return [*src_ids, sep_id, *tgt_ids, eos_id], len(src_ids) + 1


def loss_mask_for(prefix_len: Tensor, lengths: Tensor, width: int) -> Tensor:
    """Which next-token predictions count: ``(B, width)`` bool, ``width = L - 1``.

    Prediction t (made at position t) is of token t + 1. It counts when token t + 1 is German
    or the final ``<eos>``: ``prefix_len ≤ t + 1 < length``. So the prediction made at
    ``<sep>`` (of the first German token) counts; those of English tokens and of ``<sep>``
    itself, and those past the end (padding), do not.
    """
    target_pos = torch.arange(1, width + 1, device=prefix_len.device)[None, :]  # (1, L-1)
    return (target_pos >= prefix_len[:, None]) & (target_pos < lengths[:, None])  # (B, L-1)


class DecoderOnlyBatch(NamedTuple):
    """A padded batch: ``ids (B, L)``, ``loss_mask (B, L-1)`` bool, ``prefix_len (B,)``.

    The model reads ``ids[:, :-1]``; its logits ``(B, L-1, V)`` are compared with
    ``ids[:, 1:]`` where ``loss_mask`` is True.
    """

    ids: Tensor
    loss_mask: Tensor
    prefix_len: Tensor

    def to(self, device: torch.device | str) -> DecoderOnlyBatch:
        return DecoderOnlyBatch(*(t.to(device) for t in self))

    @property
    def n_target_tokens(self) -> int:
        """Number of predictions in the loss (German tokens and ``<eos>``)."""
        return int(self.loss_mask.sum())


class DecoderOnlyDataset(torch.utils.data.Dataset):
    """Sentence pairs as ``English <sep> German <eos>`` id tensors.

    Args:
        pairs: ``(english, german)`` tuples.
        tokenizer: the shared tokenizer; it must have a ``<sep>`` token unless ``sep_id``
            is given.
        max_len: if set, pairs whose joined sequence is longer than this many tokens are
            dropped (use the model's ``max_len``); the count is in :attr:`n_dropped`.
        sep_id: the separator id (default ``tokenizer.token_to_id("<sep>")``).

    As in :class:`~transformer_lib.pipeline.batching.TranslationDataset`, the English is
    encoded without special tokens and pairs with an empty English side are dropped.
    ``dataset[i]`` is ``(ids (L_i,), prefix_len)``.
    """

    def __init__(
        self,
        pairs: Sequence[tuple[str, str]],
        tokenizer: Tokenizer,
        max_len: int | None = None,
        sep_id: int | None = None,
    ) -> None:
        if sep_id is None:
            sep_id = tokenizer.token_to_id("<sep>")
            if sep_id is None:
                raise ValueError(
                    "The tokenizer has no <sep> token to separate English from German. Use a "
                    "tokenizer trained with <sep> among its special tokens, or pass sep_id."
                )
        src_ids = tokenizer.encode_batch([en for en, _ in pairs])
        tgt_ids = tokenizer.encode_batch([de for _, de in pairs])
        self._build(src_ids, tgt_ids, sep_id, tokenizer.eos_id, tokenizer.pad_id, max_len)
        self.pairs = [(pairs[i][0], pairs[i][1]) for i in self._kept]

    @classmethod
    def from_ids(
        cls,
        src_ids: Sequence[Sequence[int]],
        tgt_ids: Sequence[Sequence[int]],
        sep_id: int,
        eos_id: int,
        pad_id: int = 0,
        max_len: int | None = None,
    ) -> DecoderOnlyDataset:
        """The dataset from already-encoded pairs (ids without special tokens)."""
        if len(src_ids) != len(tgt_ids):
            raise ValueError(
                f"src_ids and tgt_ids must pair up, got {len(src_ids)} and {len(tgt_ids)}"
            )
        ds = cls.__new__(cls)
        ds._build(src_ids, tgt_ids, sep_id, eos_id, pad_id, max_len)
        ds.pairs = []
        return ds

    def _build(self, src_ids, tgt_ids, sep_id, eos_id, pad_id, max_len) -> None:
        if pad_id in (sep_id, eos_id):
            raise ValueError(f"sep_id={sep_id} and eos_id={eos_id} must differ from pad_id")
        self.sep_id, self.eos_id, self.pad_id = sep_id, eos_id, pad_id
        self.seqs: list[Tensor] = []
        self.prefix_lens: list[int] = []
        self._kept: list[int] = []
        self.n_dropped = 0
        for i, (s, t) in enumerate(zip(src_ids, tgt_ids)):
            ids, prefix_len = join_pair(s, t, sep_id, eos_id)
            if not s or (max_len is not None and len(ids) > max_len):
                self.n_dropped += 1
                continue
            self.seqs.append(torch.tensor(ids, dtype=torch.long))
            self.prefix_lens.append(prefix_len)
            self._kept.append(i)

    def __len__(self) -> int:
        return len(self.seqs)

    def __getitem__(self, index: int) -> tuple[Tensor, int]:
        return self.seqs[index], self.prefix_lens[index]

    @property
    def lengths(self) -> list[int]:
        """Length of every joined sequence, in tokens (for ``batch_indices``)."""
        return [len(s) for s in self.seqs]


def collate_decoder_only(
    examples: Sequence[tuple[Tensor, int]], pad_id: int = 0
) -> DecoderOnlyBatch:
    """Pad ``(ids, prefix_len)`` examples into a :class:`DecoderOnlyBatch`.

    Usable as a DataLoader ``collate_fn`` (with ``functools.partial`` for ``pad_id``).

    Returns:
        ``ids (B, L)`` right-padded with ``pad_id``; ``loss_mask (B, L-1)`` True where the
        prediction of ``ids[:, 1:]`` counts (German tokens and ``<eos>``); ``prefix_len (B,)``.
    """
    ids = pad_sequences([s for s, _ in examples], pad_id)  # (B, L)
    prefix_len = torch.tensor([int(p) for _, p in examples], dtype=torch.long)  # (B,)
    lengths = torch.tensor([len(s) for s, _ in examples], dtype=torch.long)  # (B,)
    return DecoderOnlyBatch(ids, loss_mask_for(prefix_len, lengths, ids.size(1) - 1), prefix_len)


def decoder_only_loss(
    model, batch: DecoderOnlyBatch, criterion: LabelSmoothingLoss, prefix_lm: bool
) -> Tensor:
    """The label-smoothed loss (§5.4) of the German part of a batch (teacher forcing).

    The model reads ``ids[:, :-1]`` (with a prefix-LM mask if ``prefix_lm``); targets are
    ``ids[:, 1:]`` with every position outside ``loss_mask`` set to the pad id, which the
    criterion ignores. The mean is over ``batch.n_target_tokens`` predictions.

    Args:
        model: a :class:`~transformer_lib.components.decoder_only.DecoderOnlyTransformer`.
        batch: from :func:`collate_decoder_only`, on the model's device (``batch.to(...)``).
        criterion: a :class:`~transformer_lib.pipeline.objectives.LabelSmoothingLoss` whose
            ``pad_id`` is the model's.
        prefix_lm: train as a prefix LM (``English <sep>`` attends both ways).

    Returns:
        A scalar tensor.
    """
    pad = getattr(model, "module", model).config.pad_id  # .module: under DistributedDataParallel
    if getattr(criterion, "pad_id", pad) != pad:
        raise ValueError(
            f"criterion ignores pad_id={criterion.pad_id} but the model's pad_id is {pad}; "
            f"build LabelSmoothingLoss(vocab_size, smoothing, pad_id={pad}) so that the "
            "English positions (set to pad) are ignored."
        )
    ids, loss_mask, prefix_len = batch
    logits = model(ids[:, :-1], prefix_len=prefix_len if prefix_lm else None)  # (B, L-1, V)
    target = ids[:, 1:].masked_fill(~loss_mask, pad)  # (B, L-1): German and <eos> only
    return criterion(logits, target)
