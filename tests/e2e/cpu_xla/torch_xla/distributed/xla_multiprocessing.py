"""spawn: one process per (simulated) device, or the launcher's process as it is."""

import os
import sys

import torch.multiprocessing
from run_original import leave

from torch_xla.core.xla_model import free_port
from torch_xla.distributed import xla_backend  # noqa: F401  (the 'xla' group)


def _worker(index, fn, args, nprocs, port):
    sys.stdout.reconfigure(line_buffering=True)  # whole lines on the pipe the ranks share
    os.environ.update(
        RANK=str(index),
        LOCAL_RANK=str(index),
        WORLD_SIZE=str(nprocs),
        LOCAL_WORLD_SIZE=str(nprocs),
        MASTER_ADDR="localhost",
        MASTER_PORT=str(port),
    )
    fn(index, *args)
    # torch 2.13's gloo teardown sometimes aborts a rank that has finished its work ("terminate
    # called without an active exception"): a finished worker leaves past it
    leave(0)


def spawn(fn, args=(), nprocs=None, join=True, daemon=False, start_method="spawn"):
    if "RANK" in os.environ:  # under a launcher already
        return fn(int(os.environ.get("LOCAL_RANK", 0)), *args)
    count = int(os.environ.get("CPU_XLA_DEVICES", "1")) if nprocs is None else nprocs
    if count == 1:
        return fn(0, *args)
    return torch.multiprocessing.start_processes(
        _worker, args=(fn, args, count, free_port()), nprocs=count, start_method=start_method
    )


class MpSerialExecutor:
    def run(self, fn):
        return fn()


class MpModelWrapper:
    def __init__(self, model):
        self._model = model  # the attribute name torch_xla's wrapper keeps it under

    def to(self, device):
        return self._model.to(device)
