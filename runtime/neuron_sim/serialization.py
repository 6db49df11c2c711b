"""`torch.save` and `torch.load` of neuron tensors: CPU data, rebuilt per `map_location`.

A neuron tensor is saved as its CPU data (`NeuronTensor.__reduce_ex__`) and rebuilt on the device
`map_location` names. A storage that `torch.load` maps to the neuron device (`map_location=
"neuron"`, a `torch.device`, a dict, or a checkpoint written on a real device, tagged
`neuron:N`) would be allocated on the device by torch's own PrivateUse1 deserializer, and a
Python backend has no device allocator: the process would crash. Such a storage stays on the
host instead, marked with its device, and each tensor rebuilt over it is moved there.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Any

import torch
import torch.serialization
import torch.storage

# Before torch's own deserializer for the PrivateUse1 device (23); torch's packages take 10-26.
_RESTORE_PRIORITY = 19
_NEURON_LOCATION = re.compile(r"neuron(:|[0-9]+|$)")


def rebuild_neuron_tensor(cpu: torch.Tensor, requires_grad: bool, is_param: bool) -> torch.Tensor:
    target = _map_location_device()
    tensor = cpu if target.type == "cpu" else cpu.to(target)
    if is_param:
        return torch.nn.Parameter(tensor, requires_grad=requires_grad)
    return tensor.requires_grad_(requires_grad) if requires_grad else tensor


def _map_location_device() -> torch.device:
    """The device `torch.load(map_location=...)` asks for; neuron when it says nothing."""
    neuron = torch.device("neuron", 0)
    location: Any = torch.serialization._serialization_tls.map_location
    if location is None:
        return neuron
    if isinstance(location, dict):
        location = location.get("neuron:0", location.get("neuron", None))
        return neuron if location is None else torch.device(location)
    if callable(location):
        return neuron  # storage-level callables see the CPU copy; keep the saved device
    return torch.device(location)


def _no_tag(storage: Any) -> None:
    """Saved storages are tagged by torch's taggers: a neuron tensor is saved as CPU data."""
    return None


def _restored_on_host(storage: Any, location: str) -> Any:
    """`storage` (on the host) kept there and marked with the neuron device `location` names;
    None for another location, which the next deserializer restores."""
    if not _NEURON_LOCATION.match(location):
        return None
    # As torch checks it: the device module is available, and the index below its device count.
    storage._neuron_device = torch.serialization._validate_device(location, "neuron")
    return storage


def _rebuilt_on_device(
    rebuild: Callable[[Any, int, Any, Any], torch.Tensor],
) -> Callable[[Any, int, Any, Any], torch.Tensor]:
    """torch's `_rebuild_tensor`, which moves a tensor over a marked storage to its device (a
    copy each: tensors that shared a saved storage no longer share memory, as for tensors saved
    from the device)."""

    @functools.wraps(rebuild)
    def rebuild_tensor(storage: Any, storage_offset: int, size: Any, stride: Any) -> torch.Tensor:
        tensor = rebuild(storage, storage_offset, size, stride)
        device = getattr(storage._untyped_storage, "_neuron_device", None)
        return tensor if device is None else tensor.to(device)

    return rebuild_tensor


def _refused_on_device(move: Callable[..., Any]) -> Callable[..., Any]:
    """torch's storage move (`UntypedStorage.to`, `.neuron()`), which refuses the neuron device
    with an error instead of crashing on the missing allocator."""

    @functools.wraps(move)
    def to(storage: Any, device: Any, non_blocking: bool = False) -> Any:
        if torch.device(device).type == "neuron":
            raise RuntimeError(
                "a storage cannot be placed on the simulated neuron device, which has no device "
                "allocator; move tensors instead (tensor.to('neuron')), or load checkpoints with "
                "torch.load(..., map_location='neuron')"
            )
        return move(storage, device, non_blocking)

    return to


def register() -> None:
    # `torch.load` defaults to weights_only=True, which only rebuilds allow-listed globals.
    torch.serialization.add_safe_globals([rebuild_neuron_tensor])
    torch.serialization.register_package(_RESTORE_PRIORITY, _no_tag, _restored_on_host)
    # Looked up as module globals when called: `_rebuild_tensor_v2` calls `_rebuild_tensor`,
    # and a storage's `to` calls `torch.storage._to`.
    torch._utils._rebuild_tensor = _rebuilt_on_device(torch._utils._rebuild_tensor)
    torch.storage._to = _refused_on_device(torch.storage._to)
