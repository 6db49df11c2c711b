"""Side-by-side benchmark of `neuron-migrate scan`/`rewrite` against parse-only floors and TorchFix.

    python bench/scan_bench.py [--quick] [--runs 3] [--jobs N] [--corpora a,b] [--json OUT]

Builds or reuses the corpora (see corpora.py) under --workdir, then measures every row as a
separate whole process (bench/measure.py: wall time, CPU time of the process tree, peak RSS per
process and of the tree), `--runs` times, rows interleaved within each run so that load from
elsewhere spreads over all of them, and prints the medians with the ratios the targets name.
"""

from __future__ import annotations

import argparse
import datetime
import importlib.util
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import corpora

from neuron_migrate.incremental.stat_index import SETTLED_NS

BENCH = Path(__file__).resolve().parent
OK_CODES = (0, 1)  # scan's gate and rewrite's "would change files" exit 1 by design


@dataclass
class Row:
    key: str
    label: str
    scope: str  # which files: "all" or "xla"
    samples: list[dict[str, object]] = field(default_factory=list)
    note: str = ""  # why the row has no numbers
    # A row measured beside a baseline: (its wall s, the baseline's) of each pair.
    pairs: list[tuple[float, float]] = field(default_factory=list)

    def paired_ratios(self) -> list[float]:
        return [top / bottom for top, bottom in self.pairs if bottom]

    def median(self, metric: str) -> float | None:
        values = [float(s[metric]) for s in self.samples]  # type: ignore[arg-type]
        return statistics.median(values) if values else None

    def worker_mb(self) -> float | None:
        """Peak RSS of the largest worker (the main process when the run had no workers)."""
        values = []
        for sample in self.samples:
            workers = sample["worker_peaks_mb"]
            assert isinstance(workers, list)
            values.append(max(workers) if workers else float(sample["root_peak_mb"]))  # type: ignore[arg-type]
        return statistics.median(values) if values else None


@dataclass
class Tools:
    scan: list[str]
    rewrite: list[str] | None
    rewrite_note: str
    rewrite_caches: bool  # the build has rewrite's result cache (`--cache-dir`)
    torchfix: list[str] | None
    torchfix_note: str
    server_note: str  # why re-scans are not also handed to `neuron-migrate server`


# -- running --------------------------------------------------------------------------------


def measured(command: list[str], stdout: Path | None = None) -> dict[str, object]:
    wrapper = [sys.executable, str(BENCH / "measure.py")]
    if stdout is not None:
        wrapper += ["--stdout", str(stdout)]
    done = subprocess.run([*wrapper, "--", *command], capture_output=True, text=True, check=True)
    result: dict[str, object] = json.loads(done.stdout)
    return result


def record(row: Row, command: list[str], stdout: Path | None = None) -> dict[str, object] | None:
    if row.note:
        return None
    sample = measured(command, stdout)
    tail = str(sample["stderr_tail"]).strip().splitlines()
    # Exit 1 is a verdict for scan and rewrite, but also what an uncaught exception gives.
    if sample["rc"] not in OK_CODES or "Traceback (most recent call last):" in tail:
        row.note = f"failed (exit {sample['rc']}): {tail[-1] if tail else 'no output'}"
        return None
    if stdout is not None and stdout.suffix == ".json":
        try:
            json.loads(stdout.read_text())
        except ValueError:
            row.note = "failed: stdout is not clean JSON"
            return None
    row.samples.append(sample)
    return sample


def parse_only(parser: str, file_list: Path, jobs: int) -> list[str]:
    return [sys.executable, str(BENCH / "parse_only.py"), parser, str(file_list), "-j", str(jobs)]


# -- tools ----------------------------------------------------------------------------------


def compile_bytecode() -> None:
    """Measured processes start from compiled bytecode, as after a wheel install. An editable
    install under PYTHONDONTWRITEBYTECODE would otherwise compile the package again in every
    process (about 25 ms of each start-up on the machine in README.md)."""
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    spec = importlib.util.find_spec("neuron_migrate")
    if spec is not None and spec.origin is not None:
        package = str(Path(spec.origin).parent)
        # A read-only install may refuse: its own bytecode, if any, is used as it is.
        subprocess.run([sys.executable, "-m", "compileall", "-q", package], check=False)


def neuron_migrate_command() -> list[str]:
    """The installed console script, as a user runs it; `python -m` where there is none."""
    script = Path(sys.executable).with_name("neuron-migrate")
    return [str(script)] if script.exists() else [sys.executable, "-m", "neuron_migrate"]


def find_tools(args: argparse.Namespace, workdir: Path) -> Tools:
    scan = neuron_migrate_command()
    help_run = subprocess.run([*scan, "rewrite", "--help"], capture_output=True, text=True)
    if help_run.returncode == 0:
        jobs = ["-j", str(args.jobs)] if "--jobs" in help_run.stdout else []
        rewrite, rewrite_note = [*scan, "rewrite", *jobs], ""
    else:
        rewrite, rewrite_note = None, "not available: this build has no `rewrite` command"
    caches = "--cache-dir" in help_run.stdout
    torchfix, torchfix_note = (None, "skipped (--skip torchfix)")
    if "torchfix" not in args.skip:
        torchfix, torchfix_note = find_torchfix(args, workdir)
    server_run = subprocess.run([*scan, "server", "--help"], capture_output=True, text=True)
    server_note = "" if server_run.returncode == 0 else "not available: no `server` command"
    return Tools(scan, rewrite, rewrite_note, caches, torchfix, torchfix_note, server_note)


@contextmanager
def served(tools: Tools) -> Iterator[None]:
    """A `neuron-migrate server` for the block, in a folder of its own, which the commands
    measured inside hand their re-scans to. Outside such a block none runs."""
    folder = tempfile.mkdtemp(prefix="nm-bench-server-")  # short: a socket's path is limited
    os.environ["NEURON_MIGRATE_SERVER_DIR"] = folder
    try:
        subprocess.run([*tools.scan, "server", "start"], check=True, capture_output=True)
        yield
    finally:
        subprocess.run([*tools.scan, "server", "stop"], check=False, capture_output=True)
        del os.environ["NEURON_MIGRATE_SERVER_DIR"]
        shutil.rmtree(folder, ignore_errors=True)


# After a served command the server forks and warms its next spare (about 0.1 s, beside the
# command); a command that comes sooner waits for it. Edits come seconds apart.
SERVER_PAUSE_S = 0.5


def find_torchfix(args: argparse.Namespace, workdir: Path) -> tuple[list[str] | None, str]:
    """TorchFix 0.7 from --torchfix, or from its own venv in the workdir (installed on demand:
    it pins libcst < 1.6, which the project's environment does not have)."""
    exe = Path(args.torchfix) if args.torchfix else workdir / "torchfix-venv" / "bin" / "torchfix"
    if not exe.exists() and not args.torchfix and not args.no_install:
        venv = exe.parents[1]
        steps = [
            [sys.executable, "-m", "venv", "--clear", str(venv)],
            [str(venv / "bin" / "pip"), "install", "-q", "torchfix==0.7.*"],
        ]
        for step in steps:
            done = subprocess.run(step, capture_output=True, text=True)
            if done.returncode != 0:
                reason = (done.stderr.strip().splitlines() or ["unknown error"])[-1]
                return None, f"not obtainable: `{' '.join(step[-2:])}` failed: {reason}"
    if not exe.exists():
        return None, f"not installed at {exe}"
    version = subprocess.run([str(exe), "--version"], capture_output=True, text=True).stdout.strip()
    if not version.startswith("0.7"):
        return None, f"found TorchFix {version or '?'} at {exe}, not 0.7"
    return [str(exe), "-j", str(args.jobs)], ""


# -- one corpus -----------------------------------------------------------------------------


def bench_corpus(
    corpus: corpora.Corpus,
    tools: Tools,
    args: argparse.Namespace,
    workdir: Path,
    double: corpora.Corpus | None,
) -> list[Row]:
    jobs = str(args.jobs)
    rows = {
        "ast": Row("ast", "ast.parse only", "all"),
        "libcst": Row("libcst", "libcst parse only", "all"),
        "nocache": Row("nocache", "scan --no-cache", "all"),
        "cold": Row("cold", "scan cold (fresh cache)", "all"),
        "warm": Row("warm", "scan warm (unchanged)", "all"),
        "one": Row("one", "scan warm, 1 file changed", "all"),
        "startup": Row("startup", "start-up (empty folder)", "none"),
        "warm_server": Row("warm_server", "scan warm, server", "all", note=tools.server_note),
        "one_server": Row("one_server", "scan 1 changed, server", "all", note=tools.server_note),
        "torchfix": Row("torchfix", "TorchFix 0.7", "all", note=tools.torchfix_note),
        "libcst_xla": Row("libcst_xla", "libcst parse only", "xla"),
        "rewrite": Row("rewrite", "rewrite (no --apply)", "xla", note=tools.rewrite_note),
        "rewrite_warm": Row(
            "rewrite_warm",
            "rewrite warm (unchanged)",
            "xla",
            note=tools.rewrite_note or ("" if tools.rewrite_caches else "no result cache"),
        ),
    }
    if double is not None:
        rows["cold2"] = Row("cold2", f"scan cold, {len(double.files):,} files", "2x")
    skipped = {*args.skip, *(("warm_server", "one_server") if "server" in args.skip else ())}
    for key in skipped:
        if key in rows and not rows[key].note:
            rows[key].note = f"skipped (--skip {key})"
    scan = [*tools.scan, "scan", "--format", "json", "-j", jobs]
    pairs = rows["rewrite"].pairs  # (rewrite, its libcst baseline) wall s, run back to back
    changed = corpora.file_to_change(corpus.files)
    original = changed.read_bytes()
    report = workdir / "out" / f"{corpus.key}-scan.json"
    report.parent.mkdir(parents=True, exist_ok=True)
    for run in range(args.runs):
        print(f"  {corpus.key}: run {run + 1} of {args.runs}", file=sys.stderr, flush=True)
        record(rows["ast"], parse_only("ast", corpus.file_list, args.jobs))
        slow = run < args.slow_runs  # the minutes-long rows run fewer times
        if slow:
            record(rows["libcst"], parse_only("libcst", corpus.file_list, args.jobs))
        record(rows["nocache"], [*scan, "--no-cache", str(corpus.root)], report)
        cache = workdir / "cache" / corpus.key
        shutil.rmtree(cache, ignore_errors=True)
        with_cache = [*scan, "--cache-dir", str(cache), str(corpus.root)]
        record(rows["cold"], with_cache, report)
        # A re-scan takes about a tenth of a second, in which the machine's noise is a third of
        # it or more: each run takes several, against the one cold scan it takes.
        for _ in range(args.rescans):
            record(rows["warm"], with_cache, report)
        try:
            for edit in range(args.rescans):  # each sees one file changed since the scan before
                changed.write_bytes(original + f"\n# bench edit {run}.{edit}\n".encode())
                record(rows["one"], with_cache, report)
        finally:
            changed.write_bytes(original)
        settle(with_cache)
        # What every re-scan pays before its first file: interpreter, imports, configuration and
        # the rules and matrix, which a warm cache holds ready (`--no-cache` would load them).
        empty = workdir / "empty"
        empty.mkdir(exist_ok=True)
        startup = [*scan, "--cache-dir", str(workdir / "cache" / "startup"), str(empty)]
        if run == 0:
            subprocess.run(startup, capture_output=True, check=False)  # fills that cache
        for _ in range(args.rescans):
            record(rows["startup"], startup, report.with_name("empty.json"))
        if not rows["one_server"].note:
            with served(tools):
                for _ in range(args.rescans):
                    time.sleep(SERVER_PAUSE_S)
                    record(rows["warm_server"], with_cache, report)
                try:
                    for edit in range(args.rescans):
                        served_edit = f"\n# bench edit {run}.{edit}, served\n"
                        changed.write_bytes(original + served_edit.encode())
                        time.sleep(SERVER_PAUSE_S)
                        record(rows["one_server"], with_cache, report)
                finally:
                    changed.write_bytes(original)
                settle(with_cache)
        if tools.torchfix and slow:
            record(rows["torchfix"], [*tools.torchfix, str(corpus.root)])
        # Rewrite runs every run, right after its libcst baseline (`pairs_in_run` pairs): its
        # ratio is near its target, and one sample of it spreads by a third on a shared
        # machine, where the two rows of a pair share the machine's state. Cold: a fresh cache.
        rewrite_cache = workdir / "cache" / f"{corpus.key}-rewrite"
        cached = ["--cache-dir", str(rewrite_cache)] if tools.rewrite_caches else []
        rewrite = [*(tools.rewrite or []), *cached, str(corpus.xla_root)]
        paired = not rows["rewrite"].note  # else the baseline runs once a run, alone
        for _ in range(pairs_in_run(run, args.runs, args.rewrite_runs) if paired else 1):
            baseline = record(
                rows["libcst_xla"], parse_only("libcst", corpus.xla_file_list, args.jobs)
            )
            if paired:
                shutil.rmtree(rewrite_cache, ignore_errors=True)
                migrated = record(rows["rewrite"], rewrite)
                if baseline is not None and migrated is not None:
                    pairs.append((float(migrated["wall_s"]), float(baseline["wall_s"])))  # type: ignore[arg-type]
        if tools.rewrite:
            record(rows["rewrite_warm"], rewrite)
        if double is not None:
            double_report = report.with_name("b2-scan.json")
            record(rows["cold2"], [*scan, "--no-cache", str(double.root)], double_report)
    summarize_report(report)
    return list(rows.values())


def settle(scan: list[str]) -> None:
    """Re-scan, unmeasured, once the file the re-scans edited and restored is old enough to be
    trusted by its signature (`stat_index.SETTLED_NS`): the rows after start from a tree the
    snapshot holds as it is, as the warm rows did."""
    time.sleep(SETTLED_NS / 1e9 + 0.2)
    subprocess.run(scan, capture_output=True, check=False)


def pairs_in_run(run: int, runs: int, pairs: int) -> int:
    """How many rewrite/baseline pairs run `run` (0-based) makes: `pairs` spread over `runs`,
    the earlier runs taking one more, and at least one each."""
    return max(1, pairs // runs + (run < pairs % runs))


def summarize_report(report: Path) -> None:
    """One line from the last scan's JSON: it must be clean JSON on stdout."""
    try:
        files = json.loads(report.read_text())["summary"]["files"]
    except (OSError, ValueError, KeyError) as exc:
        print(f"  scan stdout is not the JSON report: {exc}", file=sys.stderr)
        return
    print(
        f"  scan JSON ok: {files['total']} files, {files['analyzed']} analyzed, "
        f"{files['skipped_by_prefilter']} skipped by the prefilter, {files['from_cache']} from "
        f"the cache, {files['errors']} errors",
        file=sys.stderr,
    )


# -- output ---------------------------------------------------------------------------------


def _num(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def table(corpus: corpora.Corpus, rows: list[Row]) -> list[str]:
    scope = {
        "all": f"{len(corpus.files):,}",
        "xla": f"{len(corpus.xla_files):,}",
        "2x": "2x",
        "none": "0",
    }
    out = [
        f"{'row':<28} {'files':>6} {'wall s':>8} {'cpu s':>8} {'main MB':>8} "
        f"{'worker MB':>9} {'tree MB':>8}"
    ]
    for row in rows:
        head = f"{row.label:<28} {scope[row.scope]:>6}"
        if not row.samples:
            out.append(f"{head}  {row.note or 'no samples'}")
            continue
        out.append(
            f"{head} {_num(row.median('wall_s')):>8} {_num(row.median('cpu_s')):>8} "
            f"{_num(row.median('root_peak_mb'), 0):>8} {_num(row.worker_mb(), 0):>9} "
            f"{_num(row.median('tree_peak_mb'), 0):>8}"
        )
    return out


def ratios(rows: list[Row], generated: bool) -> list[str]:
    by = {r.key: r for r in rows}

    def ratio(top: str, bottom: str, metric: str) -> float | None:
        a, b = by[top].median(metric), by[bottom].median(metric)
        return None if a is None or not b else a / b

    checks = [
        ("cold scan / ast.parse only", "cold", "ast", "<=", 3.0, "x"),
        ("TorchFix / cold scan", "torchfix", "cold", ">=", 10.0, "x"),
        ("warm / cold", "warm", "cold", "<=", 0.05, "%"),
        ("1 file changed / cold", "one", "cold", "<", 0.02, "%"),
        ("start-up / cold (no target)", "startup", "cold", "", 0.0, "%"),
        ("warm, server / cold", "warm_server", "cold", "<=", 0.05, "%"),
        ("1 file changed, server / cold", "one_server", "cold", "<", 0.02, "%"),
        ("rewrite / libcst parse (xla)", "rewrite", "libcst_xla", "<=", 1.5, "x"),
        ("rewrite warm / cold (no target)", "rewrite_warm", "rewrite", "", 0.0, "%"),
    ]
    out = [f"{'ratio (medians)':<30} {'wall':>9} {'cpu':>9}   target       met"]
    for label, top, bottom, op, target, unit in checks:
        wall, cpu = ratio(top, bottom, "wall_s"), ratio(top, bottom, "cpu_s")
        shown = [_fmt_ratio(v, unit) for v in (wall, cpu)]
        if top.endswith("_server"):  # the server's child does the work: not the command's CPU
            shown[1] = "-"
        goal = f"{op} {target * 100:g}%" if unit == "%" else f"{op} {target:g}x"
        if not op:  # shown for what it says of the rows above
            out.append(f"{label:<30} {shown[0]:>9} {shown[1]:>9}")
            continue
        out.append(f"{label:<30} {shown[0]:>9} {shown[1]:>9}   {goal:<12} {_met(wall, op, target)}")
        if top == "rewrite" and by["rewrite"].paired_ratios():
            out += _paired_rewrite(by["rewrite"].paired_ratios(), target)
    if generated:
        worker = by["cold"].worker_mb()
        out.append(
            f"{'peak MB per worker (cold)':<30} {_num(worker, 0):>9} {'':>9}   "
            f"{'<= 300 MB':<12} {_met(worker, '<=', 300.0)}"
        )
        if "cold2" in by:
            big = by["cold2"].worker_mb()
            growth = None if big is None or not worker else big / worker
            out.append(
                f"{'worker MB, 2x files / 1x':<30} {_fmt_ratio(growth, 'x'):>9} {'':>9}   "
                f"{'<= 1.1x':<12} {_met(growth, '<=', 1.1)}"
            )
    return out


def _paired_rewrite(each: list[float], target: float) -> list[str]:
    """The rewrite's ratio pair by pair (each beside the baseline run just before it, so
    both saw the same machine), and their median."""
    middle = statistics.median(each)
    return [
        f"{'  paired (median of pairs)':<30} {_fmt_ratio(middle, 'x'):>9} {'-':>9}   "
        f"{f'<= {target:g}x':<12} {_met(middle, '<=', target)}",
        f"{'  pair by pair':<30} " + " ".join(f"{r:.2f}" for r in each),
    ]


def _fmt_ratio(value: float | None, unit: str) -> str:
    if value is None:
        return "-"
    return f"{value * 100:.2f}%" if unit == "%" else f"{value:.2f}x"


def _met(value: float | None, op: str, target: float) -> str:
    if value is None:
        return "n/a"
    ok = {"<=": value <= target, ">=": value >= target, "<": value < target}[op]
    return "yes" if ok else "NO"


def machine() -> list[str]:
    model = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    return [
        f"date: {datetime.datetime.now().astimezone():%Y-%m-%d %H:%M %Z}",
        f"machine: {cores} cores, {model}; Python {platform.python_version()}; load average {load}",
    ]


# -- main -----------------------------------------------------------------------------------


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--quick", action="store_true", help="1 run, 300 torch files, a 600-file monorepo"
    )
    parser.add_argument("--runs", type=int, help="runs per row; the median is shown (default 3)")
    parser.add_argument(
        "--slow-runs",
        type=int,
        help="runs of the minutes-long rows: TorchFix and libcst over all files (default: --runs)",
    )
    parser.add_argument(
        "--rewrite-runs",
        type=int,
        help="rewrite/libcst pairs (torch_xla files), spread over the runs (default: 5, or "
        "--runs if more; with --quick, one a run)",
    )
    parser.add_argument(
        "--jobs",
        "-j",
        type=int,
        default=corpora_jobs(),
        help="worker processes for every row (default: all cores)",
    )
    parser.add_argument(
        "--rescans",
        type=int,
        help="samples a run of each re-scan row (warm, one file changed, start-up, server; "
        "default 5, with --quick 1)",
    )
    parser.add_argument("--corpora", default="a,b", help="which corpora: a, b or a,b")
    parser.add_argument("--files", type=int, help="size of the generated monorepo (default 5000)")
    parser.add_argument(
        "--a-limit", type=int, help="use only the first N torch files (default: all)"
    )
    parser.add_argument("--seed", type=int, default=7, help="generator seed")
    parser.add_argument(
        "--no-double", action="store_true", help="skip the 2x-size monorepo (memory growth row)"
    )
    parser.add_argument(
        "--skip",
        default="",
        help="comma-separated rows to skip: ast, libcst, nocache, torchfix, libcst_xla, rewrite, "
        "rewrite_warm, server",
    )
    parser.add_argument("--torchfix", help="path of a torchfix 0.7 executable to use")
    parser.add_argument(
        "--no-install", action="store_true", help="do not pip-install TorchFix 0.7 into the workdir"
    )
    parser.add_argument(
        "--workdir",
        type=Path,
        default=Path(tempfile.gettempdir()) / "neuron-migrate-bench",
        help="where corpora, caches and the TorchFix venv live",
    )
    parser.add_argument("--json", type=Path, help="also write every sample here")
    args = parser.parse_args(argv)
    args.runs = args.runs or (1 if args.quick else 3)
    args.slow_runs = min(args.slow_runs or args.runs, args.runs)
    args.rescans = max(args.rescans or (1 if args.quick else 5), 1)
    args.rewrite_runs = max(args.rewrite_runs or (args.runs if args.quick else 5), args.runs)
    args.files = args.files or (600 if args.quick else 5000)
    args.a_limit = args.a_limit if args.a_limit is not None else (300 if args.quick else 0)
    args.skip = {s.strip() for s in args.skip.split(",") if s.strip()}
    args.corpora = [c.strip() for c in args.corpora.split(",") if c.strip()]
    return args


def corpora_jobs() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    workdir: Path = args.workdir
    workdir.mkdir(parents=True, exist_ok=True)
    compile_bytecode()
    tools = find_tools(args, workdir)
    header = [
        "neuron-migrate scan benchmark",
        *machine(),
        f"command: {' '.join(['python', 'bench/scan_bench.py', *(argv or sys.argv[1:])])}",
        f"jobs: {args.jobs} for every row; medians of {args.runs} run(s)"
        + (
            f" ({args.slow_runs} for TorchFix and libcst over all files)"
            if args.slow_runs != args.runs
            else ""
        )
        + f", {args.rescans} sample(s) a run of each re-scan row"
        + (
            ""
            if "rewrite" in args.skip
            else f"; {args.rewrite_runs} rewrite/libcst pairs on torch_xla files"
        ),
    ]
    lines = list(header)
    dump: dict[str, object] = {"header": header, "corpora": {}}
    for key in args.corpora:
        print(f"preparing corpus ({key}) ...", file=sys.stderr, flush=True)
        double = None
        if key == "a":
            root = corpora.copy_torch_sources(workdir, args.a_limit)
            title = "(a) torch package sources"
            title += f" (first {args.a_limit} files)" if args.a_limit else ""
        elif key == "b":
            root = corpora.generated_monorepo(workdir, args.files, args.seed)
            title = f"(b) generated torch_xla monorepo (seed {args.seed})"
            if not args.no_double:
                big = corpora.generated_monorepo(workdir, args.files * 2, args.seed)
                double = corpora.index("b2", "(b) at 2x", big, workdir)
        else:
            raise SystemExit(f"unknown corpus {key!r}: use a and/or b")
        corpus = corpora.index(key, title, root, workdir)
        rows = bench_corpus(corpus, tools, args, workdir, double)
        lines += ["", corpus.describe(), *table(corpus, rows), "", *ratios(rows, key == "b")]
        dump["corpora"][corpus.key] = {  # type: ignore[index]
            "describe": corpus.describe(),
            "rows": {
                r.key: {"label": r.label, "note": r.note, "samples": r.samples, "pairs": r.pairs}
                for r in rows
            },
        }
    print("\n".join(lines))
    if args.json:
        args.json.write_text(json.dumps(dump, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
