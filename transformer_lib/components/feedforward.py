"""Position-wise feed-forward network (§3.3) and the residual sub-layer (§3.1, §5.4).

Taught in chapter 7.

    FFN(x) = max(0, x W1 + b1) W2 + b2        (the paper, activation="relu", the default)
    GELU:    GELU(x W1 + b1) W2 + b2          (activation="gelu")
    SwiGLU:  (SiLU(x Wg) ⊙ x W1) W2           (activation="swiglu", no biases)
    post-LN (paper): LayerNorm(x + Dropout(Sublayer(x)))
    pre-LN:          x + Dropout(Sublayer(LayerNorm(x)))

The variants are the ones most later models use; the defaults are the paper's.
"""

from __future__ import annotations

from collections.abc import Callable

import torch.nn.functional as F
from torch import Tensor, nn

#: The FFN's activations: the paper's ReLU first (the default), then two later ones.
ACTIVATIONS = ("relu", "gelu", "swiglu")
#: The normalizations of a residual sub-layer: the paper's LayerNorm (default), RMSNorm.
NORMS = ("layer", "rms")


class PositionwiseFeedForward(nn.Module):
    """Two linear maps with a ReLU between, applied to every position alike (§3.3, Eq. 2).

    Args:
        d_model: width of the input and output.
        d_ff: inner width (the paper: 2048 for ``d_model = 512``).
        dropout: dropout on the hidden activations (the library's choice, as in
            ``torch.nn.Transformer``; not in the paper).
        activation: ``"relu"`` (the paper, default), ``"gelu"`` (Hendrycks and Gimpel,
            2016; BERT, GPT-2) or ``"swiglu"`` (Shazeer, 2020; LLaMA): a SiLU-gated
            product of two maps ``W_g`` (``gate``) and ``W_1``, three bias-free matrices
            instead of two. To keep the parameter count of a ReLU FFN, give SwiGLU
            ``d_ff`` about 2/3 as large.

    Shape: ``(B, L, D)`` → ``(B, L, D)`` (inner width ``d_ff``).

    Raises:
        ValueError: an activation not in :data:`ACTIVATIONS`.

    Example:
        >>> ffn = PositionwiseFeedForward(128, 512, activation="gelu")
        >>> ffn(torch.randn(2, 5, 128)).shape
        torch.Size([2, 5, 128])
    """

    def __init__(self, d_model: int, d_ff: int, dropout: float = 0.0, activation: str = "relu"):
        super().__init__()
        if activation not in ACTIVATIONS:
            raise ValueError(
                f"activation={activation!r} is not one of {ACTIVATIONS}; use 'relu' for the "
                "paper's FFN."
            )
        self.activation = activation
        bias = activation != "swiglu"  # SwiGLU (Shazeer, 2020) has no biases
        self.linear1 = nn.Linear(d_model, d_ff, bias=bias)
        if activation == "swiglu":
            self.gate = nn.Linear(d_model, d_ff, bias=False)
        self.linear2 = nn.Linear(d_ff, d_model, bias=bias)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: Tensor) -> Tensor:
        hidden = self.linear1(x)  # (B, L, d_ff)
        if self.activation == "relu":
            hidden = hidden.relu()
        elif self.activation == "gelu":
            hidden = F.gelu(hidden)
        else:  # swiglu: each hidden unit is scaled by its own gate
            hidden = F.silu(self.gate(x)) * hidden
        return self.linear2(self.dropout(hidden))  # (B, L, D)


def make_norm(d_model: int, norm: str = "layer", eps: float = 1e-5) -> nn.Module:
    """The normalization of a residual sub-layer: the paper's LayerNorm, or RMSNorm.

    RMSNorm (Zhang and Sennrich, 2019; LLaMA) divides by the root mean square of the
    features and has a gain but no bias and no mean subtraction:
    ``x / sqrt(mean(x**2) + eps) * weight``.

    Args:
        d_model: number of features.
        norm: ``"layer"`` (§3.1, default) or ``"rms"``.
        eps: added to the variance (mean square) before the square root.

    Returns:
        ``nn.LayerNorm`` or ``nn.RMSNorm`` over the last axis.

    Raises:
        ValueError: a norm not in :data:`NORMS`.

    Example:
        >>> make_norm(128, "rms")
        RMSNorm((128,), eps=1e-05, elementwise_affine=True)
    """
    if norm == "layer":
        return nn.LayerNorm(d_model, eps=eps)
    if norm == "rms":
        return nn.RMSNorm(d_model, eps=eps)
    raise ValueError(f"norm={norm!r} is not one of {NORMS}; use 'layer' for the paper's LayerNorm.")


class SublayerConnection(nn.Module):
    """Residual connection, dropout and LayerNorm around one sub-layer.

    ``norm_first=False`` is the paper's post-LN; ``True`` is pre-LN, which trains
    more stably in deep stacks. The wrapped sub-layer may return ``(output, extra)``
    (attention returns its weights); ``extra`` is passed through. ``norm="rms"`` puts
    an RMSNorm where the paper has its LayerNorm (see :func:`make_norm`).
    """

    def __init__(
        self,
        d_model: int,
        dropout: float = 0.0,
        norm_first: bool = False,
        eps: float = 1e-5,
        norm: str = "layer",
    ):
        super().__init__()
        self.norm = make_norm(d_model, norm, eps)
        self.dropout = nn.Dropout(dropout)
        self.norm_first = norm_first

    def forward(self, x: Tensor, sublayer: Callable) -> tuple[Tensor, object]:
        out = sublayer(self.norm(x) if self.norm_first else x)
        out, extra = out if isinstance(out, tuple) else (out, None)
        x = x + self.dropout(out)  # the residual path
        return (x if self.norm_first else self.norm(x)), extra  # (B, L, D)
