"""The bugs that Transformer tutorials ship, planted in the library one at a time.

Each :class:`PlantedBug` is one mistake: a one-line description, the override that makes it
(a function or a subclass from :mod:`.bugs_model` / :mod:`.bugs_training`, put in the one
place the library looks it up), and the check of the kit that catches it, with the
diagnosis that check gives. :func:`plant` is a context manager that installs the overrides
and restores the library when it exits, even after an error::

    with plant("single_frequency_pe"):
        model = PLANTED_BUGS["single_frequency_pe"].model()  # built with the bug
        print(run_checks(model))

Overrides that act when a model is built (the positional table, the attention class, the
config's defaults, untied weights) need the model to be built inside the ``with``; the
others act whenever the code runs. Bugs of the attention function switch the model to its
readable attention path (``set_fast_attention(False)``), the only path a from-scratch
model has.
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from torch import nn

from . import bugs_model as m
from . import bugs_training as t
from .library import tiny_model
from .results import CheckReport

__all__ = ["PLANTED_BUGS", "Patch", "PlantedBug", "check_planted", "plant"]

_MISSING = object()


@dataclass(frozen=True)
class Patch:
    """Replace ``attribute`` of ``owner`` (``"package.module"`` or ``"package.module:Class"``)
    with ``replacement`` (wrap a replacement for a staticmethod in ``staticmethod``)."""

    owner: str
    attribute: str
    replacement: Any

    @property
    def where(self) -> str:
        return f"{self.owner.replace(':', '.')}.{self.attribute}"

    def resolve(self) -> Any:
        module, _, path = self.owner.partition(":")
        obj = importlib.import_module(module)
        for part in filter(None, path.split(".")):
            obj = getattr(obj, part)
        return obj

    @property
    def code(self) -> Any:
        """The function or class whose source is shown to the reader."""
        r = self.replacement
        return r.__func__ if isinstance(r, staticmethod) else r


@dataclass(frozen=True)
class PlantedBug:
    """One tutorial bug, as a small override of one library component.

    Attributes:
        id: a stable name (``"single_frequency_pe"``).
        mistake: the mistake, in one line.
        patches: where the override goes (usually one place).
        caught_by: ``(check name, cause key)`` pairs: the check that fails and the diagnosis
            it gives first.
        arch: the model it is shown on (``"encoder-decoder"`` or ``"decoder-only"``).
        config: config fields of that model (e.g. ``positional="learned"``).
        readable_attention: switch the model to the readable attention path.
    """

    id: str
    mistake: str
    patches: tuple[Patch, ...]
    caught_by: tuple[tuple[str, str], ...]
    arch: str = "encoder-decoder"
    config: Mapping[str, Any] = field(default_factory=dict)
    readable_attention: bool = False

    @property
    def where(self) -> list[str]:
        return [p.where for p in self.patches]

    @property
    def source(self) -> str:
        """The override's code, as shown to a reader."""
        return "\n\n".join(inspect.getsource(p.code) for p in self.patches)

    def model(self, seed: int = 0) -> nn.Module:
        """The kit's small model of this bug's architecture (build it inside ``plant``)."""
        model = tiny_model(self.arch, seed, **self.config)
        if self.readable_attention:
            model.set_fast_attention(False)
        return model


@contextlib.contextmanager
def plant(*bug_ids: str) -> Iterator[list[PlantedBug]]:
    """Install the overrides of the named bugs; restore the library on exit.

    Raises:
        KeyError: an unknown bug id (the message lists the known ones).
    """
    unknown = [b for b in bug_ids if b not in PLANTED_BUGS]
    if unknown:
        raise KeyError(f"unknown planted bug(s) {unknown}; known: {sorted(PLANTED_BUGS)}")
    bugs = [PLANTED_BUGS[b] for b in bug_ids]
    saved: list[tuple[Any, str, Any]] = []
    try:
        for bug in bugs:
            for patch in bug.patches:
                owner = patch.resolve()
                saved.append((owner, patch.attribute, vars(owner).get(patch.attribute, _MISSING)))
                setattr(owner, patch.attribute, patch.replacement)
        yield bugs
    finally:
        for owner, attribute, original in reversed(saved):
            if original is _MISSING:
                delattr(owner, attribute)
            else:
                setattr(owner, attribute, original)


def check_planted(bug_id: str, seed: int = 0) -> CheckReport:
    """Plant one bug, build the kit's small model with it and run every check on it."""
    from .runner import run_checks

    with plant(bug_id) as (bug,):
        return run_checks(bug.model(seed), seed=seed)


C = "transformer_lib.components."
P = "transformer_lib.pipeline."
BUGS = [
    PlantedBug(
        "single_frequency_pe",
        "the positional encoding uses one frequency for every dimension (2i // d_model is 0)",
        (Patch(C + "positional", "sinusoidal_positional_encoding", m.single_frequency_encoding),),
        (("positional_spectrum", "single-frequency"),),
    ),
    PlantedBug(
        "swapped_sin_cos",
        "cos on the even and sin on the odd dimensions of the positional encoding",
        (Patch(C + "positional", "sinusoidal_positional_encoding", m.swapped_sin_cos_encoding),),
        (("positional_spectrum", "sin-cos-swapped"),),
    ),
    PlantedBug(
        "no_sqrt_dk",
        "attention scores q·k are not divided by √d_k",
        (Patch(C + "multihead", "scaled_dot_product_attention", m.attention_without_scale),),
        (("score_scale", "no-sqrt-dk"),),
        readable_attention=True,
    ),
    PlantedBug(
        "wrong_sqrt_dk",
        "attention scores are divided by d_k instead of √d_k",
        (Patch(C + "multihead", "scaled_dot_product_attention", m.attention_divided_by_d_k),),
        (("score_scale", "wrong-scale"),),
        readable_attention=True,
    ),
    PlantedBug(
        "softmax_wrong_axis",
        "the attention softmax runs over the queries (dim=-2) instead of the keys",
        (Patch(C + "multihead", "scaled_dot_product_attention", m.attention_softmax_over_queries),),
        (("attention_rows", "softmax-wrong-axis"), ("causality", "softmax-wrong-axis")),
        readable_attention=True,
    ),
    PlantedBug(
        "causal_mask_off_by_one",
        "the causal mask lets position t attend to position t + 1",
        (Patch(C + "model", "causal_mask", m.causal_mask_off_by_one),),
        (("causality", "causal-mask-off-by-one"), ("attention_rows", "causal-mask-off-by-one")),
    ),
    PlantedBug(
        "padding_mask_ignored",
        "the padding mask is all True: real tokens attend to <pad>",
        (Patch(C + "model", "padding_mask", m.padding_mask_ignoring_padding),),
        (
            ("padding_invariance", "padding-mask-ignored"),
            ("attention_rows", "padding-mask-ignored"),
        ),
    ),
    PlantedBug(
        "padding_mask_inverted",
        "the padding mask is True on the pads (PyTorch's True = blocked, used as True = attend)",
        (Patch(C + "model", "padding_mask", m.padding_mask_inverted),),
        (
            ("attention_rows", "padding-mask-inverted"),
            ("padding_invariance", "padding-mask-inverted"),
        ),
    ),
    PlantedBug(
        "heads_split_without_transpose",
        "heads split with view(B, H, T, Dk) instead of view(B, T, H, Dk).transpose(1, 2)",
        (
            Patch(
                C + "multihead:MultiHeadAttention", "_split_heads", m.split_heads_without_transpose
            ),
        ),
        (("causality", "heads-split-without-transpose"),),
    ),
    PlantedBug(
        "heads_merged_without_transpose",
        "heads concatenated with reshape(B, T, D) of (B, H, T, Dk), without transpose(1, 2)",
        (Patch(C + "layers", "MultiHeadAttention", m.HeadsMergedWithoutTranspose),),
        (("causality", "heads-merged-without-transpose"),),
    ),
    PlantedBug(
        "no_sqrt_d_model",
        "the token embeddings are not multiplied by √d_model",
        (Patch(C + "embedding:TokenEmbedding", "forward", m.embedding_without_scale),),
        (("embedding_scale", "no-sqrt-d-model"),),
    ),
    PlantedBug(
        "ffn_without_residual",
        "the feed-forward sub-layer has no residual connection: LayerNorm(FFN(x))",
        (Patch(C + "layers:EncoderLayer", "forward", m.encoder_layer_ffn_without_residual),),
        (("torch_parity", "missing-residual"),),
        arch="decoder-only",
    ),
    PlantedBug(
        "pre_ln_by_default",
        "the config's default is pre-LN (norm_first=True); the paper is post-LN",
        (Patch(C + "config:TransformerConfig", "__init__", m.config_init_pre_ln_by_default),),
        (("paper_defaults", "pre-ln-by-default"),),
    ),
    PlantedBug(
        "label_smoothing_counts_padding",
        "label smoothing gives <pad> targets a smoothed distribution and counts them in the mean",
        (
            Patch(
                P + "objectives:LabelSmoothingLoss", "forward", t.label_smoothing_counting_padding
            ),
        ),
        (("label_smoothing_pads", "smoothing-counts-padding"),),
    ),
    PlantedBug(
        "wrong_noam_exponents",
        "the Noam schedule uses step · warmup^-0.5 instead of step · warmup^-1.5",
        (Patch(P + "objectives", "noam_lr", t.noam_lr_wrong_exponents),),
        (("noam_peak", "noam-exponents"),),
    ),
    PlantedBug(
        "pytorch_default_adam",
        "Adam with PyTorch's default betas (0.9, 0.999) and eps 1e-8",
        (Patch(P + "training", "make_optimizer", t.adam_with_pytorch_defaults),),
        (("adam_settings", "pytorch-default-adam"),),
    ),
    PlantedBug(
        "kv_cache_wrong_offset",
        "with the key/value cache every new token gets position 0 (the offset is dropped)",
        (Patch(C + "model:Transformer", "_embed", m.embed_ignoring_cache_offset),),
        (("kv_cache", "cache-position-offset"),),
    ),
    PlantedBug(
        "cache_not_reordered",
        "beam search's cache reorder rebinds a copy: the beams keep the old keys and values",
        (Patch(C + "layers:KVCache", "reorder", m.reorder_a_copy),),
        (("cache_reorder", "cache-not-reordered"),),
    ),
    PlantedBug(
        "untied_weights",
        "the output layer gets its own matrix instead of sharing the embedding's",
        (Patch(C + "model:Transformer", "__init__", m.transformer_init_untied),),
        (("tied_embeddings", "untied-weights"),),
    ),
    PlantedBug(
        "cross_attention_on_decoder_states",
        "cross-attention takes its keys and values from the decoder's own states",
        (Patch(C + "layers:DecoderLayer", "forward", m.decoder_layer_cross_attending_to_itself),),
        (("source_dependence", "cross-attention-on-decoder-states"),),
    ),
    PlantedBug(
        "dropout_in_eval",
        "the FFN calls F.dropout(x, p) without training=self.training: dropout in eval mode",
        (
            Patch(
                C + "feedforward:PositionwiseFeedForward",
                "forward",
                m.feed_forward_dropout_always_on,
            ),
        ),
        (("eval_determinism", "dropout-in-eval"),),
    ),
    PlantedBug(
        "unshifted_target",
        "teacher forcing scores the decoder on tgt[:, :-1], the tokens it reads",
        (
            Patch(
                P + "tasks:EncoderDecoderTask", "batch_loss", staticmethod(t.batch_loss_unshifted)
            ),
        ),
        (("teacher_forcing", "unshifted-target"),),
    ),
    PlantedBug(
        "unshifted_target_decoder_only",
        "the decoder-only loss uses ids[:, :-1] instead of ids[:, 1:] in training and validation",
        (
            Patch(P + "tasks", "decoder_only_loss", t.decoder_only_loss_unshifted),
            Patch(
                P + "tasks:DecoderOnlyTask", "evaluate_loss", t.decoder_only_validation_unshifted
            ),
        ),
        (("teacher_forcing", "unshifted-target"),),
        arch="decoder-only",
    ),
    PlantedBug(
        "learned_positions_ignore_offset",
        "the learned positional table ignores the cache offset (rows from 0 every step)",
        (
            Patch(
                C + "positional:LearnedPositionalEncoding",
                "forward",
                m.learned_positions_ignoring_offset,
            ),
        ),
        (("kv_cache", "cache-position-offset"),),
        arch="decoder-only",
        config={"positional": "learned"},
    ),
    PlantedBug(
        "cross_attention_ignores_source_padding",
        "the decoder's cross-attention is not given the source padding mask",
        (Patch(C + "layers:Decoder", "forward", m.decoder_without_cross_mask),),
        (
            ("attention_rows", "cross-attention-ignores-source-padding"),
            ("padding_invariance", "cross-attention-ignores-source-padding"),
        ),
    ),
]

#: Every planted bug by id, in the order of the book.
PLANTED_BUGS: dict[str, PlantedBug] = {bug.id: bug for bug in BUGS}
