"""scan, rewrite, matrix and rules run where torch cannot be imported (a lean CI gate)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SOURCE = """import torch
import torch_xla.core.xla_model as xm

xm.mark_step()
v, i = torch.sort(torch.ones(3, device="neuron"))
"""

# `sys.modules["torch"] = None` makes every `import torch` fail, as on a machine without it.
RUN = """
import sys
sys.modules["torch"] = None
sys.argv = ["neuron-migrate", *sys.argv[1:]]
from neuron_migrate.cli import main
main()
"""


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", RUN, *args], capture_output=True, text=True, timeout=300
    )


def test_scan_rewrite_matrix_rules_need_no_torch(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(SOURCE)
    scan = _run("scan", str(tmp_path), "--format", "json", "--no-cache", "--fail-on", "xla")
    assert scan.returncode == 1, scan.stderr  # the gate fails on the torch_xla use
    apis = {f["api"] for f in json.loads(scan.stdout)["findings"]}
    assert {"torch_xla.core.xla_model.mark_step", "torch.sort"} <= apis
    rewrite = _run("rewrite", str(tmp_path), "--check")
    assert rewrite.returncode == 1, rewrite.stderr
    assert _run("matrix", "show", "aten::sort").returncode == 0
    assert _run("rules", "explain", "NM104").returncode == 0
