"""Building the native engine once across processes: a build that was killed (Ctrl-C, an OOM
kill, a CI timeout) never blocks the next one, a process waiting on a live build says so in one
line, and no process ever loads a half-written build. The build step is a fake here: compiling
the engine takes a minute."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest
from neuron_sim.build_once import built_once

# A process that builds `target` with a fake build step: it writes half of its output, says
# BUILDING, waits for `release` to exist (or is killed there), then writes the rest.
BUILDER = """
import sys, time
from pathlib import Path
from neuron_sim.build_once import built_once

target, release = Path(sys.argv[1]), Path(sys.argv[2])

def build(folder):
    out = folder / "engine.so"
    out.write_text("half of ")
    print("BUILDING", flush=True)
    while not release.exists():
        time.sleep(0.05)
    out.write_text("half of the build by the first process")
    return out

built_once(target, build, announce=print)
print("BUILT", flush=True)
"""


def _start_builder(tmp_path: Path, target: Path) -> tuple[subprocess.Popen[str], Path]:
    script = tmp_path / "builder.py"
    script.write_text(BUILDER, encoding="utf-8")
    release = tmp_path / "release"
    builder = subprocess.Popen(
        [sys.executable, str(script), str(target), str(release)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert builder.stdout is not None
    assert builder.stdout.readline().strip() == "BUILDING"
    return builder, release


class FakeBuild:
    def __init__(self, text: str = "built here") -> None:
        self.calls = 0
        self.text = text

    def __call__(self, folder: Path) -> Path:
        self.calls += 1
        out = folder / "engine.so"
        out.write_text(self.text)
        return out


def test_the_first_call_builds_and_later_calls_reuse_the_output(tmp_path: Path) -> None:
    target = tmp_path / "engine-abc" / "engine.so"
    build = FakeBuild()
    assert built_once(target, build, announce=print) == target
    assert built_once(target, build, announce=print) == target
    assert build.calls == 1 and target.read_text() == "built here"
    # the temporary build folder is gone: only the output and the lock file remain
    assert sorted(p.name for p in target.parent.iterdir()) == ["engine.so", "engine.so.lock"]


def test_a_build_killed_while_it_held_the_lock_does_not_block_the_next(tmp_path: Path) -> None:
    target = tmp_path / "engine-abc" / "engine.so"
    builder, _ = _start_builder(tmp_path, target)
    os.kill(builder.pid, signal.SIGKILL)  # as an OOM kill or a CI timeout would
    builder.wait()
    assert not target.exists()  # its half-written output never reached the final name

    messages: list[str] = []
    build = FakeBuild()
    started = time.monotonic()
    assert built_once(target, build, announce=messages.append) == target
    assert time.monotonic() - started < 5
    assert build.calls == 1 and target.read_text() == "built here"
    assert messages == []  # nobody holds the lock: nothing to wait for
    # the killed build's folder is cleaned up
    assert sorted(p.name for p in target.parent.iterdir()) == ["engine.so", "engine.so.lock"]


def test_a_lock_file_left_by_a_dead_process_does_not_block(tmp_path: Path) -> None:
    target = tmp_path / "engine-abc" / "engine.so"
    target.parent.mkdir()
    gone = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        check=True,
        capture_output=True,
        text=True,
    )
    (target.parent / "engine.so.lock").write_text(gone.stdout)
    build = FakeBuild()
    assert built_once(target, build, announce=print) == target
    assert build.calls == 1


def test_a_process_waits_for_a_live_build_saying_so_in_one_line(tmp_path: Path) -> None:
    target = tmp_path / "engine-abc" / "engine.so"
    builder, release = _start_builder(tmp_path, target)
    messages: list[str] = []
    build = FakeBuild("a second build")
    result: list[Path] = []
    waiter = threading.Thread(
        target=lambda: result.append(built_once(target, build, announce=messages.append))
    )
    waiter.start()
    time.sleep(0.5)
    assert waiter.is_alive() and not target.exists()  # waiting, and nothing half-written shows
    assert len(messages) == 1 and "\n" not in messages[0]
    assert f"waiting for process {builder.pid}" in messages[0]
    assert str(target.parent) in messages[0]

    release.touch()
    waiter.join(timeout=30)
    assert builder.wait(timeout=30) == 0
    assert result == [target]
    assert build.calls == 0  # the first process's build is used, not built again
    assert target.read_text() == "half of the build by the first process"


def test_a_failed_build_leaves_nothing_and_releases_the_lock(tmp_path: Path) -> None:
    target = tmp_path / "engine-abc" / "engine.so"

    def failing(folder: Path) -> Path:
        (folder / "engine.so").write_text("half")
        assert not target.exists()
        raise RuntimeError("compiler error: engine.cpp:1")

    with pytest.raises(RuntimeError, match="compiler error"):
        built_once(target, failing, announce=print)
    assert sorted(p.name for p in target.parent.iterdir()) == ["engine.so.lock"]
    build = FakeBuild()
    assert built_once(target, build, announce=print) == target and build.calls == 1


# The native engine's loader, with the compile step faked: torch's own build lock (a `lock`
# file whose existence is the lock) left behind by a killed build made every later process wait
# forever.
NATIVE_LOAD_AFTER_A_KILLED_BUILD = """
import sys
from pathlib import Path
from neuron_sim import native

folder = native._build_dir()
folder.mkdir(parents=True)
(folder / "lock").write_text("")  # what torch's FileBaton leaves when its build is killed

def compile_engine(work):
    out = work / "neuron_sim_engine.so"
    out.write_text("engine")
    return out, "ENGINE MODULE"

native._compile = compile_engine
native._import_built = lambda path: "IMPORTED " + path.read_text()
print("LOADED", native.load())
print("AGAIN", native._import_built(folder / "neuron_sim_engine.so"))
"""


@pytest.mark.torch
def test_the_engine_loads_after_a_build_that_was_killed(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    script = tmp_path / "load.py"
    script.write_text(textwrap.dedent(NATIVE_LOAD_AFTER_A_KILLED_BUILD), encoding="utf-8")
    env = {**os.environ, "NEURON_MIGRATE_SIM_BUILD_DIR": str(tmp_path / "build")}
    env.pop("NEURON_MIGRATE_SIM", None)
    try:
        run = subprocess.run(
            [sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=60
        )
    except subprocess.TimeoutExpired:
        pytest.fail("loading the engine waited forever on the killed build's lock")
    assert run.returncode == 0, run.stderr
    assert "LOADED ENGINE MODULE" in run.stdout and "AGAIN IMPORTED engine" in run.stdout
    assert "building the native neuron engine" in run.stderr
