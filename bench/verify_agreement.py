"""How well the scan agrees with execution: `neuron-migrate verify` over the four sample projects
(each migrated with `rewrite --apply` in a copy) and the runtime fixtures.

    python bench/verify_agreement.py [--keep DIR]

Prints, per run, confirmed / contradicted / not exercised, the agreement, any run failure and
every contradiction with its reason; then the totals, the agreement and the "not exercised"
share. Runs the code (about ten minutes on two cores).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CLI = [sys.executable, "-m", "neuron_migrate"]
# (report name, folder, path verified, command)
PROJECT_RUNS = [
    ("mlp_single", "mlp_single", ".", ["python", "train.py", "--steps", "5"]),
    ("mixed_status", "mixed_status", ".", ["python", "train.py", "--steps", "5"]),
    (
        "ddp_spawn",
        "ddp_spawn",
        ".",
        ["torchrun", "--nproc-per-node", "2", "train.py", "--steps", "5", "--batch-size", "32"],
    ),
    (
        "transformer_modern",
        "transformer_modern",
        ".",
        ["torchrun", "--nproc-per-node", "2", "train.py", "--steps", "5"],
    ),
]
FIXTURE_RUNS = [
    ("rt_train_small", "runtime", "train_small.py", ["python", "train_small.py"]),
    ("rt_matrix_decisions", "runtime", "matrix_decisions.py", ["python", "matrix_decisions.py"]),
    ("rt_raises", "runtime", "raises.py", ["python", "raises.py"]),
    (
        "rt_ddp_train",
        "runtime",
        "ddp_train.py",
        ["torchrun", "--nproc-per-node", "2", "ddp_train.py"],
    ),
]
VERDICTS = ("confirmed", "contradicted", "not_exercised")


def prepare(work: Path) -> None:
    for name, *_ in PROJECT_RUNS:
        shutil.copytree(ROOT / "fixtures" / "projects" / name, work / name)
        subprocess.run([*CLI, "rewrite", ".", "--apply", "--no-cache"], cwd=work / name,
                       check=False, capture_output=True)  # fmt: skip
    shutil.copytree(ROOT / "fixtures" / "runtime", work / "runtime")


def verify(work: Path, name: str, folder: str, path: str, command: list[str]) -> dict:
    out = work / f"{name}.json"
    subprocess.run([*CLI, "verify", path, "--format", "json", "-o", str(out), "--", *command],
                   cwd=work / folder, check=False, capture_output=True, timeout=900)  # fmt: skip
    return json.loads(out.read_text())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", type=Path, help="work in DIR and keep it")
    args = parser.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="nm-verify-agreement-"))
    work.mkdir(parents=True, exist_ok=True)
    prepare(work)
    totals = dict.fromkeys(VERDICTS, 0)
    for name, folder, path, command in [*PROJECT_RUNS, *FIXTURE_RUNS]:
        report = verify(work, name, folder, path, command)
        summary = report["summary"]
        for verdict in VERDICTS:
            totals[verdict] += summary[verdict]
        failure = f"  run failure: {report['run_failure']}" if report.get("run_failure") else ""
        counts = "  ".join(f"{v} {summary[v]}" for v in VERDICTS)
        line = f"{name:20} exit {report['exit_code']}  {counts}  agreement {summary['agreement']}"
        print(line + failure)
        for item in report["items"]:
            if item["verdict"] == "contradicted":
                where = f"{item['path']}:{item['line']} {item['api']}"
                print(f"    contradicted {where}: {item['reason']}")
    decided = totals["confirmed"] + totals["contradicted"]
    print(f"total {totals}; agreement {totals['confirmed'] / decided:.4f}; "
          f"not exercised {totals['not_exercised'] / sum(totals.values()):.3f}")  # fmt: skip
    if args.keep is None:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
