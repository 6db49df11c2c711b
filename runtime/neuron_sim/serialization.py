"""`torch.save` and `torch.load` of neuron tensors: CPU data, rebuilt per `map_location`."""

from __future__ import annotations

from typing import Any

import torch
import torch.serialization


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


def register() -> None:
    # `torch.load` defaults to weights_only=True, which only rebuilds allow-listed globals.
    torch.serialization.add_safe_globals([rebuild_neuron_tensor])
