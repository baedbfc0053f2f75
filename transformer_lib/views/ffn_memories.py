"""The FFN's hidden units read as key-value memories (chapter 7).

Geva et al. (2021) write the position-wise FFN of §3.3 as a sum over its ``d_ff`` hidden
units,

    FFN(x) = sum_i relu(x · k_i + b1_i) v_i + b2,

with the *key* ``k_i`` = column ``i`` of the paper's ``W1`` (``d_model × d_ff``), that is
``linear1.weight[i]`` in PyTorch's ``(out, in)`` layout, and the *value* ``v_i`` = row
``i`` of ``W2``, that is ``linear2.weight[:, i]``. A key is a pattern detector:
its unit fires for the inputs that resemble it. The value is what the unit then adds to
the residual stream; projected through the output embedding, it shows which tokens it
pushes towards. This module does that for one decoder layer of a trained
:class:`Transformer`:

* :func:`decoder_ffn_hidden` runs the model once and returns the hidden activations
  ``relu(x W1 + b1)`` of one decoder FFN, computed from the FFN's own input;
* :func:`top_contexts` lists the positions where one unit fires most;
* :func:`value_logits` projects a unit's value vector through the generator;
* :func:`ffn_memories` chooses units by a stated rule (the largest activation variance)
  and gathers both views of each;
* :func:`ffn_census` asks the same question of every unit of the layer, with a baseline:
  each unit's contexts scored against the values of all the other units.

The projection goes straight from the FFN to the generator, as in Geva et al.: it leaves
out the LayerNorm after the FFN and any layer above, so it says what a value *points
at*, not what the model finally predicts.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor

from ..components.model import Transformer

__all__ = [
    "Context",
    "Memory",
    "decoder_ffn_hidden",
    "top_contexts",
    "value_logits",
    "ffn_memories",
    "Census",
    "ffn_census",
    "context_tokens",
]


@dataclass
class Context:
    """One position where a unit fires: sentence ``sentence``, decoder step ``position``."""

    sentence: int
    position: int
    activation: float
    next_id: int  # the token the model must predict there (the training target)


@dataclass
class Memory:
    """One hidden unit of a decoder FFN: where its key fires and where its value points.

    ``contexts`` are sorted by activation, highest first; ``value_tokens`` are token ids,
    highest logit of the value's projection first.
    """

    layer: int
    unit: int
    variance: float
    contexts: list[Context]
    value_tokens: list[int]

    @property
    def agreement(self) -> float:
        """Share of the contexts whose next token is among ``value_tokens``."""
        top = set(self.value_tokens)
        return sum(c.next_id in top for c in self.contexts) / max(1, len(self.contexts))


def _decoder_ffn(model: Transformer, layer: int):
    layers = model.decoder.layers
    if not 0 <= layer < len(layers):
        raise ValueError(
            f"decoder layer {layer} does not exist: this model has decoder layers 0 to "
            f"{len(layers) - 1}"
        )
    ffn = layers[layer].ffn
    if ffn.activation == "swiglu":
        raise ValueError(
            "a SwiGLU FFN has a gate besides each key; the key-value view here covers "
            "activation='relu' (the paper) and 'gelu'"
        )
    return ffn


def decoder_ffn_hidden(model: Transformer, src: Tensor, tgt_in: Tensor, layer: int) -> Tensor:
    """Hidden activations ``act(x W1 + b1)`` of decoder layer ``layer``'s FFN (§3.3).

    The model runs once without gradients; a hook keeps the FFN's input ``x``, and the
    activations are computed from the keys (``linear1``) directly, so unit ``i`` is
    ``act(x · k_i + b1_i)``.

    Args:
        model: a :class:`Transformer` (e.g. the shipped one of ``load_pretrained``).
        src: source ids ``(B, S)``; tgt_in: decoder input ids ``(B, T)``.
        layer: the decoder layer, counting from 0.

    Returns:
        ``(B, T, d_ff)``: unit ``i``'s activation at every decoder position.

    Raises:
        ValueError: a layer the decoder does not have, or a SwiGLU FFN.

    Example:
        >>> h = decoder_ffn_hidden(model, src, tgt[:, :-1], layer=0)  # doctest: +SKIP
    """
    ffn = _decoder_ffn(model, layer)
    seen: dict[str, Tensor] = {}
    hook = ffn.register_forward_pre_hook(lambda module, args: seen.setdefault("x", args[0]))
    try:
        with torch.no_grad():
            model(src, tgt_in)
    finally:
        hook.remove()
    with torch.no_grad():
        pre = seen["x"] @ ffn.linear1.weight.T + ffn.linear1.bias  # (B, T, d_ff)
    return pre.relu() if ffn.activation == "relu" else F.gelu(pre)


def top_contexts(activation: Tensor, real: Tensor, k: int) -> list[tuple[int, int, float]]:
    """The ``k`` real positions with the highest activation of one unit, highest first.

    Args:
        activation: one unit's activations ``(B, T)``.
        real: ``(B, T)`` boolean, True where a position counts (not padding).
        k: how many positions to return (fewer if there are fewer real ones).

    Returns:
        ``(sentence, position, activation)`` triples sorted by activation, descending.
    """
    if activation.shape != real.shape:
        raise ValueError(
            f"activation {tuple(activation.shape)} and real {tuple(real.shape)} must have "
            "the same shape (B, T)"
        )
    scores = activation.masked_fill(~real, float("-inf")).flatten()
    k = min(k, int(real.sum()))
    values, flat = scores.topk(k)  # sorted, highest first
    t = activation.size(1)
    return [(i // t, i % t, v) for i, v in zip(flat.tolist(), values.tolist())]


def value_logits(model: Transformer, layer: int, unit: int) -> Tensor:
    """Unit ``unit``'s value vector (``linear2.weight[:, unit]``) through the generator.

    Returns ``(V,)`` scores, one per token: ``E v_unit`` with ``E`` the generator's weight
    (the shared embedding matrix), without its bias.
    """
    ffn = _decoder_ffn(model, layer)
    if not 0 <= unit < ffn.linear2.in_features:
        raise ValueError(
            f"unit {unit} does not exist: the FFN has units 0 to {ffn.linear2.in_features - 1}"
        )
    with torch.no_grad():
        return model.generator.weight @ ffn.linear2.weight[:, unit]  # (V,)


def ffn_memories(
    model: Transformer,
    src: Tensor,
    tgt: Tensor,
    layer: int,
    pad_id: int,
    n_units: int = 4,
    n_contexts: int = 20,
    n_tokens: int = 10,
) -> list[Memory]:
    """Keys and values of the ``n_units`` units of one decoder FFN that vary most.

    The rule that chooses the units: the largest variance of the activation over every
    real position of the batch (a unit that never fires, or fires alike everywhere,
    detects nothing).

    Args:
        model: a :class:`Transformer`.
        src: source ids ``(B, S)``; tgt: target ids ``(B, T + 1)`` with ``<bos>`` first,
            as a training batch has them: the decoder reads ``tgt[:, :-1]`` and must
            predict ``tgt[:, 1:]``.
        layer: the decoder layer, counting from 0.
        pad_id: the padding id (positions whose next token is padding do not count).
        n_units, n_contexts, n_tokens: how many units, top contexts per unit, and top
            tokens of each value's projection.

    Returns:
        One :class:`Memory` per unit, by variance, largest first.
    """
    tgt_in, target = tgt[:, :-1], tgt[:, 1:]
    real = target != pad_id  # (B, T)
    hidden = decoder_ffn_hidden(model, src, tgt_in, layer)  # (B, T, d_ff)
    variance = hidden[real].var(0)  # (d_ff,)
    units = variance.argsort(descending=True)[:n_units].tolist()
    memories = []
    for unit in units:
        found = top_contexts(hidden[..., unit], real, n_contexts)
        contexts = [Context(b, t, a, int(target[b, t])) for b, t, a in found]
        tokens = value_logits(model, layer, unit).topk(n_tokens).indices.tolist()
        memories.append(Memory(layer, unit, float(variance[unit]), contexts, tokens))
    return memories


@dataclass
class Census:
    """Every unit of one decoder FFN: does its value point at the token that follows where
    its key fires?

    ``cross[i, j]`` is the share of unit ``i``'s top contexts whose next token is among
    the top tokens of unit ``j``'s value. The diagonal is each unit's own
    :attr:`Memory.agreement`; the other entries pair a unit's contexts with another
    unit's value, which keeps which tokens come next and which tokens values point at, and
    breaks only the pairing: the baseline. ``live`` marks the units that fire
    (activation > 0) at at least ``n_contexts`` real positions, so that their top
    contexts are all places where they fire; only those count.
    """

    layer: int
    n_contexts: int
    n_tokens: int
    cross: Tensor  # (d_ff, d_ff)
    live: Tensor  # (d_ff,) bool

    @property
    def agreement(self) -> Tensor:
        """``(d_ff,)``: each unit's own agreement (its contexts, its value)."""
        return self.cross.diagonal()

    def _pairs(self) -> tuple[Tensor, Tensor]:
        """Own agreements of the live units, and the cross ones of every other live pair."""
        live = self.live
        other = ~torch.eye(len(live), dtype=torch.bool) & live[:, None] & live[None, :]
        return self.agreement[live], self.cross[other]

    def mean(self) -> tuple[float, float]:
        """Mean agreement of the live units, and the baseline's (another unit's value)."""
        own, other = self._pairs()
        return own.mean().item(), other.mean().item()

    def share_at_least(self, threshold: float) -> tuple[float, float]:
        """Share of the live units whose agreement is at least ``threshold``, and the
        share of (contexts, other value) pairs that reach it."""
        own, other = self._pairs()
        return (own >= threshold).float().mean().item(), (other >= threshold).float().mean().item()


def ffn_census(
    model: Transformer,
    src: Tensor,
    tgt: Tensor,
    layer: int,
    pad_id: int,
    n_contexts: int = 20,
    n_tokens: int = 10,
) -> Census:
    """The key-value question of :func:`ffn_memories`, for every unit of one decoder FFN.

    For each unit: its ``n_contexts`` top contexts (as :func:`top_contexts`), their next
    tokens, and the ``n_tokens`` top tokens of its value (as :func:`value_logits`); then
    every unit's contexts are scored against every unit's value. Arguments as for
    :func:`ffn_memories`.
    """
    tgt_in, target = tgt[:, :-1], tgt[:, 1:]
    real = target != pad_id  # (B, T)
    hidden = decoder_ffn_hidden(model, src, tgt_in, layer)[real]  # (N, d_ff)
    if hidden.size(0) < n_contexts:
        raise ValueError(
            f"the batch has {hidden.size(0)} real positions, fewer than n_contexts={n_contexts}"
        )
    d_ff = hidden.size(1)
    live = (hidden > 0).sum(0) >= n_contexts  # (d_ff,)
    where = hidden.topk(n_contexts, dim=0).indices  # (n_contexts, d_ff)
    next_ids = target[real][where].T  # (d_ff, n_contexts): unit i's contexts' next tokens
    ffn = _decoder_ffn(model, layer)
    with torch.no_grad():
        logits = model.generator.weight @ ffn.linear2.weight  # (V, d_ff): every value
    top = logits.topk(n_tokens, dim=0).indices.T  # (d_ff, n_tokens)
    member = torch.zeros(d_ff, logits.size(0), dtype=torch.bool)  # unit j promotes token?
    member.scatter_(1, top, True)
    cross = member[:, next_ids].float().mean(-1).T  # (i: contexts, j: value)
    return Census(layer, n_contexts, n_tokens, cross, live)


def context_tokens(tgt_in: Tensor, context: Context, id_to_token, last: int = 3) -> Sequence[str]:
    """The last ``last`` decoder-input tokens up to and including a context's position."""
    start = max(0, context.position - last + 1)
    ids = tgt_in[context.sentence, start : context.position + 1].tolist()
    return [id_to_token(i) for i in ids]
