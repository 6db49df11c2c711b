"""Files their own tools accept are not parse errors: a shell script that passes `bash -n` where
the grammar stumbles (a command of assignments and redirects only), a Dockerfile `\\` continuation
followed by blanks (BuildKit takes it), a notebook cell opened by an indented `!pip` line
(IPython takes it). Each is scanned, and what it holds is found."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.cli import invoke

NOTEBOOK_CELLS = [
    ["  !pip install torch-neuronx\n"],
    ["import torch_xla.core.xla_model as xm\n", "device = xm.xla_device()\n"],
]


def _scan(root: Path) -> dict[str, object]:
    result = invoke(["scan", "--no-cache", "-f", "json", "--fail-on", "none", str(root)])
    assert result.exit_code == 0, result.stderr
    report: dict[str, object] = json.loads(result.stdout)
    return report


def _found(report: dict[str, object]) -> set[tuple[str, str]]:
    findings = report["findings"]
    assert isinstance(findings, list)
    return {(f["path"], f["code"]) for f in findings}


def _bash_accepts(path: Path) -> None:
    bash = shutil.which("bash")
    if bash is not None:
        assert subprocess.run([bash, "-n", str(path)], capture_output=True).returncode == 0


def test_a_shell_statement_the_grammar_cannot_read_and_that_holds_nothing(tmp_path: Path) -> None:
    script = tmp_path / "launch.sh"
    script.write_text(
        "#!/bin/bash\nOUT=$(X=$(hostname) 2>&1)\nexport XLA_USE_BF16=1\npython train.py\n"
    )
    _bash_accepts(script)
    report = _scan(tmp_path)
    assert report["errors"] == []
    assert ("launch.sh", "NM702") in _found(report)


@pytest.mark.parametrize(
    "head",
    ["python - <<EOF 2>&1 | tee log", "cat >> out <<'EOF' | tee -a log", "cat <<EOF >out | tee"],
)
def test_a_heredoc_with_redirects_then_a_pipe(tmp_path: Path, head: str) -> None:
    script = tmp_path / "launch.sh"
    text = f"#!/bin/bash\n{head}\nimport torch\nEOF\nexport XLA_USE_BF16=1\n"
    script.write_text(text)
    _bash_accepts(script)
    report = _scan(tmp_path)
    assert report["errors"] == []
    assert ("launch.sh", "NM702") in _found(report)
    result = invoke(["rewrite", "--apply", "--no-cache", str(tmp_path)])
    assert result.exit_code == 0, result.stderr
    assert script.read_text().startswith(f"#!/bin/bash\n{head}\nimport torch\nEOF\n")


def test_a_shell_script_that_truly_does_not_parse_is_still_an_error(tmp_path: Path) -> None:
    (tmp_path / "launch.sh").write_text("#!/bin/bash\nif true; then\n  export XLA_USE_BF16=1\n")
    errors = _scan(tmp_path)["errors"]
    assert isinstance(errors, list) and [e["path"] for e in errors] == ["launch.sh"]


def test_a_dockerfile_continuation_followed_by_blanks(tmp_path: Path) -> None:
    (tmp_path / "Dockerfile").write_text(
        "FROM python:3.10\n"
        "RUN pip install torch \\  \n"
        "    torch-xla\n"
        "ENV XLA_USE_BF16=1 \\\t\n"
        "    OTHER=1\n"
    )
    report = _scan(tmp_path)
    assert report["errors"] == []
    assert {("Dockerfile", "NM702")} <= _found(report)
    assert any(code.startswith("NM8") for path, code in _found(report) if path == "Dockerfile")


def test_the_rewrite_keeps_a_dockerfile_continuation_followed_by_blanks(tmp_path: Path) -> None:
    text = "FROM python:3.10\nRUN pip install torch \\  \n    torch-xla\nENV XLA_USE_BF16=1\n"
    (tmp_path / "Dockerfile").write_text(text)
    result = invoke(["rewrite", "--no-cache", str(tmp_path)])
    assert result.exit_code == 0 and "could not be read" not in result.stderr, result.stderr
    assert "+# TODO(neuron-migrate NM702)" in result.stdout  # read, and migrated
    assert "-RUN" not in result.stdout and "+RUN" not in result.stdout


@pytest.mark.parametrize("indent", ["  ", "\t"])
def test_a_notebook_cell_opened_by_an_indented_shell_line(tmp_path: Path, indent: str) -> None:
    cells = [[line.replace("  ", indent, 1) for line in NOTEBOOK_CELLS[0]], NOTEBOOK_CELLS[1]]
    notebook = {
        "cells": [
            {
                "cell_type": "code",
                "metadata": {},
                "source": c,
                "outputs": [],
                "execution_count": None,
            }
            for c in cells
        ],
        "metadata": {"kernelspec": {"language": "python"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    (tmp_path / "demo.ipynb").write_text(json.dumps(notebook, indent=1))
    report = _scan(tmp_path)
    assert report["errors"] == []
    assert ("demo.ipynb", "NM101") in _found(report)
    result = invoke(["rewrite", "--apply", "--no-cache", str(tmp_path)])
    assert result.exit_code == 0, result.stderr
    migrated = json.loads((tmp_path / "demo.ipynb").read_text())
    first = migrated["cells"][0]["source"]
    (at,) = [n for n, line in enumerate(first) if "!pip install torch-neuronx" in line]
    # As it was while it opens the cell; below an import the rewrite added, at the cell's
    # indentation (IPython drops only the first line's).
    assert first[at] == (cells[0][0] if at == 0 else "!pip install torch-neuronx\n")
    assert "xla_device" not in "".join(migrated["cells"][1]["source"])


BAD_STATEMENT = "if [ -f x ]; then echo; fi fi\n"  # bash -n: unexpected token `fi'
SCRIPT = f"#!/bin/bash\nexport XLA_USE_BF16=1\n{BAD_STATEMENT}export PJRT_DEVICE=NEURON\n"


def _partly(tmp_path: Path) -> Path:
    script = tmp_path / "launch.sh"
    script.write_text(SCRIPT)
    bash = shutil.which("bash")
    if bash is not None:
        assert subprocess.run([bash, "-n", str(script)], capture_output=True).returncode != 0
    return script


def test_a_shell_statement_that_does_not_parse_leaves_the_others_read(tmp_path: Path) -> None:
    _partly(tmp_path)
    report = _scan(tmp_path)
    findings = report["findings"]
    assert isinstance(findings, list)
    assert {(f["api"], f["line"]) for f in findings} >= {
        ("xla-env-var:XLA_USE_BF16", 2),
        ("xla-env-var:PJRT_DEVICE", 4),
    }
    assert report["errors"] == [
        {
            "path": "launch.sh",
            "reason": "shell syntax error in the statement at line 3",
            "kind": "syntax",
            "cell": None,
            "partial": True,
        }
    ]


def test_the_rewrite_leaves_the_statement_that_does_not_parse_and_migrates_the_rest(
    tmp_path: Path,
) -> None:
    script = _partly(tmp_path)
    result = invoke(["rewrite", "--apply", "--no-cache", "-f", "json", str(tmp_path)])
    assert result.exit_code == 0, result.stderr
    text = script.read_text()
    assert BAD_STATEMENT in text  # as it was
    assert "PJRT_DEVICE" not in text  # dropped: TorchNeuron needs none
    assert "TODO(neuron-migrate NM702)" in text
    report = json.loads(result.stdout)
    assert [f["path"] for f in report["files"]] == ["launch.sh"]
    assert [(e["path"], e["partial"]) for e in report["errors"]] == [("launch.sh", True)]
    assert "read in part launch.sh: shell syntax error in the statement at line 3" in " ".join(
        result.stderr.split()
    )
