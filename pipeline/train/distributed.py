"""Several processes training one model (``torchrun``): who is who, the process group, and whose rows are whose.

Every process draws the same global batch and masks as one process would and keeps its own block of rows;
helpers.pretrain.StepContext.loss scales each share so that DDP's average gradient is the one-process gradient.
A World has the methods of helpers.pretrain.OneProcess; without torchrun everything here is a no-op.
"""

from __future__ import annotations

import contextlib
import datetime
import gc
import os
import traceback
from typing import Any, Iterator, NamedTuple

import numpy as np
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

# Other processes wait at the next gradient all-reduce while process 0 evaluates and checkpoints;
# the evaluation of the paper's 100,000 documents must fit in this (nccl's default is 10 minutes).
TIMEOUT = datetime.timedelta(minutes=60)


class World(NamedTuple):
    """This process's place among the training processes (rank 0 of 1 without torchrun)."""

    rank: int = 0
    world_size: int = 1
    local_rank: int = 0  # the process's index on its own machine: which GPU it uses

    @property
    def is_main(self) -> bool:  # process 0 alone writes the files
        return self.rank == 0

    @property
    def distributed(self) -> bool:
        return self.world_size > 1

    def my_rows(self, batch_size: int) -> slice:
        if batch_size % self.world_size:
            raise ValueError(f"the batch of {batch_size} rows does not split evenly over {self.world_size} "
                             "processes; pick a batch size that is a multiple of the number of processes")
        size = batch_size // self.world_size
        return slice(self.rank * size, (self.rank + 1) * size)

    def sum_over_processes(self, value: torch.Tensor) -> torch.Tensor:
        total = value.clone()
        if self.distributed:
            dist.all_reduce(total, op=dist.ReduceOp.SUM)
        return total

    def wrap(self, module: torch.nn.Module, device: torch.device) -> torch.nn.Module:
        if not self.distributed:
            return module
        return DistributedDataParallel(module, device_ids=[device.index] if device.type == "cuda" else None)

    def broadcast_from_main(self, value: Any) -> Any:
        if not self.distributed:
            return value
        holder = [value if self.is_main else None]
        dist.broadcast_object_list(holder, src=0)
        return holder[0]

    def gather_to_main(self, value: Any) -> list[Any]:
        if not self.distributed:
            return [value]
        values: list[Any] = [None] * self.world_size
        dist.all_gather_object(values, value)
        return values


def from_environment() -> World:
    try:
        world = World(int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1)),
                      int(os.environ.get("LOCAL_RANK", 0)))
    except ValueError as err:
        raise ValueError(f"RANK, WORLD_SIZE and LOCAL_RANK must be integers (torchrun sets them): {err}") from None
    if world.world_size < 1 or not 0 <= world.rank < world.world_size:
        raise ValueError(f"RANK={world.rank} does not fit WORLD_SIZE={world.world_size}; start the processes "
                         "with torchrun, which sets both")
    return world


def process_device(device: str, world: World) -> torch.device:
    """This process's device: with several processes on CUDA, GPU number LOCAL_RANK of its machine."""
    dev = torch.device(device)
    if world.distributed and dev.type == "cuda":
        if dev.index not in (None, world.local_rank):
            raise ValueError(f"device {device!r} was asked for, but with torchrun process {world.rank} uses "
                             f"cuda:{world.local_rank}; pass --device cuda (or auto) and choose the GPUs with "
                             "CUDA_VISIBLE_DEVICES")
        dev = torch.device("cuda", world.local_rank)
        torch.cuda.set_device(dev)
    return dev


@contextlib.contextmanager
def process_group(device: torch.device, world: World) -> Iterator[World]:
    """Join the other processes (nccl between GPUs, gloo on the CPU) for the block; a group the caller already
    joined it keeps."""
    if not world.distributed or dist.is_initialized():
        yield world
        return
    cuda = device.type == "cuda"
    dist.init_process_group("nccl" if cuda else "gloo", timeout=TIMEOUT, device_id=device if cuda else None)
    try:
        yield world
    except BaseException as error:
        traceback.clear_frames(error.__traceback__)  # the failed calls' frames, which hold the model, let it go
        raise
    finally:
        gc.collect()  # the last references to DDP's buckets, so no gloo thread still holds a tensor to free
        dist.destroy_process_group()


def dropout_seed(seed: int, world: World) -> int:
    """The run's seed for process 0 (so one process is unchanged), for the others an independent stream derived
    from (seed, rank), so no two processes drop the same units."""
    if world.rank == 0:
        return seed
    return int(np.random.SeedSequence([seed, world.rank]).generate_state(1, dtype=np.uint64)[0] >> 1)
