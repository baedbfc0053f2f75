"""The paper's components, one module each, in the order the book teaches them.

``embedding`` (§3.4) → ``attention`` (§3.2.1) → ``multihead`` (§3.2.2) → ``positional``
(§3.5) → ``masks`` → ``feedforward`` (§3.3 and the residual sub-layer of §3.1) →
``layers`` (encoder and decoder layers and stacks) → ``model`` (the encoder–decoder) →
``decoder_only`` (the same parts as one causal stack, without the encoder).
``config`` holds the hyper-parameters; ``reference`` bridges to PyTorch's own
``nn.MultiheadAttention`` and ``nn.Transformer`` for parity checks.

These modules import only torch and each other: never the pipeline or the views.
"""

from .attention import scaled_dot_product_attention
from .config import TransformerConfig
from .decoder_only import DecoderOnlyTransformer
from .embedding import TokenEmbedding
from .feedforward import PositionwiseFeedForward, SublayerConnection
from .layers import Decoder, DecoderLayer, Encoder, EncoderLayer, KVCache
from .masks import causal_mask, combine_masks, decoder_mask, padding_mask, prefix_lm_mask
from .model import Transformer, count_parameters, paper_parameter_counts
from .multihead import MultiHeadAttention
from .positional import (
    LearnedPositionalEncoding,
    RotaryPositionalEncoding,
    SinusoidalPositionalEncoding,
    sinusoidal_positional_encoding,
)

__all__ = [
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
    "prefix_lm_mask",
    "scaled_dot_product_attention",
    "sinusoidal_positional_encoding",
]
