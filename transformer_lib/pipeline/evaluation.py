"""Scoring translations with sacreBLEU: corpus BLEU and chrF against *all* references.

Taught in chapter 10. Tatoeba often lists several German translations of one English
sentence ("Tom is lazy." → "Tom ist faul." / "Tom ist träge."). We translate each
distinct source sentence once and score the output against every accepted translation:
BLEU's n-gram matches are then counted against the best-matching references (clipped by
the maximum count in any one reference), which is fairer than picking one at random.

sacreBLEU takes references as *streams*: stream j holds the j-th reference of every
sentence, and all streams have one entry per sentence. Sentences with fewer references
fill the rest of the streams with ``None``, which sacreBLEU skips (an empty string ``""``
would instead count as a real, empty reference and lower the score).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import groupby
from typing import Any

import sacrebleu

from ..components.decoder_only import DecoderOnlyTransformer
from .corpus import group_references
from .decoding import translate_texts
from .generation import translate_texts_decoder_only

__all__ = [
    "EvaluationResult",
    "corpus_scores",
    "evaluate_pairs",
    "reference_streams",
]


def reference_streams(references: Sequence[Sequence[str]]) -> list[list[str | None]]:
    """Turn per-sentence reference lists into sacreBLEU's reference streams.

    Args:
        references: For each sentence, its list of references (at least one).

    Returns:
        ``max(len(refs))`` streams, each with one entry per sentence (``None`` where a
        sentence has fewer references).

    Example:
        >>> reference_streams([["a", "b"], ["c"]])
        [['a', 'c'], ['b', None]]
    """
    if any(len(r) == 0 for r in references):
        raise ValueError("Every sentence needs at least one reference.")
    n = max((len(r) for r in references), default=0)
    return [[r[j] if j < len(r) else None for r in references] for j in range(n)]


def corpus_scores(
    hypotheses: Sequence[str], references: Sequence[Sequence[str]]
) -> tuple[sacrebleu.metrics.bleu.BLEUScore, sacrebleu.metrics.chrf.CHRFScore, dict[str, str]]:
    """Corpus BLEU and chrF of ``hypotheses`` against all references of each sentence.

    Uses sacreBLEU's defaults (13a tokenisation, exponential smoothing for BLEU; chrF with
    character 6-grams, β = 2), the settings its signature records.

    Returns:
        ``(bleu, chrf, signatures)``; ``bleu.score`` and ``chrf.score`` are in 0–100.
    """
    if len(hypotheses) != len(references):
        raise ValueError(
            f"{len(hypotheses)} hypotheses but {len(references)} reference lists; "
            f"they must align one to one."
        )
    streams = reference_streams(references)
    bleu_metric, chrf_metric = sacrebleu.BLEU(), sacrebleu.CHRF()
    bleu = bleu_metric.corpus_score(list(hypotheses), streams)
    chrf = chrf_metric.corpus_score(list(hypotheses), streams)
    sigs = {"bleu": str(bleu_metric.get_signature()), "chrf": str(chrf_metric.get_signature())}
    return bleu, chrf, sigs


@dataclass
class EvaluationResult:
    """What :func:`evaluate_pairs` measured."""

    bleu: float  # corpus BLEU, 0–100
    chrf: float  # corpus chrF, 0–100
    n_sources: int  # distinct source sentences translated
    n_references: int  # references scored against (all translations of every source)
    beam_size: int
    sources: list[str] = field(default_factory=list, repr=False)
    hypotheses: list[str] = field(default_factory=list, repr=False)
    references: list[list[str]] = field(default_factory=list, repr=False)
    bleu_detail: str = ""  # sacreBLEU's full line (n-gram precisions, brevity penalty)
    signatures: dict[str, str] = field(default_factory=dict)

    def summary(self) -> str:
        return (
            f"BLEU = {self.bleu:.2f}\nchrF = {self.chrf:.2f}\n"
            f"({self.n_sources} source sentences, {self.n_references} references, "
            f"{'greedy' if self.beam_size == 1 else f'beam {self.beam_size}'})"
        )


def translate_any(
    model,
    tokenizer,
    texts: Sequence[str],
    beam_size: int = 1,
    alpha: float = 0.6,
    batch_size: int = 64,
) -> list[str]:
    """Translate with either architecture: the encoder–decoder (:mod:`.decoding`) or the
    decoder-only model, which continues ``English <sep>`` (:mod:`.generation`)."""
    if isinstance(model, DecoderOnlyTransformer):
        return translate_texts_decoder_only(
            model, tokenizer, texts, beam_size, alpha, batch_size=batch_size
        )
    return translate_texts(model, tokenizer, list(texts), beam_size, alpha, batch_size)


def evaluate_pairs(
    model,
    tokenizer,
    pairs: Sequence[tuple[str, str]],
    beam_size: int = 1,
    alpha: float = 0.6,
    limit: int | None = None,
    batch_size: int = 64,
    progress: str | None = None,
) -> EvaluationResult:
    """Translate every distinct source of ``pairs`` and score it against all its references.

    Args:
        model, tokenizer: The translator.
        pairs: ``(english, german)`` tuples; several may share one English sentence.
        beam_size: 1 = greedy decoding, otherwise beam search with ``alpha``.
        alpha: Length-penalty exponent for beam search.
        limit: Score only the first ``limit`` distinct sources (quick checks).
        batch_size: Sentences decoded together.
        progress: If given, a progress bar (on stderr) with this label counts the
            sentences translated. The batches and so the translations are the same
            with or without it.
    """
    groups = group_references(pairs)
    if limit is not None:
        groups = groups[:limit]
    if not groups:
        raise ValueError("No sentence pairs to evaluate.")
    sources = [src for src, _ in groups]
    refs = [r for _, r in groups]
    if progress is None:
        hyps = translate_any(model, tokenizer, sources, beam_size, alpha, batch_size)
    else:
        hyps = _translate_with_progress(
            model, tokenizer, sources, beam_size, alpha, batch_size, progress
        )
    bleu, chrf, sigs = corpus_scores(hyps, refs)
    return EvaluationResult(
        bleu=bleu.score,
        chrf=chrf.score,
        n_sources=len(sources),
        n_references=sum(len(r) for r in refs),
        beam_size=beam_size,
        sources=sources,
        hypotheses=hyps,
        references=refs,
        bleu_detail=str(bleu),
        signatures=sigs,
    )


def _decoding_batches(model, tokenizer, texts: Sequence[str], beam_size: int, batch_size: int):
    """The batches (lists of indices into ``texts``) :func:`translate_any` decodes, in order.

    Both architectures sort the sentences by token count (a stable sort) and cut the
    sorted list into batches of ``max(1, batch_size // beam_size)``; the decoder-only
    model cuts each group of equal length on its own.
    """
    lengths = [len(ids) for ids in tokenizer.encode_batch(list(texts))]
    order = sorted(range(len(texts)), key=lambda i: lengths[i])
    step = max(1, batch_size // max(1, beam_size))
    if not isinstance(model, DecoderOnlyTransformer):
        return [order[i : i + step] for i in range(0, len(order), step)]
    batches = []
    for _, group in groupby(order, key=lambda i: lengths[i]):
        group = list(group)
        batches += [group[i : i + step] for i in range(0, len(group), step)]
    return batches


def _translate_with_progress(
    model, tokenizer, texts, beam_size, alpha, batch_size, label: str
) -> list[str]:
    """:func:`translate_any`, one of its own batches at a time, with a progress bar.

    Each call gets exactly one batch of :func:`_decoding_batches`, already sorted, so
    it decodes that batch as the single call would: the translations are identical.
    """
    from tqdm.auto import tqdm

    out: list[str] = [""] * len(texts)
    with tqdm(total=len(texts), desc=label, unit="sentence") as bar:
        for batch in _decoding_batches(model, tokenizer, texts, beam_size, batch_size):
            hyps = translate_any(
                model, tokenizer, [texts[i] for i in batch], beam_size, alpha, batch_size
            )
            for i, hyp in zip(batch, hyps):
                out[i] = hyp
            bar.update(len(batch))
    return out


def _jsonable(result: EvaluationResult) -> dict[str, Any]:
    return {
        "bleu": round(result.bleu, 2),
        "chrf": round(result.chrf, 2),
        "n_sources": result.n_sources,
        "n_references": result.n_references,
        "beam_size": result.beam_size,
        "signatures": result.signatures,
    }
