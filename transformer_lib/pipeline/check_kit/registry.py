"""The list of checks, and the :class:`Kit` each check receives: the adapter plus inputs.

A check is a function ``check(kit) -> CheckResult`` registered with :func:`register`, which
records its name, what it checks, the adapter parts it needs and the architectures it
applies to. The runner (:mod:`.runner`) skips a check whose parts are missing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor

from .adapter import ARCHS, ModelAdapter, logits_of
from .results import CheckResult

__all__ = ["CHECKS", "Check", "Kit", "NonFiniteLogits", "register"]


class NonFiniteLogits(ValueError):
    """``forward`` returned NaN or infinite logits at a real (non-pad) position: no
    comparison of such logits means anything, so the check fails on this instead."""


@dataclass(frozen=True)
class Check:
    """One registered check: ``run(kit)`` gives its :class:`CheckResult`."""

    name: str
    title: str
    needs: tuple[str, ...]
    archs: tuple[str, ...]
    run: Callable[[Kit], CheckResult]
    doc: str


#: Every check, in the order of the report.
CHECKS: dict[str, Check] = {}


def register(name: str, title: str, needs: tuple[str, ...] = (), archs: tuple[str, ...] = ARCHS):
    """Decorator: add ``fn(kit) -> CheckResult`` to :data:`CHECKS` under ``name``."""

    def add(fn: Callable[[Kit], CheckResult]) -> Callable[[Kit], CheckResult]:
        if name in CHECKS:
            raise ValueError(f"a check named {name!r} is registered already")
        CHECKS[name] = Check(name, title, tuple(needs), tuple(archs), fn, fn.__doc__ or "")
        fn.check_name = name  # type: ignore[attr-defined]
        fn.check_title = title  # type: ignore[attr-defined]
        return fn

    return add


class Kit:
    """What a check works with: the adapter, a seeded generator and its inputs.

    Inputs use *ordinary* tokens only (never a special id), are right-padded with the
    adapter's ``pad_id`` where a check asks for padding, and live on the model's device.
    """

    def __init__(self, adapter: ModelAdapter, seed: int = 0):
        self.adapter = adapter
        self.generator = torch.Generator().manual_seed(seed)
        specials = adapter.special_ids
        self.ordinary = torch.tensor([i for i in range(adapter.vocab_size) if i not in specials])
        module = adapter.module
        params = list(module.parameters()) if module is not None else []
        self.device = params[0].device if params else torch.device("cpu")

    # ---- token ids -------------------------------------------------------------------
    def tokens(self, batch: int, length: int) -> Tensor:
        """``(batch, length)`` random ordinary tokens."""
        idx = torch.randint(len(self.ordinary), (batch, length), generator=self.generator)
        return self.ordinary[idx].to(self.device)

    def distinct_rows(self, batch: int, length: int) -> Tensor:
        """Random ordinary tokens whose first column differs from row to row."""
        ids = self.tokens(batch, length)
        first = torch.randperm(len(self.ordinary), generator=self.generator)[:batch]
        ids[:, 0] = self.ordinary[first].to(self.device)
        return ids

    def other_tokens(self, ids: Tensor) -> Tensor:
        """Each token replaced by a different ordinary token."""
        n = len(self.ordinary)
        where = (self.ordinary.to(ids.device)[None, :] == ids.reshape(-1, 1)).float().argmax(-1)
        shift = torch.randint(1, n, where.shape, generator=self.generator).to(ids.device)
        return self.ordinary.to(ids.device)[(where + shift) % n].view_as(ids)

    def pad(self, ids: Tensor, extra: int) -> Tensor:
        """``ids`` with ``extra`` padding columns appended."""
        pads = torch.full((ids.size(0), extra), self.adapter.pad_id, dtype=ids.dtype)
        return torch.cat([ids, pads.to(ids.device)], dim=1)

    def target(self, batch: int, length: int) -> Tensor:
        """Decoder input ids: ``<bos>`` first (when the model has one), then ordinary tokens;
        for a decoder-only model simply ordinary tokens."""
        ids = self.tokens(batch, length)
        if self.adapter.encoder_decoder and self.adapter.bos_id is not None:
            ids[:, 0] = self.adapter.bos_id
        return ids

    def source(self, batch: int, length: int) -> Tensor | None:
        """Source ids for an encoder–decoder, None for a decoder-only model."""
        return self.tokens(batch, length) if self.adapter.encoder_decoder else None

    # ---- the model -------------------------------------------------------------------
    def logits(self, src: Tensor | None, tgt: Tensor, fn=None) -> Tensor:
        """``forward`` (or ``fn``, a function with its signature) as float ``(B, T, V)``."""
        out = logits_of(fn or self.adapter.forward, self.adapter, src, tgt)
        if not isinstance(out, Tensor) or out.shape[:2] != tgt.shape:
            shape = tuple(out.shape) if isinstance(out, Tensor) else type(out).__name__
            raise ValueError(
                f"forward must return logits of shape (B, T, V) = ({tgt.size(0)}, "
                f"{tgt.size(1)}, {self.adapter.vocab_size}), got {shape}"
            )
        out = out.detach().float()
        real = (tgt != self.adapter.pad_id).to(out.device)  # (B, T): pad rows may be anything
        bad = (~torch.isfinite(out)).any(-1) & real
        if bad.any():
            raise NonFiniteLogits(
                f"forward returned NaN or infinite logits at {int(bad.sum())} of "
                f"{int(real.sum())} real positions"
            )
        return out


def max_abs(a: Tensor, b: Tensor | None = None) -> float:
    """Largest absolute entry of ``a`` (or of ``a - b``); NaN counts as infinity."""
    d = a if b is None else a - b
    if d.numel() == 0:
        return 0.0
    return float(d.abs().nan_to_num(nan=float("inf")).max())


def scale_of(logits: Tensor) -> float:
    """The size of the logits, at least 1: tolerances are relative to it."""
    return max(1.0, max_abs(logits))
