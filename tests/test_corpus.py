"""The shipped corpus (data/deu.txt.gz) and strict UTF-8 reading of pairs files."""

from __future__ import annotations

import gzip
import hashlib

import pytest

from transformer_lib.__main__ import main
from transformer_lib.pipeline import corpus
from transformer_lib.pipeline.corpus import (
    SHIPPED_CORPUS,
    SHIPPED_CORPUS_SHA256,
    CorpusEncodingError,
    ReadStats,
    corpus_sha256,
    find_corpus,
    read_pairs,
)

# ---- the shipped corpus ----------------------------------------------------------------


def test_shipped_corpus_is_the_original_deu_txt():
    assert SHIPPED_CORPUS.name == "deu.txt.gz" and SHIPPED_CORPUS.parent.name == "data"
    raw = gzip.decompress(SHIPPED_CORPUS.read_bytes())
    assert hashlib.sha256(raw).hexdigest() == SHIPPED_CORPUS_SHA256
    assert SHIPPED_CORPUS_SHA256 == (
        "f472f1809be9eb704181539422569423aebe101e0bf2f9d13a736e9c7bf22bc5"
    )
    assert corpus_sha256(SHIPPED_CORPUS) == SHIPPED_CORPUS_SHA256  # of the text, not the .gz
    assert raw.count(b"\n") == 48_031 and raw.endswith(b"\n")


def test_find_corpus_returns_the_shipped_file_without_network(monkeypatch):
    def no_network(*args, **kwargs):
        raise AssertionError("find_corpus() must not use the network")

    monkeypatch.setattr(corpus.urllib.request, "urlopen", no_network)
    monkeypatch.delenv(corpus.CORPUS_ENV_VAR, raising=False)
    assert find_corpus() == SHIPPED_CORPUS
    pairs, stats = read_pairs(find_corpus())
    assert len(pairs) == 48_031 and stats.skipped == 0
    assert pairs[0][0] == "Go."


def test_corpus_sha256_of_plain_and_gzip_files_agree(tmp_path):
    text = b"Go.\tGeh.\n"
    (tmp_path / "a.txt").write_bytes(text)
    (tmp_path / "a.txt.gz").write_bytes(gzip.compress(text))
    expected = hashlib.sha256(text).hexdigest()
    assert corpus_sha256(tmp_path / "a.txt") == corpus_sha256(tmp_path / "a.txt.gz") == expected


# ---- encodings --------------------------------------------------------------------------

PAIRS_TEXT = "Go.\tGeh.\nI am tired.\tIch bin müde.\nHello!\tGrüß Gott!\n"


def test_latin1_file_is_refused_naming_line_and_fix(tmp_path):
    path = tmp_path / "latin1.tsv"
    path.write_bytes(PAIRS_TEXT.encode("latin-1"))
    with pytest.raises(CorpusEncodingError) as info:
        read_pairs(path)
    msg = str(info.value)
    # "müde": the ü (0xfc) is byte 22 of line 2
    assert "line 2, column 22" in msg and "0xfc" in msg and "UTF-8" in msg
    assert "iconv -f LATIN1 -t UTF-8 latin1.tsv" in msg
    assert isinstance(info.value, ValueError)


def test_latin1_file_gzipped_is_refused_too(tmp_path):
    path = tmp_path / "latin1.tsv.gz"
    path.write_bytes(gzip.compress(PAIRS_TEXT.encode("latin-1")))
    with pytest.raises(CorpusEncodingError, match="line 2"):
        read_pairs(path)


@pytest.mark.parametrize("codec", ["utf-16", "utf-16-le", "utf-16-be"])
def test_utf16_file_is_refused(tmp_path, codec):
    path = tmp_path / "pairs16.tsv"
    path.write_bytes(PAIRS_TEXT.encode(codec))
    with pytest.raises(CorpusEncodingError, match="UTF-16") as info:
        read_pairs(path)
    assert "iconv -f UTF-16 -t UTF-8" in str(info.value)


def test_utf8_with_byte_order_mark_reads_the_first_pair(tmp_path):
    path = tmp_path / "bom.tsv"
    path.write_bytes(b"\xef\xbb\xbf" + PAIRS_TEXT.encode("utf-8"))
    pairs, stats = read_pairs(path)
    assert pairs[0] == ("Go.", "Geh.")  # not "\ufeffGo."
    assert pairs[1] == ("I am tired.", "Ich bin müde.") and stats.kept == 3


def test_skipped_lines_are_counted_and_reported(tmp_path):
    path = tmp_path / "messy.tsv"
    path.write_text(
        "Go.\tGeh.\n\nno tab here\nEmpty German.\t\n"
        "One two three four five six.\tEins zwei drei vier fünf sechs.\n",
        encoding="utf-8",
    )
    pairs, stats = read_pairs(path, max_words=5)
    assert pairs == [("Go.", "Geh.")]
    assert stats == ReadStats(lines=5, kept=1, blank=1, malformed=2, filtered=1)
    assert stats.skipped == 4
    assert stats.summary() == (
        "read 1 pairs from 5 lines (4 skipped: 1 blank, 2 without English<TAB>German, 1 too long)"
    )
    clean = tmp_path / "clean.tsv"
    clean.write_text(PAIRS_TEXT, encoding="utf-8")
    assert read_pairs(clean)[1].summary() == "read 3 pairs from 3 lines (0 skipped)"


def test_evaluate_on_a_latin1_file_is_one_line_without_traceback(tmp_path, capsys, monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("the model was loaded although the pairs file is unreadable")

    monkeypatch.setattr("transformer_lib.pipeline.cli._load_translator", refuse)
    path = tmp_path / "latin1.tsv"
    path.write_bytes(PAIRS_TEXT.encode("latin-1"))
    code = main(["evaluate", "--pairs", str(path)])
    assert code != 0
    captured = capsys.readouterr()
    assert captured.err.count("\n") == 1 and "Traceback" not in captured.err
    assert "line 2" in captured.err and "UTF-8" in captured.err and "iconv" in captured.err
