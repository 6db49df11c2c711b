"""Record the ops a call reaches at the level a PrivateUse1 backend sees them. Needs torch.

Imported only by the maintainer tools (`api_map_builder`, `importer`), never by the package.

What the recorder sees is what TorchNeuron (and the simulated runtime's `__torch_dispatch__`) sees:
ops below CompositeImplicitAutograd decompositions and below autograd. When an op's only kernel
for a new backend is torch's generic CompositeExplicitAutograd one (``aten::sort`` ->
``aten::sort.stable``), the recorder also runs that generic kernel with itself still active, so
the ops it calls are recorded too, as ``composite_calls`` (not as ops of the API).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

# Autograd and tensor-construction bookkeeping: native on every backend (device-agnostic views or
# registered kernels) and noise in an API's op list.
DROPPED_OPS: frozenset[str] = frozenset(
    {"aten::detach", "aten::alias", "aten::lift_fresh", "aten::lift_fresh_copy", "aten::is_same_size"}
)

_CEA = "CompositeExplicitAutograd"
_generic_only_cache: dict[str, bool] = {}


def generic_kernel_only(name: str) -> bool:
    """True when a new backend would run torch's CompositeExplicitAutograd kernel for the op."""
    cached = _generic_only_cache.get(name)
    if cached is None:
        has = torch._C._dispatch_has_kernel_for_dispatch_key
        cached = has(name, _CEA) and not has(name, "CPU")
        _generic_only_cache[name] = cached
    return cached


class Recorder(TorchDispatchMode):
    """Records top-level ops in order (deduplicated) and the calls of generic kernels."""

    def __init__(self, composite_calls: dict[str, list[str]]) -> None:
        super().__init__()
        self.ops: list[str] = []
        self._seen: set[str] = set()
        self._parents: list[str] = []
        self.composite_calls = composite_calls

    def __torch_dispatch__(
        self,
        func: Any,
        types: Any,
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
    ) -> Any:
        kwargs = kwargs or {}
        name = func.name()
        if self._parents:
            calls = self.composite_calls.setdefault(self._parents[-1], [])
            if name not in calls:
                calls.append(name)
        elif name not in self._seen and name not in DROPPED_OPS:
            self._seen.add(name)
            self.ops.append(name)
        if generic_kernel_only(name) and isinstance(func, torch._ops.OpOverload):
            self.composite_calls.setdefault(name, [])
            self._parents.append(name)
            try:
                with self:
                    return func._op_dk(torch._C.DispatchKey.CompositeExplicitAutograd, *args, **kwargs)
            except Exception:  # noqa: BLE001 - the generic kernel is only a probe; run the op
                pass
            finally:
                self._parents.pop()
        return func(*args, **kwargs)


def record(fn: Callable[[], Any], composite_calls: dict[str, list[str]]) -> tuple[list[str], Any]:
    """Run ``fn`` under a recorder: (ops reached, fn's result)."""
    rec = Recorder(composite_calls)
    with rec:
        result = fn()
    return rec.ops, result
