"""The learning-rate schedules: §5.3's Noam schedule and the linear decay for a budget."""

from __future__ import annotations

import signal

import pytest
import torch

from transformer_lib import Transformer, TransformerConfig
from transformer_lib.pipeline.batching import TranslationDataset
from transformer_lib.pipeline.objectives import (
    LinearDecaySchedule,
    NoamSchedule,
    linear_decay_lr,
    make_optimizer,
    make_schedule,
    noam_lr,
)
from transformer_lib.pipeline.training import Trainer, TrainingConfig

PAIRS = [("Tom is lazy.", "Tom ist faul."), ("I am tired.", "Ich bin müde."), ("Go!", "Geh!")]


@pytest.mark.parametrize("warmup, factor", [(400, 1.0), (100, 0.5)])
def test_linear_decay_shares_noams_warmup_and_peak(warmup, factor):
    for step in (1, warmup // 2, warmup):
        assert linear_decay_lr(step, 0.0, 128, warmup, factor) == pytest.approx(
            noam_lr(step, 128, warmup, factor)
        )
    peak = noam_lr(warmup, 128, warmup, factor)
    assert linear_decay_lr(10 * warmup, 0.25, 128, warmup, factor) == pytest.approx(0.75 * peak)
    assert linear_decay_lr(10 * warmup, 1.0, 128, warmup, factor) == 0.0
    assert linear_decay_lr(10 * warmup, 1.7, 128, warmup, factor) == 0.0  # past the budget
    with pytest.raises(ValueError, match="warmup must be >= 1"):
        linear_decay_lr(1, 0.0, 128, 0)


def test_make_schedule_by_name():
    opt = make_optimizer(torch.nn.Linear(2, 2))
    assert isinstance(make_schedule(opt, "noam", 128, 10), NoamSchedule)
    assert isinstance(make_schedule(opt, "linear", 128, 10), LinearDecaySchedule)
    with pytest.raises(ValueError, match="schedule must be one of noam, linear"):
        make_schedule(opt, "cosine", 128, 10)


def test_linear_schedule_state_keeps_progress():
    opt = make_optimizer(torch.nn.Linear(2, 2))
    sched = LinearDecaySchedule(opt, 64, 5)
    for i in range(7):
        sched.progress = (i + 1) / 10
        opt.step()
        sched.step()
    state = sched.state_dict()
    other = LinearDecaySchedule(make_optimizer(torch.nn.Linear(2, 2)), 64, 5)
    other.load_state_dict(state)
    assert other.progress == pytest.approx(0.7) and other.last_epoch == sched.last_epoch


def _trainer(tokenizer, **kw) -> Trainer:
    torch.manual_seed(0)
    config = TransformerConfig.tiny(
        tokenizer.vocab_size, d_model=32, n_heads=2, d_ff=64, n_encoder_layers=1,
        n_decoder_layers=1,
    )  # fmt: skip
    cfg = TrainingConfig(
        device="cpu", progress=False, eval_every=0, log_every=1, max_tokens=64, warmup=3,
        schedule="linear", **kw,
    )  # fmt: skip
    return Trainer(Transformer(config), TranslationDataset(PAIRS * 4, tokenizer), None, cfg)


def test_linear_schedule_ends_at_zero_with_the_step_budget(tokenizer):
    trainer = _trainer(tokenizer, max_steps=12)
    log = trainer.fit()
    lrs = [e["lr"] for e in log if "lr" in e]
    peak = noam_lr(3, 32, 3)
    assert max(lrs) <= peak
    assert lrs[-1] == pytest.approx(0.0, abs=1e-12)  # the step after the last would be 0
    assert all(a >= b for a, b in zip(lrs[2:], lrs[3:]))  # falls after the warm-up


def test_interrupted_linear_run_resumes_exactly(tokenizer, tmp_path):
    straight = _trainer(tokenizer, max_steps=10)
    straight.fit()
    first = _trainer(tokenizer, max_steps=10)
    first.on_log = lambda entry: entry.get("step") == 4 and setattr(first, "_signal", signal.SIGINT)
    first.fit()
    assert first.step == 4 and first.interrupted == "SIGINT"
    first.save(tmp_path / "ck.pt")
    second = _trainer(tokenizer, max_steps=10)
    second.resume(tmp_path / "ck.pt")
    assert second.scheduler.progress == pytest.approx(first.scheduler.progress)
    second.fit()
    for a, b in zip(straight.model.parameters(), second.model.parameters()):
        torch.testing.assert_close(a, b)
