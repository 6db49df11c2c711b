"""`neuron-migrate run`: run a command with the simulated `neuron` device, then merge its traces.

Every Python process the command starts (torchrun workers and spawn children included) imports
torch, whose `torch.backends` entry point `neuron_sim.autoload` installs the device when
`NEURON_MIGRATE_SIM` names a target. Each process writes its own trace into a private folder;
this module merges them into one run trace (schema below and in runtime/README.md).

Pure Python: torch is never imported here.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from neuron_migrate.errors import UsageError
from neuron_migrate.verify.forwarding import NEW_GROUP, forwarding_signals

SCHEMA_VERSION = 1
TRACE_KIND = "neuron-migrate-run-trace"
TARGET_ENV = "NEURON_MIGRATE_SIM"
TRACE_DIR_ENV = "NEURON_MIGRATE_TRACE_DIR"
_STATUS_ORDER = {"unsupported": 0, "cpu_fallback": 1, "native": 2}
_PYTHON_NAMES = {"python", "python3", f"python{sys.version_info[0]}.{sys.version_info[1]}"}


@dataclass(frozen=True)
class RunResult:
    exit_code: int
    trace: dict[str, Any]
    output: str = ""  # the command's stdout, when run with capture_output


def run(
    command: Sequence[str],
    target: str | None = None,
    *,
    capture_output: bool = False,
    stdout_to_stderr: bool = False,
    cwd: Path | None = None,
    extra_env: Mapping[str, str] | None = None,
) -> RunResult:
    """Run `command` under the simulated device for `target` (None: newest matrix), in `cwd`
    (default: the current folder), which is also what trace locations are shown relative to;
    `extra_env` is added to its environment.

    With `capture_output`, the command's stdout is returned instead of shown (stderr is shown);
    with `stdout_to_stderr`, it is shown on stderr, leaving stdout to a report.
    """
    from neuron_migrate.matrix import load_matrix, resolve_version

    version = load_matrix(target).version  # raises UnknownTargetError for a bad --target
    workdir = cwd or Path.cwd()
    # The device loads the same matrix: a bundled version, or a matrix file by its path.
    argv, env = prepare(command, resolve_version(target), workdir)
    env.update(extra_env or {})
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="neuron-migrate-run-") as trace_dir:
        env[TRACE_DIR_ENV] = trace_dir
        exit_code, output = _execute(argv, env, workdir, capture_output, stdout_to_stderr)
        process_traces = read_process_traces(Path(trace_dir))
    trace = merge_traces(
        process_traces,
        target=version,
        command=list(command),
        exit_code=exit_code,
        wall_time_s=time.perf_counter() - started,
        cwd=workdir,
    )
    return RunResult(exit_code, trace, output)


def prepare(
    command: Sequence[str], version: str, cwd: Path | None = None
) -> tuple[list[str], dict[str, str]]:
    """The argv to start and the environment that activates the simulated device in it."""
    if not command:
        raise UsageError("run: give the command to run after `--`, e.g. `run -- python train.py`")
    env = dict(os.environ)
    env[TARGET_ENV] = version
    # torch only calls backend entry points when autoload is on (the default).
    env["TORCH_DEVICE_BACKEND_AUTOLOAD"] = "1"
    # `python`, `pytest` and `torchrun` resolve in the environment neuron-migrate runs from,
    # the one where the simulated device is installed.
    bin_dir = os.path.dirname(sys.executable)
    env["PATH"] = os.pathsep.join([bin_dir, env.get("PATH", "")])
    # A program that imports torch_neuronx before torch finds the device's placeholder there.
    env["PYTHONPATH"] = os.pathsep.join(
        [before_torch_path(), *filter(None, [env.get("PYTHONPATH")])]
    )
    return resolve_argv(command, env["PATH"], cwd or Path.cwd()), env


def before_torch_path() -> str:
    """The folder of `neuron_sim`'s `torch_neuronx` placeholder, found without importing it
    (the package imports torch)."""
    spec = importlib.util.find_spec("neuron_sim")
    if spec is None or not spec.submodule_search_locations:
        raise UsageError("run: the simulated device (neuron_sim) is not installed")
    return os.path.join(next(iter(spec.submodule_search_locations)), "before_torch")


def interpreter_note(command: Sequence[str], user_path: str | None = None) -> str | None:
    """A line for stderr when `command` names a program (`python`, `pytest`, `torchrun`) that
    `run` starts from the tool's own environment (`prepare` puts it first on PATH) while the
    user's PATH (`user_path`, default: this process's) would find another one, or none."""
    if not command or command[0].endswith(".py") or os.sep in command[0]:
        return None
    name = command[0]
    ours = os.path.dirname(sys.executable)
    if name not in _PYTHON_NAMES and shutil.which(name, path=ours) is None:
        return None  # not in our environment: found on the user's PATH, as they expect
    path = os.environ.get("PATH", "") if user_path is None else user_path
    theirs = shutil.which(name, path=path)
    if theirs is not None and os.path.dirname(os.path.abspath(theirs)) == ours:
        return None
    runs = sys.executable if name in _PYTHON_NAMES else shutil.which(name, path=ours)
    instead = f"not {theirs}, the first on your PATH" if theirs else f"no {name} is on your PATH"
    return (
        f"neuron-migrate run: `{name}` is {runs}, of the environment neuron-migrate is "
        f"installed in (where the simulated device is); {instead}"
    )


def resolve_argv(command: Sequence[str], path: str, cwd: Path | None = None) -> list[str]:
    first, rest = command[0], list(command[1:])
    if first.endswith(".py"):
        if not ((cwd or Path.cwd()) / first).is_file():
            raise UsageError(f"run: no such script: {first}")
        return [sys.executable, first, *rest]
    if first in _PYTHON_NAMES:
        return [sys.executable, *rest]
    found = shutil.which(first, path=path)
    if found is None:
        raise UsageError(f"run: command not found: {first}")
    return [found, *rest]


def _execute(
    argv: list[str], env: dict[str, str], cwd: Path, capture_output: bool, stdout_to_stderr: bool
) -> tuple[int, str]:
    """Run to completion with inherited stdio, in a process group of its own to which SIGINT,
    SIGTERM and SIGHUP sent to this process are passed on (`verify.forwarding`); we wait for it
    and give its status."""
    stdout: int | None = None
    if capture_output:
        stdout = subprocess.PIPE
    elif stdout_to_stderr:
        sys.stderr.flush()
        stdout = sys.stderr.fileno()
    output = ""
    with forwarding_signals() as forwarder:
        process = subprocess.Popen(
            argv, env=env, cwd=cwd, stdout=stdout, text=capture_output, process_group=NEW_GROUP
        )
        forwarder.started(process.pid)
        while True:
            try:
                out, _ = process.communicate()
                output = out or ""
                code = process.returncode
                break
            except KeyboardInterrupt:  # where signals are not forwarded, the child got it too
                continue  # let it finish and write its trace
    # A child killed by a signal: report it the way a shell does (128 + signal number).
    return (128 + -code if code < 0 else code), output


def read_process_traces(directory: Path) -> list[dict[str, Any]]:
    traces = []
    for path in sorted(directory.glob("trace-*.json")):
        try:
            traces.append(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, ValueError) as error:
            print(
                f"neuron-migrate: skipping unreadable trace {path.name}: {error}", file=sys.stderr
            )
    return traces


def merge_traces(
    traces: Iterable[Mapping[str, Any]],
    *,
    target: str,
    command: list[str],
    exit_code: int,
    wall_time_s: float,
    cwd: Path,
) -> dict[str, Any]:
    """One run trace from the per-process traces (ranked processes first, then by pid)."""
    ordered = sorted(traces, key=_process_order)
    ops: dict[tuple[str, str | None], dict[str, Any]] = {}  # by op and dtype (see below)
    downcasts: dict[str, dict[str, Any]] = {}
    refusals: dict[tuple[str, str | None], dict[str, Any]] = {}
    graphs: list[dict[str, Any]] = []
    graph_breaks = limit_hits = 0

    for trace in ordered:
        pid = trace["process"]["pid"]
        for op in trace.get("ops", []):
            # An op whose status an imported table qualifies by dtype has an entry for each
            # such dtype ("dtype": "float64") beside its own.
            dtype = op.get("dtype")
            merged = ops.setdefault(
                (op["op"], dtype),
                {
                    "op": op["op"],
                    **({"dtype": dtype} if dtype else {}),
                    "status": op["status"],
                    "count": 0,
                    "refused": 0,
                    "processes": 0,
                    "first_location": None,
                    "locations": {},
                    "callers": {},
                    "evidence": op.get("evidence"),
                    "note": op.get("note") or "",
                },
            )
            merged["count"] += op["count"]
            merged["refused"] += op.get("refused", 0)
            merged["processes"] += 1
            merged["first_location"] = merged["first_location"] or _relative(
                op.get("first_location"), cwd
            )
            _add_counts(merged["locations"], op.get("locations"), cwd)
            _add_counts(merged["callers"], op.get("callers"), cwd)
        for entry in trace.get("downcasts", []):
            merged = downcasts.setdefault(
                entry["dtype"],
                {
                    "dtype": entry["dtype"],
                    "runs_as": entry["runs_as"],
                    "count": 0,
                    "first_location": _relative(entry.get("first_location"), cwd),
                    "locations": {},
                },
            )
            merged["count"] += entry["count"]
            _add_counts(merged["locations"], entry.get("locations"), cwd)
        for refusal in trace.get("refusals", []):
            location = _relative(refusal.get("location"), cwd)
            merged = refusals.setdefault(
                (refusal["op"], location),
                {
                    "op": refusal["op"],
                    "location": location,
                    "message": refusal["message"],
                    "count": 0,
                },
            )
            merged["count"] += 1
        for graph in trace.get("compiles", []):
            refused = [_relative_refusal(refusal, cwd) for refusal in graph.get("refused", [])]
            graphs.append(
                {
                    **graph,
                    "graph": _relative(graph.get("graph"), cwd),
                    "refused": refused,
                    "pid": pid,
                }
            )
        graph_breaks += trace.get("graph_breaks", 0)
        limit_hits += trace.get("recompile_limit_hits", 0)

    op_list = sorted(ops.values(), key=lambda o: (_STATUS_ORDER.get(o["status"], 3), -o["count"]))
    by_status = {status: 0 for status in _STATUS_ORDER}
    for op in op_list:
        by_status[op["status"]] = by_status.get(op["status"], 0) + 1
    return {
        "schema_version": SCHEMA_VERSION,
        "kind": TRACE_KIND,
        "target": target,
        "command": command,
        "exit_code": exit_code,
        "wall_time_s": round(wall_time_s, 3),
        "processes": [_process_summary(t) for t in ordered],
        "totals": {
            "op_calls": sum(op["count"] for op in op_list),
            "distinct_ops": len(op_list),
            "distinct_ops_by_status": by_status,
            "fallback_calls": sum(op["count"] for op in op_list if op["status"] == "cpu_fallback"),
            "refused_calls": sum(op["refused"] for op in op_list),
        },
        "ops": op_list,
        "fallbacks": [
            {
                "op": op["op"],
                **({"dtype": op["dtype"]} if "dtype" in op else {}),
                "count": op["count"],
                "first_location": op["first_location"],
            }
            for op in op_list
            if op["status"] == "cpu_fallback" and op["count"]
        ],
        "downcasts": list(downcasts.values()),
        "refusals": list(refusals.values()),
        "compile": {
            "compiles": len(graphs),
            "recompiles": sum(1 for g in graphs if g.get("recompile")),
            "failures": sum(1 for g in graphs if not g.get("ok", True)),
            "graph_breaks": graph_breaks,
            "recompile_limit_hits": limit_hits,
            "graphs": graphs,
        },
    }


def _process_order(trace: Mapping[str, Any]) -> tuple[int, int]:
    process = trace["process"]
    rank = process.get("rank")
    return (rank if rank is not None else 1 << 30, process["pid"])


def _process_summary(trace: Mapping[str, Any]) -> dict[str, Any]:
    process = trace["process"]
    keys = ("pid", "rank", "local_rank", "world_size", "argv", "wall_time_s")
    return {key: process.get(key) for key in keys}


def _add_counts(into: dict[str, int], counts: Mapping[str, int] | None, cwd: Path) -> None:
    """Add per-location call counts, each `file:line` shown relative to `cwd`."""
    for location, count in (counts or {}).items():
        shown = _relative(location, cwd) or location
        into[shown] = into.get(shown, 0) + count


def _relative_refusal(refusal: Mapping[str, Any], cwd: Path) -> dict[str, Any]:
    """A compile refusal with its location and frames shown relative to `cwd`."""
    frames = [_relative(frame, cwd) or frame for frame in refusal.get("frames") or []]
    return {**refusal, "location": _relative(refusal.get("location"), cwd), "frames": frames}


def _relative(location: str | None, cwd: Path) -> str | None:
    """`file:line` under the working directory is shown relative to it."""
    if not location:
        return location
    path, sep, line = location.rpartition(":")
    if not sep or not line.isdigit():
        path, line = location, ""
    try:
        shown = str(Path(path).relative_to(cwd))
    except ValueError:
        shown = path
    return f"{shown}:{line}" if line else shown


def write_trace(trace: Mapping[str, Any], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(trace, indent=2) + "\n", encoding="utf-8")


def summary_lines(trace: Mapping[str, Any], *, limit: int = 10) -> list[str]:
    """A short human summary of a run trace (for stderr)."""
    totals = trace["totals"]
    processes = trace["processes"]
    by_status = totals["distinct_ops_by_status"]
    killed_by = signal_name(trace["exit_code"])
    lines = [
        f"neuron-migrate run: torch-neuronx {trace['target']} (simulated), "
        f"{len(processes)} process{'es' if len(processes) != 1 else ''} on the device, "
        f"exit code {trace['exit_code']}{f' ({killed_by})' if killed_by else ''}, "
        f"{trace['wall_time_s']:.1f} s",
        f"  ops: {totals['distinct_ops']} distinct, {totals['op_calls']} calls: "
        f"{by_status.get('native', 0)} native, {by_status.get('cpu_fallback', 0)} cpu_fallback, "
        f"{by_status.get('unsupported', 0)} unsupported",
    ]
    fallbacks = trace["fallbacks"]
    if fallbacks:
        lines.append(f"  CPU fallbacks ({totals['fallback_calls']} calls ran on the host):")
        lines += [
            f"    {f['op']:<44} {f['count']:>7}  first at {f['first_location'] or '?'}"
            for f in fallbacks[:limit]
        ]
        if len(fallbacks) > limit:
            lines.append(f"    ... and {len(fallbacks) - limit} more (see the trace)")
    for downcast in trace["downcasts"]:
        lines.append(
            f"  {downcast['dtype']} computed as {downcast['runs_as']}: {downcast['count']} "
            f"tensors, first at {downcast['first_location'] or '?'}"
        )
    for refusal in trace["refusals"][:limit]:
        lines.append(f"  refused: {refusal['message']}")
    compile_ = trace["compile"]
    if compile_["compiles"] or compile_["graph_breaks"]:
        lines.append(
            f"  torch.compile: {compile_['compiles']} compiles, {compile_['recompiles']} "
            f"recompiles, {compile_['failures']} failed, {compile_['graph_breaks']} graph breaks"
            + (
                f", recompile limit hit {compile_['recompile_limit_hits']}x"
                if compile_["recompile_limit_hits"]
                else ""
            )
        )
    if not processes:
        lines.append(
            "  no process used the neuron device (is the command a Python program that imports "
            "torch in this environment?)"
        )
    return lines


def signal_name(exit_code: int) -> str | None:
    """`SIGKILL` for 137, etc.: for messages about a child killed by a signal."""
    if exit_code <= 128:
        return None
    try:
        return signal.Signals(exit_code - 128).name
    except ValueError:
        return None
