"""How the analyses grow with the shape of a file: generated chains and nestings at n and 2n.

    python bench/analysis_growth.py                   # every shape, n = 50 and 100, 5 repeats
    python bench/analysis_growth.py --n 40 --shapes self-chain,name-chain
    python bench/analysis_growth.py --budget 20       # seconds one measurement may take

Each shape is one generated module whose cost is a chain or a nesting of `n` links. For each
shape, the scan's analysis of it (`scan.analysis.analyze_source`: parse, sites, placement,
classification) and its rewrite (`rewrite.codemod.engine.rewrite_source`) are timed in this
process at n and 2n (CPU time; nested blocks and functions at half of n: Python allows 100
levels of indentation); the line gives both medians and their ratio. A linear analysis
doubles (2x) when the links double; the target is at most about 2.5x. A measurement that runs
past `--budget` is stopped and printed as such (an exponential one does at n = 30).
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import sys
import time
from collections.abc import Callable

from neuron_migrate.matrix.versions import resolve_version
from neuron_migrate.rewrite.codemod.engine import rewrite_source
from neuron_migrate.ruleset import load_ruleset
from neuron_migrate.scan.analysis import analyze_source
from neuron_migrate.scan.scan_data import context_for

HEAD = ["import torch", "import torch_xla.core.xla_model as xm", ""]


def self_chain(n: int) -> str:
    """`self.a1 = self.a0 + self.a0; self.a2 = self.a1 + self.a1; ...` (a trainer's state)."""
    body = ["class M:", "    def __init__(self):", "        self.a0 = torch.randn(3)"]
    body += [f"        self.a{i} = self.a{i - 1} + self.a{i - 1}" for i in range(1, n + 1)]
    body += ["", "    def step(self):", f"        y = self.a{n}.sum()", "        xm.mark_step()"]
    return "\n".join([*HEAD, *body, "        return y", ""])


def name_chain(n: int) -> str:
    """`a1 = a0 + a0; a2 = a1 + a1; ...` in a function."""
    body = ["def f(device):", "    a0 = torch.randn(3)"]
    body += [f"    a{i} = a{i - 1} * a{i - 1}" for i in range(1, n + 1)]
    body += [f"    y = torch.add(a{n}, 1).sum()", "    xm.mark_step()", "    return y"]
    return "\n".join([*HEAD, *body, ""])


def branch_chain(n: int) -> str:
    """Every name bound twice, each from the one before (`if c: a1 = a0 else: a1 = a0`)."""
    body = ["def f(c):", "    a0 = torch.randn(3)", "    d0 = xm.xla_device()"]
    for i in range(1, n + 1):
        body += [
            "    if c:",
            f"        a{i} = a{i - 1} + 1",
            f"        d{i} = d{i - 1}",
            "    else:",
            f"        a{i} = a{i - 1} - 1",
            f"        d{i} = d{i - 1}",
        ]
    body += [f"    y = torch.zeros(3, device=d{n}) + a{n}.sum()", "    xm.mark_step()"]
    return "\n".join([*HEAD, *body, "    return y", ""])


def alias_chain(n: int) -> str:
    """`m1 = m0` twice a link, `m0 = xm`: a module alias followed through every link."""
    body = ["def f(c):", "    m0 = xm"]
    for i in range(1, n + 1):
        body += ["    if c:", f"        m{i} = m{i - 1}", "    else:", f"        m{i} = m{i - 1}"]
    body += [f"    m{n}.mark_step()", f"    return m{n}.xla_device()"]
    return "\n".join([*HEAD, *body, ""])


def nested_expression(n: int) -> str:
    """`((((x + x) * x) + x) ...)`: one expression nested n deep, placed as one op."""
    expr = "x"
    for i in range(n):
        expr = f"({expr} {'+*'[i % 2]} x)"
    body = ["def f():", "    x = torch.randn(3)", f"    y = torch.relu({expr}).cpu()"]
    return "\n".join([*HEAD, *body, "    xm.mark_step()", "    return y", ""])


def nested_functions(n: int) -> str:
    """A function in a function, n deep, each using torch_xla and the names above it."""
    body = []
    for i in range(n):
        pad = "    " * i
        body += [f"{pad}def f{i}(x{i}):", f"{pad}    d{i} = xm.xla_device()"]
        body += [f"{pad}    t{i} = torch.ones(3, device=d{i}) + x{i}"]
    pad = "    " * n
    body += [f"{pad}xm.mark_step()", f"{pad}return t{n - 1}.sum()"]
    return "\n".join([*HEAD, *body, ""])


def nested_blocks(n: int) -> str:
    """`if` in `if`, n deep, each with a torch_xla call and a name bound from the one above."""
    body = ["def f(c):", "    a0 = torch.randn(3)"]
    for i in range(1, n + 1):
        pad = "    " * i
        body += [f"{pad}if c > {i}:", f"{pad}    a{i} = a{i - 1} + 1", f"{pad}    xm.mark_step()"]
    body += [f"    return torch.add(a{n}, 1)"]
    return "\n".join([*HEAD, *body, ""])


def many_methods(n: int) -> str:
    """A class of n methods, each reading every attribute set so far (`self.w3 = self.w2 ...`)."""
    body = ["class M:", "    def __init__(self):", "        self.w0 = torch.randn(3)"]
    for i in range(1, n + 1):
        reads = " + ".join(f"self.w{j}" for j in range(max(0, i - 4), i))
        body += [f"    def m{i}(self):", f"        self.w{i} = {reads}", "        xm.mark_step()"]
        body += [f"        return self.w{i}.sum()"]
    return "\n".join([*HEAD, *body, ""])


# Each shape, with the share of n its smaller file has.
SHAPES: dict[str, tuple[Callable[[int], str], float]] = {
    "self-chain": (self_chain, 1),
    "name-chain": (name_chain, 1),
    "branch-chain": (branch_chain, 1),
    "alias-chain": (alias_chain, 1),
    "many-methods": (many_methods, 1),
    "nested-expression": (nested_expression, 1),
    "nested-functions": (nested_functions, 0.5),
    "nested-blocks": (nested_blocks, 0.5),
}


class _Stopped(BaseException):
    """Not an Exception: the code measured catches those (a file's bug is its error)."""


def timed(work: Callable[[], object], budget: float) -> float | None:
    """CPU seconds `work` took, or None when it ran past `budget` seconds of wall time."""

    def stop(signum: int, frame: object) -> None:
        raise _Stopped

    previous = signal.signal(signal.SIGALRM, stop)
    signal.setitimer(signal.ITIMER_REAL, budget)
    start = time.process_time()  # CPU time: what other jobs on the machine take does not count
    try:
        work()
    except _Stopped:
        return None
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    return time.process_time() - start


def median_of(work: Callable[[], object], repeats: int, budget: float) -> float | None:
    samples = []
    for _ in range(repeats):
        took = timed(work, budget)
        if took is None:
            return None
        samples.append(took)
    return statistics.median(samples)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=50, help="links of the smaller file (default 50)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--budget", type=float, default=20.0, help="seconds a measurement may take")
    parser.add_argument("--shapes", default=",".join(SHAPES))
    args = parser.parse_args(argv)
    os.environ["NEURON_MIGRATE_FILE_BUDGET_S"] = "0"  # this bench stops a measurement itself
    context = context_for(resolve_version(None))
    ruleset = load_ruleset()
    print(f"{'shape':<18} {'analysis':<8} {'n':>4} {'at n':>9} {'at 2n':>9}  ratio")
    worst = 0.0
    for shape in args.shapes.split(","):
        make_text, share = SHAPES[shape]
        n = max(1, int(args.n * share))
        texts = [make_text(n), make_text(2 * n)]
        for title, make in (
            ("scan", lambda t: lambda: analyze_source(t, "f.py", context)),
            ("rewrite", lambda t: lambda: rewrite_source(t, ruleset)),
        ):
            small, large = (median_of(make(t), args.repeats, args.budget) for t in texts)
            cells = [f"{v * 1000:7.1f}ms" if v is not None else "  stopped" for v in (small, large)]
            ratio = f"{large / small:5.2f}x" if small and large else "    -"
            if small and large:
                worst = max(worst, large / small)
            print(f"{shape:<18} {title:<8} {n:>4} {cells[0]:>9} {cells[1]:>9}  {ratio}", flush=True)
    print(f"worst ratio: {worst:.2f}x (target: at most about 2.5x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
