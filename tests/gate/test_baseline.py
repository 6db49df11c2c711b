"""Baselines: a recorded finding never fails the gate again; a new one does, alone, even after
the code around it moves."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from neuron_migrate.errors import DataFileError
from neuron_migrate.scan.baseline import load_baseline
from tests.cli import invoke

LEGACY = """import torch_xla.core.xla_model as xm


def train(model, batches):
    device = xm.xla_device()
    for batch in batches:
        model(batch.to(device)).sum().backward()
        xm.mark_step()
"""
NEW_USE = "\n\ndef report():\n    xm.master_print('done')\n"


def _scan(root: Path, *flags: str) -> tuple[int, dict]:
    code, out, err = invoke(
        [
            "scan",
            str(root),
            "-f",
            "json",
            "--no-cache",
            "--no-config",
            "-j",
            "1",
            "--fail-on",
            "xla",
            *flags,
        ]
    )
    assert code in (0, 1), err
    return code, json.loads(out)


def test_only_the_new_finding_fails_even_after_lines_move(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    (src / "train.py").write_text(LEGACY)
    baseline = tmp_path / "neuron-migrate-baseline.json"

    code, report = _scan(src, "--write-baseline", str(baseline))
    recorded = len(report["findings"])
    assert code == 0 and recorded >= 2  # everything recorded: the gate passes
    assert load_baseline(baseline).entries == recorded

    code, _ = _scan(src, "--baseline", str(baseline))
    assert code == 0

    (src / "train.py").write_text(LEGACY + NEW_USE)
    code, report = _scan(src, "--baseline", str(baseline))
    failing = [f for f in report["findings"] if f["gate"]]
    assert code == 1
    assert [f["api"] for f in failing] == ["torch_xla.core.xla_model.master_print"]
    assert report["summary"]["baseline"]["new"] == 1
    assert report["summary"]["baseline"]["unchanged"] == recorded

    (src / "train.py").write_text("\n" * 10 + LEGACY + NEW_USE)  # everything moves down ten lines
    code, report = _scan(src, "--baseline", str(baseline))
    failing = [f for f in report["findings"] if f["gate"]]
    assert code == 1
    assert [(f["api"], f["line"]) for f in failing] == [
        ("torch_xla.core.xla_model.master_print", 22)
    ]


def test_unrelated_edits_keep_fingerprints(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(LEGACY)
    baseline = tmp_path / "base.json"
    _scan(tmp_path, "--write-baseline", str(baseline))
    edited = LEGACY.replace("def train(model, batches):", "def train(model, batches, lr=0.1):")
    (tmp_path / "train.py").write_text("import os\n" + edited + "\nprint(os.getcwd())\n")
    code, report = _scan(tmp_path, "--baseline", str(baseline))
    assert code == 0 and report["summary"]["baseline"]["new"] == 0


def test_baseline_from_the_config(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(LEGACY)
    _scan(tmp_path, "--write-baseline", str(tmp_path / "nm-baseline.json"))
    (tmp_path / "pyproject.toml").write_text(
        '[tool.neuron-migrate]\nfail-on = "xla"\nbaseline = "nm-baseline.json"\n'
    )
    code, _, _ = invoke(["scan", str(tmp_path), "-f", "json", "--no-cache", "-j", "1"])
    assert code == 0


def test_a_bad_baseline_is_one_line_exit_2(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(LEGACY)
    (tmp_path / "base.json").write_text('{"findings": []}')
    code, _, err = invoke(
        [
            "scan",
            str(tmp_path),
            "--baseline",
            str(tmp_path / "base.json"),
            "--no-config",
            "--no-cache",
            "-j",
            "1",
        ]
    )
    assert code == 2 and "not a neuron-migrate baseline" in err
    with pytest.raises(DataFileError, match="baseline not found"):
        load_baseline(tmp_path / "missing.json")
