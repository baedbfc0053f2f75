"""The model's hyper-parameters in one dataclass, with the paper's presets (Table 3).

Taught in chapter 8. ``TransformerConfig.base()`` and ``.big()`` are the two models
of "Attention Is All You Need"; ``.tiny()`` is the size this book trains on a CPU.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Any

from .feedforward import ACTIVATIONS, NORMS
from .positional import POSITIONALS


@dataclass
class TransformerConfig:
    """Everything needed to build a :class:`~transformer_lib.Transformer`.

    The names follow the paper (§3) and ``torch.nn.Transformer``.
    """

    vocab_size: int = 37000  # shared source/target vocabulary (the paper: 37k joint BPE)
    d_model: int = 512  # width of every residual stream vector
    n_heads: int = 8  # h: attention heads per layer; d_k = d_v = d_model / n_heads
    d_ff: int = 2048  # inner width of the position-wise feed-forward network
    n_encoder_layers: int = 6  # N for the encoder stack
    n_decoder_layers: int = 6  # N for the decoder stack
    # P_drop: the paper (§5.4) drops sub-layer outputs and embeddings+PE; the library,
    # like torch.nn.Transformer, also drops attention weights and the FFN's hidden units
    dropout: float = 0.1
    max_len: int = 512  # longest sequence the positional table covers
    pad_id: int = 0  # padding token: never attended to, ignored by the loss
    unk_id: int = 1  # unknown token
    bos_id: int = 2  # beginning of sentence: starts every target sequence
    eos_id: int = 3  # end of sentence: decoding stops when it is produced
    norm_first: bool = False  # False = post-LN as in the paper; True = pre-LN (Xiong et al. 2020)
    share_embeddings: bool = True  # tie source, target and pre-softmax weights (§3.4)
    # "sinusoidal" (§3.5, the paper) or "learned", both added to the embeddings; or "rope":
    # rotary positions, applied to the queries and keys of every self-attention (chapter 14)
    positional: str = "sinusoidal"
    layer_norm_eps: float = 1e-5  # LayerNorm epsilon (PyTorch's default)
    activation: str = "relu"  # the FFN's: "relu" (§3.3, the paper), "gelu" or "swiglu"
    norm: str = "layer"  # every sub-layer's norm: "layer" (§3.1, the paper) or "rms" (RMSNorm)

    def __post_init__(self) -> None:
        problems = []
        if self.d_model <= 0 or self.n_heads <= 0:
            problems.append("d_model and n_heads must be positive")
        elif self.d_model % self.n_heads != 0:
            problems.append(
                f"d_model={self.d_model} is not divisible by n_heads={self.n_heads}; "
                f"choose n_heads among the divisors of d_model (e.g. "
                f"{_divisors_hint(self.d_model)})"
            )
        if not 0.0 <= self.dropout < 1.0:
            problems.append(f"dropout={self.dropout} must be in [0, 1)")
        if self.positional not in POSITIONALS:
            problems.append(
                f"positional={self.positional!r} must be one of {POSITIONALS} "
                "('sinusoidal' is the paper's)"
            )
        elif (
            self.positional == "rope"
            and self.n_heads > 0
            and self.d_model % self.n_heads == 0
            and (self.d_model // self.n_heads) % 2
        ):
            problems.append(
                f"positional='rope' rotates pairs of dimensions, so d_model / n_heads must be "
                f"even, got {self.d_model} / {self.n_heads} = {self.d_model // self.n_heads}"
            )
        if self.activation not in ACTIVATIONS:
            problems.append(
                f"activation={self.activation!r} must be one of {ACTIVATIONS} "
                "('relu' is the paper's)"
            )
        if self.norm not in NORMS:
            problems.append(f"norm={self.norm!r} must be one of {NORMS} ('layer' is the paper's)")
        for name in ("vocab_size", "d_ff", "max_len"):
            if getattr(self, name) <= 0:
                problems.append(f"{name} must be positive, got {getattr(self, name)}")
        for name in ("n_encoder_layers", "n_decoder_layers"):
            if getattr(self, name) < 0:
                problems.append(f"{name} must be >= 0, got {getattr(self, name)}")
        specials = {
            "pad_id": self.pad_id,
            "unk_id": self.unk_id,
            "bos_id": self.bos_id,
            "eos_id": self.eos_id,
        }
        for name, value in specials.items():
            if not 0 <= value < self.vocab_size:
                problems.append(f"{name}={value} is outside the vocabulary [0, {self.vocab_size})")
        if problems:
            raise ValueError("Invalid TransformerConfig: " + "; ".join(problems))

    @property
    def d_head(self) -> int:
        """d_k = d_v = d_model / h, the width of one attention head."""
        return self.d_model // self.n_heads

    # ---- presets -------------------------------------------------------------------
    @classmethod
    def base(cls, vocab_size: int = 37000, **overrides: Any) -> TransformerConfig:
        """The paper's base model: N=6, d_model=512, d_ff=2048, h=8, P_drop=0.1."""
        return cls(vocab_size=vocab_size, **overrides)

    @classmethod
    def big(cls, vocab_size: int = 37000, **overrides: Any) -> TransformerConfig:
        """The paper's big model: N=6, d_model=1024, d_ff=4096, h=16, P_drop=0.3."""
        kw = dict(d_model=1024, d_ff=4096, n_heads=16, dropout=0.3)
        kw.update(overrides)
        return cls(vocab_size=vocab_size, **kw)

    @classmethod
    def tiny(cls, vocab_size: int = 4000, **overrides: Any) -> TransformerConfig:
        """A CPU-sized model for the book: trains to a working translator in minutes."""
        kw = dict(
            d_model=128,
            n_heads=4,
            d_ff=512,
            n_encoder_layers=2,
            n_decoder_layers=2,
            dropout=0.1,
            max_len=128,
        )
        kw.update(overrides)
        return cls(vocab_size=vocab_size, **kw)

    def replace(self, **changes: Any) -> TransformerConfig:
        """A copy with some fields changed (validated again)."""
        return replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TransformerConfig:
        known = {f for f in cls.__dataclass_fields__}
        unknown = set(data) - known
        if unknown:
            raise ValueError(
                f"Unknown TransformerConfig fields {sorted(unknown)}; the file was written by a "
                "different version of transformer_lib or is not a config of this library."
            )
        return cls(**data)


def _divisors_hint(n: int) -> str:
    divs = [d for d in range(1, min(n, 64) + 1) if n % d == 0]
    return ", ".join(str(d) for d in divs[-5:])
