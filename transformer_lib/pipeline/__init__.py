"""The training pipeline: from the corpus file to a translator you can call.

``corpus`` (find, read and split the sentence pairs) → ``tokenizer`` (shared BPE) →
``batching`` (token-budget batches, §5.1) → ``objectives`` (label smoothing and the
warm-up schedule, §5.3–5.4) → ``training`` (the loop) → ``checkpoints`` (files that
resume exactly) → ``decoding`` (greedy and beam search) → ``evaluation`` (BLEU, chrF) →
``pretrained`` (the shipped model) → ``cli`` (``python -m transformer_lib``).
For the decoder-only model: ``lm_batching`` (``English <sep> German <eos>`` sequences and
their loss) and ``generation`` (sampling, and greedy/beam translation).
``english_lm`` holds chapter 12's small causal language model of English (every token in
the loss) and samples sentences from it.
``check_kit`` checks any Transformer against the paper (and plants the tutorial bugs it
catches); ``check_command`` is its ``python -m transformer_lib check``; ``data_checks`` checks
the sentence pairs themselves (alignment, train/test leakage, tokenizer coverage).
``masked_lm`` picks BERT's masked tokens (15%; 80% ``[MASK]``, 10% random, 10% kept) and
holds the small masked language model of chapter 14 that restores them.

The pipeline uses the components and knows nothing of plotting or widgets.
"""

from .check_kit import PLANTED_BUGS, CheckReport, ModelAdapter, plant, run_checks
from .checkpoints import CheckpointError, MissingCheckpointError
from .decoding import beam_search, greedy_decode
from .evaluation import evaluate_pairs
from .generation import generate, next_token_distribution, translate_decoder_only
from .lm_batching import DecoderOnlyDataset, collate_decoder_only, decoder_only_loss
from .objectives import LabelSmoothingLoss, NoamSchedule, noam_lr
from .pretrained import Translator, load_pretrained
from .training import Trainer, TrainingConfig, train

__all__ = [
    "PLANTED_BUGS",
    "CheckReport",
    "CheckpointError",
    "DecoderOnlyDataset",
    "LabelSmoothingLoss",
    "MissingCheckpointError",
    "ModelAdapter",
    "NoamSchedule",
    "Trainer",
    "TrainingConfig",
    "Translator",
    "beam_search",
    "collate_decoder_only",
    "decoder_only_loss",
    "evaluate_pairs",
    "generate",
    "greedy_decode",
    "load_pretrained",
    "next_token_distribution",
    "noam_lr",
    "plant",
    "run_checks",
    "train",
    "translate_decoder_only",
]
