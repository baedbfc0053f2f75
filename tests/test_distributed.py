"""Data parallelism under torchrun: two CPU processes (gloo) train one model."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

from transformer_lib.pipeline.checkpoints import load_checkpoint
from transformer_lib.pipeline.training import read_log

REPO_ROOT = Path(__file__).resolve().parents[1]

pytestmark = [
    pytest.mark.skipif(
        not torch.distributed.is_available(), reason="torch.distributed is not available"
    ),
    pytest.mark.slow,  # two torchrun launches of two training processes each
]

# Run inside each rank: resume the CLI run with the trainer instrumented, then save what
# this rank did (its weights, the batches it trained on, the files it wrote).
RANK_SCRIPT = textwrap.dedent(
    """
    import json, sys
    import torch
    import torch.distributed as dist
    from transformer_lib.pipeline import checkpoints, cli, training

    out, corpus, report = sys.argv[1:4]
    writes, batches, trainers = [], [], []
    save_atomic, write_text = checkpoints._save_atomic, training._write_text_atomic

    def spy_save(obj, path):
        writes.append(str(path))
        save_atomic(obj, path)

    def spy_text(path, text):
        writes.append(str(path))
        write_text(path, text)

    checkpoints._save_atomic, training._write_text_atomic = spy_save, spy_text
    fit = training.Trainer.fit

    def spy_fit(self):
        trainers.append(self)
        batch_loss = self.task.batch_loss

        def spy_batch_loss(model, items, criterion, device):
            batches.append(sorted(src.tolist() for src, _ in items))
            return batch_loss(model, items, criterion, device)

        self.task.batch_loss = spy_batch_loss
        return fit(self)

    training.Trainer.fit = spy_fit
    code = cli.main(["train", "--out", out, "--resume", "--max-steps", "16", "--corpus",
                     corpus, "--threads", "1", "--no-progress", "--final-bleu", "none"])
    rank = dist.get_rank()
    trainer = trainers[0]
    torch.save(trainer.model.state_dict(), f"{report}/rank{rank}.pt")
    with open(f"{report}/rank{rank}.json", "w") as f:
        json.dump({"code": code, "writes": writes, "batches": batches, "step": trainer.step,
                   "world": trainer.world}, f)
    dist.barrier()
    dist.destroy_process_group()
    """
)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _torchrun(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(REPO_ROOT)}
    for name in ("WORLD_SIZE", "RANK", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
        env.pop(name, None)
    command = [
        sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2",
        "--master_addr", "127.0.0.1", "--master_port", str(_free_port()), *args,
    ]  # fmt: skip
    return subprocess.run(command, capture_output=True, text=True, cwd=cwd, env=env, timeout=600)


def test_two_processes_train_one_model_and_resume(tmp_path):
    corpus = tmp_path / "tiny.tsv"
    corpus.write_text(
        "".join(
            f"Tom is {w}{v}.\tTom ist {w}{v}.\n"
            for w in "abcdefghijklmnopqrstuvwxyz"
            for v in "xyz"
        ),
        encoding="utf-8",
    )
    out = tmp_path / "run"

    # 1. The command a reader types, under torchrun.
    result = _torchrun(
        "-m", "transformer_lib", "train", "--out", str(out), "--max-steps", "12",
        "--threads", "1", "--corpus", str(corpus), "--eval-every", "6", "--log-every", "2",
        "--final-bleu", "none", "--no-progress", "--max-tokens", "128", "--warmup", "4",
        cwd=REPO_ROOT,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "2 processes" in result.stdout
    assert result.stdout.count("wrote ") == 1  # rank 0 reports (and writes); rank 1 is silent
    assert result.stdout.count("corpus ") == 2  # both ranks read the data
    assert sorted(os.listdir(out)) == [
        "checkpoint.pt", "model.pt", "summary.json", "training_log.json",
    ]  # fmt: skip
    log = read_log(out / "training_log.json")
    train = [e for e in log if "loss" in e]
    assert [e["step"] for e in train] == [2, 4, 6, 8, 10, 12]  # one entry per step, not per rank
    assert [e["step"] for e in log if "val_loss" in e] == [6, 12]
    assert train[-1]["loss"] < train[0]["loss"]
    ckpt = load_checkpoint(out / "checkpoint.pt")
    assert ckpt["state"]["step"] == 12 and ckpt["state"]["world_size"] == 2

    # 2. Resume that run, again on two ranks, instrumented to see what each rank did.
    report = tmp_path / "report"
    report.mkdir()
    script = tmp_path / "rank_script.py"
    script.write_text(RANK_SCRIPT)
    result = _torchrun(str(script), str(out), str(corpus), str(report), cwd=REPO_ROOT)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    ranks = [json.loads((report / f"rank{r}.json").read_text()) for r in (0, 1)]
    assert [r["code"] for r in ranks] == [0, 0]
    assert [(r["step"], r["world"]) for r in ranks] == [(16, 2), (16, 2)]
    # rank 0 alone writes files
    assert ranks[0]["writes"] and ranks[1]["writes"] == []
    # each step the ranks train on different batches (4 steps after resuming at 12)
    assert len(ranks[0]["batches"]) == len(ranks[1]["batches"]) == 4
    for a, b in zip(ranks[0]["batches"], ranks[1]["batches"]):
        assert a != b
    # ... and end with the same weights, bit for bit, which are those saved
    w0 = torch.load(report / "rank0.pt", weights_only=True)
    w1 = torch.load(report / "rank1.pt", weights_only=True)
    saved = load_checkpoint(out / "checkpoint.pt")
    assert saved["state"]["step"] == 16
    for name in w0:
        assert torch.equal(w0[name], w1[name]), name
        assert torch.equal(w0[name].float(), saved["model"][name]), name
    steps = [e["step"] for e in saved["state"]["log"] if "loss" in e]
    assert steps == [2, 4, 6, 8, 10, 12, 14, 16]  # the log continues


def test_finish_distributed_leaves_the_group_and_is_a_no_op_without_one(tmp_path):
    """``python -m transformer_lib`` leaves the process group before the interpreter shuts
    down: a process that exits with its group open can be aborted there."""
    import torch.distributed as dist

    from transformer_lib.pipeline.distributed import finish_distributed

    finish_distributed()  # no group: nothing happens
    dist.init_process_group(
        "gloo", init_method=f"file://{tmp_path / 'rendezvous'}", rank=0, world_size=1
    )
    assert dist.is_initialized()
    finish_distributed()
    assert not dist.is_initialized()
