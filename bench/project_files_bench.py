"""Scan time of a tree with launch scripts, Dockerfiles, dependency files and job configs,
against the same tree's Python files alone.

    python bench/project_files_bench.py [--files 600] [--share 0.1] [--runs 5] [--jobs 1]

Builds a deterministic torch_xla tree (bench/gen_monorepo.py), then a copy of it with project
files added beside the Python -- `--share` of the Python file count, cycling through the kinds a
Trainium project holds (run.sh, requirements.txt, Dockerfile, a Kubernetes job, a CI workflow,
pyproject.toml, a SageMaker JSON, a Makefile, a .env file, a tox.ini, a Pipfile, an sbatch
script), varied so that no two are alike. Each scan is a fresh `neuron-migrate scan --no-cache`
process (the cost a CI gate pays); the two trees alternate within each run. Prints each tree's
median wall time, the ratio of the medians, and the median of the per-run ratios. Target: the
tree with project files within 10% of the .py-only scan.
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import gen_monorepo

REPO = Path(__file__).resolve().parents[1]
SAMPLES = REPO / "fixtures" / "projects"
ECR = "763104351884.dkr.ecr.us-west-2.amazonaws.com"
DLC = f"{ECR}/pytorch-training-neuronx:2.1.2-neuronx-py310-sdk2.20.2-ubuntu20.04"
OLD_DLC = f"{ECR}/pytorch-training-neuronx:1.13.1-neuronx-py310-sdk2.18.0-ubuntu20.04"

TEMPLATES = {
    "run.sh": (SAMPLES / "transformer_modern" / "run.sh").read_text(),
    "requirements.txt": (SAMPLES / "mlp_single" / "requirements.txt").read_text(),
    "Dockerfile": """\
FROM {dlc}
ENV PJRT_DEVICE=NEURON \\
    NEURON_CC_FLAGS="--model-type=transformer" \\
    RUN_ID={n}
COPY . /workspace/job{n}
RUN pip install -r /workspace/job{n}/requirements.txt && \\
    python -m pip install libneuronxla
CMD ["torchrun", "--nproc_per_node=32", "/workspace/job{n}/train.py"]
""",
    "job.yaml": """\
apiVersion: batch/v1
kind: Job
metadata:
  name: train-{n}
spec:
  template:
    spec:
      nodeSelector:
        node.kubernetes.io/instance-type: trn1.32xlarge
      containers:
        - name: train
          image: {dlc}
          command: ["/bin/bash", "-c"]
          args:
            - |
              export XLA_USE_BF16=1
              neuron_parallel_compile torchrun --nproc_per_node=32 train.py --seed {n}
          env:
            - name: PJRT_DEVICE
              value: NEURON
            - name: FI_EFA_USE_DEVICE_RDMA
              value: "1"
      restartPolicy: Never
""",
    "ci.yml": """\
name: train-{n}
on: [push]
env: &common
  PJRT_DEVICE: NEURON
  XLA_IR_DEBUG: "1"
jobs:
  smoke:
    runs-on: [self-hosted, trn1.2xlarge]
    env: *common
    steps:
      - uses: actions/checkout@v4
      - run: pip install -r requirements.txt
      - run: |
          export NEURON_CC_FLAGS="--model-type=transformer"
          python -m torch_xla.distributed.xla_dist -- python train.py --steps {n}
""",
    "pyproject.toml": """\
[project]
name = "job-{n}"
version = "0.{n}.0"
requires-python = ">=3.9"
dependencies = [
    "torch-neuronx==2.9.0.2.15.32035",
    "torch-xla==2.9.0",
    "numpy>=1.24",
]
""",
    "training_job.json": """\
{{"TrainingJobName": "train-{n}",
 "AlgorithmSpecification": {{"TrainingImage": "{old_dlc}"}},
 "ResourceConfig": {{"InstanceType": "ml.trn1.32xlarge", "InstanceCount": 2}},
 "Environment": {{"PJRT_DEVICE": "NEURON", "NEURON_CC_FLAGS": "--model-type=transformer"}}}}
""",
    "Makefile": """\
export PJRT_DEVICE ?= NEURON
STEPS := {n}
train:
\t@export XLA_USE_BF16=1
\tneuron_parallel_compile torchrun --nproc_per_node=32 train.py --steps $(STEPS)
setup:
\tpip install torch-neuronx==2.9.0.2.15.32035
""",
    ".env": """\
PJRT_DEVICE=NEURON
NEURON_CC_FLAGS="--model-type=transformer"
NEURON_RT_VISIBLE_CORES=0-31
RUN_ID={n}
""",
    "tox.ini": """\
[tox]
envlist = py310

[testenv]
basepython = python3.10
deps =
    torch-xla==2.9.0
    pytest
setenv =
    PJRT_DEVICE = NEURON
    RUN_ID = {n}
commands = pytest tests {{posargs}}
""",
    "Pipfile": """\
[packages]
torch-neuronx = "==2.9.0.2.15.32035"
torch-xla = {{version = "==2.9.0"}}

[requires]
python_version = "3.10"
# variant {n}
""",
    "train.sbatch": """\
#!/bin/bash
#SBATCH --job-name=train-{n}
#SBATCH --nodes=2
#SBATCH --exclusive
source /opt/aws_neuronx_venv_pytorch_2_1/bin/activate
export PJRT_DEVICE=NEURON
export NEURON_RT_STOCHASTIC_ROUNDING_EN=1
srun torchrun --nproc_per_node=32 --nnodes=$SLURM_NNODES train.py --seed {n}
""",
}


def build(out: Path, files: int, share: float) -> tuple[Path, Path, int]:
    py_only = out / "py_only"
    if not py_only.exists():
        gen_monorepo.generate(py_only, files)
    with_files = out / "with_project_files"
    shutil.rmtree(with_files, ignore_errors=True)
    shutil.copytree(py_only, with_files)
    folders = sorted({p.parent for p in with_files.rglob("*.py")})
    wanted = max(1, round(share * sum(1 for _ in py_only.rglob("*.py"))))
    names = list(TEMPLATES)
    for n in range(wanted):
        name = names[n % len(names)]
        folder = folders[n % len(folders)] / f"deploy{n // len(folders)}"
        folder.mkdir(exist_ok=True)
        text = TEMPLATES[name]
        if "{n}" in text:
            text = text.format(n=n, dlc=DLC, old_dlc=OLD_DLC)
        else:
            text += f"# variant {n}\n"
        (folder / name).write_text(text)
    return py_only, with_files, wanted


def scan_seconds(tree: Path, jobs: int) -> tuple[float, float]:
    """(wall, CPU) seconds of one scan process; CPU time counts the process and its workers
    only, so what other jobs on a shared machine take from it does not count."""
    command = [sys.executable, "-m", "neuron_migrate", "scan", "--no-cache", "--format", "json"]
    command += ["--fail-on", "none", "--jobs", str(jobs), "-o", "/dev/null", str(tree)]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return wall, cpu


def _summary(name: str, base: list[float], extended: list[float]) -> dict[str, float]:
    ratios = [e / b for e, b in zip(extended, base, strict=True)]
    figures = {
        f"median_py_only_{name}_s": statistics.median(base),
        f"median_with_project_files_{name}_s": statistics.median(extended),
        f"ratio_of_medians_{name}": statistics.median(extended) / statistics.median(base),
        f"median_paired_ratio_{name}": statistics.median(ratios),
    }
    print(
        f"{name}: py-only median {statistics.median(base):.3f} s "
        f"({' '.join(f'{v:.3f}' for v in base)}); with project files median "
        f"{statistics.median(extended):.3f} s ({' '.join(f'{v:.3f}' for v in extended)}); "
        f"ratio of medians {figures[f'ratio_of_medians_{name}']:.3f}, median paired ratio "
        f"{figures[f'median_paired_ratio_{name}']:.3f} ({' '.join(f'{r:.3f}' for r in ratios)})"
    )
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=600, help="Python files generated")
    parser.add_argument("--share", type=float, default=0.1, help="project files per .py file")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = parser.parse_args()
    workdir = args.workdir or Path(tempfile.gettempdir()) / "neuron-migrate-bench-project-files"
    workdir.mkdir(parents=True, exist_ok=True)
    py_only, with_files, added = build(workdir, args.files, args.share)
    py_count = sum(1 for _ in py_only.rglob("*.py"))
    print(f"trees: {py_count} .py files; + {added} project files ({workdir})", file=sys.stderr)
    scan_seconds(py_only, args.jobs)  # warm the page cache and the interpreter's files
    scan_seconds(with_files, args.jobs)
    samples: dict[str, list[tuple[float, float]]] = {"py_only": [], "with_project_files": []}
    for _ in range(args.runs):
        samples["py_only"].append(scan_seconds(py_only, args.jobs))
        samples["with_project_files"].append(scan_seconds(with_files, args.jobs))
    figures: dict[str, object] = {
        "py_files": py_count,
        "project_files": added,
        "jobs": args.jobs,
        "samples_wall_cpu_s": samples,
    }
    for index, name in enumerate(("wall", "cpu")):
        base = [sample[index] for sample in samples["py_only"]]
        extended = [sample[index] for sample in samples["with_project_files"]]
        figures.update(_summary(name, base, extended))
    print("target: the tree with project files within 10% of the .py-only scan (ratio <= 1.10)")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
