"""The shipped translator: data/model.pt through load_pretrained() (chapters 10 and 11)."""

from __future__ import annotations

import pytest
import torch

from transformer_lib import load_pretrained
from transformer_lib.pipeline.checkpoints import CheckpointError, MissingCheckpointError
from transformer_lib.pipeline.pretrained import DEFAULT_CHECKPOINT, Translation, Translator


@pytest.fixture(scope="module")
def translator() -> Translator:
    if not DEFAULT_CHECKPOINT.is_file():
        pytest.fail(
            "data/model.pt is missing: it ships with the repository. Recreate it with "
            "`python -m transformer_lib train` (see data/MODEL_CARD.md)."
        )
    return load_pretrained()


def test_shipped_checkpoint_is_small_and_safe_to_load(tokenizer):
    assert DEFAULT_CHECKPOINT.stat().st_size <= 10 * 2**20
    ckpt = torch.load(DEFAULT_CHECKPOINT, weights_only=True)
    assert "optimizer" not in ckpt
    assert ckpt["state"]["step"] > 0 and ckpt["state"]["log"]
    # The embedded vocabulary is the one in data/tokenizer.json.
    from transformer_lib.pipeline.checkpoints import tokenizer_from_checkpoint

    embedded = tokenizer_from_checkpoint(ckpt)
    for s in ("Tom is lazy.", "Ich weiß es nicht.", "Grüß Gott!"):
        assert embedded.encode(s) == tokenizer.encode(s)


def test_translates_a_sentence(translator):
    out = translator.translate("Tom is lazy.")
    assert isinstance(out, str) and out.startswith("Tom ")
    assert out == translator.translate("Tom is lazy.", beam=1)  # greedy is deterministic


def test_translates_a_list_with_beam(translator):
    out = translator.translate(["I am tired.", "Where is the station?"], beam=4)
    assert len(out) == 2 and all(isinstance(s, str) and s for s in out)
    assert out[0].startswith("Ich")


def test_empty_sentence_is_a_clear_error(translator):
    for text in ("", "   "):
        with pytest.raises(ValueError, match="empty"):
            translator.translate(text)
    with pytest.raises(ValueError, match="Sentence 1 is empty"):
        translator.translate(["Hello.", ""])


def test_unseen_characters_become_unk_and_still_translate(translator):
    text = "Tom is 懒 lazy 🙂."
    assert translator.tokenizer.unk_id in translator.tokenizer.encode(text)
    out = translator.translate(text)
    assert isinstance(out, str) and out


def test_too_long_input_is_refused_not_truncated(translator):
    text = "the cat and the dog " * 60
    with pytest.raises(ValueError, match=r"max_len=\d+.*not truncated"):
        translator.translate(text)


def test_attention_for_plots(translator):
    t = translator.translate("I love you.", return_attention=True)
    assert isinstance(t, Translation)
    S, T = len(t.source_tokens), len(t.target_tokens)
    H = translator.config.n_heads
    assert t.target_tokens[-1] == "<eos>" and t.decoder_input_tokens[0] == "<bos>"
    assert len(t.decoder_input_tokens) == T
    assert t.attention["cross"][0].shape == (H, T, S)
    assert t.attention["decoder"][-1].shape == (H, T, T)
    assert t.attention["encoder"][0].shape == (H, S, S)
    torch.testing.assert_close(t.attention["cross"][0].sum(-1), torch.ones(H, T))
    assert t.text == translator.translate("I love you.")


def test_missing_checkpoint_message(tmp_path, monkeypatch):
    monkeypatch.setenv("TRANSFORMER_BOOK_CHECKPOINT", str(tmp_path / "gone.pt"))
    with pytest.raises(MissingCheckpointError, match="TRANSFORMER_BOOK_CHECKPOINT names .*gone.pt"):
        load_pretrained()
    with pytest.raises(MissingCheckpointError, match="gone.pt.*train"):
        load_pretrained(tmp_path / "gone.pt")  # an explicit path: how to get a checkpoint


@pytest.mark.parametrize("bad", [None, 123, b"Tom is lazy."])
def test_non_text_input_is_a_type_error_naming_the_argument(translator, bad):
    with pytest.raises(TypeError, match=r"text"):
        translator.translate(bad)


def test_mostly_unknown_input_warns(translator, recwarn):
    with pytest.warns(UserWarning, match="only English in Latin script"):
        out = translator.translate("我喜欢你。")
    assert isinstance(out, str)
    recwarn.clear()
    translator.translate("Tom is lazy.")  # plain English: no warning
    assert not [w for w in recwarn if "never seen" in str(w.message)]


def test_corrupted_checkpoint_message(tmp_path):
    bad = tmp_path / "model.pt"
    bad.write_bytes(DEFAULT_CHECKPOINT.read_bytes()[:100_000])
    with pytest.raises(CheckpointError, match="model.pt"):
        load_pretrained(bad)


def test_shipped_model_reaches_its_published_test_bleu(translator, corpus_path):
    """The published greedy figure (head_to_head.json, which the model card and the README
    quote) is what the shipped model scores on the test split, all references."""
    import json

    from transformer_lib import evaluate_pairs
    from transformer_lib.pipeline.corpus import read_pairs, split_pairs

    published = json.loads(DEFAULT_CHECKPOINT.with_name("head_to_head.json").read_text())
    pairs, _ = read_pairs(corpus_path)
    result = evaluate_pairs(translator.model, translator.tokenizer, split_pairs(pairs)["test"])
    want = published["models"]["encoder-decoder"]["greedy"]["bleu"]
    assert round(result.bleu, 2) == want, f"test BLEU {result.bleu:.2f}, published {want}"


def test_regular_install_carries_the_shipped_data():
    """`pip install git+<repo>` (not editable) installs data/ into <prefix>/share."""
    from pathlib import Path

    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    root = Path(__file__).resolve().parents[1]
    with open(root / "pyproject.toml", "rb") as f:
        data_files = tomllib.load(f)["tool"]["setuptools"]["data-files"]
    shipped = data_files["share/transformer-book"]
    # Everything in data/ is read by the library or the chapters from the installed copy.
    in_data = sorted(f"data/{p.name}" for p in (root / "data").iterdir() if p.is_file())
    missing = [name for name in in_data if name not in shipped]
    assert not missing, f"add {missing} to [tool.setuptools.data-files] in pyproject.toml"
    assert all((root / name).is_file() for name in shipped), "pyproject lists a missing file"


def test_training_time_gives_wall_clock_and_cpu_minutes():
    from transformer_lib.pipeline.pretrained import training_time

    alone = {"elapsed_s": 600, "cpu_s": 570, "torch_threads": 1}
    assert training_time(alone) == "10 minutes of wall-clock time (about 10 CPU-minutes)"
    shared = {"elapsed_s": 4476, "cpu_s": 2375, "torch_threads": 1}
    assert training_time(shared) == (
        "75 minutes of wall-clock time (about 40 CPU-minutes: other programs shared the core)"
    )
    # Two threads busy all the time use twice the wall-clock time in CPU time.
    assert "shared" not in training_time({"elapsed_s": 600, "cpu_s": 1150, "torch_threads": 2})
    two_threads = training_time({"elapsed_s": 600, "cpu_s": 900, "torch_threads": 2})
    assert two_threads.endswith("shared the cores)")
