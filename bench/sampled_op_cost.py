"""CPU cost of one op call on the simulated device while the op's user lines are sampled (an
op's first LOCATION_SAMPLES calls walk the Python stack for its user frames), with the op's
line `--depth` user frames deep; `--samples 0` gives the same calls without the walk.

    python bench/sampled_op_cost.py [--depth 8] [--calls 20000] [--repeats 7] [--samples N]

Installs the device in this process (NEURON_MIGRATE_SIM_ENGINE picks the engine), makes every
call a sampled one (unless `--samples` says otherwise) and prints the median CPU microseconds a
call of `x.add_(0)` takes over the repeats. Compare two versions of the runtime by running each
in turn: the machine's load moves every figure, so interleave the runs. A benchmark, not a test.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import warnings
from typing import Any


def _nested(depth: int, call: Any) -> Any:
    """`call()` from `depth` user frames below this one."""
    return _nested(depth - 1, call) if depth else call()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--depth", type=int, default=8)
    parser.add_argument("--calls", type=int, default=20000)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--samples", type=int, default=1 << 62, help="sampled calls per op")
    args = parser.parse_args()

    warnings.simplefilter("ignore")
    import torch

    torch.set_num_threads(1)
    from neuron_sim import native, recorder, tensor
    from neuron_sim.install import install

    # Every module that took the figure at import time gets the one asked for.
    recorder.LOCATION_SAMPLES = native.LOCATION_SAMPLES = args.samples
    tensor.LOCATION_SAMPLES = args.samples
    install()
    x = torch.zeros(16, device="neuron")

    def calls() -> None:
        for _ in range(args.calls):
            x.add_(0)

    timings = []
    for _ in range(args.repeats):
        started = time.process_time()
        _nested(args.depth, calls)
        timings.append((time.process_time() - started) / args.calls * 1e6)
    engine = "native" if native._engine is not None else "python"
    print(
        f"{engine} engine, depth {args.depth}, samples {args.samples}: "
        f"{statistics.median(timings):.3f} us a call (median of {args.repeats}; "
        f"min {min(timings):.3f}, max {max(timings):.3f})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
