"""Before and after on the installed torch package and on real-shaped hard cases: `scan` and
`rewrite` by the code of an earlier revision and by the working tree's, run in turn.

    python bench/hard_cases.py --before REV [--after REV] [--runs 3] [--cap 240] [--only torch,...]

Targets:

    torch     the installed torch package's sources (scan only: 7 of its files hold torch_xla)
    chain     a trainer whose state is a self-attribute chain (`--links`, default 30)
    27.8k     torch's common_methods_invocations.py (27,820 lines; one statement, `op_db`, of
              about 8,000 lines holds `device_type='xla'` strings) with a torch_xla import and a
              function using it
    2mb-line  one line of 2 MB: a list of 120,000 `xm.xla_device()` calls
    empty     an empty folder: what every command pays before its first file

Rows, each a fresh process tree measured by `measure.py` (wall, CPU of the tree, peak RSS of its
largest process): the `ast.parse` floor and the libcst floor (`parse_only.py`, the same files,
the same jobs), `scan --no-cache`, `scan` warm (the second of two runs with one fresh
`--cache-dir`), `rewrite --no-cache` (not of torch: its rewrite touches 7 files). Each side is
`python -m neuron_migrate` with its code first on PYTHONPATH (the earlier one from `git archive
REV`), the same interpreter and packages. Rows run interleaved, side by side, `--runs` times;
the table gives medians, and the errors (`timeout`) the last report of each listed. A command
past `--cap` seconds is killed and shown as `killed`.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Iterator
from pathlib import Path

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
CALL = "xm.xla_device()"
HEAD = "import torch\nimport torch_xla.core.xla_model as xm\n"
# Each command over its floor.
PAIRS = (("scan --no-cache", "ast.parse"), ("rewrite --no-cache", "libcst parse"))


def chain(links: int) -> str:
    """A trainer's state, each attribute made from the one before (the shape that stalled)."""
    lines = ["class Trainer:", "    def __init__(self, model):", "        self.model = model"]
    lines += ["        self.a0 = torch.zeros(4)"]
    lines += [f"        self.a{i} = self.a{i - 1} + self.a{i - 1}" for i in range(1, links + 1)]
    lines += ["", "    def step(self, batch):", "        device = xm.xla_device()"]
    lines += [f"        loss = self.model(batch.to(device)).sum() + self.a{links}.sum()"]
    lines += ["        loss.backward()", "        xm.mark_step()", "        return loss.item()"]
    return HEAD + "\n".join(lines) + "\n"


def torch_dir() -> Path:
    import torch

    return Path(torch.__file__).parent


def build(workdir: Path, links: int) -> dict[str, Path]:
    """The targets' folders (each hard case alone in one)."""
    targets = {"torch": torch_dir()}
    texts = {
        "chain": chain(links),
        "27.8k": HEAD
        + (torch_dir() / "testing/_internal/common_methods_invocations.py").read_text()
        + "\n\ndef xla_sample(x):\n    xm.mark_step()\n    return x.to(xm.xla_device())\n",
        "2mb-line": HEAD + "x = [" + ", ".join([CALL] * 120_000) + "]\n",
        "empty": None,
    }
    for name, text in texts.items():
        folder = workdir / name
        folder.mkdir(parents=True, exist_ok=True)
        if text is not None:
            (folder / "case.py").write_text(text)
        targets[name] = folder
    return targets


def file_list(workdir: Path, name: str, root: Path) -> Path:
    """Every file `scan` reads under `root`, one a line (the floors' input)."""
    from neuron_migrate.project.discover import discover

    listed = workdir / f"{name}.files.txt"
    listed.write_text("".join(f"{item.path}\n" for item in discover(root)))
    return listed


@contextlib.contextmanager
def unpacked(rev: str) -> Iterator[Path]:
    """The package as of `rev` (`git archive`), in a temporary folder."""
    with tempfile.TemporaryDirectory() as folder:
        archive = subprocess.run(
            ["git", "-C", str(REPO), "archive", rev], capture_output=True, check=True
        ).stdout
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(folder, filter="data")
        yield Path(folder)


def measured(command: list[str], code: Path, out: Path, cap: float) -> dict:
    env = {**os.environ, "PYTHONPATH": str(code), "NEURON_MIGRATE_NO_SERVER": "1"}
    wrapper = [sys.executable, str(BENCH / "measure.py"), "--stdout", str(out), "--cwd", str(code)]
    wrapper += ["--timeout", str(cap), "--", *command]
    done = subprocess.run(wrapper, env=env, capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def errors_of(report: Path) -> list[str]:
    try:
        return [f"{e['path']}: {e['kind']}" for e in json.loads(report.read_text())["errors"]]
    except (OSError, ValueError, KeyError):
        return ["(no report)"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", required=True, help="a git revision of this repository")
    parser.add_argument("--after", help="another revision (default: the working tree)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--cap", type=float, default=240.0, help="seconds a command may run")
    parser.add_argument("--links", type=int, default=30)
    parser.add_argument("--only", default="torch,chain,27.8k,2mb-line,empty")
    parser.add_argument("--workdir", type=Path)
    parser.add_argument("--json", type=Path, help="every sample, written after each one")
    args = parser.parse_args(argv)
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="neuron-migrate-hard-"))
    workdir.mkdir(parents=True, exist_ok=True)
    targets = {k: v for k, v in build(workdir, args.links).items() if k in args.only.split(",")}
    print(f"load average at start: {os.getloadavg()}")
    python = [sys.executable, "-m", "neuron_migrate"]
    jobs = ["-j", str(args.jobs)]
    samples: dict[tuple[str, str], list[dict]] = {}
    last_errors: dict[tuple[str, str], list[str]] = {}
    with contextlib.ExitStack() as stack:
        before = stack.enter_context(unpacked(args.before))
        after = stack.enter_context(unpacked(args.after)) if args.after else REPO
        sides = {"before": before, "after": after}
        for run in range(args.runs):
            for name, root in targets.items():
                listed = file_list(workdir, name, root)
                floor = [sys.executable, str(BENCH / "parse_only.py")]
                rows = [("floor", "ast.parse", [*floor, "ast", str(listed), *jobs])]
                if name != "torch":
                    rows.append(("floor", "libcst parse", [*floor, "libcst", str(listed), *jobs]))
                for side in sides:
                    scan = [*python, "scan", str(root), "-f", "json", "--fail-on", "none", *jobs]
                    cache = workdir / f"cache-{side}-{name}-{run}"
                    rows.append((side, "scan --no-cache", [*scan, "--no-cache"]))
                    rows.append((side, "scan (fill cache)", [*scan, "--cache-dir", str(cache)]))
                    rows.append((side, "scan warm", [*scan, "--cache-dir", str(cache)]))
                    if name not in ("torch", "empty"):
                        rewrite = [*python, "rewrite", str(root), "--no-cache", *jobs]
                        rows.append((side, "rewrite --no-cache", [*rewrite, "--format", "json"]))
                for side, row, command in rows:
                    code = sides.get(side, REPO)
                    out = workdir / "out.json"
                    result = measured(command, code, out, args.cap)
                    samples.setdefault((name, f"{side}: {row}"), []).append(result)
                    if args.json is not None:
                        flat = {f"{k[0]} | {k[1]}": v for k, v in samples.items()}
                        args.json.write_text(json.dumps(flat, indent=1))
                    if row.startswith(("scan", "rewrite")):
                        last_errors[(name, f"{side}: {row}")] = errors_of(out)
                    print(
                        f"run {run + 1} {name:<9} {side:<6} {row:<20} "
                        f"{'killed' if result['timed_out'] else format(result['wall_s'], '.2f')}",
                        file=sys.stderr,
                        flush=True,
                    )
    print(f"load average at end: {os.getloadavg()}")
    print(f"before: {args.before}; after: {args.after or 'the working tree'}; {args.runs} run(s)")
    print(f"{'target':<9} {'row':<28} {'wall s':>8} {'cpu s':>8} {'peak MB':>8}  errors")
    for (name, row), results in samples.items():
        if "fill cache" in row:
            continue
        killed = sum(r["timed_out"] for r in results)
        wall = statistics.median(r["wall_s"] for r in results)
        cpu = statistics.median(r["cpu_s"] for r in results)
        peak = statistics.median(r["max_process_mb"] for r in results)
        errors = last_errors.get((name, row), [])
        note = f"{killed} killed at {args.cap:g} s; " if killed else ""
        shown = ", ".join(errors[:3]) + (f" (+{len(errors) - 3})" if len(errors) > 3 else "")
        print(f"{name:<9} {row:<28} {wall:8.2f} {cpu:8.2f} {peak:8.0f}  {note}{shown}")
    print("ratios of medians (wall, cpu)")
    for name in targets:
        for side in ("before", "after"):
            for top, bottom in (
                ("scan --no-cache", "ast.parse"),
                ("rewrite --no-cache", "libcst parse"),
            ):
                over = samples.get((name, f"{side}: {top}"))
                under = samples.get((name, f"floor: {bottom}"))
                if not over or not under:
                    continue
                ratios = [
                    statistics.median(r[m] for r in over) / statistics.median(r[m] for r in under)
                    for m in ("wall_s", "cpu_s")
                ]
                print(f"{name:<9} {side:<6} {top} / {bottom}: {ratios[0]:.2f}x {ratios[1]:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
