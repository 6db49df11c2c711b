"""Where the test suite's time goes: each part of tests/ run by itself, its wall time and the CPU
time of pytest and every child it waited for (torch programs, CLI runs).

On a shared machine wall time says more about the neighbours than the suite; CPU time is what
two processes (`pytest -n 2`) share out on two cores, so a quiet 2-core machine cannot run the
suite in less than about half the total. Extra arguments go to each pytest run.

    python bench/suite_time.py                     # every part, one after another
    python bench/suite_time.py tests/e2e tests/runtime -- -n 2 --dist worksteal
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _parts() -> list[str]:
    """Each folder of tests/ with tests in it, then the test files at its top, together."""
    tests = REPO / "tests"
    folders = sorted(p for p in tests.iterdir() if p.is_dir() and any(p.rglob("test_*.py")))
    files = sorted(p for p in tests.glob("test_*.py"))
    parts = [str(p.relative_to(REPO)) for p in folders]
    return [*parts, " ".join(str(p.relative_to(REPO)) for p in files)]


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("parts", nargs="*", help="folders or files of tests/ (default: each)")
    argv = sys.argv[1:]
    split = argv.index("--") if "--" in argv else len(argv)
    args, pytest_args = parser.parse_args(argv[:split]), argv[split + 1 :]
    total_wall = total_cpu = 0.0
    print(f"{'part':<40} {'wall s':>8} {'cpu s':>8}  load")
    for part in args.parts or _parts():
        cpu, wall = _children_cpu(), time.monotonic()
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest",
                "-q",
                "-p",
                "no:cacheprovider",
                *part.split(),
                *pytest_args,
            ],
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            check=False,
        )
        wall, cpu = time.monotonic() - wall, _children_cpu() - cpu
        total_wall, total_cpu = total_wall + wall, total_cpu + cpu
        load = " ".join(f"{x:.1f}" for x in os.getloadavg())
        tail = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
        print(f"{part[:40]:<40} {wall:8.0f} {cpu:8.0f}  {load}  {tail}", flush=True)
    print(f"{'total':<40} {total_wall:8.0f} {total_cpu:8.0f}")


if __name__ == "__main__":
    main()
