"""A `torch_neuronx` module for scripts that call the real package's tracking API.

Installed as `sys.modules["torch_neuronx"]` only when the real package is absent (the runtime
refuses to start beside it). The op lists have the real package's meaning: ops that ran on the
device, ops that fell back to the CPU, since the last `clear_op_tracking()`.
"""

from __future__ import annotations

import sys
import types

from neuron_sim import device_module
from neuron_sim.policy import CPU_FALLBACK, NATIVE
from neuron_sim.recorder import ProcessTrace


def build(trace: ProcessTrace, version: str) -> types.ModuleType:
    module = types.ModuleType(
        "torch_neuronx", "Stand-in for torch-neuronx provided by neuron-migrate's simulated device."
    )
    baseline: dict[str, int] = {}

    def _ran(status: str) -> list[str]:
        trace.refresh_counts()
        return [
            record.name
            for record in trace.ops.values()
            if record.status == status and record.count > baseline.get(record.name, 0)
        ]

    def get_fallback_ops() -> list[str]:
        """Ops that ran on the CPU because the device has no kernel for them."""
        return _ran(CPU_FALLBACK)

    def get_executed_ops() -> list[str]:
        """Ops that ran on the (simulated) device."""
        return _ran(NATIVE)

    def clear_op_tracking() -> None:
        """Forget the ops seen so far (the run's trace keeps them)."""
        trace.refresh_counts()
        baseline.clear()
        baseline.update({record.name: record.count for record in trace.ops.values()})

    def is_neuron_runtime_initialized() -> bool:
        return True

    def get_neuron_registered_ops(as_sorted: bool = True, keep_variant: bool = True) -> list[str]:
        """The ops the device has a kernel for: the matrix's native entries (the real
        package's `torch_neuronx.utils` function of this name lists its PrivateUse1 kernels)."""
        from neuron_migrate.matrix import load_matrix

        names = load_matrix(version).ops_with_status(NATIVE)
        if not keep_variant:
            names = tuple(dict.fromkeys(name.partition(".")[0] for name in names))
        return sorted(names) if as_sorted else list(names)

    utils = types.ModuleType("torch_neuronx.utils", "Stand-in for torch_neuronx.utils.")
    utils.get_neuron_registered_ops = get_neuron_registered_ops  # type: ignore[attr-defined]

    module.__dict__.update(
        __version__=version,
        SIMULATED=True,
        get_fallback_ops=get_fallback_ops,
        get_executed_ops=get_executed_ops,
        clear_op_tracking=clear_op_tracking,
        is_neuron_runtime_initialized=is_neuron_runtime_initialized,
        utils=utils,
        neuron=device_module,
    )
    for name in (
        "device_count",
        "current_device",
        "set_device",
        "synchronize",
        "get_device_properties",
        "empty_cache",
        "device",
        "memory_stats",
        "memory_allocated",
        "max_memory_allocated",
        "memory_reserved",
        "max_memory_reserved",
        "reset_peak_memory_stats",
        "reset_accumulated_memory_stats",
        "memory_summary",
    ):
        setattr(module, name, getattr(device_module, name))
    return module


def install(trace: ProcessTrace, version: str) -> None:
    module = build(trace, version)
    sys.modules["torch_neuronx"] = module
    sys.modules["torch_neuronx.utils"] = module.utils
