"""English→German sentence pairs: find the corpus, read it, split it.

The book trains its translator on short sentence pairs from the Tatoeba Project
(tatoeba.org, CC-BY 2.0 FR), as packaged by manythings.org/anki in ``deu-eng.zip``.
Each line of ``deu.txt`` is ``English<TAB>German`` with an optional third column
holding the per-sentence attribution.

The pipeline, taught in chapter 9 ("Training"):

1. :func:`find_corpus` locates ``deu.txt`` (or downloads it once and caches it).
2. :func:`read_pairs` reads it into ``(english, german)`` tuples and counts what it skipped.
3. :func:`split_pairs` puts every group of pairs that share a sentence (English or
   German, up to case and final punctuation) into exactly one of train / valid / test,
   by a stable hash, so that no test sentence occurs in training.
4. :mod:`.batching` turns the pairs into padded token-id batches.

Shapes: B batch, S source length, T target length.
"""

from __future__ import annotations

import gzip
import hashlib
import http.client
import os
import shutil
import sys
import tempfile
import unicodedata
import urllib.error
import urllib.request
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "SHIPPED_CORPUS",
    "CorpusEncodingError",
    "corpus_sha256",
    "shipped_data_dir",
    "CORPUS_ENV_VAR",
    "CORPUS_FILENAME",
    "CORPUS_URL_ENV_VAR",
    "CACHE_DIR_ENV_VAR",
    "DEFAULT_URL",
    "CorpusNotFoundError",
    "ReadStats",
    "default_cache_dir",
    "find_corpus",
    "group_references",
    "read_pairs",
    "normalize_sentence",
    "pair_groups",
    "split_overlap",
    "split_pairs",
]

#: Where the corpus comes from when nobody has a copy yet.
DEFAULT_URL = "https://www.manythings.org/anki/deu-eng.zip"
#: Name of the pairs file inside ``deu-eng.zip``.
CORPUS_FILENAME = "deu.txt"
#: Environment variable holding the path of a ``deu.txt`` to use.
CORPUS_ENV_VAR = "TRANSFORMER_BOOK_CORPUS"
#: Environment variable overriding :data:`DEFAULT_URL`.
CORPUS_URL_ENV_VAR = "TRANSFORMER_BOOK_CORPUS_URL"
#: Environment variable overriding the cache directory for the downloaded corpus.
CACHE_DIR_ENV_VAR = "TRANSFORMER_BOOK_CACHE_DIR"

#: The repository root when the package is used from a checkout (the parent of
#: ``transformer_lib/``). When the package is installed elsewhere this is just
#: ``site-packages``; :func:`default_cache_dir` notices and uses a user cache.
REPO_ROOT = Path(__file__).resolve().parents[2]

# manythings.org refuses requests that do not look like they come from a browser.
_USER_AGENT = (
    "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/124.0 Safari/537.36"
)
_DOWNLOAD_TIMEOUT_S = 60.0


class CorpusNotFoundError(FileNotFoundError):
    """The sentence-pair corpus could not be found or downloaded.

    The message always says what to download, from where, and where to put it.
    """


# --------------------------------------------------------------------------------------
# Finding (and if need be downloading) the corpus
# --------------------------------------------------------------------------------------


def _is_repo_checkout(root: Path) -> bool:
    """True if ``root`` looks like a checkout of this project (not ``site-packages``)."""
    return (root / "pyproject.toml").is_file() and (root / "transformer_lib").is_dir()


def default_cache_dir() -> Path:
    """Return the directory where a downloaded corpus is cached.

    In order: the directory named by ``$TRANSFORMER_BOOK_CACHE_DIR``; ``data/cache/``
    in the repository when the package runs from a checkout; otherwise
    ``$XDG_CACHE_HOME/transformer_book`` (default ``~/.cache/transformer_book``).

    Returns:
        The cache directory (it may not exist yet).
    """
    env = os.environ.get(CACHE_DIR_ENV_VAR)
    if env:
        return Path(env).expanduser()
    if _is_repo_checkout(REPO_ROOT):
        return REPO_ROOT / "data" / "cache"
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "transformer_book"


def shipped_data_dir() -> Path:
    """Where the book's shipped data (corpus, tokenizer, checkpoints) lives.

    ``data/`` of a checkout (also with ``pip install -e .``); after a regular
    ``pip install`` the copy installed in ``<prefix>/share/transformer-book``.
    """
    checkout = REPO_ROOT / "data"
    installed = Path(sys.prefix) / "share" / "transformer-book"
    if not (checkout / "tokenizer.json").is_file() and (installed / "tokenizer.json").is_file():
        return installed
    return checkout


#: The corpus that ships with the book: ``deu.txt`` gzip-compressed, byte-identical once
#: decompressed (sha256 :data:`SHIPPED_CORPUS_SHA256`). The tokenizer and the shipped
#: models were trained on it.
SHIPPED_CORPUS = shipped_data_dir() / "deu.txt.gz"
SHIPPED_CORPUS_SHA256 = "f472f1809be9eb704181539422569423aebe101e0bf2f9d13a736e9c7bf22bc5"


def _manual_instructions(cache_file: Path) -> str:
    return (
        f"The book ships its corpus as {SHIPPED_CORPUS.name} in data/; restore it with "
        f"`git checkout -- data/{SHIPPED_CORPUS.name}` (or reinstall the package). To use "
        f"another copy of {CORPUS_FILENAME}, pass --corpus PATH on the command line "
        f"(find_corpus(path=...) in Python) or set {CORPUS_ENV_VAR}=/path/to/"
        f"{CORPUS_FILENAME}. The larger current release is a different data set: "
        f"--corpus download (find_corpus(download=True)) fetches it from {DEFAULT_URL} "
        f"into {cache_file}; {CORPUS_URL_ENV_VAR} sets a mirror."
    )


def _resolve_given(path: str | os.PathLike, origin: str) -> Path:
    """Turn a user-given corpus path (file, or directory holding deu.txt) into a file."""
    p = Path(path).expanduser()
    if p.is_dir() and (p / CORPUS_FILENAME).is_file():
        return p / CORPUS_FILENAME
    if p.is_file():
        return p
    raise CorpusNotFoundError(
        f"The corpus path given by {origin} does not exist or is not a file: {p}. "
        f"Point it at a tab-separated {CORPUS_FILENAME} (English<TAB>German per line, "
        f"optionally .gz) or at a directory that contains it."
    )


def find_corpus(
    path: str | os.PathLike | None = None,
    *,
    download: bool = False,
    url: str | None = None,
    cache_dir: str | os.PathLike | None = None,
) -> Path:
    """Locate the sentence-pair corpus: by default the copy that ships with the book.

    Lookup order:

    1. ``path`` if given (a file, or a directory holding ``deu.txt``);
    2. the environment variable ``$TRANSFORMER_BOOK_CORPUS``;
    3. with ``download=True`` only: the current, larger ``deu.txt`` from manythings.org,
       cached in :func:`default_cache_dir` after the first download (a *different* data
       set from the shipped one: models trained on it differ from the shipped ones);
    4. the shipped :data:`SHIPPED_CORPUS` (``data/deu.txt.gz``), the 48,031 pairs the
       book's tokenizer and models were trained on. No network is needed.

    A path given explicitly (1 or 2) that does not exist is an error rather than
    being silently skipped: it is almost always a typo.

    Args:
        path: Explicit location of ``deu.txt`` (or of its directory), plain or ``.gz``.
        download: Use the current release from ``url`` instead of the shipped corpus.
        url: URL of a zip archive containing ``deu.txt`` (default:
            ``$TRANSFORMER_BOOK_CORPUS_URL`` or :data:`DEFAULT_URL`).
        cache_dir: Where to look for and store the downloaded corpus
            (default :func:`default_cache_dir`).

    Returns:
        Path of an existing corpus file (``read_pairs`` reads plain and gzip files).

    Raises:
        CorpusNotFoundError: The file named is missing, the shipped copy is missing, or
            the download failed. The message says how to fix it.
    """
    if path is not None:
        return _resolve_given(path, "the path argument (--corpus)")
    env_path = os.environ.get(CORPUS_ENV_VAR)
    if env_path:
        return _resolve_given(env_path, f"${CORPUS_ENV_VAR}")

    cache = Path(cache_dir).expanduser() if cache_dir is not None else default_cache_dir()
    cache_file = cache / CORPUS_FILENAME
    if download:
        if cache_file.is_file():
            return cache_file
        url = url or os.environ.get(CORPUS_URL_ENV_VAR) or DEFAULT_URL
        return _download_corpus(url, cache_file)
    if SHIPPED_CORPUS.is_file():
        return SHIPPED_CORPUS
    raise CorpusNotFoundError(
        f"The shipped corpus {SHIPPED_CORPUS} is missing. {_manual_instructions(cache_file)}"
    )


def _download_corpus(url: str, cache_file: Path) -> Path:
    """Download a zip from ``url``, extract ``deu.txt`` to ``cache_file`` atomically.

    Everything is written to temporary files in the cache directory first and moved
    into place with :func:`os.replace`, so an interrupted or failed download leaves
    no partial ``deu.txt`` behind.
    """
    cache_dir = cache_file.parent
    created_dir = not cache_dir.exists()
    tmp_zip: Path | None = None
    tmp_txt: Path | None = None
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(prefix=".deu-eng-", suffix=".zip.part", dir=cache_dir)
        tmp_zip = Path(name)
        request = urllib.request.Request(url, headers={"User-Agent": _USER_AGENT})
        with os.fdopen(fd, "wb") as out:
            with urllib.request.urlopen(request, timeout=_DOWNLOAD_TIMEOUT_S) as response:
                shutil.copyfileobj(response, out)
                expected = response.headers.get("Content-Length")
                received = out.tell()
        # urllib does not notice a connection that closes early; compare with the header.
        if expected is not None and expected.isdigit() and received != int(expected):
            raise ValueError(f"the download stopped after {received} of {expected} bytes")

        with zipfile.ZipFile(tmp_zip) as archive:
            members = [m for m in archive.namelist() if Path(m).name == CORPUS_FILENAME]
            if not members:
                raise ValueError(
                    f"the archive holds no {CORPUS_FILENAME} (it has: "
                    f"{', '.join(archive.namelist()[:10]) or 'nothing'})"
                )
            fd, name = tempfile.mkstemp(prefix=".deu-", suffix=".txt.part", dir=cache_dir)
            tmp_txt = Path(name)
            with os.fdopen(fd, "wb") as out, archive.open(members[0]) as src:
                shutil.copyfileobj(src, out)
        os.replace(tmp_txt, cache_file)
        tmp_txt = None
        return cache_file
    except (OSError, ValueError, zipfile.BadZipFile, http.client.HTTPException) as exc:
        reason = _describe_download_error(exc)
        if isinstance(exc, urllib.error.HTTPError):
            exc.close()  # an HTTPError holds the open connection
        raise CorpusNotFoundError(
            f"Could not download the English-German corpus from {url}: {reason}. "
            f"{_manual_instructions(cache_file)}"
        ) from exc
    finally:
        for tmp in (tmp_zip, tmp_txt):
            if tmp is not None:
                tmp.unlink(missing_ok=True)
        if created_dir and cache_dir.is_dir() and not any(cache_dir.iterdir()):
            cache_dir.rmdir()  # leave no empty directory behind a failed first download


def _describe_download_error(exc: BaseException) -> str:
    if isinstance(exc, urllib.error.HTTPError):
        return f"the server answered HTTP {exc.code} {exc.reason}"
    if isinstance(exc, urllib.error.URLError):
        return f"could not connect ({exc.reason})"
    if isinstance(exc, zipfile.BadZipFile):
        return "the downloaded file is not a valid zip archive"
    return str(exc) or type(exc).__name__


# --------------------------------------------------------------------------------------
# Reading pairs
# --------------------------------------------------------------------------------------


@dataclass
class ReadStats:
    """What :func:`read_pairs` did with each line of the file.

    Attributes:
        lines: Lines in the file.
        kept: Pairs returned.
        blank: Empty (or whitespace-only) lines skipped.
        malformed: Lines without a tab, or with an empty English or German side.
        filtered: Well-formed pairs dropped by the ``max_words`` / ``max_chars`` filter.
    """

    lines: int = 0
    kept: int = 0
    blank: int = 0
    malformed: int = 0
    filtered: int = 0

    @property
    def skipped(self) -> int:
        return self.blank + self.malformed + self.filtered

    def summary(self) -> str:
        """One line for a log, e.g. ``"read 48031 pairs from 48031 lines (0 skipped)"``."""
        text = f"read {self.kept} pairs from {self.lines} lines ({self.skipped} skipped"
        parts = [
            f"{n} {what}"
            for n, what in [
                (self.blank, "blank"),
                (self.malformed, "without English<TAB>German"),
                (self.filtered, "too long"),
            ]
            if n
        ]
        return text + (": " + ", ".join(parts) if parts else "") + ")"


def corpus_sha256(path: str | os.PathLike) -> str:
    """sha256 of the corpus text: of the decompressed bytes for a ``.gz`` file."""
    raw = Path(path).read_bytes()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    return hashlib.sha256(raw).hexdigest()


class CorpusEncodingError(ValueError):
    """A pairs file is not UTF-8 text; the message names the line and how to convert it."""


def _encoding_problem(path: Path, raw: bytes) -> str | None:
    """Describe why ``raw`` is not UTF-8 text, naming the line, or None if it is fine."""
    if raw[:2] in (b"\xff\xfe", b"\xfe\xff") or raw[:200].count(b"\x00") > 10:
        return (
            f"{path} looks like UTF-16 text (byte-order mark or NUL bytes), not UTF-8. "
            f"Re-save it as UTF-8, e.g. `iconv -f UTF-16 -t UTF-8 {path.name} > pairs.tsv`."
        )
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        col = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
        bad = raw[exc.start : exc.start + 1].hex()
        return (
            f"{path}, line {line}, column {col}: byte 0x{bad} is not valid UTF-8 (the file "
            f"is probably Latin-1 or Windows-1252). Re-save it as UTF-8, e.g. "
            f"`iconv -f LATIN1 -t UTF-8 {path.name} > pairs.tsv`."
        )
    return None


def read_pairs(
    path: str | os.PathLike,
    *,
    max_words: int | None = None,
    max_chars: int | None = None,
) -> tuple[list[tuple[str, str]], ReadStats]:
    """Read ``English<TAB>German[<TAB>attribution]`` lines into pairs.

    The file is UTF-8 (a leading byte-order mark is fine), plain or gzip-compressed
    (``.gz``). Whitespace around each side is stripped; a third (attribution) column,
    or any further column, is ignored. Blank and malformed lines are skipped and
    counted in the returned :class:`ReadStats` (``stats.summary()`` reports them).

    Args:
        path: The corpus file (see :func:`find_corpus`).
        max_words: If set, drop pairs where either side has more whitespace-separated
            words than this.
        max_chars: If set, drop pairs where either side has more characters than this.

    Returns:
        ``(pairs, stats)``: the list of ``(english, german)`` tuples in file order,
        and a :class:`ReadStats` with the counts.

    Raises:
        FileNotFoundError: ``path`` does not exist.
        CorpusEncodingError: The file is not UTF-8 (Latin-1, UTF-16, ...): nothing is
            read, and the message names the first bad line and how to convert the file.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(
            f"No pairs file at {path}. Check the path (--corpus / --pairs on the command "
            f"line, find_corpus(path=...) in Python)."
        )
    raw = path.read_bytes()
    if raw[:2] == b"\x1f\x8b":  # gzip magic number
        raw = gzip.decompress(raw)
    problem = _encoding_problem(path, raw)
    if problem:
        raise CorpusEncodingError(problem)
    text = raw.decode("utf-8-sig")  # utf-8-sig: a byte-order mark is not part of line 1
    stats = ReadStats()
    pairs: list[tuple[str, str]] = []
    for line in text.splitlines():
        stats.lines += 1
        if not line.strip():
            stats.blank += 1
            continue
        cols = line.split("\t")
        if len(cols) < 2:
            stats.malformed += 1
            continue
        en, de = cols[0].strip(), cols[1].strip()
        if not en or not de:
            stats.malformed += 1
            continue
        if max_words is not None and max(len(en.split()), len(de.split())) > max_words:
            stats.filtered += 1
            continue
        if max_chars is not None and max(len(en), len(de)) > max_chars:
            stats.filtered += 1
            continue
        pairs.append((en, de))
    stats.kept = len(pairs)
    return pairs, stats


# --------------------------------------------------------------------------------------
# Splitting and grouping
# --------------------------------------------------------------------------------------


def _unit_hash(text: str) -> float:
    """Map a string to a number in [0, 1) that is the same on every machine and run.

    Python's built-in ``hash`` is salted per process, so it cannot be used here.
    """
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") / 2.0**64


def normalize_sentence(text: str) -> str:
    """The form in which two sentences count as "the same" for splitting.

    Unicode NFC, case-folded, surrounding whitespace and any final punctuation removed:
    ``"Get out of my life!"`` and ``"get out of my life."`` both become
    ``"get out of my life"``.
    """
    text = unicodedata.normalize("NFC", text).casefold().strip()
    end = len(text)
    while end and (unicodedata.category(text[end - 1]).startswith("P") or text[end - 1].isspace()):
        end -= 1
    return text[:end]


def pair_groups(pairs: Sequence[tuple[str, str]]) -> list[int]:
    """Connected groups of pairs: two pairs belong together when they share the English
    or the German sentence after :func:`normalize_sentence` (and so, transitively, do
    their neighbours).

    Args:
        pairs: ``(english, german)`` tuples.

    Returns:
        One group number per pair (``0 .. n_groups - 1``, in order of first appearance).
    """
    parent: dict[tuple[str, str], tuple[str, str]] = {}

    def root(node: tuple[str, str]) -> tuple[str, str]:
        parent.setdefault(node, node)
        while parent[node] != node:
            parent[node] = parent[parent[node]]  # path halving
            node = parent[node]
        return node

    keys = [(("en", normalize_sentence(en)), ("de", normalize_sentence(de))) for en, de in pairs]
    for en_key, de_key in keys:
        a, b = root(en_key), root(de_key)
        if a != b:
            parent[a] = b
    numbers: dict[tuple[str, str], int] = {}
    return [numbers.setdefault(root(en_key), len(numbers)) for en_key, _ in keys]


def _split_name(u: float, valid_frac: float, test_frac: float) -> str:
    return "test" if u < test_frac else "valid" if u < test_frac + valid_frac else "train"


def split_pairs(
    pairs: Sequence[tuple[str, str]],
    valid_frac: float = 0.025,
    test_frac: float = 0.025,
    *,
    by: str = "group",
) -> dict[str, list[tuple[str, str]]]:
    """Split pairs into train / valid / test so that no sentence crosses a split.

    Tatoeba gives one German sentence to several English ones ("I'm tired." and "I am
    tired." both → "Ich bin müde."), and lists near-copies that differ only in case or
    final punctuation. Splitting by the English sentence alone would put the German
    reference of a test pair into training. So the split works on *connected groups*
    (:func:`pair_groups`): pairs that share an English or a German sentence, after
    :func:`normalize_sentence`, go to the same split, whole. Each group is placed by a
    stable hash of its smallest normalised English sentence, so the split is the same on
    every machine and does not depend on the order of the lines; adding lines moves only
    the groups they join.

    Args:
        pairs: ``(english, german)`` tuples.
        valid_frac: Expected fraction of *groups* in the validation split.
        test_frac: Expected fraction of groups in the test split.
        by: ``"group"`` (the default, leak-free) or ``"english"``: the exact English
            string alone decides, the book's earlier rule, which leaks German references
            into training; kept so that chapter 9 can measure the leak.

    Returns:
        ``{"train": [...], "valid": [...], "test": [...]}``, each in input order.
        :func:`split_overlap` of the result is empty for ``by="group"``.

    Raises:
        ValueError: A fraction is negative, they sum to 1 or more, or ``by`` is unknown.
    """
    if valid_frac < 0 or test_frac < 0 or valid_frac + test_frac >= 1:
        raise ValueError(
            f"valid_frac={valid_frac} and test_frac={test_frac} must be >= 0 and sum to "
            f"less than 1 so that something is left to train on."
        )
    if by not in ("group", "english"):
        raise ValueError(f"by={by!r}: use 'group' (leak-free) or 'english' (the old rule)")
    if by == "english":
        names = [_split_name(_unit_hash(en), valid_frac, test_frac) for en, _ in pairs]
    else:
        groups = pair_groups(pairs)
        smallest: dict[int, str] = {}
        for (en, _), g in zip(pairs, groups):
            key = normalize_sentence(en)
            if g not in smallest or key < smallest[g]:
                smallest[g] = key
        name_of = {
            g: _split_name(_unit_hash(key), valid_frac, test_frac) for g, key in smallest.items()
        }
        names = [name_of[g] for g in groups]
    splits: dict[str, list[tuple[str, str]]] = {"train": [], "valid": [], "test": []}
    for pair, name in zip(pairs, names):
        splits[name].append(pair)
    return splits


def split_overlap(splits: dict[str, Sequence[tuple[str, str]]]) -> dict[str, dict[str, set[str]]]:
    """Normalised sentences that occur in two splits, per side: what a split leaks.

    Returns:
        ``{"valid-train": {"en": {...}, "de": {...}}, "test-train": ..., "test-valid": ...}``:
        for each pair of splits, the normalised English and German strings of the first
        that also occur in the second. All empty for :func:`split_pairs`' default.
    """
    seen = {
        name: {
            side: {normalize_sentence(pair[i]) for pair in splits.get(name, ())}
            for i, side in enumerate(("en", "de"))
        }
        for name in ("train", "valid", "test")
    }
    return {
        f"{a}-{b}": {side: seen[a][side] & seen[b][side] for side in ("en", "de")}
        for a, b in (("valid", "train"), ("test", "train"), ("test", "valid"))
    }


def group_references(pairs: Sequence[tuple[str, str]]) -> list[tuple[str, list[str]]]:
    """Group pairs by source sentence: each English sentence with all its German references.

    Used for evaluation (chapter 10): BLEU against every accepted translation is fairer
    than against an arbitrary one of them.

    Args:
        pairs: ``(english, german)`` tuples.

    Returns:
        ``[(english, [german, ...]), ...]`` with sources in first-seen order and each
        source's references in first-seen order (exact duplicates listed once).
    """
    groups: dict[str, list[str]] = {}
    for en, de in pairs:
        refs = groups.setdefault(en, [])
        if de not in refs:
            refs.append(de)
    return list(groups.items())
