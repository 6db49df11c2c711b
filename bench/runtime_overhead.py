"""Overhead of the simulated `neuron` device against plain CPU PyTorch, in one process.

    python bench/runtime_overhead.py [--steps 20] [--repeats 5] [--threads 1]

Workloads: a 2-layer TransformerEncoder training step (d_model=128, 4 heads, ff=512, batch 8,
seq 64, AdamW) and an MLP (256-512-512-10, batch 64, AdamW); each eager and compiled. Plain CPU
and the simulated device run in the same process (the device only touches neuron tensors), the
same number of steps, repetitions interleaved; the median ms/step is reported with its ratio
to plain CPU eager. Torch runs on one thread by default: on a shared machine, OpenMP threads
that wait for a descheduled sibling turn a 5 ms step into 200 ms, whatever the device.
Targets: eager <= 1.6x, compiled <= 1.25x. This is a benchmark, not a test.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
import warnings
from collections.abc import Callable
from typing import Any

SIM_ENV = "NEURON_MIGRATE_SIM"


def _transformer(device: str) -> tuple[Any, Any]:
    import torch
    import torch.nn as nn

    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(128, 4, 512, dropout=0.0, batch_first=True)
    model = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False).to(device)
    batch = torch.randn(8, 64, 128).to(device)
    return model, batch


def _mlp(device: str) -> tuple[Any, Any]:
    import torch
    import torch.nn as nn

    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10)
    ).to(device)
    batch = torch.randn(64, 256).to(device)
    return model, batch


def _step_fn(
    build: Callable[[str], tuple[Any, Any]], device: str, compiled: str | None
) -> Callable[[], None]:
    import torch

    model, batch = build(device)
    forward = torch.compile(model, backend=compiled) if compiled else model
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)

    def step() -> None:
        optimizer.zero_grad(set_to_none=True)
        forward(batch).float().pow(2).mean().backward()
        optimizer.step()

    return step


def _time_round_robin(
    steps: dict[str, Callable[[], None]], count: int, repeats: int
) -> dict[str, float]:
    """Median ms/step of each configuration; repetitions interleave the configurations so a
    busy machine slows them all alike."""
    for step in steps.values():
        for _ in range(3):  # warm-up (and compile)
            step()
    samples: dict[str, list[float]] = {label: [] for label in steps}
    for _ in range(repeats):
        for label, step in steps.items():
            start = time.perf_counter()
            for _ in range(count):
                step()
            samples[label].append((time.perf_counter() - start) / count * 1e3)
    return {label: statistics.median(times) for label, times in samples.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20, help="timed steps per repetition")
    parser.add_argument("--repeats", type=int, default=5, help="repetitions (median is reported)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (0: torch's default)")
    args = parser.parse_args()
    if not os.environ.get(SIM_ENV):
        # The device installs at `import torch`; start again with it switched on.
        env = dict(os.environ, **{SIM_ENV: "1"})
        return subprocess.call([sys.executable, *sys.argv], env=env)

    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    warnings.simplefilter("ignore")  # fallback and logger warnings are not what we measure
    from neuron_sim import compile_backend

    # The matrix refuses some ops these graphs hold (see the note printed below); this measures
    # the cost of the simulation, so the graphs are let through.
    compile_backend.refuse_non_native_ops = False
    print(
        f"torch {torch.__version__}, {torch.get_num_threads()} threads, "
        f"{args.steps} steps x {args.repeats} repeats, median ms/step"
    )
    rows = [
        ("cpu eager", "cpu", None),
        ("neuron (sim) eager", "neuron", None),
        ("cpu compiled (aot_eager)", "cpu", "aot_eager"),
        ("neuron (sim) compiled", "neuron", "neuron"),
    ]
    for name, build in (("transformer", _transformer), ("mlp", _mlp)):
        steps = {label: _step_fn(build, device, backend) for label, device, backend in rows}
        results = _time_round_robin(steps, args.steps, args.repeats)
        base = results["cpu eager"]
        print(f"\n{name}")
        for label, ms in results.items():
            print(f"  {label:<26} {ms:8.2f} ms   {ms / base:5.2f}x cpu eager")
        print(f"  ratio eager    (target <= 1.60): {results['neuron (sim) eager'] / base:.2f}x")
        print(f"  ratio compiled (target <= 1.25): {results['neuron (sim) compiled'] / base:.2f}x")
    from neuron_sim.install import installed_trace

    trace = installed_trace()
    refused = {c.error for c in trace.compiles if c.error} if trace else set()
    for note in sorted(refused):
        print(f"\nnote: the matrix would refuse this compile: {note}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
