"""What a reader types: text that is not UTF-8, characters the model never saw, input with
no letter, and arguments of the wrong type."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from transformer_lib import Transformer, TransformerConfig
from transformer_lib.__main__ import main
from transformer_lib.pipeline import cli
from transformer_lib.pipeline.checkpoints import (
    CheckpointError,
    load_checkpoint,
    save_checkpoint,
    tokenizer_record,
)
from transformer_lib.pipeline.pretrained import Translator, load_pretrained
from transformer_lib.pipeline.tokenizer import (
    Tokenizer,
    has_letter,
    input_warning,
    unknown_characters,
)

REPO_ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def translator():
    return load_pretrained()


@pytest.fixture
def no_model(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("a model was loaded before the input was checked")

    monkeypatch.setattr(cli, "_load_translator", refuse)
    monkeypatch.setattr("transformer_lib.pipeline.pretrained.load_pretrained", refuse)


def one_line_error(capsys, command: str) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert err.startswith(f"python -m transformer_lib {command}: error: "), err
    return err.strip()


# ---- not UTF-8 ----------------------------------------------------------------------------

# What Python makes of the byte 0xFF in a command-line argument ("surrogateescape").
LATIN1_ARG = "Tom \udcff is lazy."


def test_non_utf8_argument_of_translate(capsys, no_model):
    assert main(["translate", "Hi.", LATIN1_ARG]) == 2
    err = one_line_error(capsys, "translate")
    assert "sentence 1 on the command line is not valid UTF-8 (byte 0xff at character 4)" in err
    assert "iconv" in err and "TextEncodeInput" not in err


def test_non_utf8_standard_input(capsys, no_model, monkeypatch):
    raw = b"Tom is lazy.\nTom \xfc is lazy.\n"
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(raw), encoding="utf-8"))
    assert main(["translate"]) == 2
    err = one_line_error(capsys, "translate")
    assert "line 2 of standard input is not valid UTF-8 (byte 0xfc at byte 4)" in err


def test_utf8_standard_input_still_works(capsys, monkeypatch):
    raw = "\ufeffTom is lazy.\r\n\nI am tired.\n".encode()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(raw), encoding="utf-8"))
    assert main(["translate"]) == 0
    assert len(capsys.readouterr().out.strip().splitlines()) == 2


@pytest.mark.parametrize(
    "args, what",
    [(["Ich \udcff habe"], "the prompt"), (["Ich habe", "--source", LATIN1_ARG], "--source")],
)
def test_non_utf8_arguments_of_generate(args, what, capsys, no_model):
    assert main(["generate", *args]) == 2
    assert f"error: {what} is not valid UTF-8 (byte 0xff" in one_line_error(capsys, "generate")


def test_non_utf8_argument_in_a_real_process():
    """The bytes as a shell passes them: Python turns them into surrogate escapes."""
    result = subprocess.run(
        [sys.executable.encode(), b"-m", b"transformer_lib", b"translate", b"Tom \xff lazy."],
        capture_output=True, cwd=REPO_ROOT, timeout=600,
    )  # fmt: skip
    err = result.stderr.decode()
    assert result.returncode == 2, err
    assert err.count("\n") == 1 and "is not valid UTF-8 (byte 0xff at character 4)" in err


def test_the_tokenizer_names_the_encoding_problem(tokenizer):
    with pytest.raises(ValueError, match=r"not valid UTF-8 \(byte 0xff at character 4\)"):
        tokenizer.encode(LATIN1_ARG)
    with pytest.raises(ValueError, match="not valid UTF-8"):
        tokenizer.encode_batch(["fine", LATIN1_ARG])


# ---- characters the model never saw, and no letter ---------------------------------------


def test_unknown_characters(tokenizer):
    assert unknown_characters(tokenizer, "Tom is lazy.") == []
    assert unknown_characters(tokenizer, "I like 🍕 very much.") == ["🍕"]
    assert unknown_characters(tokenizer, "Tom is 懒 lazy 🙂 🙂.") == ["懒", "🙂"]
    assert unknown_characters(tokenizer, "Grüße aus Köln – „schön“!") == []
    assert "<unk>" in tokenizer.tokens("I like 🍕 very much.")  # the rule's ground truth


def test_has_letter():
    assert has_letter("Go!") and has_letter("北京") and has_letter("ß")
    assert not has_letter("?!...") and not has_letter("42") and not has_letter("-- 🙂")


@pytest.mark.parametrize(
    "text, expected",
    [
        ("Tom is lazy.", None),
        ("I like 🍕 very much.", "'🍕' (SLICE OF PIZZA)"),
        ("我喜欢你。", "its translation will be meaningless"),
        ("?!...", "has no letter"),
        ("42", "has no letter"),
    ],
)
def test_input_warning(tokenizer, text, expected):
    message = input_warning(tokenizer, text)
    if expected is None:
        assert message is None
    else:
        assert expected in message and "\n" not in message


def test_translate_warns_about_one_emoji_and_punctuation_only(translator, recwarn):
    out = translator.translate(["Tom is lazy.", "I like 🍕 very much.", "?!..."])
    assert len(out) == 3 and all(isinstance(s, str) for s in out)
    messages = [str(w.message) for w in recwarn if issubclass(w.category, UserWarning)]
    assert len(messages) == 2
    assert messages[0].startswith("sentence 1 ('I like 🍕 very much.') has 1 character")
    assert "'🍕' (SLICE OF PIZZA)" in messages[0]
    assert messages[1].startswith("sentence 2 ('?!...') has no letter")


# ---- arguments of the wrong type, a tokenizer that does not fit ----------------------------


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        (dict(beam="4"), TypeError, r"beam=\.\.\.\) takes an int.*str '4' \(beam=4\)"),
        (dict(beam=2.0), TypeError, r"takes an int"),
        (dict(beam=True), TypeError, r"takes an int"),
        (dict(beam=0), ValueError, r"must be >= 1"),
        (dict(alpha="0.6"), TypeError, r"alpha=\.\.\.\) takes a number"),
        (dict(alpha=float("nan")), ValueError, r"finite number >= 0"),
    ],
)
def test_translate_checks_its_search_arguments(translator, kwargs, error, match):
    with pytest.raises(error, match=match):
        translator.translate("Tom is lazy.", **kwargs)


def test_numpy_integers_are_fine_as_beam(translator):
    np = pytest.importorskip("numpy")
    assert translator.translate("Tom is lazy.", beam=np.int64(2))


def _small_model(vocab: int) -> Transformer:
    torch.manual_seed(0)
    return Transformer(
        TransformerConfig.tiny(vocab, d_model=32, n_heads=2, d_ff=64, max_len=32)
    )  # fmt: skip


def test_a_tokenizer_that_does_not_fit_the_embedding_is_refused(tokenizer, tmp_path):
    small = Tokenizer.train(["Tom ist faul.", "Tom is lazy.", "Ich bin müde."] * 5, 200)
    path = save_checkpoint(tmp_path / "model.pt", _small_model(tokenizer.vocab_size))
    ckpt = load_checkpoint(path)
    ckpt["tokenizer"] = tokenizer_record(small)  # another tokenizer, e.g. pasted in by hand
    torch.save(ckpt, path)
    with pytest.raises(CheckpointError, match=rf"has {small.vocab_size} tokens but the model"):
        load_pretrained(path)
    with pytest.raises(ValueError, match="were not trained together"):
        Translator(_small_model(tokenizer.vocab_size), small)


def test_a_tokenizer_mismatch_on_the_command_line_is_one_line(tokenizer, tmp_path, capsys):
    small = Tokenizer.train(["Tom ist faul.", "Tom is lazy."] * 5, 120)
    path = save_checkpoint(tmp_path / "m.pt", _small_model(tokenizer.vocab_size), tokenizer=small)
    assert main(["translate", "Hi.", "--checkpoint", str(path)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "tokens but the model's embedding has" in err
