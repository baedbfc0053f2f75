"""A shared English+German subword tokenizer (byte-pair encoding), taught in chapter 2.

The paper (§5.1) encodes English–German with byte-pair encoding and "a shared
source-target vocabulary of about 37000 tokens". Our corpus is tiny, so the
vocabulary is about 4000 tokens, shared by both languages (which lets the model
tie its embedding matrices, §3.4).

:class:`Tokenizer` is a thin wrapper around the HuggingFace ``tokenizers`` library.
The pipeline, and why each piece was chosen:

* **Normalizer: NFKC.** Composes ``u`` + combining diaeresis into one ``ü`` (so the two
  spellings of an umlaut are one symbol) and folds look-alikes such as non-breaking
  spaces and ligatures into their plain forms.
* **Pre-tokenizer: Metaspace, then punctuation split.** Spaces become the visible
  marker ``▁`` glued to the start of the following word (``"▁Haus"``), and every
  punctuation mark becomes its own piece (``"Haus"``, ``"."``). Because the marker
  records exactly where spaces were, decoding is lossless: ``decode(encode(s)) == s``
  for ordinary text (after NFKC; e.g. a non-breaking space comes back as a space).
  Umlauts and ``ß`` are ordinary letters here, one symbol each.
* **Model: BPE with an ``<unk>`` token.** A character never seen in training (Chinese,
  emoji, ...) becomes ``<unk>`` instead of raising. A byte-level BPE would never need
  ``<unk>``, but it would split every umlaut into two byte symbols and show them as
  ``Ã¼`` in token plots, which is worse for teaching.
* **Decoder: Metaspace**, which turns ``▁`` back into spaces.

Special tokens have fixed ids that the rest of the library relies on:
``<pad>`` = 0, ``<unk>`` = 1, ``<bos>`` = 2, ``<eos>`` = 3.
"""

from __future__ import annotations

import json
import os
import string
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import tokenizers
from tokenizers import decoders, models, normalizers, pre_tokenizers, trainers

from .corpus import corpus_sha256, find_corpus, read_pairs, shipped_data_dir, split_pairs
from .input_text import (
    UNKNOWN_SHARE_WARNING,
    has_letter,
    input_warning,
    not_utf8,
    unknown_characters,
    warn_about_inputs,
)

__all__ = [
    "BOS_ID",
    "DEFAULT_TOKENIZER_PATH",
    "EOS_ID",
    "PAD_ID",
    "SEP_ID",
    "UNKNOWN_SHARE_WARNING",
    "has_letter",
    "input_warning",
    "unknown_characters",
    "warn_about_inputs",
    "warn_if_mostly_unknown",
    "SPECIAL_TOKENS",
    "UNK_ID",
    "Tokenizer",
    "TokenizerFileError",
    "train_tokenizer_from_corpus",
]

#: Special tokens, in id order.
SPECIAL_TOKENS = ("<pad>", "<unk>", "<bos>", "<eos>", "<sep>")
#: ``<sep>`` separates English from German in the decoder-only model's sequences.
PAD_ID, UNK_ID, BOS_ID, EOS_ID, SEP_ID = 0, 1, 2, 3, 4


DEFAULT_TOKENIZER_PATH = shipped_data_dir() / "tokenizer.json"

_SPACE_MARKER = "\u2581"  # "▁", shows where a space was
# Always in the base alphabet, even if the training text lacks some of them, so that
# e.g. a capital "Q" never turns into <unk>.
_BASE_ALPHABET = sorted(
    set(string.ascii_letters + string.digits + string.punctuation + "äöüÄÖÜß„“”‚‘’–—…€")
)


def warn_if_mostly_unknown(tokenizer: Tokenizer, texts: Sequence[str]) -> list[int]:
    """Warn about each sentence that is mostly unknown characters; return their indices.

    The shipped vocabulary knows English and German in Latin script: Chinese, emoji and
    the like all become ``<unk>`` (a run of them one ``<unk>``), and a translation of them
    would be garbage. "Mostly" is more than half of the non-space characters.
    """
    import warnings

    shares = [tokenizer.unknown_share(t) for t in texts]
    bad = [i for i, share in enumerate(shares) if share > UNKNOWN_SHARE_WARNING]
    for i in bad:
        warnings.warn(
            f"sentence {i} ({texts[i][:40]!r}) is mostly characters the model has never seen "
            f"({shares[i]:.0%} of them become <unk>): it knows only English in Latin script, "
            f"so its translation will be meaningless.",
            UserWarning,
            stacklevel=3,
        )
    return bad


class TokenizerFileError(ValueError):
    """A tokenizer file exists but cannot be used (corrupt, or not one of ours)."""


def _check_str(text: Any, method: str) -> str:
    if not isinstance(text, str):
        hint = (
            f" To process several sentences use Tokenizer.{method}_batch."
            if isinstance(text, (list, tuple))
            else ""
        )
        raise TypeError(f"Tokenizer.{method} expects a str, got {type(text).__name__}.{hint}")
    problem = not_utf8(text)
    if problem is not None:
        raise ValueError(f"Tokenizer.{method}: the text {problem}")
    return text


def _build_pipeline() -> tokenizers.Tokenizer:
    """An untrained tokenizer with the normalizer, pre-tokenizer and decoder described above."""
    tok = tokenizers.Tokenizer(models.BPE(unk_token="<unk>", fuse_unk=True))
    tok.normalizer = normalizers.NFKC()
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Metaspace(replacement=_SPACE_MARKER, prepend_scheme="always"),
            pre_tokenizers.Punctuation("isolated"),
        ]
    )
    tok.decoder = decoders.Metaspace(replacement=_SPACE_MARKER, prepend_scheme="always")
    return tok


class Tokenizer:
    """Subword tokenizer with fixed special-token ids.

    Build one with :meth:`train` or :meth:`load`; the constructor wraps an existing
    ``tokenizers.Tokenizer`` and checks its special tokens.

    Args:
        backend: A trained ``tokenizers.Tokenizer`` whose vocabulary starts with
            ``<pad> <unk> <bos> <eos>`` at ids 0–3.

    Examples:
        >>> tok = Tokenizer.load()  # doctest: +SKIP
        >>> ids = tok.encode("Ich bin müde.", add_bos=True, add_eos=True)  # doctest: +SKIP
        >>> tok.decode(ids)  # doctest: +SKIP
        'Ich bin müde.'
    """

    pad_id: int = PAD_ID
    unk_id: int = UNK_ID
    bos_id: int = BOS_ID
    eos_id: int = EOS_ID
    special_tokens: tuple[str, ...] = SPECIAL_TOKENS

    def __init__(self, backend: tokenizers.Tokenizer) -> None:
        for expected_id, token in enumerate(SPECIAL_TOKENS):
            actual = backend.token_to_id(token)
            if token == "<sep>" and actual is None:
                continue  # tokenizers trained before <sep> was reserved still translate
            if actual != expected_id:
                raise TokenizerFileError(
                    f"Special token {token!r} has id {actual}, expected {expected_id}. The "
                    f"library needs <pad>=0 <unk>=1 <bos>=2 <eos>=3 <sep>=4; retrain with "
                    f"Tokenizer.train(...) or train_tokenizer_from_corpus(...)."
                )
        self.backend = backend
        self._vocab_size = backend.get_vocab_size()
        self._specials_to_skip = {PAD_ID, BOS_ID, EOS_ID}
        if backend.token_to_id("<sep>") == SEP_ID:  # in older tokenizers id 4 is a real token
            self._specials_to_skip.add(SEP_ID)

    # ---------------------------------------------------------------- construction
    @classmethod
    def train(
        cls,
        sentences: Iterable[str],
        vocab_size: int = 4000,
        min_frequency: int = 2,
    ) -> Tokenizer:
        """Learn a BPE vocabulary from sentences (of both languages, for a shared vocabulary).

        Args:
            sentences: Training text, one sentence per item.
            vocab_size: Target vocabulary size, special tokens included.
            min_frequency: A merge must occur at least this often to be learned.

        Returns:
            The trained tokenizer. Training is deterministic for the same input.

        Raises:
            TypeError: An item is not a str.
            ValueError: ``vocab_size`` is too small, or there are no sentences.
        """
        sentences = list(sentences)
        for i, s in enumerate(sentences):
            if not isinstance(s, str):
                raise TypeError(
                    f"Tokenizer.train expects str sentences; item {i} is {type(s).__name__}."
                )
        if not sentences:
            raise ValueError("Tokenizer.train got no sentences to learn from.")
        if vocab_size <= len(SPECIAL_TOKENS):
            raise ValueError(
                f"vocab_size={vocab_size} leaves no room beside the {len(SPECIAL_TOKENS)} "
                f"special tokens; use a few thousand."
            )
        backend = _build_pipeline()
        trainer = trainers.BpeTrainer(
            vocab_size=vocab_size,
            min_frequency=min_frequency,
            special_tokens=list(SPECIAL_TOKENS),
            initial_alphabet=_BASE_ALPHABET + [_SPACE_MARKER],
            show_progress=False,
        )
        backend.train_from_iterator(sentences, trainer=trainer)
        return cls(backend)

    @classmethod
    def load(cls, path: str | os.PathLike | None = None) -> Tokenizer:
        """Load a tokenizer saved by :meth:`save`.

        Args:
            path: The ``.json`` file; default :data:`DEFAULT_TOKENIZER_PATH`
                (``data/tokenizer.json`` in the repository).

        Returns:
            The tokenizer.

        Raises:
            FileNotFoundError: There is no file at ``path``.
            TokenizerFileError: The file is not a valid tokenizer of this library.
        """
        path = Path(path) if path is not None else DEFAULT_TOKENIZER_PATH
        if not path.is_file():
            raise FileNotFoundError(
                f"No tokenizer file at {path}. Create it with "
                f"transformer_lib.pipeline.tokenizer.train_tokenizer_from_corpus(out_path=...) "
                f"or `python -m transformer_lib.pipeline.tokenizer --out {path}`."
            )
        try:
            backend = tokenizers.Tokenizer.from_file(str(path))
        except Exception as exc:  # the Rust side raises a bare Exception
            raise TokenizerFileError(
                f"{path} is not a readable tokenizer file ({exc}). It may be truncated or "
                f"hand-edited; delete it and recreate it with train_tokenizer_from_corpus()."
            ) from exc
        return cls(backend)

    def save(self, path: str | os.PathLike, metadata: dict | None = None) -> Path:
        """Write the tokenizer to a JSON file (and optional metadata to a sidecar).

        Args:
            path: Destination, conventionally ending in ``.json``.
            metadata: If given, written to ``<stem>.meta.json`` next to ``path``, e.g.
                how the vocabulary was trained.

        Returns:
            The path written.
        """
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        self.backend.save(str(path), pretty=True)
        if metadata is not None:
            meta_path = path.with_name(path.stem + ".meta.json")
            meta_path.write_text(json.dumps(metadata, indent=2, ensure_ascii=False) + "\n")
        return path

    # ---------------------------------------------------------------- encoding
    def encode(self, text: str, add_bos: bool = False, add_eos: bool = False) -> list[int]:
        """Turn a sentence into token ids.

        Args:
            text: The sentence.
            add_bos: Prepend ``<bos>`` (id 2).
            add_eos: Append ``<eos>`` (id 3).

        Returns:
            The ids; unseen characters map to ``<unk>`` (id 1).

        Raises:
            TypeError: ``text`` is not a str.
        """
        ids = self.backend.encode(_check_str(text, "encode"), add_special_tokens=False).ids
        return ([BOS_ID] if add_bos else []) + ids + ([EOS_ID] if add_eos else [])

    def encode_batch(
        self, texts: Sequence[str], add_bos: bool = False, add_eos: bool = False
    ) -> list[list[int]]:
        """:meth:`encode` for many sentences at once (faster: the library works in parallel).

        Args:
            texts: Sentences.
            add_bos: Prepend ``<bos>`` to each.
            add_eos: Append ``<eos>`` to each.

        Returns:
            One id list per sentence.
        """
        texts = [_check_str(t, "encode") for t in texts]
        encodings = self.backend.encode_batch(texts, add_special_tokens=False)
        head = [BOS_ID] if add_bos else []
        tail = [EOS_ID] if add_eos else []
        return [head + e.ids + tail for e in encodings]

    def unknown_share(self, text: str) -> float:
        """Fraction of the non-space characters of ``text`` that become ``<unk>``."""
        enc = self.backend.encode(_check_str(text, "unknown_share"), add_special_tokens=False)
        unknown = sum(
            len(text[a:b].replace(" ", ""))
            for i, (a, b) in zip(enc.ids, enc.offsets)
            if i == UNK_ID
        )
        return unknown / max(1, len(text.replace(" ", "")))

    def tokens(self, text: str) -> list[str]:
        """The subword strings of a sentence, e.g. ``['▁Ich', '▁bin', '▁m', 'üde', '.']``.

        Args:
            text: The sentence.

        Returns:
            One string per token; ``▁`` marks a preceding space.
        """
        return self.backend.encode(_check_str(text, "tokens"), add_special_tokens=False).tokens

    # ---------------------------------------------------------------- decoding
    def decode(self, ids: Any, skip_special: bool = True) -> str:
        """Turn token ids back into text.

        Args:
            ids: A sequence of ints or a 1-D integer tensor.
            skip_special: Drop ``<pad>``, ``<bos>`` and ``<eos>``. ``<unk>`` is always
                kept (shown as ``<unk>``) so that unknown words stay visible.

        Returns:
            The text.

        Raises:
            ValueError: ``ids`` is not 1-D, or holds an id outside the vocabulary.
        """
        if hasattr(ids, "tolist"):  # torch tensor / numpy array
            if getattr(ids, "ndim", 1) != 1:
                raise ValueError(
                    f"Tokenizer.decode expects one sequence (1-D), got shape "
                    f"{tuple(ids.shape)}; use decode_batch for a batch."
                )
            ids = ids.tolist()
        ids = [int(i) for i in ids]
        bad = [i for i in ids if not 0 <= i < self._vocab_size]
        if bad:
            raise ValueError(
                f"Token id {bad[0]} is outside the vocabulary (0..{self._vocab_size - 1}); "
                f"was the model trained with a different tokenizer?"
            )
        if skip_special:
            ids = [i for i in ids if i not in self._specials_to_skip]
        return self.backend.decode(ids, skip_special_tokens=False)

    def decode_batch(self, batch: Any, skip_special: bool = True) -> list[str]:
        """:meth:`decode` for each row of a ``(B, L)`` tensor or a list of id lists."""
        return [self.decode(row, skip_special=skip_special) for row in batch]

    # ---------------------------------------------------------------- vocabulary
    @property
    def vocab_size(self) -> int:
        """Number of tokens, special tokens included (the model's ``V``)."""
        return self._vocab_size

    def __len__(self) -> int:
        return self._vocab_size

    @property
    def merges(self) -> list[tuple[str, str]]:
        """The BPE merges, in the order they were learned (most frequent pair first).

        Returns:
            ``[(a, b), ...]``: merge ``i`` joins the adjacent symbols ``a`` and ``b`` into
            ``a + b``; applied in this order to a word's characters they give its tokens
            (chapter 2, §5.1 of the paper; Sennrich et al. 2016).

        Example:
            >>> Tokenizer.load().merges[0]  # doctest: +SKIP
            ('c', 'h')
        """
        model = json.loads(self.backend.to_str())["model"]
        # Older versions of the tokenizers library store a merge as the string "a b".
        return [tuple(m.split(" ")) if isinstance(m, str) else tuple(m) for m in model["merges"]]

    def id_to_token(self, token_id: int) -> str:
        """The string of one token id."""
        token = self.backend.id_to_token(int(token_id))
        if token is None:
            raise ValueError(f"Token id {token_id} is outside the vocabulary.")
        return token

    def token_to_id(self, token: str) -> int | None:
        """The id of one token string, or None if it is not in the vocabulary."""
        return self.backend.token_to_id(token)

    def __repr__(self) -> str:
        # Read from the backend, so that it shows the pipeline actually in use.
        spec = json.loads(self.backend.to_str())
        stages = ", ".join(
            f"{stage}={_describe_stage(spec.get(stage))}"
            for stage in ("normalizer", "pre_tokenizer", "model")
        )
        return f"Tokenizer(vocab_size={self._vocab_size}, {stages})"


def _describe_stage(spec: dict[str, Any] | None) -> str:
    """One stage of a saved pipeline in a few words, e.g. ``Metaspace + Punctuation(isolated)``."""
    if spec is None:
        return "None"
    parts = spec.get("pretokenizers", spec.get("normalizers"))
    if spec.get("type") == "Sequence" and parts is not None:
        return " + ".join(_describe_stage(part) for part in parts)
    behavior = spec.get("behavior")
    return str(spec.get("type")) + (f"({behavior.lower()})" if behavior else "")


def train_tokenizer_from_corpus(
    corpus_path: str | os.PathLike | None = None,
    out_path: str | os.PathLike | None = DEFAULT_TOKENIZER_PATH,
    vocab_size: int = 4000,
    min_frequency: int = 2,
    valid_frac: float = 0.025,
    test_frac: float = 0.025,
) -> Tokenizer:
    """Train the shared vocabulary on the *training split* of the corpus and save it.

    Only training sentences are used, so nothing about the valid/test sentences leaks
    into the vocabulary. Each distinct sentence (English and German) counts once, so
    an English sentence with five translations does not weigh five times as much.

    Args:
        corpus_path: ``deu.txt``; default: the shipped corpus
            (:func:`~transformer_lib.pipeline.corpus.find_corpus`).
        out_path: Where to save; ``None`` to skip saving. A ``.meta.json`` sidecar
            records the settings and the corpus checksum.
        vocab_size: Target vocabulary size.
        min_frequency: Minimum merge frequency.
        valid_frac: Passed to :func:`~transformer_lib.pipeline.corpus.split_pairs`.
        test_frac: Passed to :func:`~transformer_lib.pipeline.corpus.split_pairs`.

    Returns:
        The trained tokenizer.
    """
    corpus = find_corpus(corpus_path)
    pairs, _ = read_pairs(corpus)
    train = split_pairs(pairs, valid_frac=valid_frac, test_frac=test_frac)["train"]
    sentences = list(dict.fromkeys(s for pair in train for s in pair))
    tok = Tokenizer.train(sentences, vocab_size=vocab_size, min_frequency=min_frequency)
    if out_path is not None:
        metadata = {
            "vocab_size": tok.vocab_size,
            "requested_vocab_size": vocab_size,
            "min_frequency": min_frequency,
            "special_tokens": list(SPECIAL_TOKENS),
            "trained_on": (
                f"train split of split_pairs(valid_frac={valid_frac}, test_frac={test_frac}), "
                f"{len(train)} pairs, {len(sentences)} distinct sentences (English and German)"
            ),
            "corpus_file": corpus.name,
            "corpus_sha256": corpus_sha256(corpus),
            "tokenizers_version": tokenizers.__version__,
        }
        tok.save(out_path, metadata=metadata)
    return tok


def _main(argv: Sequence[str] | None = None) -> None:
    import argparse

    parser = argparse.ArgumentParser(description="Train the book's shared BPE tokenizer.")
    parser.add_argument("--corpus", default=None, help="deu.txt (default: find_corpus())")
    parser.add_argument("--out", default=str(DEFAULT_TOKENIZER_PATH), help="output .json")
    parser.add_argument("--vocab-size", type=int, default=4000)
    parser.add_argument("--min-frequency", type=int, default=2)
    args = parser.parse_args(argv)
    tok = train_tokenizer_from_corpus(args.corpus, args.out, args.vocab_size, args.min_frequency)
    print(f"Saved {tok!r} to {args.out}")


if __name__ == "__main__":
    _main()
