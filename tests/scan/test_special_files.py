"""A FIFO (or any file that is not a regular file) is never opened: opening a FIFO waits for a
writer for ever. Scan lists each one a scan would have read under `skipped`; rewrite names it
and goes on. The commands run in a child process, so that a hang fails the test instead of
stopping the suite."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are POSIX")

XLA = "import torch_xla.core.xla_model as xm\ndevice = xm.xla_device()\n"
# A FIFO under each name a scan reads: Python, a launch script, a Dockerfile, a notebook, a
# requirements file, and an extension-less name a shebang would make a launch script.
NAMES = ("train.py", "run.sh", "Dockerfile", "demo.ipynb", "requirements.txt", "launch")


def _neuron_migrate(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "neuron_migrate", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "NEURON_MIGRATE_NO_SERVER": "1"},
    )


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "tree"
    (root / "pipes").mkdir(parents=True)
    (root / "ok.py").write_text(XLA)
    for name in NAMES:
        os.mkfifo(root / "pipes" / name)
    return root


@pytest.mark.parametrize("cache", ["--no-cache", "--cache-dir"])
def test_scan_lists_fifos_as_skipped_and_never_opens_them(
    tree: Path, tmp_path: Path, cache: str
) -> None:
    args = [cache, str(tmp_path / "cache")] if cache == "--cache-dir" else [cache]
    done = _neuron_migrate("scan", "-f", "json", "--fail-on", "error", *args, str(tree))
    assert done.returncode == 0, done.stderr  # skipped is no error
    report = json.loads(done.stdout)
    skipped = {entry["path"]: entry["reason"] for entry in report["skipped"]}
    assert set(skipped) == {f"pipes/{name}" for name in NAMES}
    assert all("not a regular file" in reason for reason in skipped.values())
    assert report["errors"] == []
    assert [f["path"] for f in report["findings"]] == ["ok.py"]


def test_rewrite_names_fifos_and_rewrites_the_rest(tree: Path) -> None:
    done = _neuron_migrate("rewrite", "--apply", "--no-cache", str(tree))
    assert done.returncode == 0, done.stderr
    for name in NAMES:
        assert f"pipes/{name}: a FIFO: not a regular file" in done.stderr
    assert "xla_device" not in (tree / "ok.py").read_text()


def test_a_fifo_given_as_the_path_is_not_opened(tree: Path) -> None:
    done = _neuron_migrate("scan", "-f", "json", "--no-cache", str(tree / "pipes" / "train.py"))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["skipped"][0]["reason"].startswith("a FIFO")
