"""Ops a bundled matrix calls native that torch has no CPU kernel for.

The simulated device runs every op with torch's CPU kernel (or a device-agnostic one), so such
an op cannot be simulated: the device stops with NeuronNotSimulatedError instead. Their status is
the dev snapshot's (it registers a PrivateUse1 kernel for them), which no released text or device
confirms, and the matrix entry must say that the simulation cannot run them. The walk asks
torch's dispatcher, as the device does (`neuron_sim.policy._has_host_kernel`).
"""

from __future__ import annotations

import pytest

from neuron_migrate.matrix import load_matrix
from neuron_migrate.matrix.versions import available_versions

pytestmark = pytest.mark.torch
torch = pytest.importorskip("torch")

_HOST_KEYS = (
    "CPU",
    "CompositeExplicitAutograd",
    "CompositeExplicitAutogradNonFunctional",
    "CompositeImplicitAutograd",
)
# Implemented by the device itself, in both engines: the transfers and record_stream.
_DEVICE_HANDLED = {"aten::_copy_from", "aten::_copy_from_and_resize", "aten::record_stream"}
# What the walk found with torch 2.13: the sync-batch-norm helpers (CUDA kernels only), the
# MKLDNN-only linear backward and the fused RMSNorm backward (CUDA and MPS).
EXPECTED = {
    "aten::_fused_rms_norm_backward",
    "aten::batch_norm_backward_elemt",
    "aten::batch_norm_backward_reduce",
    "aten::batch_norm_elemt",
    "aten::batch_norm_elemt.out",
    "aten::batch_norm_gather_stats_with_counts",
    "aten::batch_norm_stats",
    "aten::linear_backward",
}


def _without_host_kernel(name: str) -> bool:
    has = torch._C._dispatch_has_kernel_for_dispatch_key
    try:
        return not any(has(name, key) for key in _HOST_KEYS)
    except RuntimeError:  # a name this torch has no such overload for (a bare base name)
        return False


@pytest.mark.parametrize("version", available_versions())
def test_native_ops_without_a_cpu_kernel_say_the_simulation_cannot_run_them(version) -> None:
    matrix = load_matrix(version)
    found = {
        name
        for name, entry in matrix.ops.items()
        if entry.status == "native"
        and name.startswith("aten::")
        and name not in _DEVICE_HANDLED
        and _without_host_kernel(name)
    }
    assert found == EXPECTED
    for name in sorted(found):
        entry = matrix.ops[name]
        assert entry.source == "dev-snapshot-registered", (name, entry.source)
        assert "no CPU kernel" in (entry.note or ""), (name, entry.note)
        assert "cannot run it" in (entry.note or ""), (name, entry.note)
