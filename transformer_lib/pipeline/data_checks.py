"""Checks of the data: pairs that do not match, test sentences seen in training, and text
the tokenizer or the model cannot hold.

The check kit (:mod:`.check_kit`) measures properties of a model; the bugs here live one
step earlier, in the sentence pairs, and no check of the model can see them. Each check
returns the kit's :class:`~.check_kit.results.CheckResult` (what it measured, the tolerance,
the typical causes when it fails), and :func:`check_data` collects them in a
:class:`~.check_kit.results.CheckReport`. Taught in chapter 13 ("Debugging a Transformer").

- :func:`check_alignment`: a trained translator scores each pair (cross-entropy per target
  token, :func:`pair_losses`); a German side shifted by one line scores like a random
  sentence, far above the loss of a real translation.
- :func:`check_leakage`: test pairs whose English or German sentence (after
  :func:`~.corpus.normalize_sentence`) also occurs in the training split.
- :func:`check_coverage`: the share of ``<unk>`` tokens, and pairs longer than the model's
  ``max_len`` (which :class:`~.batching.TranslationDataset` drops).

    from transformer_lib.pipeline.data_checks import check_data
    report = check_data(splits, translator.model, translator.tokenizer)
    print(report)

Shapes: N pairs, B batch, S source length, T target length.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence

import torch
import torch.nn.functional as F
from torch import Tensor

from .batching import collate
from .check_kit.results import Cause, CheckReport, CheckResult, result
from .corpus import normalize_sentence

__all__ = [
    "ALIGNMENT_THRESHOLD",
    "check_alignment",
    "check_coverage",
    "check_data",
    "check_leakage",
    "flagged_from",
    "pair_losses",
]

#: Nats per target token above which a pair counts as misaligned: a model that gives the
#: reference tokens e^-3 ≈ 5 % probability on average. The shipped translator scores most
#: unseen test pairs well below 1 nat, and a random German sentence above 4.
ALIGNMENT_THRESHOLD = 3.0

SHIFTED = Cause(
    "pairs-shifted",
    "the two sides are out of step from some line on: a line missing or added on one side "
    "(two parallel files, one edited), or sorted or de-duplicated separately",
)
WRONG_SIDE = Cause(
    "sides-swapped-or-wrong-file",
    "the columns are swapped (German as the source), or the pairs come from another "
    "language or domain than the model's",
)
SPLIT_BY_PAIR = Cause(
    "split-by-pair",
    "the split was made by pair or at random: Tatoeba gives one English sentence several "
    "German translations, so its other pairs land in training. Split whole groups of pairs "
    "that share a sentence (corpus.split_pairs)",
)
NEAR_COPIES = Cause(
    "near-copies",
    "the same sentence with another case or final punctuation counts as new "
    "(compare after corpus.normalize_sentence)",
)
UNKNOWN_TEXT = Cause(
    "unknown-characters",
    "text in a script or with symbols the tokenizer never saw (emoji, another alphabet, "
    "typographic quotes): retrain the tokenizer on this data, or clean it",
)
TOO_LONG = Cause(
    "longer-than-max-len",
    "pairs longer than the model's positional table: they are dropped by "
    "TranslationDataset(max_len=...) or fail at decoding; split them or raise max_len",
)


# ---- inputs ------------------------------------------------------------------------------
def _checked_pairs(pairs: Sequence[tuple[str, str]], what: str) -> list[tuple[str, str]]:
    """The pairs as a list, or a clear error naming what is wrong and where."""
    if isinstance(pairs, (str, bytes)) or not isinstance(pairs, Sequence):
        raise TypeError(
            f"{what} must be a list of (english, german) tuples, got {type(pairs).__name__}"
        )
    if len(pairs) == 0:
        raise ValueError(f"{what} is empty: a check needs at least one (english, german) pair")
    for i, pair in enumerate(pairs):
        if (
            not isinstance(pair, (tuple, list))
            or len(pair) != 2
            or not all(isinstance(s, str) for s in pair)
        ):
            raise TypeError(
                f"{what}[{i}] is {pair!r}: each pair must be an (english, german) tuple of "
                "two strings, as corpus.read_pairs returns"
            )
    return [(en, de) for en, de in pairs]


# ---- alignment ---------------------------------------------------------------------------
@torch.no_grad()
def pair_losses(
    model, tokenizer, pairs: Sequence[tuple[str, str]], batch_size: int = 128
) -> Tensor:
    """Each pair's mean cross-entropy per target token under ``model``, in nats: ``(N,)``.

    Teacher forcing as in training (chapter 9): the decoder reads ``<bos> German`` and is
    scored on ``German <eos>``, padding ignored, dropout off.

    Args:
        model: An encoder-decoder ``Transformer`` (``model(src, tgt_in)`` gives logits).
        tokenizer: The model's :class:`~.tokenizer.Tokenizer`.
        pairs: ``(english, german)`` tuples.
        batch_size: Pairs per forward pass.
    """
    pairs = _checked_pairs(pairs, "pairs")
    if batch_size < 1:
        raise ValueError(f"batch_size={batch_size}: it must be at least 1")
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    out = []
    try:
        for i in range(0, len(pairs), batch_size):
            chunk = pairs[i : i + batch_size]
            src_ids = tokenizer.encode_batch([en for en, _ in chunk])
            tgt_ids = tokenizer.encode_batch([de for _, de in chunk], add_bos=True, add_eos=True)
            examples = [(torch.tensor(s), torch.tensor(t)) for s, t in zip(src_ids, tgt_ids)]
            src, tgt = collate(examples, tokenizer.pad_id)  # (B, S), (B, T+1)
            logits = model(src.to(device), tgt[:, :-1].to(device)).float()  # (B, T, V)
            gold = tgt[:, 1:].to(device)  # (B, T): the next tokens
            nll = F.cross_entropy(
                logits.transpose(1, 2), gold, ignore_index=tokenizer.pad_id, reduction="none"
            )  # (B, T)
            out.append((nll.sum(1) / (gold != tokenizer.pad_id).sum(1)).cpu())
    finally:
        model.train(was_training)
    return torch.cat(out)


def flagged_from(flagged: Sequence[bool]) -> int:
    """Where a run of flagged pairs begins: the change point ``k`` of a CUSUM, the index
    from which on the pairs are flagged most often above the overall share. 0 when the
    share is the same throughout (everything flagged, say).

    ``k`` is the first pair of the flagged run, an estimate of the change: a clean pair
    flagged by chance just before a shift starts the run, and ``k`` falls one pair early."""
    x = torch.as_tensor(list(flagged), dtype=torch.float64)
    if len(x) == 0:
        raise ValueError("flagged is empty: there is no pair to place a change point in")
    after = (x - x.mean()).flip(0).cumsum(0).flip(0)  # after[k] = sum over i >= k
    return int(after.argmax()) if float(after.max()) > 1e-9 else 0


def check_alignment(
    model,
    tokenizer,
    pairs: Sequence[tuple[str, str]],
    *,
    threshold: float = ALIGNMENT_THRESHOLD,
    max_share: float = 0.3,
) -> CheckResult:
    """Do the German sides translate their English sides? A trained model tells.

    A pair is *flagged* when the model's loss on it exceeds ``threshold`` nats per token.
    Unseen but aligned pairs are mostly below it; a German sentence that belongs to another
    line is almost always above. The check fails when more than ``max_share`` of the pairs
    are flagged, and then says from which pair on they cluster (:func:`flagged_from`), if
    a stretch of mostly clean pairs (at least 10, and 5 % of them) comes before.

    Args:
        model: A trained encoder-decoder translator (the shipped one: ``load_pretrained()``).
        tokenizer: Its tokenizer.
        pairs: ``(english, german)`` tuples, in file order (a few hundred are enough).
        threshold: Nats per target token above which a pair is flagged.
        max_share: The largest share of flagged pairs that passes.

    Returns:
        A :class:`CheckResult` named ``"alignment"``; ``measured`` holds the median loss of
        the pairs as given and with their German sides rolled by half the list (surely
        misaligned: the yardstick), and the flagged share.
    """
    pairs = _checked_pairs(pairs, "pairs")
    if not threshold > 0:
        raise ValueError(f"threshold={threshold}: a loss in nats per token, above 0")
    if not 0 <= max_share < 1:
        raise ValueError(f"max_share={max_share}: a share between 0 and 1")
    losses = pair_losses(model, tokenizer, pairs)
    half = len(pairs) // 2 or 1
    rolled = [(en, pairs[(i + half) % len(pairs)][1]) for i, (en, _) in enumerate(pairs)]
    yardstick = pair_losses(model, tokenizer, rolled) if len(pairs) > 1 else losses
    flagged = losses > threshold
    share = float(flagged.float().mean())
    measured = {
        "pairs": len(pairs),
        "median loss": float(losses.median()),
        "median loss, German rolled": float(yardstick.median()),
        "flagged": int(flagged.sum()),
        "flagged share": share,
    }
    ok = share <= max_share
    finding = ""
    if not ok:
        k = flagged_from(flagged.tolist())
        clean_before = k >= max(10, len(pairs) // 20)  # a real stretch of pairs ...
        if clean_before and float(flagged[:k].float().mean()) <= max_share:  # ... mostly clean
            measured["flagged from pair"] = k
            where = f"from pair {k} on, {float(flagged[k:].float().mean()):.0%} do"
        else:
            where = "throughout the list"
        finding = (
            f"{share:.0%} of the pairs score above {threshold:g} nats per token, like pairs "
            f"that do not belong together, {where}"
        )
    return result(
        "alignment",
        "each German side translates its English side (loss of a trained model)",
        ok,
        measured,
        f"at most {max_share:.0%} of the pairs above {threshold:g} nats per token",
        finding,
        (SHIFTED, WRONG_SIDE),
    )


# ---- leakage -----------------------------------------------------------------------------
def check_leakage(
    train: Sequence[tuple[str, str]], test: Sequence[tuple[str, str]], *, name: str = "test"
) -> CheckResult:
    """Does any test pair share its English or its German sentence with the training split?

    Sentences are compared after :func:`~.corpus.normalize_sentence` (case and final
    punctuation do not make a sentence new). Any overlap fails: a model that saw the test
    English in training, perhaps with the very German reference, is scored partly on memory.

    Args:
        train: The training pairs.
        test: The held-out pairs (test or validation).
        name: What ``test`` is called in the report.

    Returns:
        A :class:`CheckResult` named ``"leakage"``; ``measured`` counts the test pairs whose
        English, German, or whole pair occurs in training.
    """
    train = _checked_pairs(train, "train")
    test = _checked_pairs(test, name)
    seen_en = {normalize_sentence(en) for en, _ in train}
    seen_de = {normalize_sentence(de) for _, de in train}
    seen_pair = {(normalize_sentence(en), normalize_sentence(de)) for en, de in train}
    keys = [(normalize_sentence(en), normalize_sentence(de)) for en, de in test]
    en = sum(e in seen_en for e, _ in keys)
    de = sum(d in seen_de for _, d in keys)
    both = sum(k in seen_pair for k in keys)
    either = sum(e in seen_en or d in seen_de for e, d in keys)
    measured = {
        f"{name} pairs": len(test),
        "English in train": en,
        "German in train": de,
        "whole pair in train": both,
    }
    ok = either == 0
    finding = ""
    if not ok:
        finding = (
            f"{either} of {len(test)} {name} pairs ({either / len(test):.0%}) share a "
            "sentence with the training split"
        )
    return result(
        "leakage" if name == "test" else f"leakage ({name})",
        f"no {name} sentence (English or German) occurs in training",
        ok,
        measured,
        "0 shared sentences",
        finding,
        (SPLIT_BY_PAIR, NEAR_COPIES),
    )


# ---- coverage ----------------------------------------------------------------------------
def check_coverage(
    tokenizer, pairs: Sequence[tuple[str, str]], max_len: int, *, max_unk: float = 0.001
) -> CheckResult:
    """Can the tokenizer and the model hold the text? ``<unk>`` tokens and overlong pairs.

    Lengths are counted as the model sees them: the source without special tokens, the
    target with ``<bos>`` and ``<eos>``.

    Args:
        tokenizer: The model's :class:`~.tokenizer.Tokenizer`.
        pairs: ``(english, german)`` tuples.
        max_len: The model's ``config.max_len``.
        max_unk: The largest share of ``<unk>`` among all tokens that passes.

    Returns:
        A :class:`CheckResult` named ``"coverage"``: fails when the ``<unk>`` share exceeds
        ``max_unk`` or any pair is longer than ``max_len``.
    """
    pairs = _checked_pairs(pairs, "pairs")
    if not isinstance(max_len, int) or max_len < 1:
        raise ValueError(f"max_len={max_len!r}: the model's config.max_len, a positive int")
    if not 0 <= max_unk < 1:
        raise ValueError(f"max_unk={max_unk}: a share between 0 and 1")
    src = tokenizer.encode_batch([en for en, _ in pairs])
    tgt = tokenizer.encode_batch([de for _, de in pairs], add_bos=True, add_eos=True)
    unk = tokenizer.unk_id
    tokens = sum(map(len, src)) + sum(map(len, tgt))
    unknown = sum(s.count(unk) for s in src) + sum(t.count(unk) for t in tgt)
    with_unk = sum(unk in s or unk in t for s, t in zip(src, tgt))
    too_long = sum(len(s) > max_len or len(t) > max_len for s, t in zip(src, tgt))
    share = unknown / tokens
    measured = {
        "pairs": len(pairs),
        "<unk> share": share,
        "pairs with <unk>": with_unk,
        "longest source": max(map(len, src)),
        "longest target": max(map(len, tgt)),
        "longer than max_len": too_long,
    }
    problems = []
    if share > max_unk:
        problems.append(f"{unknown} of {tokens} tokens are <unk>, in {_pairs(with_unk)}")
    if too_long:
        problems.append(f"{_pairs(too_long)} longer than max_len={max_len} tokens")
    causes = ([UNKNOWN_TEXT] if share > max_unk else []) + ([TOO_LONG] if too_long else [])
    return result(
        "coverage",
        "the tokenizer knows the text and every pair fits the model's max_len",
        not problems,
        measured,
        f"<unk> share at most {max_unk:g}; no pair longer than {max_len} tokens",
        "; ".join(problems),
        causes,
    )


def _pairs(n: int) -> str:
    return f"{n} pair" + ("" if n == 1 else "s")


# ---- all three ---------------------------------------------------------------------------
def check_data(
    splits: Mapping[str, Sequence[tuple[str, str]]],
    model,
    tokenizer,
    *,
    sample: int = 300,
    name: str = "the data",
) -> CheckReport:
    """Run the three data checks on a ``{"train": ..., "test": ...}`` split.

    ``coverage`` reads every pair of every split; ``leakage`` compares the test split (and
    the validation split, if there is one) with training; ``alignment`` scores ``sample``
    test pairs spread evenly over the split, in order.

    Returns:
        A :class:`CheckReport`: ``print(report)`` gives the text, a notebook a table.
    """
    if "train" not in splits or "test" not in splits:
        raise KeyError(
            f"splits has {sorted(splits)}; it needs 'train' and 'test' (as split_pairs returns)"
        )
    if sample < 1:
        raise ValueError(f"sample={sample}: score at least one test pair")
    start = time.perf_counter()
    everything = [p for pairs in splits.values() for p in pairs]
    results = [check_coverage(tokenizer, everything, model.config.max_len)]
    results.append(check_leakage(splits["train"], splits["test"]))
    if splits.get("valid"):
        results.append(check_leakage(splits["train"], splits["valid"], name="valid"))
    test = list(splits["test"])
    n = min(sample, len(test))
    spread = [test[i * len(test) // n] for i in range(n)]  # evenly, in file order
    results.append(check_alignment(model, tokenizer, spread))
    return CheckReport(name, results, time.perf_counter() - start)
