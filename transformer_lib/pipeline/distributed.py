"""Training on several processes with ``torchrun``: DistributedDataParallel helpers.

``torchrun --nproc_per_node N -m transformer_lib train ...`` starts N copies of the
command; :func:`init_distributed` joins them into one process group (gloo on the CPU,
NCCL on CUDA). The trainer then gives each rank a different batch every step, averages
the gradients (DistributedDataParallel) and lets rank 0 alone write logs and checkpoints.
"""

from __future__ import annotations

import contextlib
import os

import torch
from torch import nn

__all__ = [
    "agree",
    "autocast",
    "distributed_rank_and_size",
    "finish_distributed",
    "init_distributed",
    "launched_by_torchrun",
    "process_group_backend",
    "sum_over_ranks",
    "wrap_distributed",
]


def distributed_rank_and_size() -> tuple[int, int]:
    dist = torch.distributed
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def launched_by_torchrun() -> bool:
    """True in a process that ``torchrun`` started (it sets ``TORCHELASTIC_RUN_ID``)."""
    return "TORCHELASTIC_RUN_ID" in os.environ or int(os.environ.get("WORLD_SIZE", "1")) > 1


def process_group_backend() -> str | None:
    """``"nccl"`` or ``"gloo"`` once :func:`init_distributed` has joined a group, else None."""
    dist = torch.distributed
    if dist.is_available() and dist.is_initialized():
        return str(dist.get_backend())
    return None


def init_distributed(device: torch.device) -> tuple[int, int]:
    """Join the process group that ``torchrun`` describes in the environment.

    gloo on the CPU, NCCL on CUDA (each rank on ``cuda:LOCAL_RANK``). Under torchrun the
    group is joined even with one process (``--nproc_per_node 1``), so that the same
    DistributedDataParallel path runs; without torchrun nothing happens. Returns
    ``(rank, world_size)``.
    """
    dist = torch.distributed
    if launched_by_torchrun() and dist.is_available() and not dist.is_initialized():
        backend = "nccl" if device.type == "cuda" else "gloo"
        if device.type == "cuda":
            torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
        dist.init_process_group(backend=backend)
    return distributed_rank_and_size()


def finish_distributed() -> None:
    """Leave the process group that :func:`init_distributed` joined (nothing if none).

    A process that exits with its group still open can be aborted in the interpreter's
    shutdown ("terminate called without an active exception"), which torchrun reports as a
    failed run although the training itself finished: rank 1 ends as soon as training does,
    while rank 0 is still writing the run's files.
    """
    dist = torch.distributed
    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()


def wrap_distributed(model: nn.Module, device: torch.device) -> nn.Module:
    from torch.nn.parallel import DistributedDataParallel

    if device.type != "cuda":  # gloo on the CPU: no device ids (and no CUDA calls)
        return DistributedDataParallel(model)
    index = device.index if device.index is not None else torch.cuda.current_device()
    return DistributedDataParallel(model, device_ids=[index])


def agree(flag: bool, world: int) -> bool:
    """True on every rank if it is True on any (all ranks must stop at the same step)."""
    if world == 1:
        return flag
    t = torch.tensor([1.0 if flag else 0.0])
    torch.distributed.all_reduce(t, op=torch.distributed.ReduceOp.MAX)
    return bool(t.item())


def sum_over_ranks(values: list[float], world: int) -> list[float]:
    if world == 1:
        return values
    t = torch.tensor(values, dtype=torch.float64)
    torch.distributed.all_reduce(t)
    return t.tolist()


def autocast(device: torch.device, amp: bool):
    if amp and device.type == "cuda":
        return torch.autocast(device_type="cuda", dtype=torch.bfloat16)
    return contextlib.nullcontext()
