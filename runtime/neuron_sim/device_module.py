"""`torch.neuron`: the device module TorchNeuron registers, answered by the simulation.

A process sees `device_count()` simulated cores: as many as `NEURON_RT_VISIBLE_CORES` lists,
else one per process of its job on this node (torchrun's `LOCAL_WORLD_SIZE`, or the process
group's size), at least one. `set_device` makes one of them current; new tensors go to the
current core unless a device index is named, and an index past the count is refused. Every
core computes on the host, in program order, so streams and events only keep the API: an
event is complete once recorded. Random numbers come from the CPU generator.
"""

from __future__ import annotations

import contextlib
import os
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import torch

from neuron_sim import memory

# The Python engine's ledger; the native engine replaces it with its allocator's counters.
LEDGER: memory.Counters = memory.LEDGER

VISIBLE_CORES_ENV = "NEURON_RT_VISIBLE_CORES"

_current_device = 0
# Where the engine keeps the current core (the native engine's C++ guard changes it too).
_engine_get_core: Any = None
_engine_set_core: Any = None
_engine_set_count: Any = None


def is_available() -> bool:
    return True


def is_initialized() -> bool:
    return True


def init() -> None:
    """Nothing to start: the simulated device is ready when torch is imported."""


def _is_in_bad_fork() -> bool:
    return False


def visible_cores(value: str) -> int:
    """How many cores a `NEURON_RT_VISIBLE_CORES` value lists: `2`, `0-3`, `0,1,4-5`."""
    count = 0
    for part in value.split(","):
        part = part.strip()
        if not part:
            continue
        first, dash, last = part.partition("-")
        try:
            low, high = int(first), int(last) if dash else int(first)
        except ValueError:
            raise RuntimeError(
                f"{VISIBLE_CORES_ENV}={value!r}: expected core numbers and ranges such as "
                "'0', '0-3' or '0,2'"
            ) from None
        if high < low:
            raise RuntimeError(f"{VISIBLE_CORES_ENV}={value!r}: the range {part} is empty")
        count += high - low + 1
    return max(count, 1)


def device_count() -> int:
    """The cores this process sees (see the module's docstring)."""
    listed = os.environ.get(VISIBLE_CORES_ENV)
    if listed:
        return visible_cores(listed)
    count = int(os.environ.get("LOCAL_WORLD_SIZE", "1") or 1)
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        count = max(count, min(torch.distributed.get_world_size(), _LOCAL_WORLD_CAP))
    return max(1, count)


# A process group spread over several hosts (mp.spawn sets no LOCAL_WORLD_SIZE) still gives one
# host no more cores than a trn2.48xlarge has logical ones.
_LOCAL_WORLD_CAP = 64


def current_device() -> int:
    return _engine_get_core() if _engine_get_core is not None else _current_device


def _index(device: Any) -> int:
    if device is None:
        return current_device()
    if isinstance(device, int):
        return device
    device = torch.device(device)
    if device.type != "neuron":
        raise ValueError(f"expected a neuron device, got {device}")
    return device.index if device.index is not None else current_device()


def check_index(index: int) -> int:
    """`index`, or the error a device index past the visible cores gets."""
    count = device_count()
    if not 0 <= index < count:
        raise RuntimeError(
            f"neuron device index {index} is out of range: this process sees {count} "
            f"NeuronCore(s) (torch.neuron.device_count() == {count}; {VISIBLE_CORES_ENV} decides)"
        )
    return index


def connect_engine(get_core: Any, set_core: Any, set_count: Any) -> None:
    """Let the engine keep the current core (and know the count) from now on."""
    global _engine_get_core, _engine_set_core, _engine_set_count
    _engine_get_core, _engine_set_core, _engine_set_count = get_core, set_core, set_count
    set_count(device_count())


def set_device(device: Any) -> None:
    """Make core `device` current: new tensors go there."""
    global _current_device
    index = _index(device)
    if _engine_set_count is not None:
        _engine_set_count(device_count())
    check_index(index)
    _current_device = index
    if _engine_set_core is not None:
        _engine_set_core(index)


class device:
    """Context manager that makes `index` the current device (activation checkpointing uses it)."""

    def __init__(self, index: Any) -> None:
        self.index = _index(index) if index is not None else None
        self.previous = current_device()

    def __enter__(self) -> None:
        self.previous = current_device()
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


# Streams and events: FSDP, DTensor and pipelining overlap communication with compute through
# them. On the simulated device every op has finished when it returns, so a stream has nothing
# to wait for and an event is complete as soon as it is recorded.
_PRIVATEUSE1_TYPE: int = torch._C._autograd.DeviceType.PrivateUse1.value


class Stream(torch.Stream):
    """A stream on a simulated core (`torch.Stream`, so `Tensor.record_stream` takes it)."""

    def __new__(cls, device: Any = None, priority: int = 0, **kwargs: Any) -> Stream:
        index = _index(device)
        return super().__new__(cls, stream_id=0, device_index=index, device_type=_PRIVATEUSE1_TYPE)

    def __init__(self, device: Any = None, priority: int = 0, **kwargs: Any) -> None:
        pass

    def wait_event(self, event: Any) -> None:
        """Nothing to wait for: the event's work is done."""

    def wait_stream(self, stream: Any) -> None:
        """Nothing to wait for: the other stream's work is done."""

    def record_event(self, event: Any = None) -> Any:
        event = event if event is not None else Event()
        event.record(self)
        return event

    def query(self) -> bool:
        return True

    def synchronize(self) -> None:
        """Nothing to wait for."""

    def __enter__(self) -> Stream:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


class Event:
    """An event on a simulated core: complete once recorded."""

    def __init__(
        self, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False
    ) -> None:
        self.enable_timing = enable_timing
        self.recorded = False

    def record(self, stream: Any = None) -> Event:
        self.recorded = True
        return self

    def wait(self, stream: Any = None) -> None:
        """Nothing to wait for."""

    def query(self) -> bool:
        return True

    def synchronize(self) -> None:
        """Nothing to wait for."""

    def elapsed_time(self, end_event: Event) -> float:
        return 0.0


def current_stream(device: Any = None) -> Stream:
    return Stream(device)


def default_stream(device: Any = None) -> Stream:
    return Stream(device)


def set_stream(stream: Any) -> None:
    """Every core has the one stream, so there is nothing to switch to."""


class StreamContext(contextlib.AbstractContextManager["StreamContext"]):
    """`with torch.neuron.stream(s):` -- work placed on `s` runs in program order anyway."""

    def __init__(self, stream: Any) -> None:
        self.stream = stream

    def __enter__(self) -> StreamContext:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


def stream(stream: Any) -> StreamContext:
    return StreamContext(stream)


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


def get_rng_state_all() -> list[torch.Tensor]:
    return [get_rng_state(index) for index in range(device_count())]


def set_rng_state_all(new_states: Any) -> None:
    for state in new_states:
        set_rng_state(state)


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
