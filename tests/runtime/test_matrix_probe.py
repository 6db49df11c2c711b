"""`matrix probe` on the simulated device, then `matrix import` of its file: the matrix it ran
with comes back, now resting on the probe for every op the probe saw."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from neuron_migrate import resources
from neuron_migrate.matrix import diff_matrices, load_matrix
from neuron_migrate.matrix.import_evidence import import_file

pytestmark = pytest.mark.torch
pytest.importorskip("torch")

USER = """
import sys
import torch

x = torch.randn(8, 4, device="neuron")
ranked = torch.sort(x * 2, dim=1).values       # cpu_fallback in 2.13.3.0
total = (ranked + 1).sum()
print("USER_DONE", float(total) == float(total), sys.argv[1:])
"""


def test_probe_then_import_gives_back_the_matrix_it_ran_with(sim_run, tmp_path: Path) -> None:
    user = tmp_path / "user.py"
    user.write_text(USER, encoding="utf-8")
    out = tmp_path / "probe.json"
    probe = [sys.executable, "-m", "neuron_migrate.matrix.probe", "-o", str(out), "--"]
    run = sim_run(
        user, command=[*probe, sys.executable, str(user), "--steps", "2"], target="2.13.3.0"
    )
    assert run.exit_code == 0, run.err
    assert "USER_DONE True ['--steps', '2']" in run.out  # the user's command ran, with its args
    record = json.loads(out.read_text(encoding="utf-8"))
    assert record["simulated"] is True
    assert record["versions"]["torch_neuronx"] == "2.13.3.0"
    assert record["registered"]["source"] == "torch_neuronx.utils.get_neuron_registered_ops()"
    assert "aten::sort" in record["fallback_ops"] and "aten::mul.Tensor" in record["executed_ops"]

    ran_with = load_matrix("2.13.3.0")
    version, text = import_file(out, base=resources.matrix_dir() / "2.13.3.0.yaml")
    imported_path = tmp_path / f"{version}.yaml"
    imported_path.write_text(text, encoding="utf-8")
    imported = load_matrix(path=imported_path)
    diff = diff_matrices(ran_with, imported)
    assert diff.changed == () and diff.removed == ()
    # an op listed only now (an unlisted fallback it saw) has the status it had by default
    assert all(c.a_status == c.b_status for c in diff.added)
    # ...and the entries the probe saw rest on it
    key = "device-probe-2.13.3.0"
    assert imported.evidence[key].kind == "device-probe"
    assert imported.op_status("aten::sort").source == key
    assert imported.op_status("aten::add.Tensor").source == key  # registered
    assert imported.op_status("c10d::send").source == ran_with.op_status("c10d::send").source


def test_probe_outside_a_neuron_device_is_one_line(tmp_path: Path) -> None:
    import subprocess

    result = subprocess.run(
        [sys.executable, "-m", "neuron_migrate.matrix.probe", "-o", str(tmp_path / "p.json")],
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", "TORCH_DEVICE_BACKEND_AUTOLOAD": "0"},
        check=False,
    )
    assert result.returncode == 2
    assert (
        result.stderr.startswith("error: no neuron device here") and result.stderr.count("\n") == 1
    )
    assert not (tmp_path / "p.json").exists()
