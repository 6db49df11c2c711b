"""A `scan` or `rewrite --apply` killed with SIGKILL leaves nothing behind: its pool workers end
with it, and the temporary file an interrupted write left is removed by the next --apply."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.cli import invoke

FIXTURES = Path(__file__).parents[2] / "fixtures"
pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.append(int(entry.name))
    return found


def _alive(pid: int) -> bool:
    try:
        state = (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.parametrize("command", ["scan", "rewrite"])
def test_pool_workers_end_with_a_run_killed_with_sigkill(tmp_path: Path, command: str) -> None:
    tree = tmp_path / "tree"
    for copy in range(30):
        shutil.copytree(FIXTURES / "analyze", tree / f"copy{copy}")
    scan = subprocess.Popen(
        [sys.executable, "-m", "neuron_migrate", command, "--no-cache", "-j", "2", str(tree)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 120
    while len(workers := _children(scan.pid)) < 2:
        assert scan.poll() is None and time.monotonic() < deadline, "no workers started"
        time.sleep(0.05)
    os.kill(scan.pid, signal.SIGKILL)
    scan.wait()
    deadline = time.monotonic() + 10
    while any(map(_alive, workers)) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = [pid for pid in workers if _alive(pid)]
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    assert not left, f"workers outlived their {command}"


def test_the_next_apply_removes_what_a_killed_apply_left(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    shutil.copytree(FIXTURES / "analyze", tree)
    gone = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        check=True,
        capture_output=True,
        text=True,
    )
    dead = int(gone.stdout)
    # What a write killed between its temporary file and the rename leaves beside the file.
    left = tree / f".neuron-migrate-{dead}-k1ll3d.tmp"
    left.write_text("half a file")
    # A write still running in another process: never touched.
    running = tree / f".neuron-migrate-{os.getpid()}-runn1ng.tmp"
    running.write_text("being written")
    result = invoke(["rewrite", "--apply", "--no-cache", str(tree)])
    assert result.exit_code == 0, result.stderr
    assert not left.exists() and running.exists()
