"""Tests for transformer_lib.pipeline.tokenizer: round trips, <unk>, special ids, files."""

from __future__ import annotations

import gzip
import json
import unicodedata
from pathlib import Path

import pytest
import tokenizers
import torch

from transformer_lib.pipeline import tokenizer as tok_module
from transformer_lib.pipeline.corpus import (
    SHIPPED_CORPUS,
    SHIPPED_CORPUS_SHA256,
    corpus_sha256,
    read_pairs,
    split_pairs,
)
from transformer_lib.pipeline.tokenizer import (
    DEFAULT_TOKENIZER_PATH,
    SPECIAL_TOKENS,
    Tokenizer,
    TokenizerFileError,
    train_tokenizer_from_corpus,
    warn_if_mostly_unknown,
)

UMLAUT_SENTENCES = [
    "Ich würde gerne Fußball spielen.",
    "Äpfel und Öl sind übrig.",
    "Grüß Gott!",
    "Das Mädchen öffnete die Tür.",
    "Er sagte: „Ich weiß es nicht.“",
    "Tom's dog isn't here, is it?",
]


@pytest.fixture(scope="module")
def real_sentences(corpus_path):
    pairs = read_pairs(corpus_path)[0]
    valid = split_pairs(pairs)["valid"]  # sentences the tokenizer was not trained on
    return sorted({s for pair in valid for s in pair})


@pytest.fixture(scope="module")
def small_tokenizer(corpus_path):
    """A small vocabulary trained quickly on a slice of the corpus."""
    pairs = read_pairs(corpus_path)[0][::10]
    return Tokenizer.train([s for p in pairs for s in p], vocab_size=600)


# ------------------------------------------------------------------ the shipped tokenizer


def test_special_ids_and_vocab_size(tokenizer):
    assert [tokenizer.token_to_id(t) for t in SPECIAL_TOKENS] == [0, 1, 2, 3, 4]
    assert SPECIAL_TOKENS[4] == "<sep>"
    assert (tokenizer.pad_id, tokenizer.unk_id, tokenizer.bos_id, tokenizer.eos_id) == (0, 1, 2, 3)
    assert tokenizer.vocab_size == len(tokenizer) == 4000


@pytest.mark.parametrize("sentence", UMLAUT_SENTENCES)
def test_round_trip_umlauts(tokenizer, sentence):
    ids = tokenizer.encode(sentence)
    assert tokenizer.unk_id not in ids
    assert tokenizer.decode(ids) == sentence


def test_umlauts_are_single_symbols(tokenizer):
    for ch in "äöüÄÖÜß":
        assert tokenizer.token_to_id(ch) is not None, ch
    assert "▁müde" in tokenizer.tokens("Ich bin müde.")


def test_round_trip_on_held_out_corpus_sentences(tokenizer, real_sentences):
    assert len(real_sentences) > 1000
    exact = 0
    for s in real_sentences:
        ids = tokenizer.encode(s)
        out = tokenizer.decode(ids)
        # NFKC may fold e.g. a non-breaking space into a space; nothing else may change.
        assert out == unicodedata.normalize("NFKC", s), s
        exact += out == s
    assert exact >= 0.99 * len(real_sentences)


def test_punctuation_is_separate(tokenizer):
    toks = tokenizer.tokens("Hallo, Tom!")
    assert "," in toks and "!" in toks
    assert tokenizer.tokens("Geh.")[-1] == "."


def test_repr_shows_the_pipeline_in_use(tokenizer, small_tokenizer):
    # Read from the backend: both pre-tokenizers, not just the first.
    for tok in (tokenizer, small_tokenizer):
        assert repr(tok) == (
            f"Tokenizer(vocab_size={tok.vocab_size}, normalizer=NFKC, "
            "pre_tokenizer=Metaspace + Punctuation(isolated), model=BPE)"
        )


@pytest.mark.parametrize("text", ["我喜欢你。", "I like 🍕.", "Ich mag ☃ sehr."])
def test_unseen_characters_become_unk(tokenizer, text):
    ids = tokenizer.encode(text)
    assert tokenizer.unk_id in ids
    assert "<unk>" in tokenizer.decode(ids)


def test_bos_eos_and_skip_special(tokenizer):
    plain = tokenizer.encode("Hi.")
    ids = tokenizer.encode("Hi.", add_bos=True, add_eos=True)
    assert ids == [2, *plain, 3]
    padded = ids + [0, 0]
    assert tokenizer.decode(padded) == "Hi."
    raw = tokenizer.decode(padded, skip_special=False)
    assert raw.startswith("<bos>") and "<eos>" in raw and "<pad>" in raw


def test_decode_accepts_tensors_and_batches(tokenizer):
    ids = tokenizer.encode("Ich bin müde.", add_bos=True, add_eos=True)
    assert tokenizer.decode(torch.tensor(ids)) == "Ich bin müde."
    batch = torch.tensor([ids, ids])
    assert tokenizer.decode_batch(batch) == ["Ich bin müde."] * 2
    with pytest.raises(ValueError, match="decode_batch"):
        tokenizer.decode(batch)


def test_encode_batch_matches_encode(tokenizer):
    texts = UMLAUT_SENTENCES[:3]
    assert tokenizer.encode_batch(texts, add_eos=True) == [
        tokenizer.encode(t, add_eos=True) for t in texts
    ]


@pytest.mark.parametrize("bad", [None, 42, b"bytes", ["a", "list"]])
def test_non_str_input_is_a_clear_error(tokenizer, bad):
    with pytest.raises(TypeError, match="expects a str"):
        tokenizer.encode(bad)
    with pytest.raises(TypeError, match="expects a str"):
        tokenizer.tokens(bad)
    with pytest.raises(TypeError, match="expects a str"):
        tokenizer.encode_batch(["ok", bad])


def test_out_of_range_ids_are_a_clear_error(tokenizer):
    with pytest.raises(ValueError, match="outside the vocabulary"):
        tokenizer.decode([5, tokenizer.vocab_size])
    with pytest.raises(ValueError, match="outside the vocabulary"):
        tokenizer.decode([-1])


def test_shipped_file_matches_its_records(corpus_path):
    meta = json.loads(DEFAULT_TOKENIZER_PATH.with_name("tokenizer.meta.json").read_text())
    assert meta["vocab_size"] == 4000 and "train split" in meta["trained_on"]
    attribution = (DEFAULT_TOKENIZER_PATH.parent / "ATTRIBUTION.md").read_text()
    assert meta["corpus_sha256"] in attribution
    assert "/" not in meta["corpus_file"]  # no machine paths in the shipped files


def test_every_shipped_model_is_attributed():
    """Each checkpoint in data/ is a derived work of the corpus: ATTRIBUTION.md lists it."""
    data = DEFAULT_TOKENIZER_PATH.parent
    attribution = (data / "ATTRIBUTION.md").read_text(encoding="utf-8")
    missing = [p.name for p in sorted(data.glob("*.pt")) if f"`data/{p.name}`" not in attribution]
    assert not missing, f"add {missing} to the derived-artifacts table of data/ATTRIBUTION.md"


# ------------------------------------------------------------------ training and files


def test_train_small_vocab(small_tokenizer):
    tok = small_tokenizer
    assert tok.vocab_size <= 600
    assert [tok.id_to_token(i) for i in range(len(SPECIAL_TOKENS))] == list(SPECIAL_TOKENS)
    for s in UMLAUT_SENTENCES:
        assert tok.decode(tok.encode(s)) == s
    assert "Q" in tok.backend.get_vocab()  # base alphabet covers letters absent from the data
    assert tok.unk_id in tok.encode("I like 🍕.")
    toks = tok.tokens("Hallo, Tom! Geh.")
    assert [t for t in toks if set(t) & set(",!.")] == [",", "!", "."]  # punctuation stands alone


def test_shipped_file_uses_the_same_pipeline_as_the_code(tokenizer, small_tokenizer):
    shipped = json.loads(tokenizer.backend.to_str())
    fresh = json.loads(small_tokenizer.backend.to_str())
    for key in ("normalizer", "pre_tokenizer", "decoder", "post_processor"):
        assert shipped[key] == fresh[key], key
    for key in ("type", "unk_token", "fuse_unk", "byte_fallback"):
        assert shipped["model"][key] == fresh["model"][key], key


def test_shipped_file_is_reproducible(tmp_path):
    """`python -m transformer_lib.pipeline.tokenizer` rebuilds data/tokenizer.json exactly
    from the shipped corpus (the default of train_tokenizer_from_corpus)."""
    meta = json.loads(DEFAULT_TOKENIZER_PATH.with_name("tokenizer.meta.json").read_text())
    assert meta["corpus_sha256"] == SHIPPED_CORPUS_SHA256 == corpus_sha256(SHIPPED_CORPUS)
    if meta["tokenizers_version"] != tokenizers.__version__:
        pytest.skip("a different tokenizers version may break ties between merges differently")
    out = tmp_path / "tokenizer.json"
    tok = train_tokenizer_from_corpus(None, out_path=out)
    assert out.read_bytes() == DEFAULT_TOKENIZER_PATH.read_bytes()
    assert json.loads(out.with_name("tokenizer.meta.json").read_text()) == meta
    assert tok.vocab_size == 4000


def test_training_is_deterministic(corpus_path):
    pairs = read_pairs(corpus_path)[0][::20]
    sents = [s for p in pairs for s in p]
    a = Tokenizer.train(sents, vocab_size=300)
    b = Tokenizer.train(sents, vocab_size=300)
    assert a.backend.to_str() == b.backend.to_str()


def test_train_rejects_bad_input():
    with pytest.raises(TypeError, match="item 1"):
        Tokenizer.train(["ok", 3])
    with pytest.raises(ValueError, match="no sentences"):
        Tokenizer.train([])
    with pytest.raises(ValueError, match="vocab_size"):
        Tokenizer.train(["a b c"], vocab_size=4)


def test_save_load_round_trip(small_tokenizer, tmp_path):
    path = small_tokenizer.save(tmp_path / "sub" / "tok.json", metadata={"note": "test"})
    loaded = Tokenizer.load(path)
    assert loaded.vocab_size == small_tokenizer.vocab_size
    for s in UMLAUT_SENTENCES + ["I like 🍕."]:
        assert loaded.encode(s) == small_tokenizer.encode(s)
        assert loaded.tokens(s) == small_tokenizer.tokens(s)
    assert json.loads((tmp_path / "sub" / "tok.meta.json").read_text()) == {"note": "test"}


def test_load_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="train_tokenizer_from_corpus"):
        Tokenizer.load(tmp_path / "nope.json")


@pytest.mark.parametrize("damage", ["truncate", "garbage", "other_json"])
def test_load_corrupted_file(small_tokenizer, tmp_path, damage):
    path = small_tokenizer.save(tmp_path / "tok.json")
    text = path.read_text()
    if damage == "truncate":
        path.write_text(text[: len(text) // 2])
    elif damage == "garbage":
        path.write_bytes(b"\x00\xff not a tokenizer")
    else:
        path.write_text(json.dumps({"vocab": ["a", "b"]}))
    with pytest.raises(TokenizerFileError, match="not a readable tokenizer"):
        Tokenizer.load(path)


def test_wrong_special_token_ids_are_rejected(tmp_path):
    other = tokenizers.Tokenizer(tokenizers.models.BPE(unk_token="[UNK]"))
    trainer = tokenizers.trainers.BpeTrainer(
        vocab_size=50, special_tokens=["[UNK]", "<pad>"], show_progress=False
    )
    other.train_from_iterator(["hallo welt", "hello world"], trainer=trainer)
    other.save(str(tmp_path / "other.json"))
    with pytest.raises(TokenizerFileError, match="expected 0"):
        Tokenizer.load(tmp_path / "other.json")


def test_train_from_corpus_uses_train_split_only(corpus_path, tmp_path):
    # A small corpus: a slice of the real one.
    with gzip.open(corpus_path, "rt", encoding="utf-8") as f:  # the shipped deu.txt.gz
        lines = f.read().splitlines()[::8]
    small = tmp_path / "deu.txt"
    small.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = tmp_path / "tok.json"
    tok = train_tokenizer_from_corpus(small, out, vocab_size=400)

    pairs = read_pairs(small)[0]
    train = split_pairs(pairs)["train"]
    expected = Tokenizer.train(list(dict.fromkeys(s for p in train for s in p)), vocab_size=400)
    everything = Tokenizer.train(list(dict.fromkeys(s for p in pairs for s in p)), vocab_size=400)
    assert tok.backend.get_vocab() == expected.backend.get_vocab()
    assert tok.backend.get_vocab() != everything.backend.get_vocab()  # the test can tell

    assert Tokenizer.load(out).encode("Ich bin müde.") == tok.encode("Ich bin müde.")
    meta = json.loads(out.with_name("tok.meta.json").read_text())
    assert meta["requested_vocab_size"] == 400 and meta["corpus_file"] == "deu.txt"
    assert str(Path(tmp_path)) not in json.dumps(meta)


def test_tokenizer_without_sep_still_loads(tmp_path):
    """Tokenizers trained before <sep> was reserved (ids 0-3 special) still load, and their
    id 4 (an ordinary token there) is decoded like any other token."""
    old = tok_module._build_pipeline()
    trainer = tokenizers.trainers.BpeTrainer(
        vocab_size=80,
        special_tokens=["<pad>", "<unk>", "<bos>", "<eos>"],
        initial_alphabet=["!", "▁"],
        show_progress=False,
    )
    old.train_from_iterator(["Hallo Welt!", "Hello world!"], trainer=trainer)
    old.save(str(tmp_path / "old.json"))
    tok = Tokenizer.load(tmp_path / "old.json")
    assert tok.token_to_id("<sep>") is None
    assert tok.id_to_token(4) == "!"  # an ordinary token in such a vocabulary
    ids = tok.encode("Hallo Welt!", add_bos=True, add_eos=True)
    assert ids[0] == 2 and ids[-1] == 3 and 4 in ids
    assert tok.decode(ids) == "Hallo Welt!"


def test_sep_is_skipped_when_decoding(tokenizer):
    ids = [*tokenizer.encode("Hi."), 4, *tokenizer.encode("Hallo.")]
    assert tokenizer.decode(ids) == "Hi. Hallo."
    assert "<sep>" in tokenizer.decode(ids, skip_special=False)


# ------------------------------------------------------------------ unknown characters


def test_unknown_share_counts_characters(tokenizer):
    assert tokenizer.unknown_share("The cat is sleeping.") == 0.0
    assert tokenizer.unknown_share("我喜欢你") == 1.0
    # "ab 我我" has 4 non-space characters, 2 of them unknown
    assert tokenizer.unknown_share("ab 我我") == pytest.approx(0.5)
    assert tokenizer.unknown_share("") == 0.0


def test_warn_if_mostly_unknown(tokenizer):
    with pytest.warns(UserWarning, match="only English in Latin script") as record:
        bad = warn_if_mostly_unknown(tokenizer, ["Tom is lazy.", "我喜欢你。", "🍕🍕🍕 🍕"])
    assert bad == [1, 2] and len(record) == 2
    assert "sentence 1" in str(record[0].message)


def test_plain_english_does_not_warn(tokenizer, recwarn):
    assert warn_if_mostly_unknown(tokenizer, ["Tom is lazy.", "I like 🍕 very much."]) == []
    assert not [w for w in recwarn if "never seen" in str(w.message)]


def test_merges_are_the_learned_order_and_rebuild_the_tokens():
    """Tokenizer.merges: every merge joins two symbols into a vocabulary token, and
    replaying them in order on a word's characters gives the library's own tokens."""
    from transformer_lib.pipeline.tokenizer import Tokenizer

    tok = Tokenizer.load()
    merges = tok.merges
    assert len(merges) > 1000 and all(len(m) == 2 for m in merges)
    assert all(tok.token_to_id(a + b) is not None for a, b in merges[:200])
    rank = {pair: i for i, pair in enumerate(merges)}
    for word in ["▁Straßenbahnhaltestelle", "▁hedgehog", "▁Zeitung"]:
        symbols = list(word)
        while True:
            pairs = [(rank.get(p, len(rank)), i) for i, p in enumerate(zip(symbols, symbols[1:]))]
            if not pairs or min(pairs)[0] == len(rank):
                break
            _, i = min(pairs)
            symbols[i : i + 2] = [symbols[i] + symbols[i + 1]]
        assert symbols == tok.tokens(word[1:]), word
