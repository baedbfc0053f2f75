"""Runs that survive interruption: Ctrl-C/SIGTERM, SIGKILL, resume, no silent overwrite."""

from __future__ import annotations

import dataclasses
import itertools
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import types
from pathlib import Path

import pytest
import torch

from transformer_lib import Transformer, TransformerConfig
from transformer_lib.__main__ import main
from transformer_lib.pipeline import cli, training
from transformer_lib.pipeline.batching import TranslationDataset
from transformer_lib.pipeline.checkpoints import CheckpointError, load_checkpoint
from transformer_lib.pipeline.objectives import noam_lr
from transformer_lib.pipeline.training import Trainer, TrainingConfig, read_log

pytestmark = pytest.mark.slow  # training runs stopped and resumed in real processes

REPO_ROOT = Path(__file__).resolve().parents[1]

PAIRS = [
    ("Tom is lazy.", "Tom ist faul."),
    ("I am tired.", "Ich bin müde."),
    ("Go away!", "Geh weg!"),
    ("We won.", "Wir haben gewonnen."),
    ("It is cold.", "Es ist kalt."),
    ("Who knows?", "Wer weiß?"),
]
TIMINGS = ("elapsed_s", "cpu_s", "tokens_per_s")  # the only log fields that may differ


def write_tiny_corpus(path: Path) -> Path:
    """78 short pairs: read and batched in milliseconds (the shipped tokenizer covers them)."""
    path.write_text(
        "".join(
            f"Tom is {w}{v}.\tTom ist {w}{v}.\n"
            for w in "abcdefghijklmnopqrstuvwxyz"
            for v in "xyz"
        ),
        encoding="utf-8",
    )
    return path


def tiny_trainer(tokenizer, config: TrainingConfig | None = None, **kw) -> Trainer:
    """A small model with dropout on, seeded the same way every time."""
    trainer_kw = {k: kw.pop(k) for k in ("out_dir", "on_log") if k in kw}
    torch.manual_seed(0)
    data = TranslationDataset(PAIRS * 4, tokenizer)
    model_cfg = TransformerConfig.tiny(
        tokenizer.vocab_size, d_model=32, n_heads=2, d_ff=64, n_encoder_layers=1,
        n_decoder_layers=1, dropout=0.1,
    )  # fmt: skip
    settings = dict(device="cpu", progress=False, max_tokens=64, warmup=3, log_every=1)
    settings.update(eval_every=4, checkpoint_minutes=0)
    config = config or TrainingConfig(**{**settings, **kw})
    return Trainer(Transformer(model_cfg), data, data, config, tokenizer=tokenizer, **trainer_kw)


def without_timings(log: list[dict]) -> list[dict]:
    return [{k: v for k, v in e.items() if k not in TIMINGS} for e in log]


def tmp_files(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if ".tmp-" in p.name)


# --------------------------------------------------------------------------------------
# In process: an interrupted and resumed run equals an uninterrupted one
# --------------------------------------------------------------------------------------


def test_interrupted_then_resumed_run_equals_uninterrupted(tokenizer, tmp_path):
    n = 10  # a few epochs of ~4 batches; the interruption falls inside an epoch
    straight = tiny_trainer(tokenizer, max_steps=n)
    straight.fit()
    rng_after_straight = torch.get_rng_state()
    assert straight.epoch >= 2

    def ctrl_c_at_half(entry):
        if entry.get("step") == n // 2 and "loss" in entry:
            signal.raise_signal(signal.SIGINT)  # as if Ctrl-C were pressed during step 5

    run = tmp_path / "run"
    first = tiny_trainer(tokenizer, max_steps=n, out_dir=run, on_log=ctrl_c_at_half)
    before = signal.getsignal(signal.SIGINT)  # default_int_handler, or SIG_IGN in a background job
    first.fit()
    assert first.interrupted == "SIGINT" and first.step == n // 2  # stopped after that step
    assert signal.getsignal(signal.SIGINT) is before  # the caller's handler is restored
    assert tmp_files(run) == []

    ckpt = load_checkpoint(run / "checkpoint.pt")
    assert ckpt["state"]["step"] == n // 2
    config = dataclasses.replace(
        TrainingConfig.from_dict(ckpt["state"]["training_config"]), max_steps=n
    )
    torch.manual_seed(123)  # the resumed run must not depend on the RNG state around it
    second = tiny_trainer(tokenizer, config=config, out_dir=run)
    second.resume(run / "checkpoint.pt")
    assert (second.step, second.epoch, second.batch_in_epoch) == (
        first.step,
        first.epoch,
        first.batch_in_epoch,
    )
    # the schedule continues: the learning rate of step 6 is that of the straight run
    assert second.scheduler.get_last_lr()[0] == pytest.approx(noam_lr(n // 2 + 1, 32, 3, 1.0))
    second.fit()
    assert second.step == n and second.interrupted is None

    for (name, a), b in zip(
        straight.model.state_dict().items(), second.model.state_dict().values()
    ):
        assert torch.equal(a, b), name  # bitwise: model, dropout RNG and batch order all continue
    opt_a, opt_b = straight.optimizer.state_dict(), second.optimizer.state_dict()
    for key, state in opt_a["state"].items():
        for name, value in state.items():
            assert torch.equal(torch.as_tensor(value), torch.as_tensor(opt_b["state"][key][name]))
    assert torch.equal(torch.get_rng_state(), rng_after_straight)
    # the log continues where it stopped: same steps, losses, learning rates, val losses
    assert without_timings(second.log) == without_timings(straight.log)
    assert [e["step"] for e in second.log if "loss" in e] == list(range(1, n + 1))
    assert read_log(run / "training_log.json") == second.log


def test_resuming_with_another_rng_state_would_differ(tokenizer):
    """The equality above is not luck: the dropout draws do change the weights."""
    a = tiny_trainer(tokenizer, max_steps=4)
    a.fit()
    b = tiny_trainer(tokenizer, max_steps=2)
    b.fit()
    torch.manual_seed(999)  # a different dropout stream from step 3 on
    b.config = dataclasses.replace(b.config, max_steps=4)
    b.fit()
    assert b.step == 4
    assert any(not torch.equal(x, y) for x, y in zip(a.model.parameters(), b.model.parameters()))


def test_sigterm_also_stops_and_saves(tokenizer, tmp_path):
    def terminate(entry):
        if entry.get("step") == 2:
            signal.raise_signal(signal.SIGTERM)

    trainer = tiny_trainer(tokenizer, max_steps=50, out_dir=tmp_path, on_log=terminate)
    trainer.fit()
    assert trainer.interrupted == "SIGTERM" and trainer.step == 2
    assert load_checkpoint(tmp_path / "checkpoint.pt")["state"]["step"] == 2
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL


def test_stale_temporaries_are_removed_at_start(tokenizer, tmp_path):
    stale = [tmp_path / ".checkpoint.pt.tmp-999999", tmp_path / ".training_log.json.tmp-1"]
    for path in stale:
        path.write_bytes(b"half a file")
    keep = tmp_path / "notes.txt"
    keep.write_text("mine")
    tiny_trainer(tokenizer, max_steps=1, out_dir=tmp_path).fit()
    assert tmp_files(tmp_path) == [] and keep.read_text() == "mine"


def test_checkpoint_is_written_on_a_clock(tokenizer, tmp_path, monkeypatch):
    """checkpoint_minutes: checkpoint.pt is also written between evaluations, by the clock."""
    clock = itertools.count(0, 30)  # each reading of the clock: 30 s later
    fake_time = types.SimpleNamespace(
        perf_counter=lambda: next(clock), process_time=time.process_time
    )
    monkeypatch.setattr(training, "time", fake_time)
    saved_steps = []
    real_write = Trainer._write_outputs

    def spy(self):
        saved_steps.append(self.step)
        real_write(self)

    monkeypatch.setattr(Trainer, "_write_outputs", spy)
    trainer = tiny_trainer(tokenizer, max_steps=6, eval_every=0, checkpoint_minutes=1.0)
    trainer.out_dir = tmp_path
    trainer.fit()
    assert saved_steps[-1] == 6  # at the end
    assert any(0 < s < 6 for s in saved_steps)  # and on the clock before
    assert load_checkpoint(tmp_path / "checkpoint.pt")["state"]["step"] == 6
    saved_steps.clear()
    trainer = tiny_trainer(tokenizer, max_steps=6, eval_every=0, checkpoint_minutes=0)
    trainer.out_dir = tmp_path / "off"
    trainer.fit()
    assert saved_steps == [6]  # 0 = off: only at the end


# --------------------------------------------------------------------------------------
# Real processes: SIGKILL, resume, Ctrl-C, resume
# --------------------------------------------------------------------------------------


def _train_command(out: Path, corpus: Path, *extra: str) -> list[str]:
    return [
        sys.executable, "-m", "transformer_lib", "train", "--out", str(out), "--corpus",
        str(corpus), "--threads", "1", "--no-progress", "--final-bleu", "none", *extra,
    ]  # fmt: skip


def _wait_for(predicate, proc: subprocess.Popen, what: str, timeout: float = 300.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if proc.poll() is not None:
            raise AssertionError(f"the run ended (status {proc.returncode}) before {what}")
        if time.monotonic() > deadline:
            proc.kill()
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def _logged_step(run: Path) -> int:
    """The last step in training_log.json (written atomically every log entry)."""
    try:
        log = json.loads((run / "training_log.json").read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return -1
    return log[-1]["step"] if log else -1


def _checkpoint_step(path: Path) -> int:
    try:
        return int(load_checkpoint(path)["state"]["step"])
    except (CheckpointError, FileNotFoundError, KeyError):
        return -1


def test_sigkill_then_ctrl_c_then_resume(tmp_path):
    """The whole story in real processes: a killed run leaves a recent, loadable
    checkpoint; a resumed run removes stale temporaries; Ctrl-C saves and says how to
    continue (exit 130); continuing then works."""
    corpus = write_tiny_corpus(tmp_path / "tiny.tsv")
    out = tmp_path / "run"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(REPO_ROOT)}
    env.pop("TRANSFORMER_BOOK_CORPUS", None)
    settings = ["--max-tokens", "256", "--eval-every", "0", "--log-every", "1"]
    settings += ["--checkpoint-minutes", "0.005"]  # every 0.3 s
    log1 = tmp_path / "first.txt"
    with log1.open("w") as stdout:
        proc = subprocess.Popen(
            _train_command(out, corpus, "--max-steps", "100000", *settings),
            cwd=REPO_ROOT, env=env, stdout=stdout, stderr=subprocess.STDOUT,
        )  # fmt: skip
        _wait_for(
            lambda: (out / "checkpoint.pt").is_file() and _logged_step(out) >= 3,
            proc,
            "a checkpoint",
        )
        time.sleep(0.5)
        proc.kill()
        proc.wait(timeout=300)
        killed_at = time.time()
    assert proc.returncode == -signal.SIGKILL
    step_killed = _checkpoint_step(out / "checkpoint.pt")
    assert step_killed >= 2  # loadable, whatever moment the kill hit
    # written every 0.3 s (and every step): seconds old at most, even on a busy machine
    assert killed_at - (out / "checkpoint.pt").stat().st_mtime < 60
    (out / ".checkpoint.pt.tmp-999999").write_bytes(b"left by a killed run")
    logged_when_killed = _logged_step(out)

    # Resume in a new process (no flags: the run's own settings), then press Ctrl-C.
    log2 = tmp_path / "second.txt"
    with log2.open("w") as stdout:
        proc = subprocess.Popen(
            _train_command(out, corpus, "--resume", "--max-steps", "100000"),
            cwd=REPO_ROOT, env=env, stdout=stdout, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        # The killed run's log may already be ahead of its checkpoint: wait past both.
        seen = max(step_killed, logged_when_killed)
        _wait_for(lambda: _logged_step(out) > seen + 2, proc, "the resumed run's steps")
        assert ".checkpoint.pt.tmp-999999" not in os.listdir(out)  # removed at the start
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr
    stdout_text = log2.read_text()
    assert f"resumed {out / 'checkpoint.pt'} at step {step_killed}" in stdout_text
    last = stdout_text.strip().splitlines()[-1]
    stopped = _checkpoint_step(out / "checkpoint.pt")
    assert last == (
        f"SIGINT: stopped at step {stopped} and saved {out}/checkpoint.pt; continue with: "
        f"python -m transformer_lib train --out {out} --resume"
    )
    assert stopped > step_killed and tmp_files(out) == []
    steps = [e["step"] for e in read_log(out / "training_log.json")]
    assert steps == list(range(1, stopped + 1))  # no step lost or repeated over 3 sessions

    # ... and the command it printed continues the run (here in process: faster).
    more = ["--corpus", str(corpus), "--no-progress", "--final-bleu", "none"]
    assert (
        main(["train", "--out", str(out), "--resume", "--max-steps", str(stopped + 2), *more]) == 0
    )
    ckpt = load_checkpoint(out / "checkpoint.pt")
    assert ckpt["state"]["step"] == stopped + 2
    assert ckpt["state"]["training_config"]["checkpoint_minutes"] == 0.005  # restored
    assert [e["step"] for e in ckpt["state"]["log"] if "loss" in e] == list(range(1, stopped + 3))


# --------------------------------------------------------------------------------------
# The command line: no silent overwrite, resume restores every setting
# --------------------------------------------------------------------------------------

RUN_SETTINGS = [
    "--max-tokens", "256", "--eval-every", "2", "--warmup", "7", "--seed", "3",
    "--schedule", "noam",
    "--snapshot-at", "0,3", "--log-every", "1", "--keep-checkpoints", "2",
    "--checkpoint-every", "1",
]  # fmt: skip


@pytest.fixture(scope="module")
def cli_run(tmp_path_factory):
    """A two-step CLI run with non-default settings (trained once for this module)."""
    tmp = tmp_path_factory.mktemp("cli_run")
    corpus = write_tiny_corpus(tmp / "tiny.tsv")
    out = tmp / "run"
    common = ["--corpus", str(corpus), "--no-progress", "--final-bleu", "none"]
    assert main(["train", "--out", str(out), "--max-steps", "2", *RUN_SETTINGS, *common]) == 0
    return out, common


@pytest.fixture
def run_copy(cli_run, tmp_path):
    out, common = cli_run
    copy = tmp_path / "run"
    shutil.copytree(out, copy)
    return copy, common


@pytest.fixture
def no_corpus_read(monkeypatch):
    """Fail the test if a command reads the corpus (checks must come first)."""

    def refuse(*args, **kwargs):
        raise AssertionError("the corpus was read before the arguments were checked")

    monkeypatch.setattr(cli, "_corpus_splits", refuse)


def _snapshot_files(folder: Path) -> dict[str, tuple[int, bytes]]:
    return {p.name: (p.stat().st_mtime_ns, p.read_bytes()) for p in sorted(folder.iterdir())}


def test_second_run_into_the_same_folder_is_refused(run_copy, capsys, no_corpus_read):
    out, common = run_copy
    before = _snapshot_files(out)
    assert main(["train", "--out", str(out), "--max-steps", "3", *common]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("python -m transformer_lib train: error: --out:") and "\n" not in err
    assert "--resume" in err and "--force" in err
    assert _snapshot_files(out) == before  # not a byte touched


def test_resume_and_force_contradict(run_copy, capsys, no_corpus_read):
    out, common = run_copy
    before = _snapshot_files(out)
    assert (
        main(["train", "--out", str(out), "--resume", "--force", "--max-steps", "3", *common]) == 2
    )
    assert "--resume and --force" in capsys.readouterr().err
    assert _snapshot_files(out) == before


def test_force_starts_over(run_copy, capsys):
    out, common = run_copy
    assert {"step-000001.pt", "step-000002.pt", "attention_snapshots.json"} <= set(os.listdir(out))
    assert main(["train", "--out", str(out), "--max-steps", "1", "--force", *common]) == 0
    ckpt = load_checkpoint(out / "checkpoint.pt")
    assert ckpt["state"]["step"] == 1
    assert [e["step"] for e in ckpt["state"]["log"]] == [1]  # a new log (its final val_loss)
    assert ckpt["state"]["training_config"]["seed"] == 0  # the defaults, not the old run's
    left = set(os.listdir(out))
    assert not {"step-000001.pt", "step-000002.pt", "attention_snapshots.json"} & left


def test_resume_restores_every_setting(run_copy, capsys):
    out, common = run_copy
    # Only the budget is given (repeating a setting with the same value is allowed).
    args = ["train", "--out", str(out), "--resume", "--max-steps", "4", "--eval-every", "2"]
    assert main([*args, *common]) == 0
    ckpt = load_checkpoint(out / "checkpoint.pt")
    cfg = ckpt["state"]["training_config"]
    assert (cfg["eval_every"], cfg["warmup"], cfg["seed"], cfg["log_every"]) == (2, 7, 3, 1)
    assert (cfg["max_tokens"], cfg["keep_checkpoints"], cfg["max_steps"]) == (256, 2, 4)
    assert tuple(cfg["snapshot_at"]) == (0, 3)
    log = ckpt["state"]["log"]
    assert [e["step"] for e in log if "loss" in e] == [1, 2, 3, 4]
    assert [e["step"] for e in log if "val_loss" in e] == [2, 4]  # eval_every 2 continued
    d_model = ckpt["config"]["d_model"]
    assert log[-2]["lr"] == pytest.approx(noam_lr(5, d_model, 7, 1.0))  # warm-up 7 kept
    snaps = ckpt["state"]["snapshots"]
    assert [s["step"] for s in snaps] == [0, 3]
    assert sorted(p.name for p in out.glob("step-*.pt")) == ["step-000003.pt", "step-000004.pt"]
    assert ckpt["state"]["run"]["preset"] == "tiny"


@pytest.mark.parametrize(
    "flag, value",
    [("--preset", "base"), ("--eval-every", "3"), ("--seed", "4"), ("--warmup", "8")],
)
def test_resume_refuses_conflicting_settings(run_copy, capsys, no_corpus_read, flag, value):
    out, common = run_copy
    before = _snapshot_files(out)
    args = ["train", "--out", str(out), "--resume", "--max-steps", "4", flag, value]
    assert main([*args, *common]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"python -m transformer_lib train: error: {flag} {value} conflicts")
    assert "\n" not in err
    assert _snapshot_files(out) == before


def test_resume_without_a_checkpoint_is_refused(tmp_path, capsys, no_corpus_read):
    assert main(["train", "--out", str(tmp_path / "new"), "--resume", "--max-steps", "3"]) == 2
    assert "--resume: no checkpoint at" in capsys.readouterr().err


def test_sigterm_through_the_command_line_exits_143(tmp_path, capsys, monkeypatch):
    corpus = write_tiny_corpus(tmp_path / "tiny.tsv")
    out = tmp_path / "run"
    record = Trainer._record

    def terminate_at_step_2(self, entry):
        record(self, entry)
        if entry.get("step") == 2:
            signal.raise_signal(signal.SIGTERM)  # as a cluster's scheduler would send it

    monkeypatch.setattr(Trainer, "_record", terminate_at_step_2)
    args = ["train", "--out", str(out), "--corpus", str(corpus), "--max-steps", "1000"]
    args += ["--log-every", "1", "--max-tokens", "256", "--no-progress", "--final-bleu", "none"]
    assert main(args) == 143
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last == (
        f"SIGTERM: stopped at step 2 and saved {out}/checkpoint.pt; continue with: "
        f"python -m transformer_lib train --out {out} --resume"
    )
    assert load_checkpoint(out / "checkpoint.pt")["state"]["step"] == 2
    assert not (out / "summary.json").exists()  # the run is not finished
    assert tmp_files(out) == []


# --------------------------------------------------------------------------------------
# Ctrl-C outside the training loop: evaluate, and train's final validation BLEU
# --------------------------------------------------------------------------------------


def _many_pairs(path: Path, n: int) -> Path:
    """``n`` distinct pairs the shipped tokenizer covers."""
    words = ("".join(t) for t in itertools.product("abcdefghijklmnopqrstuvwxyz", repeat=3))
    lines = [f"Tom is {w}.\tTom ist {w}.\n" for w in itertools.islice(words, n)]
    path.write_text("".join(lines), encoding="utf-8")
    return path


def _untrained_checkpoint(tokenizer, path: Path) -> Path:
    """A random model: it decodes every sentence to its full length, slowly enough to be
    interrupted."""
    from transformer_lib.pipeline.checkpoints import save_checkpoint

    torch.manual_seed(0)
    config = TransformerConfig.tiny(tokenizer.vocab_size, d_model=32, n_heads=2, d_ff=64)
    return save_checkpoint(path, Transformer(config), tokenizer=tokenizer)


def _sigint_as_in_a_terminal() -> None:
    """In the child before it starts: SIGINT handled by default, as in a terminal. A test
    run started in the background (``make test &``, nohup) inherits SIGINT ignored, and
    Python then never turns Ctrl-C into KeyboardInterrupt."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _wait_for_text(path: Path, text: str, proc: subprocess.Popen, timeout: float = 300.0):
    _wait_for(lambda: path.is_file() and text in path.read_text(errors="replace"), proc, text)


def test_ctrl_c_during_evaluate_stops_with_one_line(tokenizer, tmp_path):
    # Enough sentences that a busy machine cannot finish them before the signal arrives.
    pairs = _many_pairs(tmp_path / "pairs.tsv", 4000)
    model = _untrained_checkpoint(tokenizer, tmp_path / "random.pt")
    scores = tmp_path / "scores.json"
    err_file = tmp_path / "stderr.txt"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(REPO_ROOT)}
    command = [
        sys.executable, "-m", "transformer_lib", "evaluate", "--pairs", str(pairs),
        "--checkpoint", str(model), "--beam", "4", "--threads", "1", "--json", str(scores),
    ]  # fmt: skip
    with err_file.open("w") as stderr:
        proc = subprocess.Popen(
            command, cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE, stderr=stderr, text=True,
            preexec_fn=_sigint_as_in_a_terminal,
        )  # fmt: skip
        _wait_for_text(err_file, "16/4000", proc)  # the first batch is done: progress shows
        proc.send_signal(signal.SIGINT)
        stdout, _ = proc.communicate(timeout=300)
    err = err_file.read_text()
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err
    last = err.strip().splitlines()[-1]
    assert last == (
        "python -m transformer_lib evaluate: SIGINT: interrupted; the scores were not "
        "complete, so nothing was written"
    )
    assert "BLEU =" not in stdout
    assert not scores.exists() and not list(tmp_path.glob(".scores.json.tmp-*"))


def test_sigterm_during_evaluate_exits_143(tokenizer, tmp_path, capsys, monkeypatch):
    from transformer_lib.pipeline import evaluation

    pairs = _many_pairs(tmp_path / "pairs.tsv", 100)
    model = _untrained_checkpoint(tokenizer, tmp_path / "random.pt")
    translate = evaluation.translate_any
    calls = []

    def terminated_in_batch_2(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            signal.raise_signal(signal.SIGTERM)  # as a scheduler's kill would
        return translate(*args, **kwargs)

    monkeypatch.setattr(evaluation, "translate_any", terminated_in_batch_2)
    args = ["evaluate", "--pairs", str(pairs), "--checkpoint", str(model), "--limit", "70"]
    assert main([*args, "--json", str(tmp_path / "s.json")]) == 143
    err = capsys.readouterr().err
    assert err.strip().splitlines()[-1].startswith("python -m transformer_lib evaluate: SIGTERM")
    assert not (tmp_path / "s.json").exists()
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # restored


def test_ctrl_c_during_the_final_bleu_keeps_the_finished_run(tmp_path):
    """A real Ctrl-C while train scores the validation split (with its progress bar)."""
    # ≈430 validation sentences: still being scored when the signal arrives, even on a
    # busy machine.
    corpus = _many_pairs(tmp_path / "pairs.tsv", 17000)
    out = tmp_path / "run"
    err_file = tmp_path / "stderr.txt"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(REPO_ROOT)}
    command = [
        sys.executable, "-m", "transformer_lib", "train", "--out", str(out), "--corpus",
        str(corpus), "--threads", "1", "--max-steps", "1", "--max-tokens", "256",
        "--eval-every", "0", "--final-bleu", "valid",
    ]  # fmt: skip
    with err_file.open("w") as stderr:
        proc = subprocess.Popen(
            command, cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE, stderr=stderr, text=True,
            preexec_fn=_sigint_as_in_a_terminal,
        )  # fmt: skip
        _wait_for_text(err_file, "valid BLEU (greedy):", proc)  # its progress bar
        _wait_for(lambda: "64/" in err_file.read_text(errors="replace"), proc, "a batch")
        proc.send_signal(signal.SIGINT)
        stdout, _ = proc.communicate(timeout=300)
    err = err_file.read_text()
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err
    assert stdout.strip().splitlines()[-1] == (
        f"SIGINT: stopped during the final valid BLEU; the run is complete and saved "
        f"({out / 'checkpoint.pt'}, model.pt, summary.json without the BLEU); score it with: "
        f"python -m transformer_lib evaluate --checkpoint {out / 'model.pt'} --split valid "
        f"--corpus {corpus}"
    )
    summary = json.loads((out / "summary.json").read_text())
    assert summary["steps"] == 1 and not [k for k in summary if "bleu_" in k or "chrf" in k]
    assert summary["final_bleu"] == "interrupted (SIGINT) before the valid BLEU was complete"
    assert load_checkpoint(out / "checkpoint.pt")["state"]["step"] == 1
    assert tmp_files(out) == []


@pytest.mark.parametrize("arch", ["encoder-decoder", "decoder-only"])
@pytest.mark.parametrize("beam", [1, 3])
def test_progress_does_not_change_the_translations(tokenizer, arch, beam, capsys):
    from transformer_lib.components.decoder_only import build_model
    from transformer_lib.pipeline.evaluation import evaluate_pairs

    torch.manual_seed(1)
    config = TransformerConfig.tiny(
        tokenizer.vocab_size, d_model=32, n_heads=2, d_ff=64, max_len=24
    ).to_dict()
    model = build_model({**config, "arch": arch}).eval()
    texts = [" ".join(["Tom is lazy."] * (1 + i % 4)) + f" {i}" for i in range(40)]
    pairs = [(t, "Tom ist faul.") for t in texts]
    plain = evaluate_pairs(model, tokenizer, pairs, beam, batch_size=6)
    shown = evaluate_pairs(model, tokenizer, pairs, beam, batch_size=6, progress="scoring")
    assert shown.hypotheses == plain.hypotheses and shown.bleu == plain.bleu
    assert "scoring: 100%" in capsys.readouterr().err
