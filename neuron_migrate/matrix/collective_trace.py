"""Maintainer tool: which c10d ops the parallelism APIs that Neuron 2.33 lists as supported call.

    python -m neuron_migrate.matrix.collective_trace      # 2 gloo ranks on this CPU, ~20 s

The released docs list DDP, FSDP2, DTensor (tensor parallel) and pipeline parallelism as
supported, not the c10d ops under them. This runs one small step of each on two CPU ranks and
prints the c10d and functional-collective ops each was seen to call; the `distributed` groups
of ``compat_matrix/sources/curated.yaml`` rest on its output. Needs torch.
"""

from __future__ import annotations

import os
import sys
import tempfile
from typing import Any

_PREFIXES = ("c10d::", "_c10d_functional")


def _steps(rank: int) -> list[tuple[str, Any]]:
    import torch
    from torch import nn

    def ddp() -> None:
        model = nn.parallel.DistributedDataParallel(nn.Linear(4, 4))
        model(torch.randn(2, 4)).sum().backward()

    def fsdp2() -> None:
        from torch.distributed.fsdp import fully_shard

        model = nn.Sequential(nn.Linear(4, 4), nn.Linear(4, 4))
        fully_shard(model)
        model(torch.randn(2, 4)).sum().backward()

    def dtensor() -> None:
        from torch.distributed.device_mesh import init_device_mesh
        from torch.distributed.tensor import Replicate, Shard, distribute_tensor
        from torch.distributed.tensor.parallel import (
            ColwiseParallel,
            RowwiseParallel,
            parallelize_module,
        )

        mesh = init_device_mesh("cpu", (2,))
        sharded = distribute_tensor(torch.randn(4, 4), mesh, [Shard(0)])
        sharded.redistribute(mesh, [Replicate()]).to_local()
        model = nn.Sequential(nn.Linear(4, 8), nn.Linear(8, 4))
        parallelize_module(model, mesh, {"0": ColwiseParallel(), "1": RowwiseParallel()})
        model(torch.randn(2, 4)).sum().backward()

    def pipelining() -> None:
        from torch.distributed.pipelining import PipelineStage, ScheduleGPipe

        stage = PipelineStage(nn.Linear(4, 4), rank, 2, torch.device("cpu"))
        schedule = ScheduleGPipe(stage, 2, loss_fn=lambda out, target: out.sum())
        if rank == 0:
            schedule.step(torch.randn(4, 4))
        else:
            schedule.step(target=torch.randn(4, 4))

    return [("DDP", ddp), ("FSDP2", fsdp2), ("DTensor", dtensor), ("pipelining", pipelining)]


def _rank(rank: int, store: str, out: str) -> None:
    import torch.distributed as dist
    from torch.utils._python_dispatch import TorchDispatchMode

    seen: dict[str, set[str]] = {}
    current = [""]

    class Record(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            if func.name().startswith(_PREFIXES):
                seen.setdefault(func.name(), set()).add(current[0])
            return func(*args, **(kwargs or {}))

    dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=2)
    with Record():
        for name, step in _steps(rank):
            current[0] = name
            step()
    if rank == 0:
        with open(out, "w", encoding="utf-8") as f:
            for op in sorted(seen):
                f.write(f"{op}: {', '.join(sorted(seen[op]))}\n")
    dist.destroy_process_group()


def main() -> int:
    import torch.multiprocessing as mp

    with tempfile.TemporaryDirectory() as tmp:
        store, out = os.path.join(tmp, "store"), os.path.join(tmp, "ops.txt")
        mp.spawn(_rank, args=(store, out), nprocs=2)
        with open(out, encoding="utf-8") as f:
            sys.stdout.write(f.read())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
