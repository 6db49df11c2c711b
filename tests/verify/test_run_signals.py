"""`run` passes SIGINT, SIGTERM and SIGHUP on to the command's whole process group, waits for
it and exits with its status: a killed `run` never leaves the command running."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(
    not hasattr(os, "killpg") or not Path("/proc/self/stat").exists(), reason="POSIX and /proc"
)

# The command: starts a grandchild in its group, says so, and on a signal writes which one it
# got and exits 7 (SIGTERM, SIGHUP) or dies of it (SIGINT, as Python does for Ctrl-C).
CHILD = """\
import os, signal, subprocess, sys, time
grandchild = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
def on(signum, frame):
    with open("got", "w") as out:
        out.write(signal.Signals(signum).name)
    grandchild.wait()  # it got the signal too: the whole group did
    sys.exit(7)
signal.signal(signal.SIGTERM, on)
signal.signal(signal.SIGHUP, on)
with open("pids", "w") as out:
    out.write(f"{os.getpid()} {grandchild.pid}")
time.sleep(60)
"""


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _ended(*pids: int) -> bool:
    """Whether all of `pids` end within a while (a Python interrupted unwinds, then exits)."""
    deadline = time.monotonic() + 20
    while any(map(_alive, pids)):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def _started(tmp_path: Path) -> tuple[subprocess.Popen[bytes], list[int]]:
    (tmp_path / "child.py").write_text(CHILD)
    run = subprocess.Popen(
        [sys.executable, "-m", "neuron_migrate", "run", "--", "python", "child.py"],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 120
    while not (tmp_path / "pids").exists() or not (tmp_path / "pids").read_text():
        assert time.monotonic() < deadline and run.poll() is None
        time.sleep(0.05)
    time.sleep(0.2)
    return run, [int(pid) for pid in (tmp_path / "pids").read_text().split()]


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_a_signal_to_run_reaches_the_command_and_run_exits_with_its_status(
    tmp_path: Path, signum: int
) -> None:
    run, (child, grandchild) = _started(tmp_path)
    os.kill(run.pid, signum)  # to run's PID only, as `kill` or a supervisor sends it
    assert run.wait(timeout=60) == 7
    assert (tmp_path / "got").read_text() == signal.Signals(signum).name
    assert _ended(child, grandchild)


def test_sigint_to_run_alone_interrupts_the_command(tmp_path: Path) -> None:
    run, (child, grandchild) = _started(tmp_path)
    os.kill(run.pid, signal.SIGINT)
    assert run.wait(timeout=60) == 128 + signal.SIGINT
    assert _ended(child, grandchild)


def test_sigkill_to_run_ends_the_command_and_what_it_started(tmp_path: Path) -> None:
    run, (child, grandchild) = _started(tmp_path)
    os.kill(run.pid, signal.SIGKILL)  # nothing of run's own can pass this one on
    assert run.wait(timeout=60) == -signal.SIGKILL
    assert _ended(child, grandchild)


def test_a_run_that_ends_by_itself_leaves_its_group_alone(tmp_path: Path) -> None:
    (tmp_path / "quick.py").write_text("print('done')\n")
    done = subprocess.run(
        [sys.executable, "-m", "neuron_migrate", "run", "-q", "--", "python", "quick.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0 and done.stdout == "done\n", done.stderr
