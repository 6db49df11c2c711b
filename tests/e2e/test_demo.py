"""`neuron-migrate demo`: all four stages with an agreement figure, from the checkout and from
an installed wheel (whose data -- rules, matrices, sample projects -- is packed inside)."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytestmark = [pytest.mark.torch, pytest.mark.slow]

REPO = Path(__file__).parents[2]
STAGES = ("1. scan", "2. rewrite", "3. run", "4. verify", "summary")


def _demo(env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "neuron_migrate", "demo", "--steps", "3"],
        capture_output=True, text=True, env=env, cwd=cwd, timeout=600,
    )  # fmt: skip


def _check(proc: subprocess.CompletedProcess[str]) -> None:
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    for stage in STAGES:
        assert stage in proc.stdout
    assert "agreement 100%" in proc.stdout
    assert "(falling)" in proc.stdout


def test_demo_from_the_checkout(tmp_path: Path) -> None:
    # The shared temporary folder is left as it was: the demo and the sample it runs (which
    # saves its weights to `tempfile.gettempdir()`) write in a folder of the demo's own.
    shared = tmp_path / "shared-tmp"
    shared.mkdir()
    _check(_demo({**os.environ, "TMPDIR": str(shared)}, tmp_path))
    assert sorted(p.name for p in shared.iterdir()) == []


def test_demo_from_an_installed_wheel(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(wheels), str(REPO)],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    if build.returncode != 0:
        pytest.skip(f"cannot build a wheel here: {build.stderr.strip().splitlines()[-1:]}")
    wheel = next(wheels.glob("neuron_migrate-*.whl"))
    names = set(zipfile.ZipFile(wheel).namelist())
    for packed in (
        "neuron_migrate/_data/projects/mlp_single/train.py",
        "neuron_migrate/_data/compat_matrix/2.14.3.0.yaml",
        "neuron_migrate/_data/rules/device/NM104-xla-mark-step.yaml",
        "neuron_sim/install.py",
    ):
        assert packed in names, packed
    target = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(target),
         str(wheel)],
        check=True, capture_output=True, timeout=600,
    )  # fmt: skip
    env = dict(os.environ, PYTHONPATH=str(target))
    probe = subprocess.run(
        [sys.executable, "-c", "import neuron_migrate.resources as r; print(r.rules_dir())"],
        capture_output=True, text=True, env=env, cwd=tmp_path, check=True,
    )  # fmt: skip
    assert str(target) in probe.stdout  # the wheel's own data, not the checkout's
    _check(_demo(env, tmp_path))
