"""Ready-made adapters for this library's models, and :func:`adapt`.

Every part is looked up *when a check calls it*, in the module where the library's own code
looks it up (``training.make_optimizer``, ``tasks.EncoderDecoderTask``, the attention function
of ``components.multihead``, ...). So the adapter checks what a training run or a translation
would really use, including a bug planted there (:mod:`.planting`).
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

import torch
from torch import Tensor, nn

from ...components import config as config_module
from ...components import multihead
from ...components.decoder_only import DecoderOnlyTransformer
from ...components.model import Transformer
from ...components.reference import (
    torch_decoder_only_from,
    torch_decoder_only_hidden,
    torch_reference_logits,
    torch_transformer_from,
)
from .. import decoding, generation, objectives, tasks, training
from ..tokenizer import SEP_ID
from .adapter import LossBatch, ModelAdapter

__all__ = ["StandIn", "adapt", "tiny_config", "tiny_model"]

#: Sizes of the kit's own small models: fast on a CPU, big enough for every check.
TINY = dict(
    d_model=32, n_heads=4, d_ff=64, n_encoder_layers=2, n_decoder_layers=2, max_len=40, dropout=0.1
)
TINY_VOCAB = 48


def tiny_config(**overrides: Any):
    """A small :class:`~transformer_lib.TransformerConfig` (vocabulary 48, d_model 32).

    The config class is looked up when called, so a planted change of its defaults shows.
    """
    kw = {**TINY, **overrides}
    vocab = kw.pop("vocab_size", TINY_VOCAB)
    return config_module.TransformerConfig.tiny(vocab, **kw)


def tiny_model(arch: str = "encoder-decoder", seed: int = 0, **overrides: Any) -> nn.Module:
    """A freshly initialised small model of the library (eval mode) for the kit's examples.

    Args:
        arch: ``"encoder-decoder"`` (:class:`~transformer_lib.Transformer`) or
            ``"decoder-only"`` (:class:`~transformer_lib.DecoderOnlyTransformer`).
        seed: seed of the initialisation.
        overrides: config fields (``norm_first=True``, ``positional="learned"``, ...).
    """
    torch.manual_seed(seed)
    cfg = tiny_config(**overrides)
    if arch == "encoder-decoder":
        return Transformer(cfg).eval()
    if arch == "decoder-only":
        return DecoderOnlyTransformer(cfg).eval()
    raise ValueError(f"arch must be 'encoder-decoder' or 'decoder-only', got {arch!r}")


class StandIn(nn.Module):
    """A module that stands in for a library model inside the library's training code.

    It has the model's ``config`` and one (unused) parameter, so that the task functions can
    read the pad id and the device, and its ``forward(*inputs, **keywords)`` returns
    ``fn(*inputs)``: the check kit's copying model or next-token oracle.
    """

    def __init__(self, fn, config):
        super().__init__()
        self.fn, self.config = fn, config
        self.anchor = nn.Parameter(torch.zeros(1))

    def forward(self, *inputs: Tensor, **keywords: Any) -> Tensor:
        return self.fn(*inputs)


class _Rows(torch.utils.data.Dataset):
    """The few dataset methods the validation loops use: ``lengths``, items, ``pad_id``."""

    def __init__(self, items: list, lengths: list, pad_id: int):
        self.items, self.lengths, self.pad_id = items, lengths, pad_id

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, i: int):
        return self.items[i]


def _unpad(row: Tensor, pad_id: int) -> Tensor:
    keep = row != pad_id
    return row[: int(keep.nonzero().max()) + 1] if keep.any() else row[:1]


def _training_parts(model: nn.Module, arch: str) -> dict[str, Any]:
    """Loss, teacher forcing, schedule, optimiser and defaults, as the trainer builds them."""
    c = model.config
    defaults = training.TrainingConfig()

    def criterion():
        return training.LabelSmoothingLoss(c.vocab_size, defaults.label_smoothing, c.pad_id)

    if arch == "encoder-decoder":

        def items_of(batch: LossBatch) -> list:
            return [(_unpad(s, c.pad_id), _unpad(t, c.pad_id)) for s, t in zip(*batch[:2])]

        def lengths_of(items):
            return [(len(s), len(t)) for s, t in items]

    else:

        def items_of(batch: LossBatch) -> list:
            return [(_unpad(t, c.pad_id), int(p)) for t, p in zip(batch.tgt, batch.prefix_len)]

        def lengths_of(items):
            return [len(ids) for ids, _ in items]

    def training_loss(model_fn, batch: LossBatch) -> Tensor:
        task = tasks.task_for(model)
        loss, _, _ = task.batch_loss(StandIn(model_fn, c), items_of(batch), criterion(), "cpu")
        return loss

    def validation_loss(model_fn, batch: LossBatch) -> dict[str, float]:
        items = items_of(batch)
        data = _Rows(items, lengths_of(items), c.pad_id)
        out = tasks.task_for(model).evaluate_loss(
            StandIn(model_fn, c), data, 4096, defaults.label_smoothing
        )
        return {k: v for k, v in out.items() if k in ("val_loss", "val_nll")}

    def lr_schedule(step: int) -> float:
        # The paper's schedule as the trainer builds it (NoamSchedule), on an optimiser with
        # base lr 1 as make_optimizer gives: LambdaLR sets the rate of the n-th optimiser
        # step after n - 1 schedule steps.
        opt = torch.optim.SGD([nn.Parameter(torch.zeros(1))], lr=1.0)
        schedule = objectives.NoamSchedule(opt, c.d_model, defaults.warmup, defaults.lr_factor)
        return float(schedule.lr_lambdas[0](step - 1))

    return dict(
        loss_function=lambda logits, target: criterion()(logits, target),
        training_loss=training_loss,
        validation_loss=validation_loss,
        lr_schedule=lr_schedule,
        warmup=defaults.warmup,
        lr_factor=defaults.lr_factor,
        optimizer=lambda module: training.make_optimizer(module),
        default_config=lambda: asdict(config_module.TransformerConfig()),
    )


def _common(model: nn.Module) -> dict[str, Any]:
    c = model.config
    parts: dict[str, Any] = dict(
        vocab_size=c.vocab_size,
        d_model=c.d_model,
        pad_id=c.pad_id,
        bos_id=c.bos_id,
        eos_id=c.eos_id,
        reserved_ids=(c.unk_id,),
        max_len=c.max_len,
        dropout=c.dropout,
        module=model,
        attention_function=lambda q, k, v, mask=None: multihead.scaled_dot_product_attention(
            q, k, v, mask
        ),
        unavailable={},
    )
    if c.positional == "sinusoidal":
        parts["positional_table"] = lambda n: model.positional.pe[:n]
    else:
        parts["unavailable"]["positional_table"] = (
            "the model learns its positions (positional='learned')"
        )
    return parts


def _encoder_decoder(model: Transformer) -> ModelAdapter:
    c = model.config
    layout = "pre-LN" if c.norm_first else "post-LN"

    def cache_start(src: Tensor) -> dict:
        memory, src_mask = model.encode(src)
        return {"memory": memory, "src_mask": src_mask, "cache": model.new_cache()}

    def torch_reference():
        ref = torch_transformer_from(model).eval()
        return lambda src, tgt: torch_reference_logits(model, ref, src, tgt)

    return ModelAdapter(
        forward=lambda src, tgt: model(src, tgt),
        arch="encoder-decoder",
        name=f"Transformer ({layout}, {c.positional} positions)",
        attention=lambda src, tgt: model(src, tgt, return_attention=True)[1],
        token_embedding=lambda ids: model.tgt_embed(ids),
        embedding_matrices=lambda: {
            "target embedding": model.tgt_embed.weight,
            "source embedding": model.src_embed.weight,
            "output projection": model.generator.weight,
        },
        torch_reference=torch_reference,
        cache_start=cache_start,
        cache_step=lambda s, ids: model.decode(ids, s["memory"], s["src_mask"], cache=s["cache"]),
        cache_reorder=lambda s, rows: s["cache"].reorder(rows),
        greedy=lambda src, n: decoding.greedy_decode(model, src, max_len=n + 1),
        beam=lambda src, k, n: decoding.beam_search(model, src, beam_size=k, max_len=n + 1),
        **_common(model),
        **_training_parts(model, "encoder-decoder"),
    )


def _decoder_only(model: DecoderOnlyTransformer, sep_id: int) -> ModelAdapter:
    c = model.config
    layout = "pre-LN" if c.norm_first else "post-LN"
    never = (c.pad_id, c.bos_id, sep_id)

    def prompts(src: Tensor) -> Tensor:
        sep = torch.full((src.size(0), 1), sep_id, dtype=torch.long, device=src.device)
        return torch.cat([src, sep], dim=1)  # (B, S + 1): English <sep>

    def continuation(rows, start: int) -> list[list[int]]:
        out = []
        for row in rows:
            new = list(row[start:])
            out.append(new[: new.index(c.eos_id) + 1] if c.eos_id in new else new)
        return out

    def greedy(src: Tensor, n: int):
        p = prompts(src)
        rows = generation.generate(
            model, p, n, greedy=True, eos_id=c.eos_id, prefix_lm=model.prefix_lm, never=never
        )
        return continuation(rows.tolist(), p.size(1))

    def beam(src: Tensor, k: int, n: int):
        p = prompts(src)
        rows = generation._beam(model, p, k, 0.6, n, c.eos_id, model.prefix_lm, never)
        return continuation(rows, p.size(1))

    def torch_reference():
        ref = torch_decoder_only_from(model).eval()
        return lambda ids: model.generator(torch_decoder_only_hidden(model, ref, ids))

    return ModelAdapter(
        forward=lambda ids: model(ids),
        arch="decoder-only",
        name=f"DecoderOnlyTransformer ({layout}, {c.positional} positions)",
        sep_id=sep_id,
        attention=lambda ids: model(ids, return_attention=True)[1],
        token_embedding=lambda ids: model.embed(ids),
        embedding_matrices=lambda: {
            "embedding": model.embed.weight,
            "output projection": model.generator.weight,
        },
        torch_reference=torch_reference,
        cache_start=lambda src: model.new_cache(),
        cache_step=lambda cache, ids: model(ids, cache=cache),
        cache_reorder=lambda cache, rows: cache.reorder(rows),
        greedy=greedy,
        beam=beam,
        **_common(model),
        **_training_parts(model, "decoder-only"),
    )


def adapt(model: Any, sep_id: int = SEP_ID) -> ModelAdapter:
    """The :class:`ModelAdapter` of a model this library knows, or ``model`` if it is one.

    Args:
        model: a :class:`ModelAdapter`; a :class:`~transformer_lib.Transformer`; a
            :class:`~transformer_lib.DecoderOnlyTransformer`; or a
            :class:`~.torch_model.TorchTransformerModel`.
        sep_id: the ``<sep>`` id of a decoder-only model's prompts (the book's tokenizer: 4).

    Raises:
        TypeError: any other object; wrap your own model in a :class:`ModelAdapter`.
    """
    from .torch_model import TorchTransformerModel, torch_adapter

    if isinstance(model, ModelAdapter):
        return model
    if isinstance(model, Transformer):
        return _encoder_decoder(model)
    if isinstance(model, DecoderOnlyTransformer):
        return _decoder_only(model, sep_id)
    if isinstance(model, TorchTransformerModel):
        return torch_adapter(model)
    raise TypeError(
        f"the check kit has no ready-made adapter for a {type(model).__name__}: wrap it in "
        "transformer_lib.pipeline.check_kit.ModelAdapter(forward=..., arch=..., vocab_size=..., "
        "d_model=...), giving the optional parts you can"
    )
