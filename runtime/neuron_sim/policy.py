"""The compatibility matrix deciding each op: native runs, cpu_fallback runs and warns once,
unsupported raises. Verdicts are looked up once per OpOverload and cached on its `OpRecord`."""

from __future__ import annotations

import warnings

from neuron_migrate.matrix import Matrix
from neuron_sim.errors import NeuronNotSimulatedError, NeuronUnsupportedOpError
from neuron_sim.recorder import LOCATION_SAMPLES, Downcast, OpRecord, ProcessTrace
from neuron_sim.source import user_location

NATIVE = "native"
CPU_FALLBACK = "cpu_fallback"
UNSUPPORTED = "unsupported"


class NeuronFallbackWarning(UserWarning):
    """An op ran on the CPU because the target TorchNeuron release has no device kernel for it."""


class NeuronDowncastWarning(UserWarning):
    """A dtype the device does not have is stored and computed in a narrower one."""


class OpPolicy:
    """Per-process view of one matrix version, recording into one `ProcessTrace`."""

    def __init__(self, matrix: Matrix, trace: ProcessTrace) -> None:
        self.matrix = matrix
        self.trace = trace

    def record_for(self, name: str) -> OpRecord:
        """The cached record for the op called `name` (`aten::add.Tensor`), created on first use.

        Where an imported table says the op falls back for some dtypes only, its record holds a
        record for each of them (`by_dtype`), kept in the trace under `dtype_key`."""
        record = self.trace.ops.get(name)
        if record is None:
            verdict = self.matrix.op_status(name)
            record = OpRecord(name, verdict.status, verdict.source, verdict.note)
            record.runnable = verdict.status == UNSUPPORTED or _has_host_kernel(name)
            self.trace.ops[name] = record
            if verdict.status == NATIVE:
                self._split_by_dtype(record)
        return record

    def _split_by_dtype(self, record: OpRecord) -> None:
        rows = [
            (row, dtype)
            for row in self.matrix.apis.values()
            if row.status == CPU_FALLBACK and record.name in row.ops
            for dtype in row.dtypes
        ]
        if not rows:
            return
        record.by_dtype = {}
        for row, dtype in rows:
            if dtype in record.by_dtype:
                continue
            note = f"CPU_FALLBACK for {dtype} in the official table"
            split = OpRecord(record.name, CPU_FALLBACK, row.source, row.note or note)
            split.runnable, split.dtype = record.runnable, dtype
            record.by_dtype[dtype] = split
            self.trace.ops[dtype_key(record.name, dtype)] = split

    def first_use(self, record: OpRecord) -> None:
        """Called the first time an op runs in this process (count still 0)."""
        record.first_location = user_location()
        if record.status == CPU_FALLBACK:
            what = f"{record.name} ({record.dtype})" if record.dtype else record.name
            _warn_at(
                f"{what} has no neuron kernel in torch-neuronx {self.matrix.version}; "
                "it runs on the CPU",
                NeuronFallbackWarning,
                record.first_location,
            )

    def refuse(self, record: OpRecord) -> NeuronUnsupportedOpError | NeuronNotSimulatedError:
        """Record a refused call and build the error to raise."""
        location = user_location()
        if not record.runnable:  # not the device's refusal: nothing goes into the trace
            where = f" at {location}" if location else ""
            return NeuronNotSimulatedError(
                record.name, record.status, record.evidence, self.matrix.version, where
            )
        record.refused += 1
        if record.first_location is None:
            record.first_location = location
        error = NeuronUnsupportedOpError(record.name, location, record.note)
        self.trace.refusals.append({"op": record.name, "location": location, "message": str(error)})
        return error

    def downcast_rule(self, dtype_name: str) -> str | None:
        """The dtype that `dtype_name` runs as on the device, or None if it runs as itself."""
        rule = self.matrix.dtype_rule(dtype_name)
        runs_as = getattr(rule, "runs_as", None)
        return runs_as if runs_as and runs_as != dtype_name else None

    def note_downcast(self, dtype_name: str, runs_as: str) -> None:
        """Count a tensor created in a downcast dtype; warn the first time."""
        entry = self.trace.downcasts.get(dtype_name)
        if entry is None:
            entry = Downcast(dtype_name, runs_as, first_location=user_location())
            self.trace.downcasts[dtype_name] = entry
            _warn_at(
                f"{dtype_name} is not a neuron device dtype: {dtype_name} tensors are stored and "
                f"computed as {runs_as} and still report {dtype_name}",
                NeuronDowncastWarning,
                entry.first_location,
            )
        entry.count += 1
        if entry.count <= LOCATION_SAMPLES:
            location = user_location()
            if location is not None:
                entry.locations[location] = entry.locations.get(location, 0) + 1


def dtype_key(name: str, dtype: str) -> str:
    """Where the trace keeps an op's record for one dtype: `aten::add.Tensor[float64]`."""
    return f"{name}[{dtype}]"


# What torch can run an aten op with on the host: its CPU kernel or a device-agnostic one.
_HOST_KEYS = (
    "CPU",
    "CompositeExplicitAutograd",
    "CompositeExplicitAutogradNonFunctional",
    "CompositeImplicitAutograd",
)
# Ops without a CPU kernel that the device handles itself: the host-device transfers, and
# record_stream (a kernel of the engine's own, a no-op in the Python engine).
_DEVICE_HANDLED = frozenset(
    {"aten::_copy_from", "aten::_copy_from_and_resize", "aten::record_stream"}
)


def _has_host_kernel(name: str) -> bool:
    """Whether the simulated device (which runs every op on the host) can run `name`. Only
    aten ops are asked; c10d and custom ops have their own kernels."""
    if not name.startswith("aten::") or name in _DEVICE_HANDLED:
        return True
    import torch

    has = torch._C._dispatch_has_kernel_for_dispatch_key
    try:
        return any(has(name, key) for key in _HOST_KEYS)
    except RuntimeError:  # not an op this torch knows: let the call say so
        return True


def _warn_at(message: str, category: type[Warning], location: str | None) -> None:
    """Warn as if from the user's line, so the message points at their code."""
    if location is None:
        warnings.warn(message, category, stacklevel=3)
        return
    filename, _, line = location.rpartition(":")
    warnings.warn_explicit(message, category, filename, int(line))
