"""`init_process_group("neuron")`: a c10d backend that is gloo underneath.

Collectives on neuron tensors reach `NeuronTensor.__torch_dispatch__` as `c10d::` ops, so they
are recorded and classified like aten ops, then run by gloo on the CPU payloads in place.
"""

from __future__ import annotations

import functools
from datetime import timedelta
from typing import Any

import torch
import torch.distributed as dist

from neuron_sim import device_module

BACKEND_NAME = "neuron"


def _create_process_group(
    store: dist.Store, rank: int, world_size: int, timeout: timedelta
) -> dist.ProcessGroupGloo:
    return dist.ProcessGroupGloo(store, rank, world_size, timeout)


def register() -> None:
    if not dist.is_available():
        return
    # Listing cpu too routes CPU collectives of the same group to the same gloo instance.
    dist.Backend.register_backend(BACKEND_NAME, _create_process_group, devices=["neuron", "cpu"])
    _barrier_runs_on_the_device()


def _barrier_runs_on_the_device() -> None:
    """`dist.barrier()` on a neuron group synchronizes through a neuron tensor, as on a device.

    Left alone, torch picks the CPU for a barrier whenever the group also serves the CPU (this
    one does, for CPU collectives), so the barrier never reaches `dispatch` and is missing from
    the trace. Naming the current neuron device makes it a `c10d::barrier` op like the others.
    """
    original = dist.barrier

    @functools.wraps(original)
    def barrier(
        group: Any = None, async_op: bool = False, device_ids: Any = None, **kwargs: Any
    ) -> Any:
        if device_ids is None and _barrier_would_run_on_the_host(group):
            device_ids = [device_module.current_device()]
        return original(group, async_op, device_ids, **kwargs)

    dist.barrier = barrier  # type: ignore[assignment]
    dist.distributed_c10d.barrier = barrier  # type: ignore[assignment]


def _barrier_would_run_on_the_host(group: Any) -> bool:
    if torch._C._dispatch_tls_is_dispatch_key_excluded(torch._C.DispatchKey.Python):
        return False  # called with Python dispatch off (`dist.breakpoint`): the host it is
    if not dist.is_initialized():
        return False  # let torch report it
    group = group or dist.distributed_c10d._get_default_group()
    if getattr(group, "bound_device_id", None) is not None:
        return False  # init_process_group(device_id=...) already chose
    return dist.get_backend(group) == BACKEND_NAME
