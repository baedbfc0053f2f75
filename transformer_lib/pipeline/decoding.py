"""Turning a trained model into translations: greedy decoding and beam search.

Taught in chapter 10. The model gives a distribution over the next token given the
source and the target prefix; decoding chooses the tokens.

* :func:`greedy_decode` takes the most likely token at every step.
* :func:`beam_search` keeps the ``beam_size`` best prefixes (the paper, §6.1: "beam search
  with a beam size of 4 and length penalty α = 0.6"), scoring finished hypotheses with the
  GNMT length penalty :func:`length_penalty`.

Both are batched, stop a sentence at ``<eos>``, never run past :func:`max_output_length`,
and decode incrementally with the model's :class:`~transformer_lib.layers.KVCache`: each
step feeds only the newest token, and the keys/values of earlier steps come from the cache.

Outputs are ``(B, L)`` id tensors that start with ``<bos>``; after a sentence's ``<eos>``
the row is filled with ``<pad>``.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor

from .batching import pad_sequences

__all__ = [
    "Hypothesis",
    "beam_search",
    "beam_search_loop",
    "greedy_decode",
    "length_penalty",
    "max_output_length",
    "score_sequences",
    "encode_sources",
    "translate_texts",
]

#: How many tokens the output may be longer than the source (plus a cap at ``max_len``).
EXTRA_OUTPUT_TOKENS = 50


def max_output_length(src_len: int, max_len: int, extra: int = EXTRA_OUTPUT_TOKENS) -> int:
    """Most target tokens (``<bos>`` included) to generate for a source of ``src_len``.

    ``src_len + extra``, capped by the model's positional table ``max_len``: a guard
    against a model that never emits ``<eos>``.
    """
    return max(2, min(src_len + extra, max_len))


def length_penalty(length: int | Tensor, alpha: float) -> float | Tensor:
    """GNMT's length penalty ``((5 + |Y|) / 6)^α`` (Wu et al. 2016, Eq. 14).

    A hypothesis is ranked by ``log P(Y | X) / length_penalty(|Y|, α)``. Log-probabilities
    are negative and only fall as tokens are added, so without it (α = 0) beam search
    favours short outputs; α > 0 divides long hypotheses' scores by more. ``|Y|`` counts
    the generated tokens including ``<eos>``.
    """
    return ((5.0 + length) / 6.0) ** alpha


def _check_src(model, src: Tensor) -> None:
    if not isinstance(src, Tensor) or src.dim() != 2:
        raise ValueError(
            "src must be a (B, S) tensor of token ids; for one sentence use unsqueeze(0)"
        )
    if src.size(1) > model.config.max_len:
        raise ValueError(
            f"The source has {src.size(1)} tokens but the model accepts at most "
            f"max_len={model.config.max_len}. Split the input into shorter sentences."
        )


def _never_generate(logits: Tensor, config, extra: tuple[int, ...] = ()) -> Tensor:
    """Rule out ``<pad>`` and ``<bos>`` (and ``extra`` ids, e.g. ``<sep>``) as outputs:
    they are inputs, never predictions."""
    logits = logits.clone()
    logits[:, [config.pad_id, config.bos_id, *extra]] = float("-inf")
    return logits


@torch.no_grad()
def greedy_decode(model, src: Tensor, max_len: int | None = None, use_cache: bool = True) -> Tensor:
    """Translate by taking the most likely next token at every step.

    Args:
        model: A :class:`~transformer_lib.Transformer` (put in eval mode by the caller;
            :func:`greedy_decode` does not change its mode).
        src: ``(B, S)`` source ids, right-padded with ``pad_id``.
        max_len: Most output tokens including ``<bos>``; default
            :func:`max_output_length` of the source length.
        use_cache: Feed one token per step and reuse earlier keys/values (fast). ``False``
            re-runs the decoder on the whole prefix each step (the same result, slower;
            kept to test the cache against).

    Returns:
        ``(B, L)`` ids starting with ``<bos>``; padding after each row's ``<eos>``.
    """
    _check_src(model, src)
    c = model.config
    limit = max_len or max_output_length(src.size(1), c.max_len)
    memory, src_mask = model.encode(src)
    B = src.size(0)
    ys = torch.full((B, 1), c.bos_id, dtype=torch.long, device=src.device)  # (B, 1)
    finished = torch.zeros(B, dtype=torch.bool, device=src.device)
    cache = model.new_cache() if use_cache else None
    for _ in range(limit - 1):
        step_in = ys[:, -1:] if use_cache else ys  # (B, 1) with a cache, else (B, t)
        logits = model.decode(step_in, memory, src_mask, cache=cache)[:, -1]  # (B, V)
        next_tok = _never_generate(logits, c).argmax(-1)  # (B,)
        next_tok = next_tok.masked_fill(finished, c.pad_id)
        ys = torch.cat([ys, next_tok[:, None]], dim=1)
        finished |= next_tok == c.eos_id
        if finished.all():
            break
    return ys


@torch.no_grad()
def score_sequences(model, src: Tensor, tgt: Tensor) -> Tensor:
    """Sum of log-probabilities the model gives each target ``(B, T)`` (``<bos>`` first).

    Padding positions add nothing. As in the decoders, ``<pad>`` and ``<bos>`` are ruled
    out before the softmax, so this is the score beam search maximises. Used to compare
    decoders: a better search finds a hypothesis with a higher score.
    """
    logits = model(src, tgt[:, :-1])  # (B, T-1, V)
    B, T1, V = logits.shape
    logits = _never_generate(logits.float().reshape(B * T1, V), model.config).view(B, T1, V)
    logp = F.log_softmax(logits, dim=-1)
    gold = tgt[:, 1:]
    tok = logp.gather(-1, gold.unsqueeze(-1)).squeeze(-1)  # (B, T-1)
    return tok.masked_fill(gold == model.config.pad_id, 0.0).sum(-1)


@dataclass
class Hypothesis:
    """One finished beam-search output: ids (``<bos>`` ... ``<eos>``), log-probability
    and the length-normalised score it was ranked by."""

    tokens: list[int]
    log_prob: float
    score: float


def beam_search_loop(
    step,
    reorder,
    start: Tensor,
    batch_size: int,
    beam_size: int,
    max_new_tokens: int,
    alpha: float,
    config,
    never: tuple[int, ...] = (),
    on_step=None,
    strict_eos: bool = False,
) -> list[list[Hypothesis]]:
    """The search of :func:`beam_search`, for any model that extends a start sequence.

    The stopping and finishing rule is described in :func:`beam_search`.

    Args:
        step: ``step(ys)`` → next-token logits ``(B·K, V)`` for the hypotheses ``ys
            (B·K, t)`` (row ``b·K + k`` is beam k of sentence b); a cached model feeds only
            what it has not seen yet.
        reorder: ``reorder(rows)`` makes any cached state follow the kept hypotheses.
        start: ``(B·K, t0)`` ids every hypothesis starts with (``<bos>``, or a prompt).
        batch_size, beam_size: B and K.
        max_new_tokens: most tokens to add (``<eos>`` included).
        alpha: length-penalty exponent; ``|Y|`` counts the added tokens.
        config: the model config (``pad_id``, ``bos_id``, ``eos_id``, ``vocab_size``).
        never: ids never to generate besides ``<pad>`` and ``<bos>``.
        on_step: if given, called after every step ``t`` for each sentence ``b`` still
            searching, as ``on_step(b, t, candidates, live, finished)``: its ``2K`` best
            extensions and the ones kept live, each as ``(ids, log P)`` with ``ids``
            including ``start``, best first, and the hypotheses finished at this step.
            For following the search (``views.explorers.beam.trace_beam_search``).
        strict_eos: finish only ``<eos>`` extensions among the ``K`` best of a step, as
            fairseq does (one ranked lower is dropped); by default one finishes whenever
            fewer than ``K`` live extensions rank above it.

    Returns:
        For each sentence, its finished :class:`Hypothesis` list (unsorted); ``tokens``
        include ``start``.
    """
    c, B, K, device = config, batch_size, beam_size, start.device
    limit = max_new_tokens + 1
    ys = start
    # Only beam 0 is live at the start; the others are copies that must not be chosen.
    beam_logp = torch.full((B, K), float("-inf"), device=device)
    beam_logp[:, 0] = 0.0
    finished: list[list[Hypothesis]] = [[] for _ in range(B)]
    done = [False] * B
    V = c.vocab_size
    for t in range(1, limit):
        logits = step(ys)  # (B·K, V)
        logp = F.log_softmax(_never_generate(logits.float(), c, never), dim=-1).view(B, K, V)
        cand = (beam_logp.unsqueeze(-1) + logp).view(B, K * V)  # (B, K·V) prefix + next
        top_logp, top_idx = cand.topk(min(2 * K, K * V), dim=-1)  # (B, 2K)
        top_beam, top_tok = top_idx // V, top_idx % V
        last_step = t == limit - 1
        new_beam = [[0] * K for _ in range(B)]  # which live prefix each new beam extends
        new_tok = [[c.pad_id] * K for _ in range(B)]
        new_logp = [[float("-inf")] * K for _ in range(B)]
        top_logp_l, top_beam_l, top_tok_l = top_logp.tolist(), top_beam.tolist(), top_tok.tolist()
        for b in range(B):
            if done[b]:
                continue
            kept, n_finished = 0, len(finished[b])
            for rank, (lp, k, tok) in enumerate(zip(top_logp_l[b], top_beam_l[b], top_tok_l[b])):
                if lp == float("-inf"):
                    break
                if tok == c.eos_id or last_step:
                    too_low = strict_eos and rank >= K and not last_step
                    if len(finished[b]) < K and not too_low:  # stop once K have finished
                        seq = ys[b * K + k].tolist() + [tok]
                        finished[b].append(Hypothesis(seq, lp, lp / length_penalty(t, alpha)))
                elif kept < K:
                    new_beam[b][kept], new_tok[b][kept], new_logp[b][kept] = k, tok, lp
                    kept += 1
                if kept == K and (len(finished[b]) >= K or not last_step):
                    break
            if on_step is not None:
                prefix = [ys[b * K + k].tolist() for k in range(K)]
                on_step(
                    b,
                    t,
                    [
                        (prefix[k] + [tok], lp)
                        for lp, k, tok in zip(top_logp_l[b], top_beam_l[b], top_tok_l[b])
                        if lp != float("-inf")
                    ],
                    [
                        (prefix[k] + [tok], lp)
                        for k, tok, lp in zip(new_beam[b], new_tok[b], new_logp[b][:kept])
                    ],
                    finished[b][n_finished:],
                )
            if len(finished[b]) >= K or last_step:
                done[b] = True
                new_logp[b] = [float("-inf")] * K
        if all(done):
            break
        rows = torch.tensor([b * K + k for b in range(B) for k in new_beam[b]], device=device)
        chosen = torch.tensor(new_tok, device=device).view(-1, 1)  # (B·K, 1)
        ys = torch.cat([ys.index_select(0, rows), chosen], dim=1)
        reorder(rows)
        beam_logp = torch.tensor(new_logp, device=device)  # (B, K)
    return finished


@torch.no_grad()
def beam_search(
    model,
    src: Tensor,
    beam_size: int = 4,
    alpha: float = 0.6,
    max_len: int | None = None,
    n_best: int = 1,
    return_hypotheses: bool = False,
    on_step=None,
    strict_eos: bool = False,
):
    """Beam search with the GNMT length penalty, batched over sentences.

    At every step each of the ``beam_size`` live prefixes of a sentence is extended by
    every token, and the ``2 · beam_size`` best extensions are taken in order of
    log-probability: one ending in ``<eos>`` is set aside as finished (scored
    ``log P / length_penalty(len, alpha)``) while fewer than ``beam_size`` have finished,
    any other becomes a live prefix, and the step ends once ``beam_size`` are live, so an
    ``<eos>`` extension ranked below the last live one is dropped. A sentence is done as
    soon as it has ``beam_size`` finished hypotheses, even if a live prefix could still
    score better (fairseq stops so too, but finishes only ``<eos>`` extensions among the
    ``beam_size`` best; tensor2tensor stops only when no live prefix can still win), or
    at the length limit, where the best extensions of the last step are finished as
    they are. With ``beam_size=1`` this is exactly :func:`greedy_decode`.

    Args:
        model: A :class:`~transformer_lib.Transformer` in eval mode.
        src: ``(B, S)`` source ids.
        beam_size: Prefixes kept per sentence (the paper: 4).
        alpha: Length-penalty exponent (the paper: 0.6; 0 = raw log-probability).
        max_len: Most output tokens including ``<bos>`` (default :func:`max_output_length`).
        n_best: With ``return_hypotheses``, how many hypotheses per sentence to return.
        return_hypotheses: Return ``B`` lists of :class:`Hypothesis`, best first, instead
            of a tensor.
        on_step: Called after every step of the search (see :func:`beam_search_loop`).
        strict_eos: Finish only ``<eos>`` extensions among the ``beam_size`` best of a
            step, fairseq's rule (see :func:`beam_search_loop`).

    Returns:
        ``(B, L)`` ids of each sentence's best hypothesis (``<bos>`` first, padded after
        ``<eos>``), or the hypothesis lists.
    """
    _check_src(model, src)
    if beam_size < 1:
        raise ValueError(f"beam_size must be >= 1, got {beam_size}")
    c = model.config
    K, B, device = beam_size, src.size(0), src.device
    limit = max_len or max_output_length(src.size(1), c.max_len)
    memory, src_mask = model.encode(src)  # (B, S, D), (B, 1, 1, S)
    memory = memory.repeat_interleave(K, dim=0)  # (B·K, S, D): row b·K + k is beam k of b
    src_mask = src_mask.repeat_interleave(K, dim=0)
    cache = model.new_cache()
    start = torch.full((B * K, 1), c.bos_id, dtype=torch.long, device=device)  # (B·K, 1)

    def step(ys: Tensor) -> Tensor:  # the newest token of every hypothesis → (B·K, V)
        return model.decode(ys[:, -1:], memory, src_mask, cache=cache)[:, -1]

    finished = beam_search_loop(
        step,
        cache.reorder,
        start,
        B,
        K,
        limit - 1,
        alpha,
        c,
        on_step=on_step,
        strict_eos=strict_eos,
    )
    results = [sorted(h, key=lambda x: x.score, reverse=True) for h in finished]
    if return_hypotheses:
        return [r[:n_best] for r in results]
    best = [r[0].tokens for r in results]
    out = torch.full((B, max(len(x) for x in best)), c.pad_id, dtype=torch.long, device=device)
    for b, seq in enumerate(best):
        out[b, : len(seq)] = torch.tensor(seq, device=device)
    return out


@torch.no_grad()
def translate_texts(
    model,
    tokenizer,
    texts: list[str],
    beam_size: int = 1,
    alpha: float = 0.6,
    batch_size: int = 64,
) -> list[str]:
    """Translate sentences (strings) with greedy decoding (``beam_size=1``) or beam search.

    Sentences are encoded without special tokens (as in training), sorted by length and
    decoded in batches; the result is in input order.

    Raises:
        ValueError: A sentence is empty (or only whitespace), or has more tokens than the
            model's ``max_len`` (it is not truncated silently: split it into sentences).
    """
    texts = list(texts)
    ids = encode_sources(model, tokenizer, texts)
    device = next(model.parameters()).device
    was_training = model.training
    model.eval()
    order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
    out: list[str] = [""] * len(ids)
    pad = model.config.pad_id
    step = max(1, batch_size // max(1, beam_size)) if beam_size > 1 else batch_size
    for start in range(0, len(order), step):
        chunk = order[start : start + step]
        src = pad_sequences([torch.tensor(ids[i]) for i in chunk], pad).to(device)  # (B, S)
        if beam_size == 1:
            hyp = greedy_decode(model, src)
        else:
            hyp = beam_search(model, src, beam_size=beam_size, alpha=alpha)
        for r, i in enumerate(chunk):
            out[i] = tokenizer.decode(hyp[r].tolist())
    model.train(was_training)
    return out


def encode_sources(model, tokenizer, texts: list[str]) -> list[list[int]]:
    """Source ids of each sentence, after checking it can be translated.

    Raises:
        TypeError: An item is not a str.
        ValueError: A sentence is empty (or only whitespace), or has more tokens than the
            model's ``max_len`` (it is not truncated silently: split it into sentences).
    """
    for i, t in enumerate(texts):
        if not isinstance(t, str):
            raise TypeError(f"Sentence {i} is a {type(t).__name__}, not a str.")
        if not t.strip():
            raise ValueError(
                f"Sentence {i} is empty; give at least one word to translate "
                f"(empty input has no translation)."
            )
    ids = tokenizer.encode_batch(texts)
    limit = model.config.max_len
    for i, seq in enumerate(ids):
        if len(seq) > limit:
            raise ValueError(
                f"Sentence {i} has {len(seq)} tokens but the model accepts at most "
                f"max_len={limit}. It is not truncated silently: split it into shorter "
                f"sentences. (It was trained on sentences of at most a few dozen tokens.)"
            )
    return ids
