"""Device memory counters that report the real bytes held by neuron tensors.

Every wrapper's CPU payload is tracked by the storage it holds: views share their base's
storage and count once; a storage is released when the last payload over it dies. The weak
references go on the payloads, not the wrappers: `swap_tensors` (used by `model.to`) refuses
tensors that have weak references.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable

import torch


class MemoryLedger:
    def __init__(self) -> None:
        self.allocated = 0
        self.peak = 0
        self.allocations = 0
        self.frees = 0
        self._holders: dict[int, list[int]] = {}  # storage data_ptr -> [wrappers alive, nbytes]
        self._refs: dict[int, weakref.ref[torch.Tensor]] = {}  # by id: refs compare by referent

    def track(self, elem: torch.Tensor) -> None:
        storage = elem.untyped_storage()
        key = storage.data_ptr()
        if not key:
            return  # empty tensors hold no memory
        holder = self._holders.get(key)
        if holder is None:
            nbytes = storage.nbytes()
            self._holders[key] = [1, nbytes]
            self.allocated += nbytes
            self.allocations += 1
            if self.allocated > self.peak:
                self.peak = self.allocated
        else:
            holder[0] += 1
        ref = weakref.ref(elem, self._release_callback(key))
        self._refs[id(ref)] = ref

    def _release_callback(self, key: int) -> Callable[[weakref.ref[torch.Tensor]], None]:
        def release(ref: weakref.ref[torch.Tensor]) -> None:
            self._refs.pop(id(ref), None)
            holder = self._holders.get(key)
            if holder is None:
                return
            holder[0] -= 1
            if holder[0] == 0:
                del self._holders[key]
                self.allocated -= holder[1]
                self.frees += 1

        return release

    def reset_peak(self) -> None:
        self.peak = self.allocated

    def reset_accumulated(self) -> None:
        self.allocations = self.frees = 0

    def stats(self) -> dict[str, int]:
        """A `torch.cuda.memory_stats`-style dict (the keys TorchNeuron also reports)."""
        return {
            "allocated_bytes.all.current": self.allocated,
            "allocated_bytes.all.peak": self.peak,
            "reserved_bytes.all.current": self.allocated,
            "reserved_bytes.all.peak": self.peak,
            "allocated.all.current": len(self._holders),
            "allocated.all.allocated": self.allocations,
            "allocated.all.freed": self.frees,
        }


LEDGER = MemoryLedger()
