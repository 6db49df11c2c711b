"""The native engine: the simulated device as a C++ PrivateUse1 backend (`csrc/engine.cpp`).

The default engine (`NEURON_MIGRATE_SIM_ENGINE=python` picks `tensor.py`'s `NeuronTensor`
instead; `runtime/README.md`, "What the device does"). Neuron tensors are then real PrivateUse1
tensors over host memory, and each op costs a C++ call instead of a round trip through torch's
Python dispatch. The extension is built on first use with torch's C++ extension loader (a C++
compiler and ninja), once per torch version and source, into `NEURON_MIGRATE_SIM_BUILD_DIR` or
the user's cache, by one process at a time (`build_once`).
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
import warnings
from pathlib import Path
from types import ModuleType
from typing import Any

import torch

from neuron_sim.build_once import built_once
from neuron_sim.errors import NeuronSetupError
from neuron_sim.policy import CPU_FALLBACK, NATIVE, UNSUPPORTED, OpPolicy, dtype_key
from neuron_sim.recorder import LOCATION_SAMPLES, ProcessTrace
from neuron_sim.source import _user_path

ENGINE_ENV = "NEURON_MIGRATE_SIM_ENGINE"
BUILD_DIR_ENV = "NEURON_MIGRATE_SIM_BUILD_DIR"
SOURCE = Path(__file__).with_name("csrc") / "engine.cpp"
_MODULE = "neuron_sim_engine"
_STATUS_CODES = {NATIVE: 0, CPU_FALLBACK: 1, UNSUPPORTED: 2}

_engine: ModuleType | None = None


def requested() -> bool:
    """Whether this process runs the native engine: the default, unless
    `NEURON_MIGRATE_SIM_ENGINE=python` asks for the Python one, or the native one cannot be
    built here and was not asked for by name (then the Python engine runs, with a warning)."""
    choice = os.environ.get(ENGINE_ENV, "native")
    if choice == "python":
        return False
    if choice != "native":
        raise NeuronSetupError(f"{ENGINE_ENV} must be 'native' or 'python', not {choice!r}")
    if ENGINE_ENV in os.environ:
        load()  # asked for by name: a failed build is an error
        return True
    try:
        load()
    except NeuronSetupError as error:
        warnings.warn(f"{error}; running the Python engine instead", stacklevel=2)
        return False
    return True


def _build_dir() -> Path:
    source = SOURCE.read_bytes()
    key = hashlib.sha256(source + torch.__version__.encode() + sys.version.encode()).hexdigest()
    root = os.environ.get(BUILD_DIR_ENV) or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "neuron-migrate"
    )
    return Path(root) / f"engine-{key[:16]}"


def load() -> ModuleType:
    """The compiled engine, built the first time (about a minute; later processes reuse it)."""
    global _engine
    if _engine is None:
        build_dir = _build_dir()
        built = build_dir / f"{_MODULE}.so"
        if built.exists():  # the usual case: no build tools started, no staleness check
            _engine = _import_built(built)
            return _engine
        made: list[ModuleType] = []

        def build(folder: Path) -> Path:
            print(
                f"neuron-migrate: building the native neuron engine in {build_dir} "
                "(once per torch version, about a minute)",
                file=sys.stderr,
                flush=True,
            )
            library, module = _compile(folder)
            made.append(module)
            return library

        try:
            built_once(built, build, announce=_say)
        except (OSError, RuntimeError, ImportError) as error:
            raise NeuronSetupError(
                f"the native neuron engine could not be built in {build_dir} (it needs a C++ "
                f"compiler and ninja): {_first_error_line(str(error))}"
            ) from error
        # The module this process built is loaded already; one another process built is not.
        _engine = made[0] if made else _import_built(built)
    return _engine


def _compile(folder: Path) -> tuple[Path, ModuleType]:
    """Compile and load the engine in `folder`: the library it made there, and the module."""
    from torch.utils.cpp_extension import load as load_extension

    module = load_extension(
        name=_MODULE,
        sources=[str(SOURCE)],
        extra_cflags=["-O2"],
        build_directory=str(folder),
        verbose=False,
    )
    return folder / f"{_MODULE}.so", module


def _say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _first_error_line(text: str) -> str:
    """The line of a failed build's log that says why: the compiler's first `error:`, a tool
    not found, else the log's last line."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    for marker in ("error:", "not found", "No such file"):
        for line in lines:
            if marker in line and not line.startswith("Error building extension"):
                return line
    return lines[-1] if lines else "no output"


def _import_built(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(_MODULE, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _whole_ops_cached() -> list[str]:
    """`whole_ops()`, kept beside the built engine: listing them walks every op torch has (about
    0.1 s, at every process start otherwise), and the build folder is one torch version's."""
    path = _build_dir() / "whole_ops.txt"
    try:
        return path.read_text(encoding="utf-8").split()
    except OSError:
        names = whole_ops()
    try:
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text("\n".join(names), encoding="utf-8")
        os.replace(tmp, path)
    except OSError:
        pass  # a read-only build folder: listed again next time
    return names


def whole_ops() -> list[str]:
    """Ops the engine registers its kernel for by name: ops on tensors that torch would
    decompose for a backend without its own kernel (CompositeExplicitAutograd), so the engine
    sees them whole, as the matrix names them (factories, without a tensor argument, are left
    to decompose, as on the Python engine); and c10d's collectives, which torch gives
    PrivateUse1 kernels that would hand device tensors to gloo."""
    names = []
    for name in torch._C._dispatch_get_all_op_names():
        if name.startswith("c10d::") and torch._C._dispatch_has_kernel_for_dispatch_key(
            name, "PrivateUse1"
        ):
            names.append(name)
            continue
        if not name.startswith("aten::"):
            continue
        if not (
            torch._C._dispatch_has_kernel_for_dispatch_key(name, "CompositeExplicitAutograd")
            or torch._C._dispatch_has_kernel_for_dispatch_key(
                name, "CompositeExplicitAutogradNonFunctional"
            )
        ):
            continue
        if name in _OWN_KERNELS:
            continue
        packet, _, overload = name.removeprefix("aten::").partition(".")
        op = getattr(getattr(torch.ops.aten, packet, None), overload or "default", None)
        if op is None or not any(_takes_tensors(arg.type) for arg in op._schema.arguments):
            continue
        names.append(name)
    return names


_OWN_KERNELS = {
    "aten::empty.memory_format",
    "aten::empty_strided",
    "aten::_copy_from",
    "aten::set_.source_Tensor",
    "aten::set_.source_Storage_storage_offset",
    "aten::set_.source_Storage",
    "aten::resize_",
    "aten::record_stream",
}


def _takes_tensors(arg_type: Any) -> bool:
    # Tensor, Tensor?, Tensor[] (the `_foreach_*` ops, `cat`, `stack`), Tensor?[]
    return "Tensor" in str(arg_type)


def install(policy: OpPolicy, trace: ProcessTrace) -> ModuleType:
    """Load the engine and connect it to `policy` and `trace`."""
    from neuron_sim.tensor import _CPU_TENSOR_OK, _HOST_RESULTS, _refuse_memory_format

    engine = load()
    records = trace.ops

    def describe(name: str) -> tuple[int, bool, tuple[int, ...], tuple[Any, ...]]:
        record = policy.record_for(name)
        cpu_ok = name in _CPU_TENSOR_OK or name.startswith("c10d::")
        # An op it cannot run is refused through `refuse`, which says why.
        status = record.status if record.runnable else "unsupported"
        by_dtype = tuple(
            (getattr(torch, dtype), dtype_key(name, dtype), _STATUS_CODES[split.status])
            for dtype, split in (record.by_dtype or {}).items()
        )
        return _STATUS_CODES[status], cpu_ok, tuple(_HOST_RESULTS.get(name, ())), by_dtype

    def first_use(name: str) -> None:
        policy.first_use(records[name])

    def is_user_file(filename: str) -> bool:
        return _user_path(filename) is not None

    def location(filename: str, line: int) -> str:
        return f"{_user_path(filename)}:{line}"

    def refuse(name: str) -> None:
        raise policy.refuse(records[name])

    def downcast(logical: str, runs_as: str) -> None:
        policy.note_downcast(logical, runs_as)

    def memory_format(name: str) -> None:
        raise _refuse_memory_format(name)

    float64_as_float32 = policy.downcast_rule("float64") == "float32"
    int64_as_int32 = policy.downcast_rule("int64") == "int32"
    engine.install(
        describe,
        first_use,
        is_user_file,
        location,
        refuse,
        downcast,
        memory_format,
        LOCATION_SAMPLES,
        float64_as_float32,
        int64_as_int32,
        _whole_ops_cached(),
    )
    trace.count_sources.append(sync_counts)
    os.register_at_fork(after_in_child=reset_counts)  # a forked child starts its own trace
    return engine


def sync_counts(trace: ProcessTrace) -> None:
    """Copy the engine's per-op call counts into the trace's records."""
    if _engine is None:
        return
    for name, (count, locations, callers) in _engine.op_counts().items():
        record = trace.ops.get(name)
        if record is not None:
            record.count = count
            record.locations = locations
            record.callers = callers


def reset_counts() -> None:
    if _engine is not None:
        _engine.reset_counts()


class graph_scope:
    """While an accepted compiled graph runs: its ops are not counted as eager ops."""

    def __enter__(self) -> None:
        assert _engine is not None
        self._previous = _engine.set_in_graph(True)

    def __exit__(self, *exc: object) -> None:
        assert _engine is not None
        _engine.set_in_graph(self._previous)


class NativeLedger:
    """The memory counters `torch.neuron` reports, read from the engine's allocator."""

    def _stats(self) -> dict[str, int]:
        return load().memory_stats()

    @property
    def allocated(self) -> int:
        return self._stats()["allocated"]

    @property
    def peak(self) -> int:
        return self._stats()["peak"]

    def reset_peak(self) -> None:
        load().reset_peak()

    def reset_accumulated(self) -> None:
        load().reset_accumulated()

    def stats(self) -> dict[str, int]:
        raw = self._stats()
        return {
            "allocated_bytes.all.current": raw["allocated"],
            "allocated_bytes.all.peak": raw["peak"],
            "reserved_bytes.all.current": raw["allocated"],
            "reserved_bytes.all.peak": raw["peak"],
            "allocated.all.current": raw["live"],
            "allocated.all.allocated": raw["allocations"],
            "allocated.all.freed": raw["frees"],
        }
