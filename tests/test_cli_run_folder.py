"""The run folder: one training process at a time, and a folder that stops being writable
in the middle of a run."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from transformer_lib.__main__ import main
from transformer_lib.pipeline import training
from transformer_lib.pipeline.checkpoints import CheckpointError, load_checkpoint
from transformer_lib.pipeline.run_folder import RunFolderBusy, lock_run_folder

pytestmark = pytest.mark.slow  # training runs in real processes

REPO_ROOT = Path(__file__).resolve().parents[1]
RUN_FOLDER_PY = str(REPO_ROOT / "transformer_lib" / "pipeline" / "run_folder.py")
QUIET = ["--no-progress", "--final-bleu", "none", "--max-tokens", "256", "--eval-every", "0"]


def write_tiny_corpus(path: Path) -> Path:
    path.write_text(
        "".join(
            f"Tom is {w}{v}.\tTom ist {w}{v}.\n"
            for w in "abcdefghijklmnopqrstuvwxyz"
            for v in "xyz"
        ),
        encoding="utf-8",
    )
    return path


def child_env() -> dict[str, str]:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(REPO_ROOT)}
    env.pop("TRANSFORMER_BOOK_CORPUS", None)
    return env


# The holder loads run_folder.py by itself: the module needs only the standard library,
# and the package's __init__ would import PyTorch (seconds of CPU) for a lock.
HOLD = textwrap.dedent(
    """
    import importlib.util, sys, time
    spec = importlib.util.spec_from_file_location("run_folder", sys.argv[2])
    run_folder = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(run_folder)
    with run_folder.lock_run_folder(sys.argv[1]):
        print("locked", flush=True)
        time.sleep(600)
    """
)


@pytest.fixture
def holder(tmp_path):
    """Another process that holds ``tmp_path/run`` (as a running `train` does)."""
    out = tmp_path / "run"
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(out), RUN_FOLDER_PY], cwd=REPO_ROOT, env=child_env(),
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert proc.stdout.readline().strip() == "locked"
        yield out, proc
    finally:
        proc.kill()
        proc.wait(timeout=60)


def test_a_second_train_into_a_busy_folder_is_refused_at_once(holder, tmp_path, capsys):
    out, proc = holder
    corpus = write_tiny_corpus(tmp_path / "tiny.tsv")
    for extra in ([], ["--force"], ["--resume"]):
        args = ["train", "--out", str(out), "--corpus", str(corpus), "--max-steps", "2"]
        assert main([*args, *extra, *QUIET]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "Traceback" not in err, err
        assert err.startswith(f"python -m transformer_lib train: error: --out: {out} is in use")
        assert f"(process {proc.pid}, started 20" in err  # PID and start time of the first
        assert f"kill {proc.pid}" in err
    assert sorted(os.listdir(out)) == [".lock"]  # nothing of the first run was touched


def test_the_library_trainer_takes_the_same_lock(holder, tokenizer):
    from test_interrupt import tiny_trainer

    out, proc = holder
    trainer = tiny_trainer(tokenizer, max_steps=1, out_dir=out)
    with pytest.raises(RunFolderBusy, match=f"process {proc.pid}"):
        trainer.fit()
    assert trainer.step == 0


def test_a_stale_lock_does_not_block_a_new_run(tmp_path, capsys):
    out = tmp_path / "run"
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(out), RUN_FOLDER_PY], cwd=REPO_ROOT, env=child_env(),
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert proc.stdout.readline().strip() == "locked"
    proc.kill()  # as a crash would: the lock file stays, with a dead PID in it
    proc.wait(timeout=60)
    assert json.loads((out / ".lock").read_text())["pid"] == proc.pid
    corpus = write_tiny_corpus(tmp_path / "tiny.tsv")
    args = ["train", "--out", str(out), "--corpus", str(corpus), "--max-steps", "1", *QUIET]
    assert main(args) == 0
    assert load_checkpoint(out / "checkpoint.pt")["state"]["step"] == 1
    assert not (out / ".lock").exists()  # released at the end


def test_the_lock_nests_in_one_process_and_leaves_no_trace(tmp_path):
    out = tmp_path / "new"
    with lock_run_folder(out):
        assert json.loads((out / ".lock").read_text())["pid"] == os.getpid()
        with lock_run_folder(out):  # the command line, then Trainer.fit
            pass
        assert (out / ".lock").exists()
    assert not out.exists()  # created for the lock, empty again: removed


# ---- an unwritable folder -----------------------------------------------------------------


def test_a_failed_write_stops_the_run_with_one_line(tmp_path, capsys, monkeypatch):
    """Without root tricks: the log write fails with EPERM after a checkpoint was saved."""
    corpus = write_tiny_corpus(tmp_path / "tiny.tsv")
    out = tmp_path / "run"
    real = training._write_text_atomic
    calls = {"n": 0}

    def flaky(path, text):
        calls["n"] += 1
        if calls["n"] > 6:  # a few log entries and one checkpoint first
            raise PermissionError(1, "Operation not permitted", str(path.with_name(".x.tmp-1")))
        real(path, text)

    monkeypatch.setattr(training, "_write_text_atomic", flaky)
    args = ["train", "--out", str(out), "--corpus", str(corpus), "--max-steps", "50"]
    args += ["--log-every", "1", "--checkpoint-every", "2"]
    assert main([*args, *QUIET]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    saved = load_checkpoint(out / "checkpoint.pt")["state"]["step"]
    assert err.startswith(f"error: could not write {out / 'training_log.json'} (Operation not")
    assert f"the last good checkpoint is {out / 'checkpoint.pt'} (step {saved})" in err
    assert err.strip().endswith(
        f"continue with: python -m transformer_lib train --out {out} --resume"
    )


def _chattr(flag: str, path: Path) -> bool:
    try:
        return subprocess.run(["chattr", flag, str(path)], capture_output=True).returncode == 0
    except FileNotFoundError:
        return False


def _checkpoint_step(path: Path) -> int:
    try:
        return int(load_checkpoint(path)["state"]["step"])
    except (CheckpointError, FileNotFoundError):
        return -1


def test_a_folder_made_immutable_mid_run(tmp_path):
    """The real thing: `chattr +i` on the run folder while `train` runs (root ignores chmod)."""
    if shutil.which("chattr") is None:
        pytest.skip("chattr is not installed")
    probe = tmp_path / "probe"
    probe.mkdir()
    if not _chattr("+i", probe):
        pytest.skip("chattr +i needs root and a file system with attributes (ext4, xfs, ...)")
    _chattr("-i", probe)
    corpus = write_tiny_corpus(tmp_path / "tiny.tsv")
    out = tmp_path / "run"
    command = [
        sys.executable, "-m", "transformer_lib", "train", "--out", str(out), "--corpus",
        str(corpus), "--threads", "1", "--max-steps", "100000", "--log-every", "1",
        "--checkpoint-minutes", "0.005", *QUIET,
    ]  # fmt: skip
    proc = subprocess.Popen(
        command, cwd=REPO_ROOT, env=child_env(), stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 300
        seen, step = None, -1
        while step < 2:
            assert proc.poll() is None, proc.stderr.read()
            assert time.monotonic() < deadline, "no checkpoint in time"
            time.sleep(0.05)
            # Read the checkpoint (17 MB) only when a new one has been written (each save
            # replaces the file: a new inode, mtime or size), not 20 times a second.
            try:
                st = os.stat(out / "checkpoint.pt")
            except FileNotFoundError:
                continue
            if (st.st_ino, st.st_mtime_ns, st.st_size) != seen:
                seen = (st.st_ino, st.st_mtime_ns, st.st_size)
                step = _checkpoint_step(out / "checkpoint.pt")
        assert _chattr("+i", out)
        _, err = proc.communicate(timeout=300)
    finally:
        _chattr("-i", out)
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=60)
    assert proc.returncode == 1, err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert err.startswith(f"error: could not write {out}/") and "Operation not permitted" in err
    saved = _checkpoint_step(out / "checkpoint.pt")
    assert saved >= 2  # the last good checkpoint, intact
    assert f"the last good checkpoint is {out / 'checkpoint.pt'} (step {saved})" in err
    assert err.strip().endswith(
        f"continue with: python -m transformer_lib train --out {out} --resume"
    )
    # and the printed command does continue the run, once the folder is writable again
    # (it also removes a temporary file that the immutable folder kept, if the change
    # came in the middle of a write)
    more = ["train", "--out", str(out), "--resume", "--max-steps", str(saved + 1), *QUIET]
    assert main(more) == 0
    assert _checkpoint_step(out / "checkpoint.pt") == saved + 1
    assert not [p for p in os.listdir(out) if ".tmp-" in p]
