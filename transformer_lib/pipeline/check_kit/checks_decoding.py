"""Checks of decoding: the key/value cache, its reordering in beam search, beam k=1 = greedy."""

from __future__ import annotations

import torch
from torch import Tensor

from .causes import (
    BEAM_DIFFERS,
    CACHE_MASK,
    CACHE_NOT_APPENDED,
    CACHE_OFFSET,
    NOT_REORDERED,
    REORDER_PARTIAL,
)
from .registry import Kit, max_abs, register, scale_of
from .results import CheckResult, result


def _incremental(kit: Kit, src: Tensor | None, tgt: Tensor, first: int, state=None) -> Tensor:
    """Logits of ``tgt`` fed through the cache: ``first`` positions at once, then one at a
    time (as generation feeds a prompt, then each new token)."""
    a = kit.adapter
    state = a.cache_start(src) if state is None else state
    chunks = [tgt[:, :first]] + [tgt[:, t : t + 1] for t in range(first, tgt.size(1))]
    outs = []
    for chunk in chunks:
        out = a.cache_step(state, chunk)
        if not isinstance(out, Tensor) or out.shape[:2] != chunk.shape:
            shape = tuple(out.shape) if isinstance(out, Tensor) else type(out).__name__
            raise ValueError(f"cache_step must return logits (B, n, V) for n new ids, got {shape}")
        outs.append(out.detach().float())
    return torch.cat(outs, dim=1)


@register(
    "kv_cache",
    "decoding with the key/value cache gives the logits of full recomputation",
    needs=("cache_start", "cache_step"),
)
def kv_cache(kit: Kit) -> CheckResult:
    """Feed two positions at once, then one at a time; compare with one full forward pass."""
    a = kit.adapter
    T = min(9, a.max_len)
    src, tgt = kit.source(2, 7), kit.target(2, T)
    full = kit.logits(src, tgt)
    cached = _incremental(kit, src, tgt, first=2)
    per_pos = (cached - full).abs().nan_to_num(nan=float("inf")).amax(dim=(0, 2))  # (T,)
    tol = 1e-4 * scale_of(full)
    measured = {
        "max difference": float(per_pos.max()),
        "first chunk difference": float(per_pos[:2].max()),
    }
    tolerance = f"<= {tol:.2g} at every position"
    ok = float(per_pos.max()) <= tol
    if ok:
        return result("kv_cache", kv_cache.check_title, True, measured, tolerance)
    if float(per_pos[:2].max()) <= tol:
        wrong = [t for t in range(T) if float(per_pos[t]) > tol]
        finding = f"the first 2 positions agree; positions {wrong[:6]} differ"
        causes = [CACHE_OFFSET, CACHE_NOT_APPENDED, CACHE_MASK]
    else:
        finding = "the first chunk (two positions fed at once) already differs"
        causes = [CACHE_MASK, CACHE_OFFSET, CACHE_NOT_APPENDED]
    return result("kv_cache", kv_cache.check_title, False, measured, tolerance, finding, causes)


@register(
    "cache_reorder",
    "after reordering the cache to other hypotheses, decoding continues their histories",
    needs=("cache_start", "cache_step", "cache_reorder"),
)
def cache_reorder(kit: Kit) -> CheckResult:
    """Three hypotheses of one sentence (beam search's rows); keep rows [2, 0, 0] after three
    steps, take two more, and compare with recomputing the kept histories."""
    a = kit.adapter
    src = kit.source(1, 7)
    src = src.expand(3, -1).contiguous() if src is not None else None
    history, more = kit.target(3, 3), kit.tokens(3, 2)
    state = a.cache_start(src)
    _incremental(kit, src, history, first=1, state=state)
    rows = torch.tensor([2, 0, 0], device=history.device)
    a.cache_reorder(state, rows)
    continued = _incremental(kit, src, more, first=1, state=state)
    kept = torch.cat([history.index_select(0, rows), more], dim=1)
    full = kit.logits(src, kept)[:, 3:]
    error = max_abs(continued, full)
    tol = 1e-4 * scale_of(full)
    measured = {"max difference": error}
    tolerance = f"<= {tol:.2g}"
    ok = error <= tol
    finding = "" if ok else "after the reorder the cache still holds the dropped hypotheses"
    return result(
        "cache_reorder",
        cache_reorder.check_title,
        ok,
        measured,
        tolerance,
        finding,
        [NOT_REORDERED, REORDER_PARTIAL],
    )


def _sequences(out, kit: Kit) -> list[list[int]]:
    """Decoder output (a padded id tensor or lists) as lists, cut after ``<eos>``."""
    a = kit.adapter
    rows = out.tolist() if isinstance(out, Tensor) else [list(map(int, r)) for r in out]
    cut = []
    for row in rows:
        row = row[: row.index(a.eos_id) + 1] if a.eos_id in row else row
        while row and row[-1] == a.pad_id:
            row = row[:-1]
        cut.append(row)
    return cut


@register(
    "beam_greedy",
    "beam search with beam size 1 gives the greedy output",
    needs=("greedy", "beam"),
)
def beam_greedy(kit: Kit) -> CheckResult:
    """Greedy decoding and beam search with one beam, on three sources: the same ids."""
    a = kit.adapter
    src = kit.tokens(3, 6)
    n = max(2, min(10, a.max_len - 8))
    greedy = _sequences(a.greedy(src, n), kit)
    beam = _sequences(a.beam(src, 1, n), kit)
    same = sum(g == b for g, b in zip(greedy, beam)) if len(greedy) == len(beam) else 0
    measured = {"rows equal": f"{same}/{len(greedy)}", "tokens per row": n}
    ok = same == len(greedy) == len(beam)
    finding = "" if ok else "beam search with one beam and greedy decoding disagree"
    return result(
        "beam_greedy", beam_greedy.check_title, ok, measured, "identical", finding, [BEAM_DIFFERS]
    )
