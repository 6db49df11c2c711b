"""Start-up of the command line, before and after a change: `--version`, `--help`, and a scan
of an empty folder, each run N times in fresh processes by one interpreter from two checkouts.

    .venv/bin/python bench/startup.py          # this tree against 25c33ec (main before typer)
    .venv/bin/python bench/startup.py --before main -n 30

The checkout of `--before` (a git ref) is laid out in a temporary folder (`git archive`); each
process runs `python -m neuron_migrate ...` with that folder, or this tree, first on its path.
The two are interleaved run by run, so that what else the machine does falls on both alike.
Printed: the median wall and CPU milliseconds (CPU: the child's user + system time, which
other jobs on a shared machine do not add to) of each, and the ratio after / before.
"""

from __future__ import annotations

import argparse
import io
import os
import resource
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]

COMMANDS = {
    "--version": ["--version"],
    "--help": ["--help"],
    "scan (empty folder)": ["scan", "{empty}", "--no-cache"],
}


def _checkout(ref: str, into: Path) -> Path:
    archive = subprocess.run(
        ["git", "-C", str(HERE), "archive", ref, "neuron_migrate", "rules", "compat_matrix"],
        capture_output=True,
        check=True,
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return into


def _once(tree: Path, words: list[str], cwd: Path) -> tuple[float, float]:
    """Wall and CPU seconds of one `neuron-migrate WORDS` from `tree`."""
    env = {**os.environ, "PYTHONPATH": str(tree), "NEURON_MIGRATE_NO_SERVER": "1"}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "neuron_migrate", *words],
        cwd=cwd,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(
            f"{tree}: neuron-migrate {' '.join(words)} failed:\n{done.stderr.decode()}"
        )
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--before", default="25c33ec", help="git ref to compare with (25c33ec: main before typer)"
    )
    parser.add_argument("-n", "--runs", type=int, default=20, help="runs of each (20)")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="startup-bench-") as scratch:
        root = Path(scratch)
        before = _checkout(options.before, root / "before")
        empty = root / "empty"
        empty.mkdir()
        trees = {"before": before, "after": HERE}
        print(f"before: {options.before}; after: this tree; {options.runs} runs each; ms (median)")
        print(
            f"{'command':<22}{'before wall':>12}{'after wall':>12}{'ratio':>7}"
            f"{'before CPU':>12}{'after CPU':>12}{'ratio':>7}"
        )
        for label, template in COMMANDS.items():
            words = [w.format(empty=empty) for w in template]
            times: dict[str, list[tuple[float, float]]] = {name: [] for name in trees}
            for tree in trees.values():
                _once(tree, words, root)  # compiles the checkout's bytecode; not counted
            for _ in range(options.runs):
                for name, tree in trees.items():
                    times[name].append(_once(tree, words, root))
            wall = {n: statistics.median(t[0] for t in ts) * 1000 for n, ts in times.items()}
            cpu = {n: statistics.median(t[1] for t in ts) * 1000 for n, ts in times.items()}
            print(
                f"{label:<22}{wall['before']:>12.0f}{wall['after']:>12.0f}"
                f"{wall['after'] / wall['before']:>7.2f}"
                f"{cpu['before']:>12.0f}{cpu['after']:>12.0f}{cpu['after'] / cpu['before']:>7.2f}"
            )


if __name__ == "__main__":
    main()
