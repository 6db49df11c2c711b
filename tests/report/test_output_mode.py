"""A report written with -o gets the mode any new file gets (the umask's), in every format, and
an existing report keeps its own."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli import invoke

SOURCE = "import torch_xla.core.xla_model as xm\ndevice = xm.xla_device()\n"


@pytest.fixture
def umask_022() -> Iterator[None]:
    old = os.umask(0o022)
    yield
    os.umask(old)


@pytest.mark.parametrize("form", ["json", "sarif", "terminal", "markdown"])
def test_a_report_written_to_a_file_follows_the_umask(
    tmp_path: Path, form: str, umask_022: None
) -> None:
    (tmp_path / "train.py").write_text(SOURCE)
    out = tmp_path / f"report.{form}"
    result = invoke(["scan", "--no-cache", "-f", form, "-o", str(out), str(tmp_path / "train.py")])
    assert result.exit_code == 0, result.stderr
    assert stat.S_IMODE(out.stat().st_mode) == 0o644
    out.chmod(0o640)
    invoke(["scan", "--no-cache", "-f", form, "-o", str(out), str(tmp_path / "train.py")])
    assert stat.S_IMODE(out.stat().st_mode) == 0o640
