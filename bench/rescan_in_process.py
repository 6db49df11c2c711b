"""Re-scans in a fresh process, side by side with the same re-scans in one long-lived process.

What a process that stays up between scans (a watch mode, a server) would save on the warm and
one-changed-file rows of `scan_bench.py`, before any incremental work: the long-lived process
keeps its imports, the loaded rules, matrix and API map and its other in-memory caches, and
runs the CLI's `main` again for each re-scan, stdout to a file as the fresh process's is. What
both still do every time -- walk and stat the tree, look up every file's result, assemble and
write the report -- is what is left. Samples alternate between the two; medians are printed,
with the ratio of each to one cold scan (fresh cache, fresh process) of the same tree.

A third row is a floor for any re-scan in a fresh process: a Python process that only walks and
stats the tree as a scan does and writes the last report again (copied in the kernel), with no
import of neuron-migrate and no result looked up.

    python bench/rescan_in_process.py                    # (b), 5,000 files, 7 runs each way
    python bench/rescan_in_process.py --corpus a --runs 11
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import corpora
from scan_bench import compile_bytecode, corpora_jobs, measured, neuron_migrate_command

from neuron_migrate.incremental.stat_index import SETTLED_NS
from neuron_migrate.project.discover import discover

SETTLE_S = SETTLED_NS / 1e9 + 0.2
# The floor: `python -c FLOOR ROOT REPORT` walks and stats ROOT's Python files in a scan's order
# and copies REPORT to stdout.
FLOOR = """
import os, sys
def walk(folder):
    with os.scandir(folder) as listing:
        entries = sorted(listing, key=lambda e: e.name + "/" if e.is_dir() else e.name)
    for entry in entries:
        if entry.is_dir():
            walk(entry.path)
        elif entry.name.endswith(".py"):
            entry.stat()
walk(sys.argv[1])
with open(sys.argv[2], "rb") as report:
    size = os.fstat(report.fileno()).st_size
    sent = 0
    while sent < size:
        sent += os.sendfile(1, report.fileno(), sent, size - sent)
"""


def serve() -> int:
    """The long-lived process: one JSON request a line on stdin ({"argv", "stdout"}), one JSON
    reply a line ({"wall_s", "cpu_s", "code"}) on the stdout it started with."""
    from neuron_migrate.cli import main

    replies = os.fdopen(os.dup(1), "w")
    for line in sys.stdin:
        request = json.loads(line)
        out = os.open(request["stdout"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        saved = os.dup(1)
        os.dup2(out, 1)
        os.close(out)
        started, cpu = time.perf_counter(), time.process_time()
        try:
            main(request["argv"])
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        sys.stdout.flush()
        wall, cpu = time.perf_counter() - started, time.process_time() - cpu
        os.dup2(saved, 1)
        os.close(saved)
        replies.write(json.dumps({"wall_s": wall, "cpu_s": cpu, "code": code}) + "\n")
        replies.flush()
    return 0


class Server:
    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, __file__, "--serve"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def run(self, argv: list[str], stdout: Path) -> dict[str, float]:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(json.dumps({"argv": argv, "stdout": str(stdout)}) + "\n")
        self.process.stdin.flush()
        reply: dict[str, float] = json.loads(self.process.stdout.readline())
        if reply["code"] not in (0, 1):  # 1: the gate failed, as it does on these corpora
            raise SystemExit(f"scan exited {reply['code']} in the long-lived process")
        return reply

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait()


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", choices=("a", "b"), default="b")
    parser.add_argument("--files", type=int, default=5000, help="size of (b) (default 5000)")
    parser.add_argument("--seed", type=int, default=7, help="generator seed of (b)")
    parser.add_argument("--a-limit", type=int, default=0, help="first N torch files (0: all)")
    parser.add_argument("--runs", type=int, default=7, help="samples of each row, each way")
    parser.add_argument("--jobs", "-j", type=int, default=corpora_jobs())
    parser.add_argument(
        "--workdir",
        type=Path,
        default=Path(tempfile.gettempdir()) / "neuron-migrate-bench",
        help="where the corpora live (shared with scan_bench.py)",
    )
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.serve:
        return serve()
    args.workdir.mkdir(parents=True, exist_ok=True)
    compile_bytecode()
    if args.corpus == "a":
        root = corpora.copy_torch_sources(args.workdir, args.a_limit)
    else:
        root = corpora.generated_monorepo(args.workdir, args.files, args.seed)
    files = [Path(item.path) for item in discover(root)]
    changed = corpora.file_to_change(files)
    original = changed.read_bytes()
    cache = args.workdir / "cache" / f"in-process-{args.corpus}"
    report = args.workdir / "out" / f"in-process-{args.corpus}.json"
    report.parent.mkdir(parents=True, exist_ok=True)
    argv_scan = ["scan", "--format", "json", "-j", str(args.jobs), "--cache-dir", str(cache)]
    argv_scan.append(str(root))
    fresh = [*neuron_migrate_command(), *argv_scan]

    shutil.rmtree(cache, ignore_errors=True)
    cold = float(measured(fresh, report)["wall_s"])  # type: ignore[arg-type]
    last_report = report.with_name(f"{report.stem}-last.json")
    shutil.copyfile(report, last_report)
    floor = [sys.executable, "-c", FLOOR, str(root), str(last_report)]
    samples: dict[tuple[str, str], list[float]] = {}

    def sample(row: str, way: str) -> None:
        if row == "floor":
            wall = float(measured(floor, report)["wall_s"])  # type: ignore[arg-type]
        elif way == "fresh":
            wall = float(measured(fresh, report)["wall_s"])  # type: ignore[arg-type]
        else:
            wall = server.run(argv_scan, report)["wall_s"]
        samples.setdefault((row, way), []).append(wall)

    server = Server()
    try:
        server.run(argv_scan, report)  # its imports and loads: not a re-scan
        for run in range(args.runs):
            print(f"  run {run + 1} of {args.runs}", file=sys.stderr, flush=True)
            for way in ("fresh", "kept"):
                sample("warm", way)
            sample("floor", "fresh")
            for way in ("fresh", "kept"):
                # New bytes every time (never a cache hit), put back after.
                edit = f"\n# bench edit {run} {way} {time.time_ns()}\n"
                changed.write_bytes(original + edit.encode())
                try:
                    sample("one", way)
                finally:
                    changed.write_bytes(original)
            # The file put back was written just now, and the stat index records only files
            # written `SETTLED_NS` before a scan: let it settle, and re-scan once unmeasured,
            # so that the next warm rows find the tree as recorded.
            time.sleep(SETTLE_S)
            server.run(argv_scan, report)
    finally:
        server.close()
        changed.write_bytes(original)

    print(f"re-scans of {root.name}: {len(files):,} files, jobs {args.jobs}, {args.runs} runs")
    print(f"cold scan (fresh cache, fresh process): {cold:.2f} s")
    print(f"{'row':<26} {'fresh process':>20} {'one process kept':>20}")
    rows = (
        ("warm", "warm (unchanged)"),
        ("one", "1 file changed"),
        ("floor", "floor: stat, write report"),
    )
    for row, label in rows:
        cells = []
        for way in ("fresh", "kept"):
            if (row, way) not in samples:
                cells.append("-")
                continue
            median = statistics.median(samples[(row, way)])
            cells.append(f"{median * 1000:8.0f} ms {median / cold:7.2%}")
        print(f"{label:<26} {cells[0]:>20} {cells[1]:>20}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
