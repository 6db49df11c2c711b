"""Run one command and report its whole-process cost as JSON on stdout.

    python bench/measure.py [--stdout FILE] [--cwd DIR] [--timeout S] -- COMMAND ...

This wrapper is a fresh process per measurement, so `getrusage(RUSAGE_CHILDREN)` covers exactly
the command's process tree (every descendant that was waited for, pool workers included). While
the command runs, the tree is sampled from /proc every few milliseconds: VmHWM per process gives
each process's peak RSS (the root process and each worker), and the sum of VmRSS over the tree
gives the tree's peak.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

SAMPLE_S = 0.02


def _children(pid: int) -> list[int]:
    found: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return found
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/children") as handle:
                found.extend(int(c) for c in handle.read().split())
        except OSError:
            continue
    return found


def _memory_kb(pid: int) -> tuple[int, int]:
    """(VmHWM, VmRSS) in kB, or (0, 0) once the process is gone."""
    peak = rss = 0
    try:
        with open(f"/proc/{pid}/status") as handle:
            for line in handle:
                if line.startswith("VmHWM:"):
                    peak = int(line.split()[1])
                elif line.startswith("VmRSS:"):
                    rss = int(line.split()[1])
    except (OSError, ValueError):
        pass
    return peak, rss


class _Sampler(threading.Thread):
    """Samples the tree under `pid` from /proc every SAMPLE_S until stopped: each process's
    VmHWM (the last value read while it lived) and the largest sum of VmRSS at one time."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid = pid
        self.peaks: dict[int, int] = {}  # pid -> VmHWM kB
        self.tree_peak = 0
        self._done = threading.Event()

    def run(self) -> None:
        while not self._done.is_set():
            pending, tree_rss = [self.pid], 0
            while pending:
                pid = pending.pop()
                peak, rss = _memory_kb(pid)
                if peak:
                    self.peaks[pid] = max(self.peaks.get(pid, 0), peak)
                    tree_rss += rss
                pending.extend(_children(pid))
            self.tree_peak = max(self.tree_peak, tree_rss)
            self._done.wait(SAMPLE_S)

    def stop(self) -> None:
        self._done.set()
        self.join()


def measure(
    command: list[str],
    stdout: Path | None,
    cwd: Path | None,
    env: dict[str, str] | None = None,
    timeout: float | None = None,
) -> dict[str, object]:
    """The command's cost; past `timeout` seconds its process group is killed (`timed_out`)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    # stderr goes to a file, not a pipe: a chatty command must never block on a full pipe.
    with tempfile.TemporaryFile() as err, contextlib.ExitStack() as stack:
        out = stack.enter_context(stdout.open("wb")) if stdout else subprocess.DEVNULL
        started = time.perf_counter()
        process = subprocess.Popen(
            command, stdout=out, stderr=err, cwd=cwd, env=env, start_new_session=True
        )
        # Memory is sampled beside the wait, not between polls: the wall time is then taken
        # when the command exits, not up to a sampling interval later (+10 ms on average, a
        # few percent of a re-scan).
        sampler = _Sampler(process.pid)
        sampler.start()
        timed_out = False
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        wall = time.perf_counter() - started
        sampler.stop()
        err.seek(0)
        stderr = err.read()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    peaks, tree_peak = sampler.peaks, sampler.tree_peak
    root_peak = peaks.pop(process.pid, 0)
    return {
        "rc": process.returncode,
        "timed_out": timed_out,
        "wall_s": wall,
        "cpu_s": (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime),
        # ru_maxrss of the children: the largest single process of the tree, in kB on Linux.
        "max_process_mb": after.ru_maxrss / 1024,
        "root_peak_mb": root_peak / 1024,
        "worker_peaks_mb": sorted((p / 1024 for p in peaks.values()), reverse=True),
        "tree_peak_mb": tree_peak / 1024,
        "stderr_tail": stderr.decode("utf-8", "replace")[-2000:],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stdout", type=Path, help="write the command's stdout here")
    parser.add_argument("--cwd", type=Path)
    parser.add_argument("--timeout", type=float, help="seconds; then the command is killed")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give the command after --")
    print(json.dumps(measure(command, args.stdout, args.cwd, timeout=args.timeout)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
