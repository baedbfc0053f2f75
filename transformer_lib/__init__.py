"""transformer_lib — the Transformer of "Attention Is All You Need", one module per idea.

Three layers, each importing only from the ones before it:

* ``transformer_lib.components`` — the paper's parts, one module each in the book's
  order (embedding, attention, multihead, positional, masks, feedforward, layers, model).
  They import only torch and each other.
* ``transformer_lib.pipeline`` — corpus, tokenizer, batching, objectives, training,
  checkpoints, decoding, evaluation, the shipped model and the command line.
* ``transformer_lib.views`` — the book's figures and explorers (matplotlib, ipywidgets,
  bertviz). Never imported by the two layers above, and not by ``import transformer_lib``.

Shape legend used in every docstring and comment:
    B batch, S source length, T target length, L any length, H heads,
    D d_model, Dk head width (d_model / H), V vocabulary size.

Masks are boolean, **True = may attend**, and broadcast to ``(B, H, Tq, Tk)``.
"""

from .components import (
    Decoder,
    DecoderLayer,
    DecoderOnlyTransformer,
    Encoder,
    EncoderLayer,
    KVCache,
    LearnedPositionalEncoding,
    MultiHeadAttention,
    PositionwiseFeedForward,
    RotaryPositionalEncoding,
    SinusoidalPositionalEncoding,
    SublayerConnection,
    TokenEmbedding,
    Transformer,
    TransformerConfig,
    causal_mask,
    combine_masks,
    count_parameters,
    decoder_mask,
    padding_mask,
    paper_parameter_counts,
    scaled_dot_product_attention,
    sinusoidal_positional_encoding,
)
from .pipeline import (
    CheckpointError,
    LabelSmoothingLoss,
    NoamSchedule,
    Trainer,
    TrainingConfig,
    Translator,
    beam_search,
    evaluate_pairs,
    greedy_decode,
    load_pretrained,
    noam_lr,
    train,
)

__version__ = "0.1.0"

__all__ = [
    "CheckpointError",
    "LabelSmoothingLoss",
    "NoamSchedule",
    "Trainer",
    "TrainingConfig",
    "Translator",
    "beam_search",
    "evaluate_pairs",
    "greedy_decode",
    "load_pretrained",
    "noam_lr",
    "train",
    "Decoder",
    "DecoderLayer",
    "DecoderOnlyTransformer",
    "Encoder",
    "EncoderLayer",
    "KVCache",
    "LearnedPositionalEncoding",
    "MultiHeadAttention",
    "PositionwiseFeedForward",
    "RotaryPositionalEncoding",
    "SinusoidalPositionalEncoding",
    "SublayerConnection",
    "TokenEmbedding",
    "Transformer",
    "TransformerConfig",
    "causal_mask",
    "combine_masks",
    "count_parameters",
    "decoder_mask",
    "padding_mask",
    "paper_parameter_counts",
    "scaled_dot_product_attention",
    "sinusoidal_positional_encoding",
]
