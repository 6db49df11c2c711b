"""CPU time of `neuron-migrate scan --no-cache --jobs 1` of one tree, by the code of an earlier
revision and by the working tree's, run in turn.

    python bench/scan_before_after.py TREE --before REV [--runs 15]

The earlier code is `git archive REV`, unpacked in a temporary folder and put first on
PYTHONPATH; both run with this interpreter (so with the same installed packages). Prints each
side's median CPU time (the scan process and its workers: what other jobs on a shared machine
take does not count), the ratio of the medians, and how many files and findings each side
reported: a tree with file kinds only the newer code reads shows what reading them costs.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import resource
import statistics
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def scan_cpu(code: Path, tree: Path) -> tuple[float, int, int]:
    """(CPU seconds, files, findings) of one scan by the package under `code`."""
    env = {**os.environ, "PYTHONPATH": str(code), "NEURON_MIGRATE_NO_SERVER": "1"}
    command = [sys.executable, "-m", "neuron_migrate", "scan", "--no-cache", "--jobs", "1"]
    command += ["--format", "json", "--fail-on", "none", str(tree)]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(command, env=env, cwd=code, capture_output=True, text=True, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    report = json.loads(done.stdout)
    return cpu, report["summary"]["files"]["total"], len(report["findings"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tree", type=Path)
    parser.add_argument("--before", required=True, help="a git revision of this repository")
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        archive = subprocess.run(
            ["git", "-C", str(REPO), "archive", args.before], capture_output=True, check=True
        ).stdout
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(folder, filter="data")
        sides = {"before": Path(folder), "after": REPO}
        samples: dict[str, list[float]] = {name: [] for name in sides}
        counts: dict[str, tuple[int, int]] = {}
        for _ in range(args.runs):
            for name, code in sides.items():
                cpu, files, findings = scan_cpu(code, args.tree.resolve())
                samples[name].append(cpu)
                counts[name] = (files, findings)
    for name, values in samples.items():
        files, findings = counts[name]
        print(
            f"{name}: median CPU {statistics.median(values):.3f} s "
            f"({' '.join(f'{v:.2f}' for v in values)}); {files} files, {findings} findings"
        )
    ratio = statistics.median(samples["after"]) / statistics.median(samples["before"])
    print(f"ratio of medians (after / before): {ratio:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
