"""`init_process_group("neuron")`: a c10d backend that is gloo underneath.

Collectives on neuron tensors reach `NeuronTensor.__torch_dispatch__` as `c10d::` ops, so they
are recorded and classified like aten ops, then run by gloo on the CPU payloads in place.
"""

from __future__ import annotations

from datetime import timedelta

import torch.distributed as dist


def _create_process_group(
    store: dist.Store, rank: int, world_size: int, timeout: timedelta
) -> dist.ProcessGroupGloo:
    return dist.ProcessGroupGloo(store, rank, world_size, timeout)


def register() -> None:
    if not dist.is_available():
        return
    # Listing cpu too routes CPU collectives of the same group to the same gloo instance.
    dist.Backend.register_backend("neuron", _create_process_group, devices=["neuron", "cpu"])
