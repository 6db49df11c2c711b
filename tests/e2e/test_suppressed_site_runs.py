"""A site under `# neuron-migrate: ignore[...]` is left as it is by `rewrite --apply`, with the
torch_xla import it needs, and the migrated program runs: the rest on the `neuron` device, the
suppressed line with torch_xla (here the test-only stand-in, tests/e2e/cpu_xla)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytestmark = [pytest.mark.torch, pytest.mark.slow]

STAND_IN = Path(__file__).resolve().parent / "cpu_xla"
SUPPRESSED = "host = xm.xla_device()  # neuron-migrate: ignore[NM101] the loader keeps its device\n"
PROGRAM = (
    "import torch\n"
    "import torch_xla.core.xla_model as xm\n"
    "\n" + SUPPRESSED + "device = xm.xla_device()\n"
    "x = torch.ones(4, device=device) * 2\n"
    "y = torch.ones(4, device=host)\n"
    'print("SUM", float(x.sum()), float(y.sum()), x.device.type)\n'
    "xm.mark_step()\n"
)


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    # torch_xla's stand-in alone: the simulated device refuses to run beside a torch_neuronx.
    path = cwd.parent / "stand_in"
    if not path.exists():
        path.mkdir()
        (path / "torch_xla").symlink_to(STAND_IN / "torch_xla", target_is_directory=True)
    env = {**os.environ, "NEURON_MIGRATE_NO_SERVER": "1", "PYTHONPATH": str(path)}
    return subprocess.run(
        [sys.executable, "-m", "neuron_migrate", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_the_suppressed_site_stays_and_the_migrated_program_runs(tmp_path: Path) -> None:
    program = tmp_path / "program"
    program.mkdir()
    (program / "train.py").write_text(PROGRAM)
    applied = _cli("rewrite", "--apply", "--no-cache", ".", cwd=program)
    assert applied.returncode == 0, applied.stderr
    migrated = (program / "train.py").read_text()
    assert SUPPRESSED in migrated and "import torch_xla.core.xla_model as xm\n" in migrated
    assert 'device = torch.device("neuron")' in migrated and "mark_step" not in migrated
    scan = _cli("scan", "--no-cache", "-f", "json", ".", cwd=program)
    assert json.loads(scan.stdout)["summary"]["suppressed"]["ignore"] == 1  # still used
    ran = _cli("run", "-q", "--", "python", "train.py", cwd=program)
    assert ran.returncode == 0, ran.stderr
    assert "SUM 8.0 4.0 neuron" in ran.stdout
