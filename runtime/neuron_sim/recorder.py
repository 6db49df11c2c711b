"""What one process did on the simulated device, written as JSON when the process exits.

Ops are counted on their `OpRecord` (one per OpOverload, owned by `policy`), so the hot path
is one attribute increment; everything else here is rare and may be slow.
"""

from __future__ import annotations

import atexit
import json
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

TRACE_FORMAT = "neuron-sim-process-trace"
TRACE_FORMAT_VERSION = 1


@dataclass(slots=True)  # read and counted on every op
class OpRecord:
    """One aten (or c10d) op overload: its verdict and how often this process ran it."""

    name: str
    status: str  # "native" | "cpu_fallback" | "unsupported"
    evidence: str | None
    note: str | None
    count: int = 0
    refused: int = 0
    first_location: str | None = None
    # Where the op ran: `file:line` -> calls, for its first LOCATION_SAMPLES calls (a stack walk
    # each). `verify` matches these lines against the static findings.
    locations: dict[str, int] = field(default_factory=dict)
    # The user lines that called into those (every user frame but the innermost) -> calls, for
    # the same calls: `verify` confirms a file's module findings through them.
    callers: dict[str, int] = field(default_factory=dict)
    # False for an op the matrix lets run that torch has no CPU kernel for: the simulated
    # device cannot run it, and says so instead of running it.
    runnable: bool = True
    # The dtype this record is for, where an imported table qualifies the op's status by dtype
    # (`aten::add.Tensor` falls back for float64): its calls in that dtype are counted here,
    # apart from the op's own record.
    dtype: str | None = None
    # On the op's own record: its records per dtype (dtype name -> record), if it has any.
    by_dtype: dict[str, OpRecord] | None = None


# Enough to see every line of a training step for the usual ops, without a stack walk per call.
LOCATION_SAMPLES = 1024


@dataclass
class Downcast:
    dtype: str
    runs_as: str
    count: int = 0
    first_location: str | None = None
    locations: dict[str, int] = field(default_factory=dict)


@dataclass
class Compile:
    """One call of the `neuron` dynamo backend: a graph for one input signature."""

    frame: int  # dynamo's id for the compiled Python frame (recompiles share it)
    graph: str  # the user source line of the graph's first op
    signature: str  # dtype[shape]@device of every input, parameters included
    recompile: bool = False
    forward_ops: int = 0
    backward_ops: int = 0
    ok: bool = True
    error: str | None = None  # the message the compile failed with
    fell_back: bool = False  # failed to compile and ran eagerly (fallback execution on)
    # Why it failed, as data: one entry per refused op (or setting), see `refusal`.
    refused: list[dict[str, Any]] = field(default_factory=list)


def refusal(
    op: str | None, status: str, kind: str, graph: str | None, frames: list[str]
) -> dict[str, Any]:
    """One reason a graph was refused. `kind`: "no_lowering" (an op the matrix marks
    unsupported) or "dynamic_shapes" (no op); `frames`: the user frames behind it, innermost
    first (the compiled code's, then those that called it); `location`: the innermost."""
    return {
        "op": op,
        "status": status,
        "kind": kind,
        "graph": graph,
        "location": frames[0] if frames else None,
        "frames": frames,
    }


@dataclass
class ProcessTrace:
    target: str
    started: float = field(default_factory=time.time)
    started_monotonic: float = field(default_factory=time.perf_counter)
    ops: dict[str, OpRecord] = field(default_factory=dict)
    downcasts: dict[str, Downcast] = field(default_factory=dict)
    refusals: list[dict[str, str | None]] = field(default_factory=list)
    compiles: list[Compile] = field(default_factory=list)
    graph_breaks: int = 0
    recompile_limit_hits: int = 0
    used_device: bool = False
    before_write: list[Callable[[ProcessTrace], None]] = field(default_factory=list)
    # Where op counts are kept outside the records (the native engine counts in C++).
    count_sources: list[Callable[[ProcessTrace], None]] = field(default_factory=list)

    def refresh_counts(self) -> None:
        for source in self.count_sources:
            source(self)

    def as_json(self) -> dict[str, Any]:
        self.refresh_counts()
        return {
            "format": TRACE_FORMAT,
            "format_version": TRACE_FORMAT_VERSION,
            "target": self.target,
            "process": {
                "pid": os.getpid(),
                "rank": _int_env("RANK"),
                "local_rank": _int_env("LOCAL_RANK"),
                "world_size": _int_env("WORLD_SIZE"),
                "argv": list(sys.argv),
                "started": self.started,
                "wall_time_s": round(time.perf_counter() - self.started_monotonic, 6),
            },
            "ops": [
                {
                    "op": r.name,
                    "status": r.status,
                    "count": r.count,
                    "refused": r.refused,
                    "first_location": r.first_location,
                    "locations": r.locations,
                    "callers": r.callers,
                    "evidence": r.evidence,
                    "note": r.note,
                    **({"dtype": r.dtype} if r.dtype else {}),
                }
                for r in self.ops.values()
                if r.count or r.refused
            ],
            "downcasts": [vars(d) for d in self.downcasts.values()],
            "refusals": self.refusals,
            "compiles": [vars(c) for c in self.compiles],
            "graph_breaks": self.graph_breaks,
            "recompile_limit_hits": self.recompile_limit_hits,
        }

    def has_content(self) -> bool:
        self.refresh_counts()
        return bool(
            self.used_device
            or self.compiles
            or self.refusals
            or any(r.count or r.refused for r in self.ops.values())
        )

    def reset_after_fork(self) -> None:
        """A forked child starts its own trace instead of repeating its parent's counts."""
        self.started = time.time()
        self.started_monotonic = time.perf_counter()
        for record in self.ops.values():
            record.count = record.refused = 0
            record.locations = {}
            record.callers = {}
        self.downcasts.clear()
        self.refusals.clear()
        self.compiles.clear()
        self.graph_breaks = self.recompile_limit_hits = 0
        self.used_device = False


def _int_env(name: str) -> int | None:
    value = os.environ.get(name)
    return int(value) if value and value.lstrip("-").isdigit() else None


def write_at_exit(trace: ProcessTrace, directory: str) -> None:
    """Write `trace` into `directory` when this process ends (normal exit or multiprocessing).

    Processes that never touched the device (a torchrun launcher, say) write nothing.
    """
    written_by: set[int] = set()

    def write() -> None:
        pid = os.getpid()
        if pid in written_by:
            return
        for update in trace.before_write:
            update(trace)
        if not trace.has_content():
            return
        written_by.add(pid)
        path = os.path.join(directory, f"trace-{pid}.json")
        tmp = f"{path}.tmp"
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(trace.as_json(), fh)
        os.replace(tmp, path)

    atexit.register(write)
    # Forked multiprocessing children leave through os._exit, skipping atexit; their
    # finalizers still run.
    import multiprocessing.util

    def register_in_child() -> None:
        trace.reset_after_fork()
        multiprocessing.util.Finalize(None, write, exitpriority=-100)

    os.register_at_fork(after_in_child=register_in_child)
