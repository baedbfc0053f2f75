"""Generating text with a decoder-only model: greedy, temperature, top-k and top-p sampling.

A decoder-only model (:class:`~transformer_lib.components.decoder_only.DecoderOnlyTransformer`)
gives a distribution over the next token of one sequence. :func:`generate` extends a prompt
one token at a time, choosing each token by

* greedy decoding: the most likely token (``greedy=True``);
* sampling from ``softmax(logits / temperature)`` — below 1 sharpens the distribution,
  above 1 flattens it — optionally restricted to the ``top_k`` most likely tokens and/or
  to the smallest set whose probability reaches ``top_p`` (nucleus sampling, Holtzman et
  al. 2020). :func:`next_token_distribution` returns exactly the distribution sampled from.

It decodes incrementally with the model's key/value cache (each step feeds only the newest
token). :func:`translate_decoder_only` translates ``English <sep>`` prompts greedily or with
the beam search of :mod:`~transformer_lib.pipeline.decoding` (same length penalty).

Shapes: B batch, T length, V vocabulary size, K beam size.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from itertools import groupby

import torch
from torch import Tensor

from .decoding import (
    EXTRA_OUTPUT_TOKENS,
    beam_search_loop,
    encode_sources,
)

__all__ = [
    "UNK_DISPLAY",
    "context_room",
    "decode_for_display",
    "generate",
    "next_token_distribution",
    "translate_decoder_only",
    "translate_texts_decoder_only",
]


def _check_sampling(temperature: float, top_k: int | None, top_p: float | None) -> None:
    if not temperature > 0:  # also rejects NaN
        raise ValueError(
            f"temperature must be > 0, got {temperature}. For the most likely token (the "
            f"limit temperature → 0) use greedy=True, which takes the argmax."
        )
    if not math.isfinite(temperature):
        raise ValueError(
            f"temperature must be a finite number, got {temperature}: dividing the logits "
            f"by it leaves no distribution to sample from (a very large temperature, e.g. "
            f"100, is close to uniform sampling)."
        )
    if top_k is not None and (isinstance(top_k, bool) or int(top_k) != top_k or top_k < 1):
        raise ValueError(f"top_k must be an integer >= 1 (or None for no limit), got {top_k!r}")
    if top_p is not None and not 0.0 < top_p <= 1.0:
        raise ValueError(
            f"top_p must be in (0, 1] (the probability mass to keep; 1 keeps every token), "
            f"got {top_p!r}"
        )


def next_token_distribution(
    logits: Tensor,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
) -> Tensor:
    """The probabilities :func:`generate` samples the next token from.

    ``softmax(logits / temperature)``; then, with ``top_k``, every token outside the k most
    likely gets probability 0; then, with ``top_p``, only the smallest set of most likely
    tokens whose mass reaches ``top_p`` is kept (the most likely token always is). What is
    kept is renormalised to sum to 1.

    Args:
        logits: ``(..., V)`` next-token logits.
        temperature: > 0.
        top_k: keep the k most likely tokens (``None``: all).
        top_p: keep the smallest set with mass ≥ ``top_p``, in (0, 1] (``None`` or 1: all).

    Returns:
        ``(..., V)`` float probabilities, each row summing to 1.

    Example:
        >>> next_token_distribution(torch.tensor([2.0, 1.0, 0.0]), top_k=2)
        tensor([0.7311, 0.2689, 0.0000])
    """
    _check_sampling(temperature, top_k, top_p)
    logits = logits.float() / temperature  # (..., V)
    if top_k is not None and top_k < logits.size(-1):
        keep = torch.zeros_like(logits, dtype=torch.bool)
        keep.scatter_(-1, logits.topk(int(top_k), dim=-1).indices, True)  # exactly k kept
        logits = logits.masked_fill(~keep, float("-inf"))
    probs = logits.softmax(dim=-1)
    if top_p is not None and top_p < 1.0:
        sorted_p, order = probs.sort(dim=-1, descending=True)  # (..., V)
        mass_before = sorted_p.cumsum(dim=-1) - sorted_p  # mass of the more likely tokens
        keep_sorted = mass_before < top_p  # the first token always; stop once p is reached
        keep = torch.zeros_like(keep_sorted).scatter(-1, order, keep_sorted)
        probs = probs.masked_fill(~keep, 0.0)
        probs = probs / probs.sum(dim=-1, keepdim=True)
    return probs


def _prompt_tensor(model, prompt_ids) -> tuple[Tensor, bool]:
    """``(B, T)`` long tensor on the model's device; and whether the input was one sequence."""
    device = next(model.parameters()).device
    ids = torch.as_tensor(prompt_ids, dtype=torch.long, device=device)
    single = ids.dim() == 1
    if single:
        ids = ids.unsqueeze(0)
    if ids.dim() != 2:
        raise ValueError(
            f"prompt_ids must be one sequence (T,) or a batch (B, T) of token ids, got shape "
            f"{tuple(ids.shape)}"
        )
    if ids.size(0) == 0 or ids.size(1) == 0:
        raise ValueError(
            "prompt_ids is empty: give at least one token to continue (e.g. a sentence's ids, "
            "or a start token)."
        )
    limit = model.config.max_len
    if ids.size(1) > limit:
        raise ValueError(
            f"The prompt has {ids.size(1)} tokens but the model's context is max_len={limit} "
            f"positions. Shorten the prompt (keep its last {limit} tokens at most)."
        )
    if (ids == model.config.pad_id).any():
        raise ValueError(
            f"prompt_ids contains the padding id {model.config.pad_id}. Every prompt row must "
            "be real tokens: generate prompts of different lengths separately (or in groups "
            "of equal length)."
        )
    return ids, single


@torch.no_grad()
def generate(
    model,
    prompt_ids,
    max_new_tokens: int,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
    greedy: bool = False,
    seed: int | None = None,
    eos_id: int | None = None,
    use_cache: bool = True,
    prefix_lm: bool = False,
    never: Sequence[int] = (),
) -> Tensor:
    """Extend a prompt by up to ``max_new_tokens`` tokens, greedily or by sampling.

    The model runs in eval mode (no dropout) and is put back in its mode afterwards.

    Args:
        model: A :class:`~transformer_lib.components.decoder_only.DecoderOnlyTransformer`.
        prompt_ids: ``(T,)`` or ``(B, T)`` token ids (list or tensor), no padding; all rows
            of a batch have the same length.
        max_new_tokens: most tokens to add. Generation also stops when the sequence fills
            the context: the last position (``config.max_len - 1``) predicts the final token.
        temperature: divides the logits before the softmax; must be > 0 when sampling
            (ignored with ``greedy=True``).
        top_k: sample among the k most likely tokens only.
        top_p: sample from the smallest set of tokens whose probability reaches ``top_p``.
        greedy: take the most likely token at every step (no sampling).
        seed: seed of a local ``torch.Generator``: the same seed gives the same samples,
            and the global random state is left alone. ``None`` uses the global generator.
        eos_id: stop a row once it produces this id; the rest of that row is filled with
            ``config.pad_id``, and generation ends when every row has stopped. ``None``:
            always generate ``max_new_tokens``.
        use_cache: feed one token per step and reuse earlier keys/values. ``False``
            re-runs the whole sequence every step (same result, slower; kept for tests).
        prefix_lm: the prompt is a bidirectional prefix (for a model trained as a prefix LM).
        never: ids that are never generated (e.g. ``<pad>``, ``<sep>``).

    Returns:
        The prompt followed by the new tokens: ``(B, T + n)``, or ``(T + n,)`` for a 1-D
        prompt.

    Raises:
        ValueError: bad ``temperature``, ``top_k`` or ``top_p``; an empty prompt, one longer
            than the context, or one with padding; ``max_new_tokens < 0``.

    Example:
        >>> generate(model, [5, 17, 9], max_new_tokens=10, top_p=0.9, seed=0)  # doctest: +SKIP
    """
    if not greedy:
        _check_sampling(temperature, top_k, top_p)
    if max_new_tokens < 0:
        raise ValueError(f"max_new_tokens must be >= 0, got {max_new_tokens}")
    ids, single = _prompt_tensor(model, prompt_ids)  # (B, T0)
    c = model.config
    B, T0 = ids.shape
    n_new = min(max_new_tokens, c.max_len - T0 + 1)  # the last fed position is max_len - 1
    prefix_len = torch.full((B,), T0, dtype=torch.long, device=ids.device) if prefix_lm else None
    generator = None
    if seed is not None and not greedy:
        generator = torch.Generator(device=ids.device).manual_seed(seed)
    finished = torch.zeros(B, dtype=torch.bool, device=ids.device)
    cache = model.new_cache() if use_cache else None
    was_training = model.training
    model.eval()
    try:
        step_in = ids  # the whole prompt first; then only the newest token (with a cache)
        for _ in range(n_new):
            logits = model(step_in, prefix_len=prefix_len, cache=cache)[:, -1].float()  # (B, V)
            if never:
                logits[:, list(never)] = float("-inf")
            if greedy:
                next_tok = logits.argmax(dim=-1)  # (B,)
            else:
                probs = next_token_distribution(logits, temperature, top_k, top_p)  # (B, V)
                next_tok = torch.multinomial(probs, 1, generator=generator).squeeze(1)  # (B,)
            if eos_id is not None:
                next_tok = next_tok.masked_fill(finished, c.pad_id)
                finished |= next_tok == eos_id
            ids = torch.cat([ids, next_tok[:, None]], dim=1)  # (B, t + 1)
            if eos_id is not None and finished.all():
                break
            step_in = ids[:, -1:] if use_cache else ids
    finally:
        model.train(was_training)
    return ids[0] if single else ids


#: How :func:`decode_for_display` shows ``<unk>``: U+FFFD REPLACEMENT CHARACTER, the
#: usual mark of a character that could not be represented.
UNK_DISPLAY = "\ufffd"


def decode_for_display(tokenizer, ids: Sequence[int]) -> str:
    """Text of generated ids for a reader: specials dropped, ``<unk>`` shown as ``�``.

    ``Tokenizer.decode`` keeps ``<unk>`` as the literal text ``<unk>`` (useful when
    inspecting tokens); in generated German it would look like markup, so here each
    ``<unk>`` becomes :data:`UNK_DISPLAY` (U+FFFD). Otherwise identical to
    ``tokenizer.decode(ids)``.

    Args:
        tokenizer: The model's :class:`~transformer_lib.pipeline.tokenizer.Tokenizer`.
        ids: Token ids, e.g. the new part of :func:`generate`'s output.

    Returns:
        The text.
    """
    skip = {tokenizer.pad_id, tokenizer.bos_id, tokenizer.eos_id, tokenizer.token_to_id("<sep>")}
    tokens = [
        UNK_DISPLAY if i == tokenizer.unk_id else tokenizer.id_to_token(i)
        for i in map(int, ids)
        if i not in skip
    ]
    return tokenizer.backend.decoder.decode(tokens)


def context_room(model, prompt_len: int) -> int:
    """How many tokens :func:`generate` can add to a prompt of ``prompt_len`` tokens
    before the sequence fills the model's context (``config.max_len`` positions)."""
    return max(0, model.config.max_len - prompt_len + 1)


def _continuations(rows: Sequence[Sequence[int]], prompt_len: int, eos_id: int) -> list[list[int]]:
    """The generated part of each row, up to (not including) ``<eos>``."""
    out = []
    for row in rows:
        new = list(row[prompt_len:])
        out.append(new[: new.index(eos_id)] if eos_id in new else new)
    return out


@torch.no_grad()
def translate_decoder_only(
    model,
    src_ids_list: Sequence[Sequence[int]],
    sep_id: int,
    eos_id: int,
    beam: int = 1,
    alpha: float = 0.6,
    max_len: int | None = None,
    prefix_lm: bool | None = None,
    batch_size: int = 64,
) -> list[list[int]]:
    """Translate with a decoder-only model: continue each ``English <sep>`` prompt.

    Sources are grouped by length, so each batch needs no padding; the result is in input
    order. ``beam=1`` is greedy decoding; ``beam > 1`` is the beam search of
    :func:`~transformer_lib.pipeline.decoding.beam_search` (same search and GNMT length
    penalty ``length_penalty(|Y|, alpha)``, ``|Y|`` counting the generated tokens and
    ``<eos>``). ``<pad>``, ``<bos>`` and ``<sep>`` are never generated.

    Args:
        model: A :class:`~transformer_lib.components.decoder_only.DecoderOnlyTransformer`.
        src_ids_list: source ids of each sentence, without special tokens (as in
            :class:`~transformer_lib.pipeline.lm_batching.DecoderOnlyDataset`).
        sep_id: id of ``<sep>`` (``tokenizer.token_to_id("<sep>")``).
        eos_id: id of ``<eos>``: a translation ends there.
        beam: beam size (1 = greedy).
        alpha: length-penalty exponent for ``beam > 1`` (the paper: 0.6).
        max_len: most tokens to generate per sentence, ``<eos>`` included (default: the
            source length + 50); always capped by the model's context.
        prefix_lm: the prompt is a bidirectional prefix; must match how the model was
            trained. ``None``: the model's ``prefix_lm`` attribute.
        batch_size: sentences per batch (divided by ``beam`` for beam search).

    Returns:
        For each source, the German token ids (without ``<sep>`` and ``<eos>``).

    Raises:
        ValueError: an empty source, a prompt that leaves no room in the context, or
            ``beam < 1``.
    """
    if beam < 1:
        raise ValueError(f"beam must be >= 1, got {beam}")
    if prefix_lm is None:
        prefix_lm = bool(getattr(model, "prefix_lm", False))
    c = model.config
    device = next(model.parameters()).device
    prompts = [[*map(int, s), sep_id] for s in src_ids_list]
    for i, p in enumerate(prompts):
        if len(p) == 1:
            raise ValueError(f"Source {i} is empty; give at least one token to translate.")
        if len(p) >= c.max_len:
            raise ValueError(
                f"Source {i} has {len(p) - 1} tokens; with <sep> that fills the model's "
                f"context (max_len={c.max_len}) and leaves no room for a translation. "
                f"Split it into shorter sentences."
            )
    never = (c.pad_id, c.bos_id, sep_id)
    out: list[list[int]] = [[] for _ in prompts]
    order = sorted(range(len(prompts)), key=lambda i: len(prompts[i]))
    step_size = max(1, batch_size // beam)
    was_training = model.training
    model.eval()
    try:
        for T0, group in groupby(order, key=lambda i: len(prompts[i])):
            group = list(group)
            n_new = min(max_len or (T0 - 1 + EXTRA_OUTPUT_TOKENS), c.max_len - T0 + 1)
            for start in range(0, len(group), step_size):
                chunk = group[start : start + step_size]
                batch = torch.tensor([prompts[i] for i in chunk], device=device)  # (B, T0)
                if beam == 1:
                    rows = generate(
                        model,
                        batch,
                        n_new,
                        greedy=True,
                        eos_id=eos_id,
                        prefix_lm=prefix_lm,
                        never=never,
                    ).tolist()
                else:
                    rows = _beam(model, batch, beam, alpha, n_new, eos_id, prefix_lm, never)
                for i, tokens in zip(chunk, _continuations(rows, T0, eos_id)):
                    out[i] = tokens
    finally:
        model.train(was_training)
    return out


def _beam(model, prompts: Tensor, K: int, alpha: float, n_new: int, eos_id, prefix_lm, never):
    """Best hypothesis (prompt + continuation) of each prompt row ``(B, T0)``."""
    B, T0 = prompts.shape
    start = prompts.repeat_interleave(K, dim=0)  # (B·K, T0): row b·K + k is beam k of b
    prefix_len = torch.full((B * K,), T0, device=prompts.device) if prefix_lm else None
    cache = model.new_cache()

    def step(ys: Tensor) -> Tensor:  # the prompt first, then the newest token → (B·K, V)
        return model(ys[:, cache.length :], prefix_len=prefix_len, cache=cache)[:, -1]

    config = model.config.replace(eos_id=eos_id)
    finished = beam_search_loop(step, cache.reorder, start, B, K, n_new, alpha, config, never)
    return [max(h, key=lambda x: x.score).tokens for h in finished]


@torch.no_grad()
def translate_texts_decoder_only(
    model,
    tokenizer,
    texts: Sequence[str],
    beam: int = 1,
    alpha: float = 0.6,
    prefix_lm: bool | None = None,
    batch_size: int = 64,
) -> list[str]:
    """Translate sentences (strings) with a decoder-only model; see
    :func:`translate_decoder_only`. ``<sep>`` comes from the tokenizer.

    Raises:
        ValueError: the tokenizer has no ``<sep>`` token, or a sentence is empty or too long.
    """
    sep_id = tokenizer.token_to_id("<sep>")
    if sep_id is None:
        raise ValueError(
            "The tokenizer has no <sep> token, which separates English from German for a "
            "decoder-only model. Use a tokenizer trained with <sep> among its special tokens."
        )
    ids = encode_sources(model, tokenizer, list(texts))
    out = translate_decoder_only(
        model,
        ids,
        sep_id,
        model.config.eos_id,
        beam=beam,
        alpha=alpha,
        prefix_lm=prefix_lm,
        batch_size=batch_size,
    )
    return [tokenizer.decode(t) for t in out]
