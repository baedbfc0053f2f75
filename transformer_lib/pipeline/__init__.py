"""The training pipeline: from the corpus file to a translator you can call.

``corpus`` (find, read and split the sentence pairs) → ``tokenizer`` (shared BPE) →
``batching`` (token-budget batches, §5.1) → ``objectives`` (label smoothing and the
warm-up schedule, §5.3–5.4) → ``training`` (the loop) → ``checkpoints`` (files that
resume exactly) → ``decoding`` (greedy and beam search) → ``evaluation`` (BLEU, chrF) →
``pretrained`` (the shipped model) → ``cli`` (``python -m transformer_lib``).

The pipeline uses the components and knows nothing of plotting or widgets.
"""

from .checkpoints import CheckpointError, MissingCheckpointError
from .decoding import beam_search, greedy_decode
from .evaluation import evaluate_pairs
from .objectives import LabelSmoothingLoss, NoamSchedule, noam_lr
from .pretrained import Translator, load_pretrained
from .training import Trainer, TrainingConfig, train

__all__ = [
    "CheckpointError",
    "LabelSmoothingLoss",
    "MissingCheckpointError",
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
]
