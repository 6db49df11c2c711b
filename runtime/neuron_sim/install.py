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
    if _real_torch_neuronx():
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


def _real_torch_neuronx() -> bool:
    """Whether a torch_neuronx other than the run's own placeholder (`before_torch`) is on the
    import path."""
    found = importlib.util.find_spec("torch_neuronx")
    if found is None or found.origin is None:
        return found is not None
    placeholder = os.path.realpath(os.path.join(os.path.dirname(__file__), "before_torch"))
    return os.path.commonpath([os.path.realpath(found.origin), placeholder]) != placeholder


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

    from neuron_sim import device_module, native

    native_engine = native.requested()
    if native_engine:
        _register_device_name(device_module)
    else:
        from torch.utils.backend_registration import _setup_privateuseone_for_python_backend

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
    if native_engine:
        engine = native.install(policy, trace)
        device_module.LEDGER = native.NativeLedger()
        device_module.connect_engine(
            engine.current_core, engine.set_current_core, engine.set_visible_cores
        )
    else:
        kernels.register()
        device_module.connect_engine(None, tensor.set_current_core, tensor.set_visible_cores)
    autocast.register()
    serialization.register()
    patches.apply(native_engine)
    distributed.register()
    compile_backend.install(policy, native_engine=native_engine)
    trace.before_write.append(compile_backend.update_trace)
    stand_in.install(trace, matrix.version)
    namespaces.install(matrix, trace)
    if trace_dir:
        write_at_exit(trace, trace_dir)
    _installed = trace
    return trace


def _register_device_name(device_module: object) -> None:
    """What `_setup_privateuseone_for_python_backend` does, less the Python hooks and guard:
    the native engine registers its own from C++."""
    torch.utils.rename_privateuse1_backend("neuron")
    torch._register_device_module("neuron", device_module)
    torch.utils.generate_methods_for_privateuse1_backend(for_storage=True)


TARGET_ENV = "NEURON_MIGRATE_SIM"
TRACE_DIR_ENV = "NEURON_MIGRATE_TRACE_DIR"


def install_from_environment() -> ProcessTrace | None:
    """Install when `NEURON_MIGRATE_SIM` is set (to a target version, or to `1` for the newest)."""
    target = os.environ.get(TARGET_ENV)
    if not target:
        return None
    version = None if target in ("1", "newest", "latest") else target
    return install(version, os.environ.get(TRACE_DIR_ENV) or None)
