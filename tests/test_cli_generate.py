"""`generate` on the command line: bad sampling values, unknown tokens, flags from other
tools, and the end of the model's context."""

from __future__ import annotations

import math

import pytest
import torch

from transformer_lib import TransformerConfig
from transformer_lib.__main__ import main
from transformer_lib.components.decoder_only import DecoderOnlyTransformer
from transformer_lib.pipeline import generation, pretrained
from transformer_lib.pipeline.checkpoints import save_checkpoint
from transformer_lib.pipeline.generation import UNK_DISPLAY, decode_for_display, generate


def one_line_error(capsys) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert err.startswith("python -m transformer_lib generate: error: "), err
    return err.strip()


@pytest.fixture
def no_model(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("a model was loaded before the arguments were checked")

    monkeypatch.setattr(pretrained, "load_pretrained", refuse)


def unk_model(tokenizer, tmp_path, max_len: int = 128):
    """A tiny decoder-only checkpoint whose likeliest next token is always <unk>."""
    torch.manual_seed(0)
    config = TransformerConfig.tiny(
        tokenizer.vocab_size, d_model=32, n_heads=2, d_ff=64, n_decoder_layers=1,
        max_len=max_len,
    )  # fmt: skip
    model = DecoderOnlyTransformer(config)
    with torch.no_grad():
        model.generator.bias[tokenizer.unk_id] = 100.0
    return save_checkpoint(tmp_path / "unk.pt", model, tokenizer=tokenizer)


@pytest.mark.parametrize("value", ["inf", "-inf", "nan", "1e999"])
def test_non_finite_temperature_is_refused_up_front(value, capsys, no_model):
    assert main(["generate", "Ich habe", f"--temperature={value}"]) == 2
    err = one_line_error(capsys)
    assert "--temperature must be" in err and "probability tensor" not in err


def test_non_finite_top_p_is_refused_up_front(capsys, no_model):
    assert main(["generate", "Ich habe", "--top-p", "nan"]) == 2
    assert "--top-p must be a finite number, got nan" in one_line_error(capsys)


def test_the_library_refuses_an_infinite_temperature(tokenizer, tmp_path):
    model = pretrained.load_pretrained(unk_model(tokenizer, tmp_path)).model
    with pytest.raises(ValueError, match="temperature must be a finite number"):
        generate(model, [5, 6], 3, temperature=math.inf)


def test_unknown_tokens_are_printed_as_the_replacement_character(tokenizer, tmp_path, capsys):
    path = unk_model(tokenizer, tmp_path)
    args = ["generate", "Ich habe", "--checkpoint", str(path), "--greedy"]
    assert main([*args, "--max-new-tokens", "3"]) == 0
    out = capsys.readouterr().out
    assert "<unk>" not in out
    assert out.startswith("Ich habe") and out.count(UNK_DISPLAY) == 3


def test_decode_for_display_matches_decode_but_for_unk(tokenizer):
    ids = tokenizer.encode("Ich habe 😀 Hunger.", add_bos=True, add_eos=True)
    assert tokenizer.decode(ids) == "Ich habe <unk> Hunger."
    assert decode_for_display(tokenizer, ids) == f"Ich habe {UNK_DISPLAY} Hunger."
    plain = tokenizer.encode("Wir haben gewonnen, oder?")
    assert decode_for_display(tokenizer, plain) == tokenizer.decode(plain)


@pytest.mark.parametrize("flag", ["--max-len", "--max-length", "--max-len=5"])
def test_a_flag_of_another_tool_gets_a_hint(flag, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["generate", "Ich habe", flag, *([] if "=" in flag else ["5"])])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    name = flag.split("=")[0]
    assert err.startswith("python -m transformer_lib generate: error: unrecognized argument: ")
    assert f"{name} (did you mean --max-new-tokens?)" in err


def test_a_near_miss_gets_the_closest_flag(capsys):
    with pytest.raises(SystemExit):
        main(["translate", "Hi.", "--bean", "4"])
    assert "--bean (did you mean --beam?)" in capsys.readouterr().err


def test_stopping_at_the_context_is_said(tokenizer, tmp_path, capsys):
    path = unk_model(tokenizer, tmp_path, max_len=16)
    args = ["generate", "Ich habe", "--checkpoint", str(path), "--greedy"]
    assert main([*args, "--max-new-tokens", "50"]) == 0
    captured = capsys.readouterr()
    prompt = 1 + len(tokenizer.encode("Ich habe"))  # <sep> + the German prompt
    room = 16 - prompt + 1  # the last position, 15, predicts the final token
    assert generation.context_room(pretrained.load_pretrained(path).model, prompt) == room
    assert captured.out.count(UNK_DISPLAY) == room
    assert captured.err == (
        f"note: generation stopped at the model's context of 16 tokens: the prompt has "
        f"{prompt}, so only {room} new tokens fit (of --max-new-tokens 50)\n"
    )
    assert main([*args, "--max-new-tokens", str(room)]) == 0  # asked for no more than fits
    assert capsys.readouterr().err == ""
