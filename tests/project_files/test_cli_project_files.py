"""Project files through the commands a user runs: scan (every report format, suppressions,
errors) and rewrite (one diff for the project, --check, --apply, --out-dir)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli import invoke

RUN_SH = """\
#!/bin/bash
export PJRT_DEVICE=NEURON
export XLA_USE_BF16=1  # neuron-migrate: ignore[NM702] the model is cast in code
neuron_parallel_compile torchrun --nproc_per_node=32 train.py
"""
LAUNCH = "#!/usr/bin/env bash\nsource /opt/aws_neuronx_venv_pytorch_2_5/bin/activate\n"
REQUIREMENTS = "torch-xla==2.9.0\n"
TRAIN = "import torch_xla.core.xla_model as xm\n\ndevice = xm.xla_device()\n"


def _project(root: Path) -> Path:
    tree = root / "proj"
    (tree / "deploy").mkdir(parents=True)
    (tree / "run.sh").write_text(RUN_SH)
    (tree / "run.sh").chmod(0o755)
    (tree / "launch").write_text(LAUNCH)  # no extension: a shell script by its shebang
    (tree / "requirements.txt").write_text(REQUIREMENTS)
    (tree / "train.py").write_text(TRAIN)
    (tree / "deploy" / "job.yaml").write_text("spec:\n  instanceType: trn1.32xlarge\n  a: [\n")
    (tree / "notes.txt").write_text("PJRT_DEVICE=NEURON is not read here\n")
    return tree


def _scan(tree: Path, *extra: str) -> dict:  # type: ignore[type-arg]
    result = invoke(["scan", "--no-cache", "--format", "json", *extra, str(tree)])
    return json.loads(result.stdout)


def test_scan_reports_project_files_with_places_suppressions_and_errors(tmp_path: Path) -> None:
    report = _scan(_project(tmp_path))
    findings = [(f["path"], f["code"], f["line"], f["col"]) for f in report["findings"]]
    assert findings == [
        ("launch", "NM815", 2, 12),
        ("requirements.txt", "NM810", 1, 0),
        ("run.sh", "NM701", 2, 7),
        ("run.sh", "NM420", 4, 0),
        ("run.sh", "NM422", 4, 24),
        ("train.py", "NM101", 3, 9),
    ]
    assert [(s["path"], s["code"], s["suppression"]) for s in report["suppressed"]] == [
        ("run.sh", "NM702", "ignore")
    ]
    assert [(e["path"], e["reason"]) for e in report["errors"]] == [
        ("deploy/job.yaml", "invalid YAML at line 4: did not find expected node content")
    ]


def test_sarif_and_github_formats_carry_project_file_locations(tmp_path: Path) -> None:
    tree = _project(tmp_path)
    sarif = json.loads(invoke(["scan", "--no-cache", "--format", "sarif", str(tree)]).stdout)
    located = {
        (
            r["ruleId"],
            r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"].rsplit("/", 1)[-1],
            r["locations"][0]["physicalLocation"]["region"]["startLine"],
        )
        for r in sarif["runs"][0]["results"]
    }
    assert ("NM701", "run.sh", 2) in located and ("NM810", "requirements.txt", 1) in located
    github = invoke(["scan", "--no-cache", "--format", "github", str(tree)]).stdout
    assert "file=run.sh,line=2" in github.replace(str(tree) + "/", "")


def test_rewrite_one_diff_check_apply_and_out_dir(tmp_path: Path) -> None:
    tree = _project(tmp_path)
    (tree / "deploy" / "job.yaml").write_text("spec:\n  instanceType: trn2.48xlarge\n")
    diff = invoke(["rewrite", "--no-cache", str(tree)])
    assert diff.exit_code == 0
    touched = [line[6:] for line in diff.stdout.splitlines() if line.startswith("+++ b/")]
    assert touched == ["launch", "requirements.txt", "run.sh", "train.py"]
    assert invoke(["rewrite", "--no-cache", "--check", str(tree)]).exit_code == 1

    out = tmp_path / "out"
    assert invoke(["rewrite", "--no-cache", "--out-dir", str(out), str(tree)]).exit_code == 0
    assert (tree / "run.sh").read_text() == RUN_SH  # the tree itself is untouched
    migrated = (out / "run.sh").read_text()
    assert "PJRT_DEVICE" not in migrated
    assert "export XLA_USE_BF16=1  # neuron-migrate: ignore[NM702]" in migrated
    assert "# TODO(neuron-migrate NM420)" in migrated
    assert (out / "notes.txt").read_text() == "PJRT_DEVICE=NEURON is not read here\n"

    assert invoke(["rewrite", "--no-cache", "--apply", str(tree)]).exit_code == 0
    assert (tree / "run.sh").read_text() == migrated
    assert (tree / "run.sh").stat().st_mode & 0o111  # still executable
    assert invoke(["rewrite", "--no-cache", "--check", str(tree)]).exit_code == 0


def test_rewrite_marks_setup_py_dependencies_after_its_python(tmp_path: Path) -> None:
    tree = tmp_path / "proj"
    tree.mkdir()
    (tree / "setup.py").write_text(
        "import torch_xla.core.xla_model as xm\nfrom setuptools import setup\n\n"
        "setup(name='t', install_requires=[\n    'torch-xla',\n])\n"
    )
    assert invoke(["rewrite", "--no-cache", "--apply", str(tree)]).exit_code == 0
    text = (tree / "setup.py").read_text()
    assert "import torch_xla" not in text  # the unused import is gone (Python rules)
    assert "    # TODO(neuron-migrate NM810): an XLA-era package" in text
    assert invoke(["rewrite", "--no-cache", "--check", str(tree)]).exit_code == 0
