"""What a C++ PrivateUse1 backend would cost: the runtime benchmark's workloads on a device whose
every op runs through a boxed C++ fallback (`privateuse1_floor.cpp`), against plain CPU.

    python bench/privateuse1_floor.py [--runs 3] [--steps 20] [--repeats 5] [--build-dir DIR]

The simulated device (`runtime/`) dispatches each op through torch's Python dispatch, whose
round trip alone keeps the compiled MLP above its 1.25x target (README.md, "Why compiled misses
on the MLP"). This builds the smallest C++ backend that runs those training steps -- host memory,
zero-copy CPU aliases, each op counted -- and times it beside plain CPU, eager and compiled, in
the same process, repetitions interleaved, one fresh process per run, as `runtime_overhead.py`
does. Compiled runs `aot_eager` on both, and on the device also AOTAutograd with its graphs run
as the simulated device's backend runs them (`neuron_sim.graph_runner`). It measures the
dispatch floor of that design, not a runtime: the matrix's status, source lines, float64 and the
memory ledger are not in it. Backward runs on the calling thread, as the simulated device runs
it (`torch._C._set_multithreading_enabled(False)`): left to the autograd engine's device thread,
each `backward()` pays a hand-over between cores (printed at the end). It needs a C++ compiler
and ninja (torch.utils.cpp_extension), and builds once into --build-dir (about 30 s).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
import types
from pathlib import Path
from typing import Any

import runtime_overhead

SOURCE = Path(__file__).resolve().with_name("privateuse1_floor.cpp")
CHILD_FLAG, BASELINE, AOT_ROW = (
    runtime_overhead.CHILD_FLAG,
    runtime_overhead.BASELINE,
    runtime_overhead.AOT_ROW,
)
DEFAULT_BUILD_DIR = Path(tempfile.gettempdir()) / "neuron-migrate-bench" / "privateuse1"
GRAPH_RUNNER = "graph_runner"  # aot_autograd running its graphs as the neuron backend does
ROWS = [  # label, device, torch.compile backend
    (BASELINE, "cpu", None),
    ("C++ device eager", "neuron", None),
    (AOT_ROW, "cpu", "aot_eager"),
    ("C++ device compiled (aot_eager)", "neuron", "aot_eager"),
    ("C++ device compiled (graph_runner)", "neuron", GRAPH_RUNNER),
]


def build(build_dir: Path) -> Any:
    from torch.utils.cpp_extension import load

    build_dir.mkdir(parents=True, exist_ok=True)
    return load(
        name="privateuse1_floor",
        sources=[str(SOURCE)],
        extra_cflags=["-O2"],
        build_directory=str(build_dir),
        verbose=False,
    )


def install_device(build_dir: Path) -> Any:
    """The extension loaded, and PrivateUse1 named `neuron` with the device module torch asks
    for."""
    import torch

    extension = build(build_dir)
    torch.utils.rename_privateuse1_backend("neuron")
    module = types.ModuleType("neuron")
    module.is_available = lambda: True  # type: ignore[attr-defined]
    module.device_count = lambda: 1  # type: ignore[attr-defined]
    module.current_device = lambda: 0  # type: ignore[attr-defined]
    module._is_in_bad_fork = lambda: False  # type: ignore[attr-defined]
    module.manual_seed_all = lambda seed: None  # type: ignore[attr-defined]
    module.get_amp_supported_dtype = lambda: [torch.float16, torch.bfloat16]  # type: ignore[attr-defined]
    torch._register_device_module("neuron", module)
    torch.utils.generate_methods_for_privateuse1_backend()
    return extension


def _graph_runner_backend() -> Any:
    """AOTAutograd whose graphs run in TorchScript's interpreter, as the simulated device's
    compile backend runs them (`neuron_sim.graph_runner`), without its matrix checks."""
    from neuron_sim import graph_runner  # imports only torch: the device stays uninstalled
    from torch._dynamo.backends.common import aot_autograd
    from torch._functorch.aot_autograd import make_boxed_func

    def compiler(graph: Any, inputs: Any) -> Any:
        return make_boxed_func(graph_runner.runnable(graph))

    return aot_autograd(fw_compiler=compiler, bw_compiler=compiler)


def _loss_after(build_step: Any, device: str, steps: int) -> float:
    """The loss of the last of `steps` training steps from the seeded start."""
    step = runtime_overhead.step_fn(build_step, device, None)
    losses = [step() for _ in range(steps)]
    return float(losses[-1].detach().cpu())


def _backward_us(device: str, device_thread: bool = False, calls: int = 3000) -> float:
    """Median µs of `backward()` through two tiny ops: what the autograd engine costs a call,
    on the calling thread or (`device_thread`) on the engine's thread for the device."""
    import torch

    weight = torch.ones(4, device=device, requires_grad=True)
    times = []
    with torch.autograd.set_multithreading_enabled(device_thread):
        for _ in range(calls):
            loss = (weight * 2).sum()
            start = time.perf_counter()
            loss.backward()
            times.append(time.perf_counter() - start)
            weight.grad = None
    return 1e6 * statistics.median(times[calls // 6 :])


def _one_run(args: argparse.Namespace) -> dict[str, Any]:
    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    extension = install_device(args.build_dir)
    # As the simulated device does (neuron_sim.patches): this thread runs its own backward.
    torch._C._set_multithreading_enabled(False)
    scripted = _graph_runner_backend()
    results, losses, ops = {}, {}, {}
    for name, build_step in runtime_overhead.WORKLOADS.items():
        steps = {
            label: runtime_overhead.step_fn(
                build_step, device, scripted if backend == GRAPH_RUNNER else backend
            )
            for label, device, backend in ROWS
        }
        before = extension.ops_run()
        steps["C++ device eager"]()
        ops[name] = extension.ops_run() - before
        results[name] = runtime_overhead.time_round_robin(steps, args.steps, args.repeats)
        losses[name] = {device: _loss_after(build_step, device, 5) for device in ("cpu", "neuron")}
    backward = {
        "cpu": _backward_us("cpu"),
        "neuron": _backward_us("neuron"),
        "neuron, device thread": _backward_us("neuron", device_thread=True),
    }
    return {
        "torch": torch.__version__,
        "results": results,
        "losses": losses,
        "ops": ops,
        "backward_us": backward,
    }


def _report(runs: list[dict[str, Any]], args: argparse.Namespace) -> None:
    print(
        f"PrivateUse1 C++ fallback vs plain CPU: {args.runs} runs x ({args.steps} steps x "
        f"{args.repeats} repeats), torch {runs[0]['torch']}, {args.threads} thread(s); "
        "medians over runs of each run's median ms/step (wall)"
    )
    for name in runtime_overhead.WORKLOADS:
        per_run = [run["results"][name] for run in runs]
        print(f"\n{name} ({runs[0]['ops'][name]} ops through the fallback per eager step)")
        print(f"  {'configuration':<36} {'ms/step':>8} {'/ cpu eager':>12} {'/ cpu aot_eager':>16}")
        for label, _device, backend in ROWS:
            ms = statistics.median(r[label]["wall_ms"] for r in per_run)
            to_eager = [r[label]["wall_ms"] / r[BASELINE]["wall_ms"] for r in per_run]
            line = f"  {label:<36} {ms:>8.2f} {statistics.median(to_eager):>11.2f}x"
            if backend:
                to_aot = [r[label]["wall_ms"] / r[AOT_ROW]["wall_ms"] for r in per_run]
                line += f" {statistics.median(to_aot):>15.2f}x"
            runs_text = " ".join(f"{x:.2f}" for x in to_eager)
            print(f"{line}   (runs: {runs_text})")
        loss = runs[0]["losses"][name]
        print(f"  loss after 5 steps: cpu {loss['cpu']:.7f}, C++ device {loss['neuron']:.7f}")
    cpu, inline, threaded = (
        statistics.median(run["backward_us"][d] for run in runs)
        for d in ("cpu", "neuron", "neuron, device thread")
    )
    print(
        f"\n(w * 2).sum().backward(): cpu {cpu:.0f} us, C++ device {inline:.0f} us on the calling"
        f" thread (as timed above), {threaded:.0f} us on the autograd engine's device thread"
        " (torch's default for a non-CPU device)"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    runtime_overhead.add_run_options(parser)
    parser.add_argument(
        "--build-dir",
        type=Path,
        default=DEFAULT_BUILD_DIR,
        help="where the extension is built (kept: later runs load it)",
    )
    args = parser.parse_args()
    if args.one_run:
        print(json.dumps(_one_run(args)))
        return 0
    try:
        build(args.build_dir)  # once, here: the runs load what it built
    except Exception as exc:  # no compiler, no ninja: say so, estimate nothing
        print(f"privateuse1_floor: cannot build the extension: {exc}", file=sys.stderr)
        return 2
    # The simulated device must stay off: it would claim the same device.
    env = {k: v for k, v in os.environ.items() if k != runtime_overhead.SIM_ENV}
    runs = runtime_overhead.child_runs(__file__, env, args.runs)
    if isinstance(runs, int):
        return runs
    if args.json:
        Path(args.json).write_text(json.dumps({"args": vars(args), "runs": runs}, default=str))
    _report(runs, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
