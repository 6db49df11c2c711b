"""`torch.neuron`: the device module TorchNeuron registers, answered by the simulation.

There is one simulated core per process (tensors always report `neuron:0`); `set_device` and
`current_device` remember the index a script asks for so `set_device(LOCAL_RANK)` works under
torchrun. Random numbers come from the CPU generator.
"""

from __future__ import annotations

import os
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import torch

from neuron_sim import memory

# The Python engine's ledger; the native engine replaces it with its allocator's counters.
LEDGER: memory.Counters = memory.LEDGER

_current_device = 0


def is_available() -> bool:
    return True


def is_initialized() -> bool:
    return True


def init() -> None:
    """Nothing to start: the simulated device is ready when torch is imported."""


def _is_in_bad_fork() -> bool:
    return False


def device_count() -> int:
    """One core per process, or as many as torchrun starts on this node (for `set_device(rank)`)."""
    return max(1, int(os.environ.get("LOCAL_WORLD_SIZE", "1")))


def current_device() -> int:
    return _current_device


def _index(device: Any) -> int:
    if device is None:
        return _current_device
    if isinstance(device, int):
        return device
    device = torch.device(device)
    if device.type != "neuron":
        raise ValueError(f"expected a neuron device, got {device}")
    return device.index if device.index is not None else _current_device


def set_device(device: Any) -> None:
    """Remember the index (any one: the simulation cannot know how many cores a real host has)."""
    global _current_device
    index = _index(device)
    if index < 0:
        raise RuntimeError(f"invalid neuron device index {index}")
    _current_device = index


class device:
    """Context manager that makes `index` the current device (activation checkpointing uses it)."""

    def __init__(self, index: Any) -> None:
        self.index = _index(index) if index is not None else None
        self.previous = _current_device

    def __enter__(self) -> None:
        self.previous = _current_device
        if self.index is not None:
            set_device(self.index)

    def __exit__(self, *exc: object) -> None:
        set_device(self.previous)


@dataclass(frozen=True)
class DeviceProperties:
    name: str
    total_memory: int


def get_device_name(device: Any = None) -> str:
    return "neuron (simulated on CPU)"


def get_device_properties(device: Any = None) -> DeviceProperties:
    return DeviceProperties(get_device_name(device), total_memory=24 * 2**30)


def synchronize(device: Any = None) -> None:
    """Every op runs eagerly on the CPU, so there is never anything to wait for."""


def get_amp_supported_dtype() -> list[torch.dtype]:
    return [torch.float32, torch.float16, torch.bfloat16]


# RNG: the simulated device draws from the CPU generator. (torch.manual_seed calls back into
# manual_seed_all here, so these must touch the generator directly.)
def manual_seed(seed: int) -> None:
    torch.default_generator.manual_seed(int(seed))


manual_seed_all = manual_seed


def seed() -> None:
    torch.default_generator.seed()


seed_all = seed


def initial_seed() -> int:
    return torch.default_generator.initial_seed()


def get_rng_state(device: Any = None) -> torch.Tensor:
    return torch.get_rng_state()


def set_rng_state(new_state: torch.Tensor, device: Any = None) -> None:
    torch.set_rng_state(new_state.cpu() if new_state.device.type != "cpu" else new_state)


# Memory: the bytes of CPU storage that neuron tensors hold right now.
def memory_allocated(device: Any = None) -> int:
    return LEDGER.allocated


def max_memory_allocated(device: Any = None) -> int:
    return LEDGER.peak


def memory_reserved(device: Any = None) -> int:
    return LEDGER.allocated


def max_memory_reserved(device: Any = None) -> int:
    return LEDGER.peak


def reset_peak_memory_stats(device: Any = None) -> None:
    LEDGER.reset_peak()


def reset_accumulated_memory_stats(device: Any = None) -> None:
    LEDGER.reset_accumulated()


def memory_stats(device: Any = None) -> OrderedDict[str, int]:
    return OrderedDict(sorted(LEDGER.stats().items()))


def empty_cache() -> None:
    """No cache to empty: freed tensors return their CPU memory at once."""


def memory_summary(device: Any = None, abbreviated: bool = False) -> str:
    stats = LEDGER.stats()
    return "\n".join(f"{key}: {value}" for key, value in sorted(stats.items()))


class Hooks(torch._C._acc.PrivateUse1Hooks):
    """What torch's C++ side asks a PrivateUse1 backend (through `torch.accelerator`)."""

    def is_available(self) -> bool:
        return True

    def has_primary_context(self, dev_id: int) -> bool:
        return True

    def is_built(self) -> bool:
        return True


_PRIVATEUSE1 = torch._C._autograd.DeviceType.PrivateUse1


class DeviceGuard(torch._C._acc.DeviceGuard):
    def type_(self) -> Any:  # asked for every op on a neuron tensor
        return _PRIVATEUSE1
