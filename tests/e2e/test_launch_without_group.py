"""A program torchrun launched whose process group is made on some paths only. Under torch_xla,
xm.optimizer_step averaged the gradients over every process of the launch with or without a
torch.distributed group; natively the average needs one. Where the migrated program runs several
processes and has none, the step raises (its helper says what to add) rather than train each rank
on its own gradients and exit 0."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.test_migrated_programs import _clean_env, _free_port

pytest.importorskip("torch")
pytestmark = [pytest.mark.torch, pytest.mark.slow]

PROGRAM = """\
import argparse

import torch
import torch.distributed as dist
import torch_xla.core.xla_model as xm

parser = argparse.ArgumentParser()
parser.add_argument("--ddp", action="store_true")
args = parser.parse_args()
if args.ddp:
    dist.init_process_group("xla", init_method="xla://")
device = xm.xla_device()
torch.manual_seed(xm.get_ordinal())
model = torch.nn.Linear(4, 1).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
model(torch.randn(2, 4, device=device)).sum().backward()
xm.optimizer_step(optimizer)
print(f"STEPPED rank={xm.get_ordinal()}", flush=True)
"""


def _run(tree: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "neuron_migrate", *argv],
        cwd=tree,
        env=_clean_env(),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


@pytest.fixture
def migrated(tmp_path: Path) -> Path:
    (tmp_path / "train.py").write_text(PROGRAM)
    done = _run(tmp_path, "rewrite", "--apply", ".")
    assert done.returncode == 0, done.stderr
    assert "neuron_optimizer_step(optimizer)" in (tmp_path / "train.py").read_text()
    return tmp_path


def test_several_processes_without_a_group_raise_at_the_step(migrated: Path) -> None:
    torchrun = ["torchrun", "--nproc-per-node", "2", "--master-port", str(_free_port())]
    done = _run(migrated, "run", "--", *torchrun, "train.py")
    assert done.returncode != 0, done.stdout
    assert "STEPPED" not in done.stdout
    assert "2 processes were launched (WORLD_SIZE) but no process group exists" in done.stderr


def test_one_process_without_a_group_steps(migrated: Path) -> None:
    done = _run(migrated, "run", "--", "python", "train.py")
    assert done.returncode == 0, done.stderr
    assert "STEPPED rank=0" in done.stdout
