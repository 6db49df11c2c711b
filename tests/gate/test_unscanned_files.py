"""A file that could not be scanned may hide findings: it fails `--fail-on xla`, `any` and
`error`; and the flags that would turn every file into an error, or the gate off, by accident
are refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli import invoke

XLA = "import torch_xla.core.xla_model as xm\n"


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "clean.py").write_text("import torch\nx = torch.ones(2)\n")
    # Python 2 that uses torch_xla: it does not parse, and what it holds is unknown.
    (tree / "legacy.py").write_text(XLA + 'print "device", xm.xla_device()\n')
    return tree


def _scan(tree: Path, *flags: str) -> tuple[int, dict]:
    result = invoke(["scan", "--no-cache", "-f", "json", *flags, str(tree)])
    return result.exit_code, json.loads(result.stdout) if result.stdout else {}


@pytest.mark.parametrize("fail_on", ["xla", "any", "error", "unsupported,error"])
def test_a_file_that_does_not_parse_fails_gates_that_fail_on_errors(
    tree: Path, fail_on: str
) -> None:
    code, report = _scan(tree, "--fail-on", fail_on)
    assert code == 1
    gate = report["summary"]["gate"]
    assert gate["passed"] is False and gate["failing_errors"] == 1


def test_the_default_gate_counts_findings_only(tree: Path) -> None:
    code, report = _scan(tree)
    assert code == 0 and report["summary"]["gate"]["failing_errors"] == 0


def test_the_terminal_says_what_failed(tree: Path) -> None:
    result = invoke(["scan", "--no-cache", "--fail-on", "error", str(tree)])
    assert result.exit_code == 1 and "1 file not scanned" in result.stdout


@pytest.mark.parametrize(
    ("flags", "named"),
    [
        (["--max-file-size", "-1"], "--max-file-size"),
        (["--max-file-size", "0"], "--max-file-size"),
        (["--target", ""], "--target"),
        (["--fail-on", ""], "--fail-on"),
    ],
)
def test_flags_that_would_disarm_the_scan_are_refused(
    tree: Path, flags: list[str], named: str
) -> None:
    result = invoke(["scan", "--no-cache", *flags, str(tree)])
    assert result.exit_code == 2 and named in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
