"""Label smoothing, the Noam schedule, the training loop and checkpoints (chapter 9)."""

from __future__ import annotations

import json
import math

import pytest
import torch
import torch.nn.functional as F

from transformer_lib import Transformer, TransformerConfig
from transformer_lib.pipeline.batching import TranslationDataset
from transformer_lib.pipeline.checkpoints import (
    CheckpointError,
    MissingCheckpointError,
    load_checkpoint,
    load_model,
    save_checkpoint,
    tokenizer_from_checkpoint,
)
from transformer_lib.pipeline.decoding import greedy_decode
from transformer_lib.pipeline.objectives import (
    LabelSmoothingLoss,
    NoamSchedule,
    make_optimizer,
    noam_lr,
    smoothed_targets,
)
from transformer_lib.pipeline.training import Trainer, TrainingConfig, select_device

PAIRS = [
    ("Tom is lazy.", "Tom ist faul."),
    ("I am tired.", "Ich bin müde."),
    ("Go away!", "Geh weg!"),
    ("We won.", "Wir haben gewonnen."),
    ("It is cold.", "Es ist kalt."),
    ("Who knows?", "Wer weiß?"),
]


def small_config(vocab_size: int, **kw) -> TransformerConfig:
    base = dict(d_model=64, n_heads=4, d_ff=128, n_encoder_layers=1, n_decoder_layers=1)
    base.update(kw)
    return TransformerConfig.tiny(vocab_size, **base)


def quiet(**kw) -> TrainingConfig:
    kw.setdefault("device", "cpu")
    kw.setdefault("progress", False)
    kw.setdefault("eval_every", 0)
    return TrainingConfig(**kw)


# ---- label smoothing ------------------------------------------------------------------


def test_smoothed_targets_distribution():
    target = torch.tensor([[5, 2, 0]])
    q = smoothed_targets(target, vocab_size=10, smoothing=0.1, pad_id=0)
    assert q.shape == (1, 3, 10)
    torch.testing.assert_close(q[0, :2].sum(-1), torch.ones(2))
    assert q[0, 0, 5].item() == pytest.approx(0.9 + 0.01)
    assert q[0, 0, 4].item() == pytest.approx(0.01)
    assert q[0, 0, 0].item() == pytest.approx(0.01)  # the pad column is a wrong token too
    assert (q[0, 2] == 0).all()  # a padding target is no prediction at all


@pytest.mark.parametrize("smoothing", [0.0, 0.1, 0.3])
@pytest.mark.parametrize("fast", [True, False])
def test_label_smoothing_matches_cross_entropy(smoothing, fast):
    V, pad = 11, 0
    torch.manual_seed(0)
    logits = torch.randn(3, 5, V, requires_grad=True)
    target = torch.randint(1, V, (3, 5))
    target[0, 3:] = pad
    ours = LabelSmoothingLoss(V, smoothing, pad, fast=fast)(logits, target)
    ce = F.cross_entropy(
        logits.reshape(-1, V), target.reshape(-1), label_smoothing=smoothing, ignore_index=pad
    )
    # KL(q‖p) = H(q, p) − H(q): the same up to the target's entropy ...
    q = smoothed_targets(torch.tensor([1]), V, smoothing, None)[0]
    entropy = -(q * q.clamp_min(1e-30).log()).sum()
    torch.testing.assert_close(ours, ce - entropy)
    # ... so the gradients are identical.
    (g_ours,) = torch.autograd.grad(ours, logits)
    (g_ce,) = torch.autograd.grad(ce, logits)
    torch.testing.assert_close(g_ours, g_ce)
    assert (g_ours[0, 3:] == 0).all()  # padding targets get no gradient


def test_label_smoothing_is_zero_at_the_target_distribution():
    V = 7
    target = torch.tensor([1, 4, 6])
    q = smoothed_targets(target, V, 0.1, pad_id=None)
    loss = LabelSmoothingLoss(V, 0.1, pad_id=None, fast=False)(q.log(), target)
    assert loss.item() == pytest.approx(0.0, abs=1e-6)
    assert LabelSmoothingLoss(V, 0.1, None)(q.log(), target).item() == pytest.approx(0, abs=1e-5)


def test_label_smoothing_docstring_states_the_right_target_entropy():
    # The docstring (shown in chapter 9) quotes H(q) for one (ε, V); compute it from the
    # definition of q: one token with 1 - ε + ε/V, the other V - 1 with ε/V each.
    import re

    found = re.search(
        r"≈ ([0-9.]+) nats for ε = ([0-9.]+) and V = ([0-9]+)", LabelSmoothingLoss.__doc__
    )
    assert found, "the docstring no longer quotes H(q) in the expected form"
    stated, eps, V = float(found[1]), float(found[2]), int(found[3])
    hi, lo = 1 - eps + eps / V, eps / V
    entropy = -hi * math.log(hi) - (V - 1) * lo * math.log(lo)
    decimals = len(found[1].split(".")[1])
    assert round(entropy, decimals) == stated, f"H(q) = {entropy:.6f}, docstring: {stated}"
    assert LabelSmoothingLoss(V, eps).target_entropy == pytest.approx(entropy, rel=1e-9)


# ---- schedule and optimiser -----------------------------------------------------------


@pytest.mark.parametrize("factor,warmup", [(1.0, 4000), (2.0, 400), (0.5, 50)])
def test_noam_peaks_at_warmup(factor, warmup):
    d = 512
    lrs = [noam_lr(s, d, warmup, factor) for s in range(1, 3 * warmup)]
    assert 1 + max(range(len(lrs)), key=lrs.__getitem__) == warmup
    assert max(lrs) == pytest.approx(factor * d**-0.5 * warmup**-0.5)
    assert noam_lr(4 * warmup, d, warmup, factor) == pytest.approx(max(lrs) / 2)  # ∝ step^−½


def test_noam_schedule_drives_adam():
    model = torch.nn.Linear(3, 3)
    opt = make_optimizer(model)
    assert opt.defaults["betas"] == (0.9, 0.98) and opt.defaults["eps"] == 1e-9
    sched = NoamSchedule(opt, d_model=128, warmup=10, factor=2.0)
    for n in range(1, 25):
        assert opt.param_groups[0]["lr"] == pytest.approx(noam_lr(n, 128, 10, 2.0))
        opt.step()
        sched.step()


def test_select_device():
    assert select_device("cpu") == torch.device("cpu")
    assert select_device("auto").type in ("cuda", "mps", "cpu")


# ---- the loop ---------------------------------------------------------------------------


def test_overfits_a_handful_of_pairs(tokenizer, tmp_path):
    torch.manual_seed(0)
    data = TranslationDataset(PAIRS, tokenizer)
    model = Transformer(small_config(tokenizer.vocab_size, dropout=0.0))
    cfg = quiet(max_steps=150, warmup=20, lr_factor=2.0, label_smoothing=0.0, log_every=10)
    log = Trainer(model, data, data, cfg, tokenizer=tokenizer, out_dir=tmp_path).fit()
    losses = [e["loss"] for e in log if "loss" in e]
    assert losses[-1] < 0.05 < losses[0]
    assert log[-1]["val_nll"] < 0.05
    model.eval()
    src = torch.nn.utils.rnn.pad_sequence(data.src, batch_first=True)
    out = greedy_decode(model, src)
    assert tokenizer.decode_batch(out) == [de for _, de in PAIRS]
    saved = json.loads((tmp_path / "training_log.json").read_text())
    assert saved == log and {"step", "loss", "lr", "tokens_per_s", "elapsed_s"} <= set(saved[0])
    assert (tmp_path / "checkpoint.pt").is_file() and (tmp_path / "model.pt").is_file()


def test_time_budget_stops_training(tokenizer):
    data = TranslationDataset(PAIRS, tokenizer)
    model = Transformer(small_config(tokenizer.vocab_size))
    trainer = Trainer(model, data, None, quiet(minutes=0.5 / 60, max_steps=10_000))
    trainer.fit()
    assert 0 < trainer.step < 10_000


def test_needs_a_stopping_rule(tokenizer):
    data = TranslationDataset(PAIRS, tokenizer)
    trainer = Trainer(Transformer(small_config(tokenizer.vocab_size)), data, None, quiet())
    with pytest.raises(ValueError, match="max_steps, minutes or cpu_minutes"):
        trainer.fit()


# ---- checkpoints ------------------------------------------------------------------------


def make_trainer(tokenizer, **kw) -> Trainer:
    torch.manual_seed(0)
    data = TranslationDataset(PAIRS * 4, tokenizer)
    model = Transformer(small_config(tokenizer.vocab_size, dropout=0.1))
    return Trainer(model, data, None, quiet(max_tokens=64, warmup=5, **kw), tokenizer=tokenizer)


def test_checkpoint_round_trip_and_weights_only_load(tokenizer, tmp_path):
    trainer = make_trainer(tokenizer, max_steps=3)
    trainer.fit()
    path = trainer.save(tmp_path / "ck.pt")
    raw = torch.load(path, weights_only=True)  # only plain data and tensors inside
    assert {"config", "model", "optimizer", "scheduler", "tokenizer", "state"} <= set(raw)
    model, ckpt = load_model(path)
    trainer.model.eval()
    src = torch.tensor([tokenizer.encode("Tom is lazy.")])
    tgt = torch.tensor([tokenizer.encode("Tom ist", add_bos=True)])
    torch.testing.assert_close(model(src, tgt), trainer.model(src, tgt))
    tok = tokenizer_from_checkpoint(ckpt)
    assert tok.encode("Ich bin müde.") == tokenizer.encode("Ich bin müde.")
    small = trainer.save(tmp_path / "small.pt", weights_only=True)
    assert "optimizer" not in torch.load(small, weights_only=True)
    assert small.stat().st_size < path.stat().st_size


def test_resume_continues_exactly(tokenizer, tmp_path):
    straight = make_trainer(tokenizer, max_steps=8)
    straight.fit()

    first = make_trainer(tokenizer, max_steps=4)
    first.fit()
    first.save(tmp_path / "ck.pt")
    torch.manual_seed(123)  # the resumed run must not depend on the RNG state around it
    second = make_trainer(tokenizer, max_steps=8)
    second.resume(tmp_path / "ck.pt")
    assert second.step == 4
    assert second.scheduler.get_last_lr()[0] == pytest.approx(noam_lr(5, 64, 5, 1.0))
    second.fit()
    assert second.step == 8
    for a, b in zip(straight.model.parameters(), second.model.parameters()):
        torch.testing.assert_close(a, b)
    steps = [e["step"] for e in second.log if "loss" in e]
    assert steps == sorted(steps)


def test_missing_checkpoint(tmp_path):
    with pytest.raises(MissingCheckpointError, match="nothing_here.pt"):
        load_checkpoint(tmp_path / "nothing_here.pt")
    assert issubclass(MissingCheckpointError, FileNotFoundError)


def test_truncated_checkpoint_is_a_clear_error(tokenizer, tmp_path):
    model = Transformer(small_config(tokenizer.vocab_size))
    good = save_checkpoint(tmp_path / "good.pt", model, tokenizer=tokenizer)
    bad = tmp_path / "truncated.pt"
    bad.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    with pytest.raises(CheckpointError, match="truncated.pt.*truncated"):
        load_model(bad)


@pytest.mark.parametrize("kind", ["state_dict", "other_dict", "text", "tensor"])
def test_foreign_file_is_a_clear_error(tmp_path, kind):
    path = tmp_path / f"{kind}.pt"
    if kind == "state_dict":
        torch.save(torch.nn.Linear(2, 2).state_dict(), path)
    elif kind == "other_dict":
        torch.save({"epoch": 3, "weights": [torch.zeros(2)]}, path)
    elif kind == "tensor":
        torch.save(torch.zeros(3), path)
    else:
        path.write_text("this is not a checkpoint\n")
    with pytest.raises(CheckpointError, match=f"{kind}.pt"):
        load_model(path)


def test_mismatched_weights_are_not_half_loaded(tokenizer, tmp_path):
    model = Transformer(small_config(tokenizer.vocab_size))
    path = save_checkpoint(tmp_path / "ck.pt", model)
    ckpt = torch.load(path, weights_only=True)
    ckpt["config"]["d_ff"] = 256  # the weights no longer fit the config
    torch.save(ckpt, path)
    with pytest.raises(CheckpointError, match="do not fit"):
        load_model(path)


def test_resume_refuses_weights_only_file(tokenizer, tmp_path):
    trainer = make_trainer(tokenizer, max_steps=1)
    trainer.fit()
    path = trainer.save(tmp_path / "small.pt", weights_only=True)
    with pytest.raises(CheckpointError, match="weights only"):
        make_trainer(tokenizer, max_steps=2).resume(path)


def test_noam_value_in_log_matches_formula(tokenizer):
    trainer = make_trainer(tokenizer, max_steps=6, log_every=2)
    log = trainer.fit()
    for entry in (e for e in log if "lr" in e):
        # After n optimiser steps the schedule is ready for step n + 1.
        assert entry["lr"] == pytest.approx(noam_lr(entry["step"] + 1, 64, 5, 1.0))
    assert math.isfinite(log[0]["loss"])
