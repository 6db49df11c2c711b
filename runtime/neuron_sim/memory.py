"""Device memory counters that report the real bytes held by neuron tensors.

The ledger counts CPU storages, not tensors: every storage a neuron tensor's payload uses is
counted once (views share their base's storage) from the first time a wrapper holds it until
the storage itself is freed. Torch keeps one Python object per live storage
(`untyped_storage()` returns the same object for as long as the storage lives), so a weak
reference to that object fires exactly when the memory goes; a view costs a dict lookup and no
weak reference of its own. Weak references never go on the wrappers: `swap_tensors` (used by
`model.to`) refuses tensors that have them.
"""

from __future__ import annotations

import weakref
from typing import Protocol

import torch


class Counters(Protocol):
    """What `torch.neuron`'s memory functions read: this ledger, or the native engine's."""

    @property
    def allocated(self) -> int: ...
    @property
    def peak(self) -> int: ...
    def reset_peak(self) -> None: ...
    def reset_accumulated(self) -> None: ...
    def stats(self) -> dict[str, int]: ...


class MemoryLedger:
    def __init__(self) -> None:
        self.allocated = 0
        self.peak = 0
        self.allocations = 0
        self.frees = 0
        self._held: dict[int, int] = {}  # id(storage) -> bytes counted for it
        self._keys: dict[weakref.ref[torch.UntypedStorage], int] = {}  # its weakref -> id
        self._on_free = self._release  # one bound method for every weak reference

    def track(self, elem: torch.Tensor) -> None:
        """Count the storage under `elem` if it is not counted yet."""
        storage = elem.untyped_storage()
        key = id(storage)
        if key in self._held:
            return
        nbytes = storage.nbytes()
        if not nbytes:
            return  # empty storages hold no memory (a later resize_ is followed by `refresh`)
        self._held[key] = nbytes
        self._keys[weakref.ref(storage, self._on_free)] = key
        self.allocations += 1
        self._grow(nbytes)

    def refresh(self, elem: torch.Tensor) -> None:
        """After an op that may resize or replace `elem`'s storage (resize_, set_, out=)."""
        if not self.resized(elem.untyped_storage()):
            self.track(elem)

    def resized(self, storage: torch.UntypedStorage) -> bool:
        """Follow a counted storage's new size (`storage.resize_`); False if it is not counted."""
        key = id(storage)
        counted = self._held.get(key)
        if counted is None:
            return False
        nbytes = storage.nbytes()
        if nbytes != counted:
            self._held[key] = nbytes
            self._grow(nbytes - counted)
        return True

    def _grow(self, nbytes: int) -> None:
        self.allocated += nbytes
        if self.allocated > self.peak:
            self.peak = self.allocated

    def _release(self, ref: weakref.ref[torch.UntypedStorage]) -> None:
        # Runs while the storage is being freed, before its id can be reused.
        key = self._keys.pop(ref)
        self.allocated -= self._held.pop(key)
        self.frees += 1

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
            "allocated.all.current": len(self._held),
            "allocated.all.allocated": self.allocations,
            "allocated.all.freed": self.frees,
        }


LEDGER = MemoryLedger()
