"""Where a training step's time goes: plain CPU against the simulated `neuron` device, by phase.

    python bench/runtime_phases.py [--workload mlp] [--runs 3] [--steps 20] [--repeats 10]

The step of `runtime_overhead.py` (zero_grad, forward, loss, backward, AdamW), with
`perf_counter` marks between its phases, in five configurations: plain CPU eager and
`aot_eager`, each with torch's default AdamW for the CPU (a loop over the parameters) and with
foreach AdamW (what torch picks for the neuron device), and the simulated device compiled. The
configurations' steps interleave within each process; each run is a fresh process. Printed: the
median µs of every phase (the median over runs of each run's median), and the differences that
say what torch's `aot_eager` costs by itself and what the simulation adds to it. This is a
benchmark, not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
import warnings
from collections.abc import Callable
from typing import Any

from runtime_overhead import CHILD_FLAG, SIM_ENV, WORKLOADS, child_runs

PHASES = ("zero_grad", "forward", "loss", "backward", "optimizer", "step")
CONFIGS = {  # label: device, torch.compile backend, AdamW's foreach (None: torch's default)
    "cpu eager": ("cpu", None, None),
    "cpu eager, foreach": ("cpu", None, True),
    "cpu aot_eager": ("cpu", "aot_eager", None),
    "cpu aot_eager, foreach": ("cpu", "aot_eager", True),
    "neuron (sim) compiled": ("neuron", "neuron", None),
}
DIFFERENCES = [  # (minuend, subtrahend): what the first adds to the second
    ("cpu aot_eager", "cpu eager"),
    ("neuron (sim) compiled", "cpu aot_eager, foreach"),
    ("neuron (sim) compiled", "cpu eager"),
]


def phased_step(
    build: Callable[[str], tuple[Any, Any]], device: str, backend: str | None, foreach: Any
) -> tuple[Callable[[], None], dict[str, list[float]]]:
    """A training step that appends each phase's µs to the returned lists."""
    import torch

    model, batch = build(device)
    forward = torch.compile(model, backend=backend) if backend else model
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, foreach=foreach)
    times: dict[str, list[float]] = {phase: [] for phase in PHASES}
    clock = time.perf_counter

    def step() -> None:
        t0 = clock()
        optimizer.zero_grad(set_to_none=True)
        t1 = clock()
        out = forward(batch)
        t2 = clock()
        loss = out.float().pow(2).mean()
        t3 = clock()
        loss.backward()
        t4 = clock()
        optimizer.step()
        t5 = clock()
        marks = ((t0, t1), (t1, t2), (t2, t3), (t3, t4), (t4, t5), (t0, t5))
        for phase, (start, end) in zip(PHASES, marks, strict=True):
            times[phase].append((end - start) * 1e6)

    return step, times


def _one_run(args: argparse.Namespace) -> dict[str, dict[str, float]]:
    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    warnings.simplefilter("ignore")
    from neuron_sim import compile_backend

    # As in runtime_overhead.py: this measures the cost, not the matrix's verdict on the graphs.
    compile_backend.refuse_unlowerable_ops = False
    build = WORKLOADS[args.workload]
    steps = {label: phased_step(build, *config) for label, config in CONFIGS.items()}
    for step, times in steps.values():
        for _ in range(3):  # warm-up (and compile)
            step()
        for phase_times in times.values():
            phase_times.clear()
    for _ in range(args.repeats):
        for step, _times in steps.values():
            for _ in range(args.steps):
                step()
    return {
        label: {phase: statistics.median(values) for phase, values in times.items()}
        for label, (_step, times) in steps.items()
    }


def _report(runs: list[dict[str, dict[str, float]]], args: argparse.Namespace) -> None:
    def median(label: str, phase: str) -> float:
        return statistics.median(run[label][phase] for run in runs)

    print(
        f"{args.workload}: {len(runs)} run(s) in fresh processes, {args.repeats} x {args.steps} "
        "interleaved steps each; median µs per phase (median over runs)"
    )
    header = "".join(f"{phase:>11}" for phase in PHASES)
    print(f"  {'':<28}{header}  x cpu eager")
    for label in CONFIGS:
        cells = "".join(f"{median(label, phase):11.0f}" for phase in PHASES)
        ratio = statistics.median(run[label]["step"] / run["cpu eager"]["step"] for run in runs)
        print(f"  {label:<28}{cells}  {ratio:.2f}x")
    print("differences, run by run (µs):")
    for minuend, subtrahend in DIFFERENCES:
        print(f"  {minuend} - {subtrahend}")
        for phase in PHASES:
            each = [run[minuend][phase] - run[subtrahend][phase] for run in runs]
            print(f"    {phase:<10} " + " ".join(f"{value:+7.0f}" for value in each))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", choices=sorted(WORKLOADS), default="mlp")
    parser.add_argument("--runs", type=int, default=3, help="fresh processes")
    parser.add_argument("--steps", type=int, default=20, help="steps per configuration per round")
    parser.add_argument("--repeats", type=int, default=10, help="interleaved rounds per run")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (0: torch's default)")
    parser.add_argument(CHILD_FLAG, action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one_run:
        print(json.dumps(_one_run(args)))
        return 0
    # The device installs at `import torch`; each run starts a process with it switched on.
    runs = child_runs(__file__, dict(os.environ, **{SIM_ENV: "1"}), args.runs)
    if isinstance(runs, int):
        return runs
    _report(runs, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
