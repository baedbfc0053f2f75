"""What a training run leaves besides its checkpoint: step checkpoints and their average
(§6.1), attention snapshots (chapter 11), and decoder-only runs through the command line."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import torch

from transformer_lib import Transformer, TransformerConfig
from transformer_lib.__main__ import main
from transformer_lib.pipeline.batching import TranslationDataset
from transformer_lib.pipeline.checkpoints import (
    average_checkpoints,
    load_checkpoint,
    load_model,
    save_checkpoint,
)
from transformer_lib.pipeline.snapshots import SNAPSHOT_SENTENCES, read_snapshots
from transformer_lib.pipeline.training import Trainer, TrainingConfig

PAIRS = [
    ("Tom is lazy.", "Tom ist faul."),
    ("I am tired.", "Ich bin müde."),
    ("The cat is sleeping.", "Die Katze schläft."),
    ("We won.", "Wir haben gewonnen."),
    ("It is cold.", "Es ist kalt."),
    ("Who knows?", "Wer weiß?"),
]


def small_config(vocab_size: int, **kw) -> TransformerConfig:
    base = dict(d_model=32, n_heads=2, d_ff=64, n_encoder_layers=1, n_decoder_layers=2)
    base.update(max_len=32, dropout=0.1)
    base.update(kw)
    return TransformerConfig.tiny(vocab_size, **base)


def write_tiny_corpus(path: Path) -> Path:
    letters = "abcdefghijklmnopqrstuvwxyz"
    path.write_text(
        "".join(f"Tom is {w}{v}.\tTom ist {w}{v}.\n" for w in letters for v in "xyz"),
        encoding="utf-8",
    )
    return path


QUIET = ["--no-progress", "--final-bleu", "none", "--max-tokens", "256", "--eval-every", "0"]


# ---- averaging ------------------------------------------------------------------------


def _saved_model(tokenizer, path: Path, seed: int, **kw) -> Path:
    torch.manual_seed(seed)
    model = Transformer(small_config(tokenizer.vocab_size, **kw))
    return save_checkpoint(path, model, tokenizer=tokenizer, state={"step": seed})


def test_average_is_the_mean_of_the_weights(tokenizer, tmp_path):
    a = _saved_model(tokenizer, tmp_path / "a.pt", seed=1)
    b = _saved_model(tokenizer, tmp_path / "b.pt", seed=2)
    out = tmp_path / "avg.pt"
    averaged = average_checkpoints([a, b], out)
    wa, wb = load_checkpoint(a)["model"], load_checkpoint(b)["model"]
    model, ckpt = load_model(out)
    assert ckpt["state"]["averaged_from"] == [
        {"file": "a.pt", "step": 1},
        {"file": "b.pt", "step": 2},
    ]
    assert "optimizer" not in ckpt
    for name, value in model.state_dict().items():
        torch.testing.assert_close(value, (wa[name] + wb[name]) / 2, rtol=0, atol=1e-6)
        assert torch.equal(averaged["model"][name], value)
    # tied weights (the shared embedding, §3.4) stay one tensor: the file does not grow
    tied = ["src_embed.embedding.weight", "tgt_embed.embedding.weight", "generator.weight"]
    assert len({ckpt["model"][k].untyped_storage().data_ptr() for k in tied}) == 1
    assert out.stat().st_size < 1.2 * a.stat().st_size
    # averaging one checkpoint gives it back
    single = average_checkpoints([a])
    assert all(torch.equal(single["model"][k], wa[k]) for k in wa)


def test_average_refuses_different_models(tokenizer, tmp_path):
    a = _saved_model(tokenizer, tmp_path / "a.pt", seed=1)
    other = _saved_model(tokenizer, tmp_path / "other.pt", seed=2, d_ff=128)
    with pytest.raises(ValueError, match="different model"):
        average_checkpoints([a, other])
    with pytest.raises(ValueError, match="at least one"):
        average_checkpoints([])
    torch.manual_seed(3)
    plain = save_checkpoint(
        tmp_path / "no_tok.pt", Transformer(small_config(tokenizer.vocab_size))
    )  # the same model without its tokenizer
    with pytest.raises(ValueError, match="different tokenizer"):
        average_checkpoints([a, plain])


def test_keep_checkpoints_and_average_from_the_command_line(tmp_path, capsys):
    corpus = write_tiny_corpus(tmp_path / "tiny.tsv")
    run = tmp_path / "run"
    args = ["train", "--out", str(run), "--corpus", str(corpus), "--max-steps", "5", *QUIET]
    assert main([*args, "--keep-checkpoints", "2", "--checkpoint-every", "1"]) == 0
    assert sorted(p.name for p in run.glob("step-*.pt")) == ["step-000004.pt", "step-000005.pt"]

    out = tmp_path / "averaged.pt"
    capsys.readouterr()
    assert main(["average", str(run), "--last", "2", "--out", str(out)]) == 0
    said = capsys.readouterr().out
    assert f"averaged 2 checkpoints (step-000004.pt, step-000005.pt) into {out}" in said
    w4, w5 = (load_checkpoint(run / f"step-00000{s}.pt")["model"] for s in (4, 5))
    model, ckpt = load_model(out)
    assert [e["step"] for e in ckpt["state"]["averaged_from"]] == [4, 5]
    for name, value in model.state_dict().items():
        torch.testing.assert_close(value, (w4[name] + w5[name]) / 2, rtol=0, atol=1e-6)

    before = out.read_bytes()
    assert main(["average", str(run), "--last", "1", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "--out" in err and "--force" in err and err.count("\n") == 1
    assert out.read_bytes() == before  # not overwritten
    assert main(["average", str(run), "--last", "1", "--out", str(out), "--force"]) == 0
    assert load_checkpoint(out)["state"]["averaged_from"] == [{"file": "step-000005.pt", "step": 5}]

    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["average", str(empty), "--out", str(tmp_path / "x.pt")]) == 2
    assert "--keep-checkpoints" in capsys.readouterr().err


# ---- attention snapshots ----------------------------------------------------------------


def _trainer(tokenizer, out_dir=None, **kw) -> Trainer:
    torch.manual_seed(0)
    data = TranslationDataset(PAIRS * 3, tokenizer)
    model = Transformer(small_config(tokenizer.vocab_size))
    cfg = TrainingConfig(
        device="cpu", progress=False, max_tokens=64, warmup=3, eval_every=0, log_every=1,
        checkpoint_minutes=0, max_steps=6, **kw,
    )  # fmt: skip
    return Trainer(model, data, None, cfg, tokenizer=tokenizer, out_dir=out_dir)


def test_snapshots_record_translations_and_cross_attention(tokenizer, tmp_path):
    with_snaps = _trainer(tokenizer, tmp_path, snapshot_at=(0, 5))
    with_snaps.fit()
    records = read_snapshots(tmp_path / "attention_snapshots.json")
    assert records == with_snaps.snapshots
    assert [r["step"] for r in records] == [0, 5]
    for record in records:
        assert [s["source"] for s in record["sentences"]] == list(SNAPSHOT_SENTENCES)
        for s in record["sentences"]:
            cross = torch.tensor(s["cross"])  # (layers, heads, T, S)
            S, T = len(s["source_tokens"]), len(s["target_tokens"])
            assert cross.shape == (2, 2, T, S)
            assert s["target_tokens"][0] == "<bos>" and isinstance(s["translation"], str)
            assert s["source_tokens"] == [
                tokenizer.id_to_token(i) for i in tokenizer.encode(s["source"])
            ]
            torch.testing.assert_close(cross.sum(-1), torch.ones(2, 2, T), rtol=0, atol=1e-2)
    # the snapshots of the checkpoint survive a resume; model.pt stays small (no snapshots)
    assert load_checkpoint(tmp_path / "checkpoint.pt")["state"]["snapshots"] == records
    assert "snapshots" not in load_checkpoint(tmp_path / "model.pt")["state"]

    # taking snapshots does not change the training run
    without = _trainer(tokenizer)
    without.fit()
    for a, b in zip(with_snaps.model.parameters(), without.model.parameters()):
        assert torch.equal(a, b)
    assert [e["loss"] for e in with_snaps.log] == [e["loss"] for e in without.log]


# ---- decoder-only through the command line --------------------------------------------


def test_decoder_only_train_translate_evaluate(tmp_path, capsys):
    corpus = write_tiny_corpus(tmp_path / "tiny.tsv")
    run = tmp_path / "dec"
    args = ["train", "--out", str(run), "--corpus", str(corpus), "--max-steps", "3", *QUIET]
    args += ["--arch", "decoder-only", "--layers", "1", "--prefix-lm", "--snapshot-at", "0,2"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "model: decoder-only, tiny preset" in out
    ckpt = load_checkpoint(run / "model.pt")
    assert ckpt["config"]["arch"] == "decoder-only" and ckpt["config"]["prefix_lm"] is True
    assert ckpt["config"]["n_decoder_layers"] == 1
    assert ckpt["state"]["run"]["arch"] == "decoder-only"
    # snapshots are recorded for the encoder-decoder only; asking for them is harmless
    assert not (run / "attention_snapshots.json").exists()
    assert load_checkpoint(run / "checkpoint.pt")["state"]["snapshots"] == []

    model_file = str(run / "model.pt")
    assert main(["translate", "--checkpoint", model_file, "Tom is lazy."]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 1  # an untrained model's German, but one line of it

    pairs = ["--pairs", str(corpus), "--limit", "3", "--show", "0"]
    assert main(["evaluate", "--checkpoint", model_file, *pairs]) == 0
    out = capsys.readouterr().out
    assert re.search(r"^BLEU = [0-9.]+$", out, re.M) and "3 source sentences" in out

    # a decoder-only run resumes as one
    resume = ["train", "--out", str(run), "--resume", "--max-steps", "4", "--corpus", str(corpus)]
    assert main([*resume, *QUIET[:3]]) == 0
    assert load_checkpoint(run / "checkpoint.pt")["state"]["step"] == 4
    assert json.loads((run / "summary.json").read_text())["steps"] == 4
