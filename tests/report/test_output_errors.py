"""A report that cannot be written -- `-o` naming a folder, `-o` under a file, stdout on a full
disk -- is one line on stderr and exit 2 (a CI reads exit 1 as "the gate failed"), in every
format, and leaves nothing behind."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli import invoke

XLA = "import torch_xla.core.xla_model as xm\ndevice = xm.xla_device()\n"
FORMATS = ("terminal", "json", "sarif", "markdown")


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "tree"
    root.mkdir()
    (root / "train.py").write_text(XLA)
    return root


def _one_line_exit_2(code: int, stderr: str) -> None:
    assert code == 2, stderr
    assert "Traceback" not in stderr
    assert len(stderr.strip().splitlines()) == 1, stderr


@pytest.mark.parametrize("form", FORMATS)
def test_o_naming_a_folder(tree: Path, tmp_path: Path, form: str) -> None:
    folder = tmp_path / "reports"
    folder.mkdir()
    result = invoke(["scan", "--no-cache", "-f", form, "-o", str(folder), str(tree)])
    _one_line_exit_2(result.exit_code, result.stderr)
    assert "is a folder" in result.stderr
    assert os.listdir(folder) == [] and sorted(os.listdir(tmp_path)) == ["reports", "tree"]


@pytest.mark.parametrize("form", FORMATS)
def test_o_under_a_file(tree: Path, tmp_path: Path, form: str) -> None:
    result = invoke(
        ["scan", "--no-cache", "-f", form, "-o", str(tree / "train.py" / "r"), str(tree)]
    )
    _one_line_exit_2(result.exit_code, result.stderr)
    assert "train.py" in result.stderr


@pytest.mark.parametrize("form", FORMATS)
def test_o_into_a_missing_folder_makes_it(tree: Path, tmp_path: Path, form: str) -> None:
    report = tmp_path / "new" / "deeper" / "report.out"
    result = invoke(["scan", "--no-cache", "-f", form, "-o", str(report), str(tree)])
    assert result.exit_code == 0, result.stderr
    assert "xla_device" in report.read_text()


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize(
    "args",
    [
        ["scan", "-f", "terminal"],
        ["scan", "-f", "json"],
        ["scan", "-f", "sarif"],
        ["rewrite"],
        ["rewrite", "-f", "json"],
    ],
)
def test_stdout_on_a_full_disk(tree: Path, args: list[str]) -> None:
    with open("/dev/full", "w") as full:
        done = subprocess.run(
            [sys.executable, "-m", "neuron_migrate", *args, "--no-cache", str(tree)],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
            env={**os.environ, "NEURON_MIGRATE_NO_SERVER": "1"},
        )
    stderr = done.stderr
    if args[0] == "rewrite":  # its summary goes to stderr: the error is the last line
        stderr = stderr.strip().splitlines()[-1]
    _one_line_exit_2(done.returncode, stderr)
    assert "No space left on device" in stderr


@pytest.mark.parametrize("form", FORMATS)
def test_o_onto_a_symlink_writes_its_target(tree: Path, tmp_path: Path, form: str) -> None:
    (tmp_path / "reports").mkdir()
    target = tmp_path / "reports" / "latest.out"
    target.write_text("old\n")
    link = tmp_path / "report.out"
    link.symlink_to("reports/latest.out")
    result = invoke(["scan", "--no-cache", "-f", form, "-o", str(link), str(tree)])
    assert result.exit_code == 0, result.stderr
    assert link.is_symlink() and os.readlink(link) == "reports/latest.out"
    assert "xla_device" in target.read_text()
