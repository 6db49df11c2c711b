"""`run -- python ...` starts the tool's own interpreter; it says so when the user's PATH would
have found another `python`."""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

from neuron_migrate.verify import runner
from tests.cli import invoke

OURS = os.path.dirname(sys.executable)


def _fake_python(folder: Path) -> Path:
    folder.mkdir()
    fake = folder / "python"
    fake.write_text("#!/bin/sh\nexit 0\n")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    return fake


def test_another_python_first_on_path_is_named(tmp_path: Path) -> None:
    fake = _fake_python(tmp_path / "bin")
    note = runner.interpreter_note(["python", "train.py"], str(fake.parent))
    assert note is not None
    assert f"`python` is {sys.executable}" in note and f"not {fake}" in note


def test_no_note_when_the_path_finds_ours_or_the_command_is_a_script(tmp_path: Path) -> None:
    assert runner.interpreter_note(["python", "train.py"], OURS) is None
    assert runner.interpreter_note(["train.py"], str(tmp_path)) is None
    assert runner.interpreter_note(["sh", "-c", "true"], "/usr/bin:/bin") is None


def test_no_python_on_path_is_said_too(tmp_path: Path) -> None:
    note = runner.interpreter_note(["python3", "-m", "m"], str(tmp_path))
    assert note is not None and note.endswith("no python3 is on your PATH")


def test_run_prints_it_on_stderr_before_running(tmp_path: Path, monkeypatch) -> None:
    fake = _fake_python(tmp_path / "bin")
    monkeypatch.setenv("PATH", f"{fake.parent}{os.pathsep}{os.environ['PATH']}")

    def ran(command: list[str], target: str | None) -> None:
        raise SystemExit(0)

    monkeypatch.setattr(runner, "run", ran)
    result = invoke(["run", "--", "python", "train.py"])
    assert result.exit_code == 0
    assert f"`python` is {sys.executable}" in result.stderr and f"not {fake}" in result.stderr
    assert invoke(["run", "-q", "--", "python", "train.py"]).stderr == ""
