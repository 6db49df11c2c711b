"""Install the simulated `neuron` device into this process (once, before user code runs)."""

from __future__ import annotations

import importlib.util
import os

import torch

from neuron_sim.errors import NeuronSetupError
from neuron_sim.recorder import ProcessTrace, write_at_exit

_installed: ProcessTrace | None = None


def installed_trace() -> ProcessTrace | None:
    """This process's trace, or None when the simulated device is not installed."""
    return _installed


def _refuse_beside_real_backend() -> None:
    if importlib.util.find_spec("torch_neuronx") is not None:
        raise NeuronSetupError(
            "the real torch-neuronx is installed in this environment; neuron-migrate's simulated "
            "neuron device refuses to run beside it. Run without `neuron-migrate run` to use the "
            "real device, or use an environment without torch-neuronx."
        )
    taken = torch._C._get_privateuse1_backend_name()
    if taken != "privateuseone":
        raise NeuronSetupError(
            f"the PrivateUse1 device is already registered as {taken!r}; the simulated neuron "
            "device needs it"
        )


def install(target: str | None = None, trace_dir: str | None = None) -> ProcessTrace:
    """Make `device="neuron"` work in this process, decided by the matrix for `target`.

    `target` is a torch-neuronx version (None: the newest matrix). When `trace_dir` is given the
    process writes its trace there at exit.
    """
    global _installed
    if _installed is not None:
        return _installed
    _refuse_beside_real_backend()
    from neuron_migrate.matrix import load_matrix

    matrix = load_matrix(target)

    from torch.utils.backend_registration import _setup_privateuseone_for_python_backend

    from neuron_sim import device_module

    _setup_privateuseone_for_python_backend(
        rename="neuron",
        backend_module=device_module,
        hook=device_module.Hooks(),
        device_guard=device_module.DeviceGuard(),
    )
    # Everything below parses "neuron" or imports modules that do.
    from neuron_sim import (
        autocast,
        compile_backend,
        distributed,
        kernels,
        namespaces,
        patches,
        serialization,
        stand_in,
        tensor,
    )
    from neuron_sim.policy import OpPolicy

    trace = ProcessTrace(target=matrix.version)
    policy = OpPolicy(matrix, trace)
    tensor.bind(policy, torch.device("neuron", 0))
    kernels.register()
    autocast.register()
    serialization.register()
    patches.apply()
    distributed.register()
    compile_backend.install(policy)
    trace.before_write.append(compile_backend.update_trace)
    stand_in.install(trace, matrix.version)
    namespaces.install(matrix, trace)
    if trace_dir:
        write_at_exit(trace, trace_dir)
    _installed = trace
    return trace


TARGET_ENV = "NEURON_MIGRATE_SIM"
TRACE_DIR_ENV = "NEURON_MIGRATE_TRACE_DIR"


def install_from_environment() -> ProcessTrace | None:
    """Install when `NEURON_MIGRATE_SIM` is set (to a target version, or to `1` for the newest)."""
    target = os.environ.get(TARGET_ENV)
    if not target:
        return None
    version = None if target in ("1", "newest", "latest") else target
    return install(version, os.environ.get(TRACE_DIR_ENV) or None)
