"""Position-wise feed-forward network (§3.3) and the residual sub-layer (§3.1, §5.4).

Taught in chapter 7.

    FFN(x) = max(0, x W1 + b1) W2 + b2
    post-LN (paper): LayerNorm(x + Dropout(Sublayer(x)))
    pre-LN:          x + Dropout(Sublayer(LayerNorm(x)))
"""

from __future__ import annotations

from collections.abc import Callable

from torch import Tensor, nn


class PositionwiseFeedForward(nn.Module):
    """Two linear maps with a ReLU between, applied to every position alike.

    Shape: ``(B, L, D)`` → ``(B, L, D)`` (inner width ``d_ff``).
    """

    def __init__(self, d_model: int, d_ff: int, dropout: float = 0.0):
        super().__init__()
        self.linear1 = nn.Linear(d_model, d_ff)
        self.linear2 = nn.Linear(d_ff, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: Tensor) -> Tensor:
        return self.linear2(self.dropout(self.linear1(x).relu()))  # (B, L, D)


class SublayerConnection(nn.Module):
    """Residual connection, dropout and LayerNorm around one sub-layer.

    ``norm_first=False`` is the paper's post-LN; ``True`` is pre-LN, which trains
    more stably in deep stacks. The wrapped sub-layer may return ``(output, extra)``
    (attention returns its weights); ``extra`` is passed through.
    """

    def __init__(
        self, d_model: int, dropout: float = 0.0, norm_first: bool = False, eps: float = 1e-5
    ):
        super().__init__()
        self.norm = nn.LayerNorm(d_model, eps=eps)
        self.dropout = nn.Dropout(dropout)
        self.norm_first = norm_first

    def forward(self, x: Tensor, sublayer: Callable) -> tuple[Tensor, object]:
        out = sublayer(self.norm(x) if self.norm_first else x)
        out, extra = out if isinstance(out, tuple) else (out, None)
        x = x + self.dropout(out)  # the residual path
        return (x if self.norm_first else self.norm(x)), extra  # (B, L, D)
