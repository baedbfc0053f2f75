"""The adapter through which the check kit sees a model: one required function, many optional.

Any encoder–decoder or decoder-only Transformer can be checked once it is wrapped in a
:class:`ModelAdapter`. The core is a function from token ids to logits:

* encoder–decoder: ``forward(src (B, S), tgt (B, T)) -> logits (B, T, V)``;
* decoder-only: ``forward(ids (B, T)) -> logits (B, T, V)``.

Inputs are right-padded with ``pad_id``; the function builds its own masks from it (True =
may attend, as in this library), exactly as the model does in training. Every other part is
optional; a check whose part is missing is reported as *skipped (needs …)*, never as passed.
The optional parts, each a plain function (B batch, H heads, Dk head width, D d_model):

* ``attention(src, tgt)`` (decoder-only: ``attention(ids)``) → ``{"encoder" | "decoder" |
  "cross": [one (B, H, Tq, Tk) tensor of attention weights per layer]}``.
* ``positional_table(length)`` → the ``(length, D)`` sinusoidal table added to the embeddings.
* ``attention_function(q, k, v, mask)`` → ``(output, weights)`` for ``(B, H, T, Dk)`` inputs:
  the scaled dot-product attention the model uses (Eq. 1).
* ``token_embedding(ids)`` → the ``(B, L, D)`` vectors before the positional encoding (the
  decoder's, for an encoder–decoder), and ``embedding_matrices()`` → the named ``(V, D)``
  matrices that §3.4 shares (the first one is the one ``token_embedding`` looks up).
* ``torch_reference()`` → a function with the signature of ``forward`` that computes the same
  logits with ``torch.nn.Transformer`` (or ``nn.TransformerEncoder`` and a causal mask for a
  decoder-only model) holding a copy of the weights (for models in the paper's layout).
* ``cache_start(src)`` → a decoding state (``src`` is None for a decoder-only model);
  ``cache_step(state, ids (B, n))`` → logits ``(B, n, V)`` of the next ``n`` positions,
  updating the state (a key/value cache); ``cache_reorder(state, rows)`` keeps batch rows
  ``rows`` (what beam search does when it keeps some hypotheses and drops others).
* ``greedy(src, max_new_tokens)`` and ``beam(src, beam_size, max_new_tokens)`` → one id
  sequence per row (a ``(B, L)`` tensor padded with ``pad_id``, or lists). For a
  decoder-only model ``src`` holds the prompts' source ids (``<sep>`` is added by them).
* ``loss_function(logits, target)`` → the scalar training criterion (label smoothing, §5.4).
* ``training_loss(model_fn, batch)`` and ``validation_loss(model_fn, batch)`` → the loss the
  training step (and the validation loop) computes for a :class:`LossBatch` with the model
  replaced by ``model_fn`` (a function with the signature of ``forward``): this is where the
  (inputs, targets) of teacher forcing are built. ``validation_loss`` may return a dict.
* ``lr_schedule(step)`` → the learning rate of optimiser step ``step`` (from 1), with
  ``warmup`` and ``lr_factor`` (Eq. 3); ``optimizer(module)`` → the optimiser training builds.
* ``default_config()`` → the default hyper-parameters of the model's config, as a mapping
  (``norm_first``, ``share_embeddings``, ``positional``, ``dropout``, ``d_model``, ...).

``unavailable`` maps a part's name to the reason it is missing; the skip says it.
:func:`adapt` builds adapters for this library's :class:`~transformer_lib.Transformer` and
:class:`~transformer_lib.DecoderOnlyTransformer`, and for
:class:`~.torch_model.TorchTransformerModel` (``torch.nn.Transformer`` with embeddings and an
output layer).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any, NamedTuple

from torch import Tensor, nn

__all__ = ["ARCHS", "OPTIONAL_PARTS", "LossBatch", "ModelAdapter", "logits_of"]

ARCHS = ("encoder-decoder", "decoder-only")

#: The optional parts, in the order of the docstring above, with what each one gives.
OPTIONAL_PARTS = {
    "module": "the nn.Module itself (for train/eval mode)",
    "attention": "attention weights",
    "positional_table": "the sinusoidal positional-encoding table",
    "attention_function": "the scaled dot-product attention function",
    "token_embedding": "the token embedding function",
    "embedding_matrices": "the embedding and output matrices",
    "torch_reference": "a copy of the weights in torch.nn.Transformer",
    "cache_start": "incremental decoding with a key/value cache",
    "cache_step": "incremental decoding with a key/value cache",
    "cache_reorder": "reordering the key/value cache (beam search)",
    "greedy": "greedy decoding",
    "beam": "beam search",
    "loss_function": "the training criterion (label smoothing)",
    "training_loss": "the training loss with the model replaced",
    "validation_loss": "the validation loss with the model replaced",
    "lr_schedule": "the learning-rate schedule",
    "optimizer": "the optimiser",
    "default_config": "the config's default hyper-parameters",
}


class LossBatch(NamedTuple):
    """A batch as the training step receives it, for ``training_loss``/``validation_loss``.

    Attributes:
        src: encoder–decoder: ``(B, S)`` source ids, right-padded; decoder-only: None.
        tgt: encoder–decoder: ``(B, T)`` targets ``<bos> w1 … wn <eos>``, right-padded;
            decoder-only: ``(B, L)`` sequences ``English <sep> German <eos>``, right-padded.
        prefix_len: decoder-only: ``(B,)`` length of ``English <sep>`` (predictions of the
            tokens after it count in the loss); None for an encoder–decoder.
    """

    src: Tensor | None
    tgt: Tensor
    prefix_len: Tensor | None


@dataclass
class ModelAdapter:
    """How the check kit calls a model; see the module docstring for each part's contract.

    Args:
        forward: token ids → logits (the one required part).
        arch: ``"encoder-decoder"`` or ``"decoder-only"``.
        vocab_size: V. d_model: D.
        name: shown in the report.
        pad_id, bos_id, eos_id, sep_id: special ids (``sep_id`` for decoder-only prompts).
        reserved_ids: further ids the kit must not use as ordinary tokens (e.g. ``<unk>``).
        max_len: the longest sequence the model accepts.
        dropout: the model's P_drop (for the train-mode half of the determinism check).

    Example:
        >>> adapter = ModelAdapter(forward=lambda src, tgt: my_model(src, tgt),
        ...                        arch="encoder-decoder", vocab_size=100, d_model=32)
        >>> print(run_checks(adapter))  # doctest: +SKIP
    """

    forward: Callable[..., Tensor]
    arch: str
    vocab_size: int
    d_model: int
    name: str = "model"
    pad_id: int = 0
    bos_id: int | None = 2
    eos_id: int = 3
    sep_id: int | None = None
    reserved_ids: tuple[int, ...] = ()
    max_len: int = 64
    dropout: float | None = None
    module: nn.Module | None = None
    attention: Callable[..., Mapping[str, list[Tensor]]] | None = None
    positional_table: Callable[[int], Tensor] | None = None
    attention_function: Callable[..., tuple[Tensor, Tensor]] | None = None
    token_embedding: Callable[[Tensor], Tensor] | None = None
    embedding_matrices: Callable[[], Mapping[str, Tensor]] | None = None
    torch_reference: Callable[[], Callable[..., Tensor]] | None = None
    cache_start: Callable[[Tensor | None], Any] | None = None
    cache_step: Callable[[Any, Tensor], Tensor] | None = None
    cache_reorder: Callable[[Any, Tensor], None] | None = None
    greedy: Callable[[Tensor, int], Any] | None = None
    beam: Callable[[Tensor, int, int], Any] | None = None
    loss_function: Callable[[Tensor, Tensor], Tensor] | None = None
    training_loss: Callable[[Callable[..., Tensor], LossBatch], Tensor] | None = None
    validation_loss: Callable[[Callable[..., Tensor], LossBatch], Any] | None = None
    lr_schedule: Callable[[int], float] | None = None
    warmup: int | None = None
    lr_factor: float = 1.0
    optimizer: Callable[[nn.Module], Any] | None = None
    default_config: Callable[[], Mapping[str, Any]] | None = None
    unavailable: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        problems = []
        if self.arch not in ARCHS:
            problems.append(f"arch must be one of {ARCHS}, got {self.arch!r}")
        if not callable(self.forward):
            problems.append("forward must be a function from token ids to logits")
        for name in ("vocab_size", "d_model", "max_len"):
            value = getattr(self, name)
            if not isinstance(value, int) or value <= 0:
                problems.append(f"{name} must be a positive int, got {value!r}")
        if isinstance(self.vocab_size, int) and self.vocab_size < len(self.special_ids) + 8:
            problems.append(
                f"vocab_size={self.vocab_size} leaves fewer than 8 ordinary tokens beside the "
                f"special ids {sorted(self.special_ids)}"
            )
        if isinstance(self.max_len, int) and self.max_len < 8:
            problems.append(f"max_len={self.max_len} is too short to check; it needs >= 8")
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name in OPTIONAL_PARTS and f.name != "module" and value is not None:
                if not callable(value):
                    problems.append(f"{f.name} must be a function or None, got {value!r}")
        if self.module is not None and not isinstance(self.module, nn.Module):
            problems.append(f"module must be an nn.Module, got {type(self.module).__name__}")
        unknown = set(self.unavailable) - set(OPTIONAL_PARTS)
        if unknown:
            problems.append(f"unavailable names unknown parts {sorted(unknown)}")
        if problems:
            raise ValueError("Invalid ModelAdapter: " + "; ".join(problems))

    @property
    def special_ids(self) -> set[int]:
        ids = {self.pad_id, self.eos_id, *self.reserved_ids}
        ids |= {i for i in (self.bos_id, self.sep_id) if i is not None}
        return ids

    @property
    def encoder_decoder(self) -> bool:
        return self.arch == "encoder-decoder"

    def describe(self) -> str:
        return f"{self.name} ({self.arch}, d_model={self.d_model}, vocab {self.vocab_size})"


def logits_of(fn: Callable[..., Tensor], adapter: ModelAdapter, src, tgt: Tensor) -> Tensor:
    """Call a ``forward``-like function with the arguments of the adapter's architecture."""
    return fn(src, tgt) if adapter.encoder_decoder else fn(tgt)
