"""The translator that ships with the book: ``load_pretrained()`` → :class:`Translator`.

Used from chapter 10 on. The weights live in ``data/model.pt`` of the repository (a clone
or an editable install); the checkpoint embeds its tokenizer, so nothing else is needed.

    >>> from transformer_lib import load_pretrained
    >>> translator = load_pretrained()                      # doctest: +SKIP
    >>> translator.translate("Tom is lazy.")                # doctest: +SKIP
    'Tom ist faul.'
"""

from __future__ import annotations

import math
import numbers
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from .checkpoints import (
    MissingCheckpointError,
    load_model,
    restore_hint,
    tokenizer_from_checkpoint,
)
from .corpus import shipped_data_dir
from .decoding import beam_search, encode_sources, greedy_decode
from .evaluation import translate_any
from .tokenizer import warn_about_inputs

__all__ = [
    "CHECKPOINT_ENV_VAR",
    "DEFAULT_DECODER_ONLY",
    "DEFAULT_CHECKPOINT",
    "Translation",
    "Translator",
    "load_pretrained",
    "training_time",
]

#: The shipped weights, relative to the repository that holds this package.
DEFAULT_CHECKPOINT = shipped_data_dir() / "model.pt"
#: The shipped decoder-only translator (chapter 12), trained on the same data and tokenizer.
DEFAULT_DECODER_ONLY = shipped_data_dir() / "decoder_only.pt"
#: Environment variable naming another checkpoint for :func:`load_pretrained`.
CHECKPOINT_ENV_VAR = "TRANSFORMER_BOOK_CHECKPOINT"


@dataclass
class Translation:
    """One translation with the model's attention while producing it.

    ``attention`` maps ``"encoder"`` to per-layer ``(H, S, S)``, ``"decoder"`` to
    ``(H, T, T)`` and ``"cross"`` to ``(H, T, S)`` tensors, where the T query rows are the
    decoder steps: row i reads ``decoder_input_tokens[i]`` and predicts
    ``target_tokens[i]``. Columns of ``"cross"`` are ``source_tokens``.
    """

    source: str
    text: str
    source_tokens: list[str]
    target_tokens: list[str]  # the predicted tokens, ending with "<eos>" if it was produced
    decoder_input_tokens: list[str]  # "<bos>" then the target tokens shifted right
    attention: dict[str, list[Tensor]] = field(default_factory=dict, repr=False)


class Translator:
    """A model and its tokenizer, ready to translate English into German.

    Args:
        model: A trained :class:`~transformer_lib.Transformer`.
        tokenizer: The :class:`~transformer_lib.tokenizer.Tokenizer` it was trained with.
        checkpoint: The checkpoint dict it came from (training details), if any.
    """

    def __init__(self, model, tokenizer, checkpoint: dict | None = None, path: Path | None = None):
        if tokenizer.vocab_size != model.config.vocab_size:
            raise ValueError(
                f"The tokenizer has {tokenizer.vocab_size} tokens but the model's embedding "
                f"has {model.config.vocab_size} rows: they were not trained together. Use the "
                f"tokenizer stored in the model's checkpoint (tokenizer_from_checkpoint)."
            )
        self.model = model.eval()
        self.tokenizer = tokenizer
        self.checkpoint = checkpoint or {}
        self.path = path

    @property
    def config(self):
        return self.model.config

    @property
    def training_state(self) -> dict[str, Any]:
        """Steps, training time, training config and log recorded in the checkpoint."""
        return self.checkpoint.get("state", {})

    def __repr__(self) -> str:
        n = sum(p.numel() for p in self.model.parameters())
        return f"Translator({self.path.name if self.path else 'model'}, {n:,} parameters)"

    def encode(self, text: str) -> Tensor:
        """Source ids ``(1, S)`` for one sentence (no special tokens, as in training)."""
        return torch.tensor([self.tokenizer.encode(text)], dtype=torch.long)

    def translate(
        self,
        text: str | list[str],
        beam: int = 1,
        alpha: float = 0.6,
        return_attention: bool = False,
    ):
        """Translate one sentence (→ str) or a list (→ list of str).

        Args:
            text: An English sentence or a list of them.
            beam: 1 = greedy decoding; > 1 = beam search with that many beams.
            alpha: Length-penalty exponent for beam search (the paper: 0.6).
            return_attention: Return :class:`Translation` objects (tokens and every
                attention map) instead of strings.

        Raises:
            TypeError: ``text`` is not a str or a list of them; ``beam`` is not an int or
                ``alpha`` not a number.
            ValueError: An empty sentence (there is nothing to translate), or one longer
                than the model's ``max_len`` tokens (not truncated: split it); ``beam < 1``
                or ``alpha`` negative or not finite.

        Warns:
            UserWarning: For each sentence with characters never seen in training (they
                become ``<unk>`` and are still translated) or without any letter; see
                :func:`~transformer_lib.pipeline.tokenizer.input_warning`.
        """
        single = isinstance(text, str)
        if not single and not isinstance(text, (list, tuple)):
            raise TypeError(
                f"translate(text=...) takes a str or a list of str, not {type(text).__name__}."
            )
        _check_search(beam, alpha, "translate")
        texts = [text] if single else list(text)
        encode_sources(self.model, self.tokenizer, texts)  # checks types, emptiness, length
        warn_about_inputs(self.tokenizer, texts)
        if not return_attention:
            out = translate_any(self.model, self.tokenizer, texts, beam, alpha)
            return out[0] if single else out
        results = [self._with_attention(t, beam, alpha) for t in texts]
        return results[0] if single else results

    def evaluate(
        self,
        pairs,
        beam: int = 1,
        alpha: float = 0.6,
        limit: int | None = None,
        progress: str | None = None,
    ):
        """BLEU and chrF on ``(english, german)`` pairs, all references per sentence
        (``progress``: a label for a progress bar on stderr; see :func:`evaluate_pairs`)."""
        from .evaluation import evaluate_pairs

        _check_search(beam, alpha, "evaluate")
        return evaluate_pairs(
            self.model, self.tokenizer, pairs, beam, alpha, limit, progress=progress
        )

    @torch.no_grad()
    def _with_attention(self, text: str, beam: int, alpha: float) -> Translation:
        ids = encode_sources(self.model, self.tokenizer, [text])[0]  # checks the input
        device = next(self.model.parameters()).device
        src = torch.tensor([ids], dtype=torch.long, device=device)  # (1, S)
        if beam == 1:
            hyp = greedy_decode(self.model, src)
        else:
            hyp = beam_search(self.model, src, beam_size=beam, alpha=alpha)
        ids = [i for i in hyp[0].tolist() if i != self.config.pad_id]  # <bos> ... <eos>
        tgt = torch.tensor([ids], device=device)
        _, attn = self.model(src, tgt[:, :-1], return_attention=True)
        tok = self.tokenizer
        return Translation(
            source=text,
            text=tok.decode(ids),
            source_tokens=[tok.id_to_token(i) for i in src[0].tolist()],
            target_tokens=[tok.id_to_token(i) for i in ids[1:]],
            decoder_input_tokens=[tok.id_to_token(i) for i in ids[:-1]],
            attention={k: [w[0].cpu() for w in v] for k, v in attn.items()},
        )


def _check_search(beam: Any, alpha: Any, method: str) -> None:
    """``beam`` is an int >= 1 and ``alpha`` a finite number >= 0 (not a str, not a bool)."""
    if isinstance(beam, bool) or not isinstance(beam, numbers.Integral):
        hint = f" (beam={int(beam)})" if isinstance(beam, str) and beam.strip().isdigit() else ""
        raise TypeError(
            f"{method}(beam=...) takes an int, the beam size (1 = greedy), not "
            f"{type(beam).__name__} {beam!r}{hint}."
        )
    if beam < 1:
        raise ValueError(f"{method}(beam=...) must be >= 1 (1 = greedy), got {beam}.")
    if isinstance(alpha, bool) or not isinstance(alpha, numbers.Real):
        raise TypeError(
            f"{method}(alpha=...) takes a number, the length-penalty exponent (the paper: "
            f"0.6), not {type(alpha).__name__} {alpha!r}."
        )
    if not (math.isfinite(alpha) and alpha >= 0):
        raise ValueError(f"{method}(alpha=...) must be a finite number >= 0, got {alpha}.")


def load_pretrained(
    path: str | os.PathLike | None = None, device: str | torch.device = "cpu"
) -> Translator:
    """Load the shipped English→German translator (or another checkpoint).

    Args:
        path: A checkpoint written by the trainer (``model.pt`` or ``checkpoint.pt``);
            default ``$TRANSFORMER_BOOK_CHECKPOINT`` or ``data/model.pt`` of the repository.
        device: Where to put the model.

    Raises:
        MissingCheckpointError: No file there (the message says how to get one).
        CheckpointError: The file is corrupt or not a transformer_lib checkpoint.
    """
    if path is None:
        env = os.environ.get(CHECKPOINT_ENV_VAR)
        if env and not Path(env).is_file():
            raise MissingCheckpointError(
                f"The environment variable {CHECKPOINT_ENV_VAR} names {env}, but there is no "
                f"file there. Point it at a checkpoint (e.g. runs/NAME/model.pt), or unset "
                f"it to use the shipped model ({DEFAULT_CHECKPOINT})."
            )
        path = env or DEFAULT_CHECKPOINT
        if not Path(path).is_file():
            raise MissingCheckpointError(
                f"The shipped model is missing: no file at {path}. It ships in the "
                f"repository's data/ folder and in a pip install (share/transformer-book); "
                f"{restore_hint(Path(path).name)}, set {CHECKPOINT_ENV_VAR}=/path/to/model.pt, "
                f"or train your own with "
                f"`python -m transformer_lib train --minutes 15 --out runs/mine` and call "
                f"load_pretrained('runs/mine/model.pt')."
            )
    path = Path(path)
    model, ckpt = load_model(path, device)
    tokenizer = tokenizer_from_checkpoint(ckpt, path)
    return Translator(model, tokenizer, ckpt, path)


def training_time(state: dict[str, Any]) -> str:
    """How long a run took, in the book's one wording: wall-clock minutes, then CPU-minutes.

    Args:
        state: a checkpoint's ``"state"`` (:attr:`Translator.training_state`), with
            ``elapsed_s``, ``cpu_s`` and ``torch_threads`` as the trainer records them.

    Returns:
        e.g. ``"75 minutes of wall-clock time (about 40 CPU-minutes: other programs
        shared the core)"`` for a run on one thread; the last clause only when the run's
        threads computed less than 90% of the time (a machine it shared).

    Example:
        >>> training_time({"elapsed_s": 600, "cpu_s": 540, "torch_threads": 1})
        '10 minutes of wall-clock time (about 9 CPU-minutes)'
    """
    wall, cpu = state["elapsed_s"] / 60, state["cpu_s"] / 60
    threads = state.get("torch_threads", 1) or 1
    shared = cpu < 0.9 * wall * threads
    cores = "core" if threads == 1 else "cores"
    reason = f": other programs shared the {cores}" if shared else ""
    return f"{wall:.0f} minutes of wall-clock time (about {cpu:.0f} CPU-minutes{reason})"
