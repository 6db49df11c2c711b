"""A failed gate names what failed it, in every format a person reads it in: "gate failed: 1
findings" without the finding leaves a CI user to hunt for a trn1 instance type in a YAML.
`verify`'s exit 1 says why too, even when its agreement is 100%."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli import invoke
from tests.scan.cli_helpers import run_cli

JOB = "instance_type: ml.trn1.32xlarge\n"
PLAIN = "import torch\n\nx = torch.ones(2)\nprint(float(x.sum()))\n"


def _verdict(terminal: str) -> str:
    """The terminal's gate line, unwrapped."""
    return " ".join(terminal[terminal.index("gate failed") :].split())


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "tree"
    root.mkdir()
    (root / "job.yaml").write_text(JOB)
    (root / "train.py").write_text(PLAIN)
    return root


@pytest.mark.parametrize("form", ["terminal", "github", "junit", "markdown", "html"])
def test_a_failed_gate_names_the_finding(tree: Path, form: str) -> None:
    result = invoke(["scan", "--no-cache", "-f", form, str(tree)])
    assert result.exit_code == 1, result.stderr
    verdict = [line for line in (result.stdout + result.stderr).splitlines() if "ailed" in line]
    assert any("job.yaml:1" in line and "NM813" in line for line in verdict), verdict


def test_many_failures_are_named_up_to_a_few(tmp_path: Path) -> None:
    for index in range(9):
        (tmp_path / f"job{index}.yaml").write_text(JOB)
    result = invoke(["scan", "--no-cache", str(tmp_path)])
    verdict = _verdict(result.stdout)
    assert "job0.yaml:1 NM813" in verdict and "and 6 more" in verdict


def test_a_file_not_scanned_that_fails_the_gate_is_named(tmp_path: Path) -> None:
    (tmp_path / "broken.py").write_text("import torch\ndef f(:\n")
    result = invoke(["scan", "--no-cache", "--fail-on", "error", str(tmp_path)])
    assert result.exit_code == 1
    verdict = _verdict(result.stdout)
    assert "broken.py (not scanned)" in verdict


@pytest.mark.torch
def test_verify_says_why_it_exits_1(tree: Path) -> None:
    pytest.importorskip("torch")
    for form in ("terminal", "json"):
        code, out, err = run_cli(
            ["verify", str(tree), "-f", form, "--", "python", "train.py"], cwd=str(tree)
        )
        assert code == 1, err
        assert "gate failed" in err and "job.yaml:1 NM813" in err, err
        assert "gate failed" not in out  # the report on stdout stays the report
