"""The kinds of bug behind a failed check, in plain words: every :class:`~.results.Cause`.

Each check names the causes that typically break the property it measures, most likely
first where its measurements tell them apart. The keys are stable (the planted bugs and
the tests refer to them); the texts are what the report prints.
"""

from __future__ import annotations

from .results import Cause

# ---- the forward pass ------------------------------------------------------------------
OFF_BY_ONE = Cause(
    "causal-mask-off-by-one",
    "the causal mask is off by one: position t may also attend to t+1 "
    "(e.g. tril(diagonal=1), or a mask built for the unshifted target)",
)
NO_CAUSAL = Cause(
    "no-causal-mask", "the decoder's self-attention has no causal mask (only padding is masked)"
)
HEADS_SPLIT = Cause(
    "heads-split-without-transpose",
    "heads split with x.view(B, H, T, Dk) instead of x.view(B, T, H, Dk).transpose(1, 2): "
    "each head then mixes the features of different positions",
)
HEADS_MERGED = Cause(
    "heads-merged-without-transpose",
    "heads concatenated with out.reshape(B, T, D) straight from (B, H, T, Dk), without "
    "transpose(1, 2) first: the output of one position mixes several positions",
)
SOFTMAX_AXIS = Cause(
    "softmax-wrong-axis",
    "the softmax is taken over the queries (dim=-2) instead of the keys (dim=-1)",
)
OWN_TOKEN_HIDDEN = Cause(
    "diagonal-masked",
    "position t cannot see its own token: the causal mask also hides the diagonal "
    "(tril(diagonal=-1), or triu used where tril was meant)",
)
PAD_IGNORED = Cause(
    "padding-mask-ignored",
    "the padding mask is not applied: it is built but not passed to attention, or it is all "
    "True, so real tokens attend to <pad>",
)
PAD_INVERTED = Cause(
    "padding-mask-inverted",
    "the padding mask is inverted (tokens == pad, or a True = blocked mask given to code "
    "where True = may attend): tokens attend only to padding, or to nothing",
)
CROSS_PAD = Cause(
    "cross-attention-ignores-source-padding",
    "the decoder's cross-attention is not given the source padding mask, so it reads the "
    "encoder output at <pad> positions",
)
NO_SCALE = Cause(
    "no-sqrt-dk",
    "the scores q·k are not divided by √d_k: their spread grows with d_k and the softmax "
    "saturates (paper §3.2.1)",
)
WRONG_SCALE = Cause(
    "wrong-scale",
    "the scores are divided by the wrong number: d_k instead of √d_k, or √d_model, or a "
    "constant (paper §3.2.1)",
)
SINGLE_FREQUENCY = Cause(
    "single-frequency",
    "every sin/cos pair turns at the same frequency: the exponent 2i/d_model evaluates to the "
    "same value for all i (integer division, or i dropped from the formula)",
)
SWAPPED = Cause(
    "sin-cos-swapped",
    "sin and cos are swapped: the paper's §3.5 puts sin on even and cos on odd dimensions",
)
HALVES = Cause(
    "halves-not-interleaved",
    "sin fills the first half of the dimensions and cos the second half; the paper's §3.5 "
    "interleaves them "
    "(sin on 2i, cos on 2i+1)",
)
WRONG_FREQUENCIES = Cause(
    "wrong-frequencies",
    "the frequencies are not 1/10000^(2i/d_model): a wrong base, i instead of 2i (or 2i "
    "counted twice), or d_model missing from the exponent",
)
NOT_SINUSOIDAL = Cause(
    "not-sinusoidal", "the table is not made of sin/cos pairs (learned, random or shifted values)"
)
NO_EMBED_SCALE = Cause(
    "no-sqrt-d-model",
    "the token embeddings are not multiplied by √d_model (paper §3.4), so they are much smaller "
    "than the positional encoding added to them",
)
WRONG_EMBED_SCALE = Cause(
    "wrong-embedding-scale",
    "the embeddings are scaled by something other than √d_model (d_model, 1/√d_model, ...)",
)
UNTIED = Cause(
    "untied-weights",
    "the embeddings and the output layer are separate matrices; the paper's §3.4 shares one matrix "
    "between both embeddings and the pre-softmax projection",
)
COPIED = Cause(
    "copied-not-shared",
    "the matrices are equal copies, not one shared tensor: training will move them apart "
    "(assign the Parameter, e.g. generator.weight = embedding.weight)",
)
MISSING_RESIDUAL = Cause(
    "missing-residual",
    "a residual connection is missing, e.g. around the feed-forward network (x + FFN(x))",
)
NORM_PLACEMENT = Cause(
    "layer-norm-placement",
    "LayerNorm is in a different place (pre-LN where post-LN was meant, a missing or extra norm)",
)
ATTENTION_DIFFERS = Cause(
    "attention-differs",
    "attention computes something else: scale, heads split or merged, softmax axis, masks",
)
FFN_DIFFERS = Cause(
    "ffn-differs", "the feed-forward network differs (activation, inner width, a missing bias)"
)
CROSS_ON_SELF = Cause(
    "cross-attention-on-decoder-states",
    "cross-attention reads the decoder's own states instead of the encoder output (memory): "
    "the translation cannot depend on the source",
)
MEMORY_UNUSED = Cause(
    "memory-not-used", "the encoder output never reaches the decoder (wrong variable passed)"
)
WRONG_SHAPE = Cause(
    "attention-weights-shape",
    "the attention weights do not have the shape (B, H, Tq, Tk) of their queries and keys",
)
DROPOUT_IN_EVAL = Cause(
    "dropout-in-eval",
    "dropout stays on in eval mode: F.dropout(x, p) without training=self.training, or a "
    "hand-made random mask",
)
DROPOUT_NEVER = Cause(
    "dropout-never-applied", "dropout layers are built but never applied during training"
)


# ---- decoding ---------------------------------------------------------------------------
CACHE_OFFSET = Cause(
    "cache-position-offset",
    "cached steps get the wrong position: the positional encoding (sinusoidal or a learned "
    "table) ignores the cache offset, so every new token is placed at position 0",
)
CACHE_NOT_APPENDED = Cause(
    "cache-not-appended",
    "the new keys and values are not appended to the cache (or the cache is rebuilt from the "
    "last token only)",
)
CACHE_MASK = Cause(
    "cache-mask",
    "the mask used with a cache is wrong: the new positions must see every cached key and, "
    "among themselves, only earlier ones",
)
NOT_REORDERED = Cause(
    "cache-not-reordered",
    "the cache is not reordered when beam search keeps some hypotheses and drops others: each "
    "beam then continues with another beam's keys and values (index_select on the batch axis)",
)
REORDER_PARTIAL = Cause(
    "cache-reordered-partly",
    "only part of the cache follows the kept hypotheses (one layer, or the self-attention "
    "keys but not the values), or it is reordered along the wrong axis",
)
BEAM_DIFFERS = Cause(
    "beam-k1-differs-from-greedy",
    "beam search with one beam takes a different token than greedy: the two score, stop or "
    "rule out tokens differently (a length penalty inside the search, <pad>/<bos> allowed in "
    "one of them, starting scores, the end-of-sentence rule)",
)


# ---- training ---------------------------------------------------------------------------
UNSHIFTED = Cause(
    "unshifted-target",
    "the target is not shifted: the model is scored on the token it reads (e.g. target "
    "ids[:, :-1] for input ids[:, :-1], instead of ids[:, 1:]), so copying the input scores a "
    "low loss and nothing is learned about the next token",
)
MISALIGNED = Cause(
    "misaligned-target",
    "inputs and targets are misaligned in another way (shifted by two, the wrong side cut, "
    "or <bos>/<eos> in the wrong place)",
)
SMOOTHING_PADS = Cause(
    "smoothing-counts-padding",
    "padding targets count in the loss: label smoothing gives them ε/V on every token (and the "
    "mean divides by all positions), so <pad> rows get a loss and a gradient",
)
NOAM_EXPONENTS = Cause(
    "noam-exponents",
    "the exponents of Eq. 3 are wrong: lrate = d_model^-0.5 · min(step^-0.5, "
    "step · warmup^-1.5) peaks exactly at step = warmup",
)
NOAM_SCALE = Cause(
    "noam-scale",
    "the schedule peaks at warmup but at the wrong height: d_model^-0.5 or the factor "
    "missing or doubled, or the base learning rate of the optimiser not 1",
)
NOAM_STEP = Cause(
    "noam-step-count",
    "the step is counted from 0 (or updated before its first use), so the schedule runs one "
    "step early or late",
)
ADAM_DEFAULTS = Cause(
    "pytorch-default-adam",
    "Adam runs with PyTorch's defaults β = (0.9, 0.999), ε = 1e-8 instead of the paper's "
    "β1 = 0.9, β2 = 0.98, ε = 1e-9 (paper §5.3)",
)
NOT_ADAM = Cause("not-adam", "the optimiser is not Adam (paper §5.3)")
DEFAULT_CAUSES = {
    "norm_first": Cause(
        "pre-ln-by-default",
        "pre-LN is the default (norm_first=True); the paper's layout (§3.1) is post-LN, "
        "LayerNorm(x + Sublayer(x)), with pre-LN an option",
    ),
    "share_embeddings": Cause(
        "untied-by-default",
        "the embeddings and the output layer are untied by default (paper §3.4)",
    ),
    "positional": Cause(
        "learned-positions-by-default",
        "learned positions are the default; the paper's §3.5 is sinusoidal",
    ),
    "dropout": Cause("dropout-default", "the default P_drop is not 0.1 (paper §5.4)"),
}
SIZE_CAUSE = Cause(
    "base-size-default",
    "the default sizes are not the base model's (Table 3: N=6, d_model=512, d_ff=2048, h=8)",
)

# ---- any check that reads the logits ------------------------------------------------------
NON_FINITE = Cause(
    "non-finite-logits",
    "the logits are NaN or infinite at real positions: typically an attention row whose every "
    "key is masked (a softmax over only -inf), from a mask in the wrong convention (PyTorch's "
    "True = blocked used where True = may attend was meant, or the reverse) or a causal mask "
    "that also hides the diagonal",
)


#: Every cause by its key.
ALL_CAUSES: dict[str, Cause] = {
    c.key: c for c in [*globals().values(), *DEFAULT_CAUSES.values()] if isinstance(c, Cause)
}
