"""transformer_lib — the Transformer of "Attention Is All You Need", one module per idea.

The modules follow the book's order: tokens and embeddings (``embedding``), scaled
dot-product attention (``attention``), multi-head attention (``multihead``), positional
encoding (``positional``), masks (``masks``), feed-forward and residual sub-layers
(``feedforward``), layers and stacks (``layers``), the model (``model``), then data,
training, decoding and evaluation.

Shape legend used in every docstring and comment:
    B batch, S source length, T target length, L any length, H heads,
    D d_model, Dk head width (d_model / H), V vocabulary size.

Masks are boolean, **True = may attend**, and broadcast to ``(B, H, Tq, Tk)``.
"""

from .attention import scaled_dot_product_attention
from .config import TransformerConfig
from .decoding import beam_search, greedy_decode
from .embedding import TokenEmbedding
from .evaluation import evaluate_pairs
from .feedforward import PositionwiseFeedForward, SublayerConnection
from .layers import Decoder, DecoderLayer, Encoder, EncoderLayer, KVCache
from .masks import causal_mask, combine_masks, decoder_mask, padding_mask
from .model import Transformer, count_parameters, paper_parameter_counts
from .multihead import MultiHeadAttention
from .positional import (
    LearnedPositionalEncoding,
    SinusoidalPositionalEncoding,
    sinusoidal_positional_encoding,
)
from .pretrained import Translator, load_pretrained
from .training import (
    CheckpointError,
    LabelSmoothingLoss,
    NoamSchedule,
    Trainer,
    TrainingConfig,
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
    "Encoder",
    "EncoderLayer",
    "KVCache",
    "LearnedPositionalEncoding",
    "MultiHeadAttention",
    "PositionwiseFeedForward",
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
