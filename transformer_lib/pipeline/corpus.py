"""English→German sentence pairs: find the corpus, read it, split it.

The book trains its translator on short sentence pairs from the Tatoeba Project
(tatoeba.org, CC-BY 2.0 FR), as packaged by manythings.org/anki in ``deu-eng.zip``.
Each line of ``deu.txt`` is ``English<TAB>German`` with an optional third column
holding the per-sentence attribution.

The pipeline, taught in chapter 9 ("Training"):

1. :func:`find_corpus` locates ``deu.txt`` (or downloads it once and caches it).
2. :func:`read_pairs` reads it into ``(english, german)`` tuples and counts what it skipped.
3. :func:`split_pairs` puts every English sentence, with *all* its translations,
   into exactly one of train / valid / test, by a stable hash.
4. :mod:`.batching` turns the pairs into padded token-id batches.

Shapes: B batch, S source length, T target length.
"""

from __future__ import annotations

import hashlib
import http.client
import os
import shutil
import tempfile
import urllib.error
import urllib.request
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = [
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

# Where a shared copy of the corpus lives, relative to the repository root (or the cwd).
_SHARED_RELATIVE = Path("..") / "shared" / "data" / "tatoeba-deu-eng" / CORPUS_FILENAME

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


def _manual_instructions(cache_file: Path) -> str:
    return (
        f"To fix this, download deu-eng.zip by hand from {DEFAULT_URL} (a browser works), "
        f"unzip it and either put {CORPUS_FILENAME} at {cache_file}, or set the environment "
        f"variable {CORPUS_ENV_VAR}=/path/to/{CORPUS_FILENAME}, or pass the path to "
        f"find_corpus(path=...). To download from a mirror instead, set "
        f"{CORPUS_URL_ENV_VAR}=<url of a zip holding {CORPUS_FILENAME}>."
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
        f"Point it at the tab-separated {CORPUS_FILENAME} (English<TAB>German per line) "
        f"or at a directory that contains it."
    )


def _candidate_paths() -> list[Path]:
    """Places where a shared copy of the corpus may already sit, in lookup order."""
    candidates = [REPO_ROOT / _SHARED_RELATIVE, Path.cwd() / _SHARED_RELATIVE]
    seen: list[Path] = []
    for c in candidates:
        c = Path(os.path.normpath(c))
        if c not in seen:
            seen.append(c)
    return seen


def find_corpus(
    path: str | os.PathLike | None = None,
    *,
    download: bool = True,
    url: str | None = None,
    cache_dir: str | os.PathLike | None = None,
) -> Path:
    """Locate ``deu.txt``, downloading and caching it if no copy is found.

    Lookup order:

    1. ``path`` if given (a file, or a directory holding ``deu.txt``);
    2. the environment variable ``$TRANSFORMER_BOOK_CORPUS``;
    3. ``../shared/data/tatoeba-deu-eng/deu.txt`` relative to the repository root,
       then relative to the current working directory;
    4. ``deu.txt`` in the cache directory (see :func:`default_cache_dir`);
    5. a download of ``deu-eng.zip`` from ``url`` (default: ``$TRANSFORMER_BOOK_CORPUS_URL``
       or :data:`DEFAULT_URL`), from which ``deu.txt`` is extracted into the cache.

    A path given explicitly (1 or 2) that does not exist is an error rather than
    being silently skipped: it is almost always a typo.

    Args:
        path: Explicit location of ``deu.txt`` (or of its directory).
        download: If False, never touch the network; raise instead.
        url: URL of a zip archive containing ``deu.txt``.
        cache_dir: Where to look for and store the downloaded corpus
            (default :func:`default_cache_dir`).

    Returns:
        Path of an existing ``deu.txt``.

    Raises:
        CorpusNotFoundError: No copy was found and the download was disabled or failed.
            The message says what to download, from where and where to put it.
    """
    if path is not None:
        return _resolve_given(path, "the path argument")
    env_path = os.environ.get(CORPUS_ENV_VAR)
    if env_path:
        return _resolve_given(env_path, f"${CORPUS_ENV_VAR}")

    for candidate in _candidate_paths():
        if candidate.is_file():
            return candidate

    cache = Path(cache_dir).expanduser() if cache_dir is not None else default_cache_dir()
    cache_file = cache / CORPUS_FILENAME
    if cache_file.is_file():
        return cache_file

    if not download:
        searched = ", ".join(str(p) for p in [*_candidate_paths(), cache_file])
        raise CorpusNotFoundError(
            f"Could not find {CORPUS_FILENAME} (searched: {searched}) and downloading is "
            f"switched off (download=False). {_manual_instructions(cache_file)}"
        )

    url = url or os.environ.get(CORPUS_URL_ENV_VAR) or DEFAULT_URL
    return _download_corpus(url, cache_file)


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


def read_pairs(
    path: str | os.PathLike,
    *,
    max_words: int | None = None,
    max_chars: int | None = None,
) -> tuple[list[tuple[str, str]], ReadStats]:
    """Read ``English<TAB>German[<TAB>attribution]`` lines into pairs.

    Whitespace around each side is stripped; a third (attribution) column, or any
    further column, is ignored. Blank and malformed lines are skipped and counted,
    never fatal, so one bad line in a large download does not stop training.

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
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(
            f"No corpus file at {path}. Use find_corpus() to locate or download deu.txt."
        )
    stats = ReadStats()
    pairs: list[tuple[str, str]] = []
    # utf-8-sig: tolerate a byte-order mark written by some editors.
    with path.open(encoding="utf-8-sig", errors="replace") as f:
        for line in f:
            stats.lines += 1
            if not line.strip():
                stats.blank += 1
                continue
            cols = line.rstrip("\r\n").split("\t")
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


def split_pairs(
    pairs: Sequence[tuple[str, str]],
    valid_frac: float = 0.025,
    test_frac: float = 0.025,
) -> dict[str, list[tuple[str, str]]]:
    """Split pairs into train / valid / test by a stable hash of the English sentence.

    Because the decision depends only on the English side, every translation of one
    source sentence lands in the same split (no test sentence is ever seen in
    training), and a pair's split does not change when lines are added to the corpus.

    Args:
        pairs: ``(english, german)`` tuples.
        valid_frac: Expected fraction of *source sentences* in the validation split.
        test_frac: Expected fraction of source sentences in the test split.

    Returns:
        ``{"train": [...], "valid": [...], "test": [...]}``, each in input order.

    Raises:
        ValueError: A fraction is negative or they sum to 1 or more.
    """
    if valid_frac < 0 or test_frac < 0 or valid_frac + test_frac >= 1:
        raise ValueError(
            f"valid_frac={valid_frac} and test_frac={test_frac} must be >= 0 and sum to "
            f"less than 1 so that something is left to train on."
        )
    splits: dict[str, list[tuple[str, str]]] = {"train": [], "valid": [], "test": []}
    cache: dict[str, str] = {}
    for pair in pairs:
        en = pair[0]
        name = cache.get(en)
        if name is None:
            u = _unit_hash(en)
            name = "test" if u < test_frac else "valid" if u < test_frac + valid_frac else "train"
            cache[en] = name
        splits[name].append(pair)
    return splits


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
