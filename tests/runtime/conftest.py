"""Helpers for the runtime tests: run a script under the simulated device and read its trace.

The device is installed process-wide at `import torch`, so every test runs its script in a
fresh process through `neuron_migrate.verify.runner`, exactly as `neuron-migrate run` does.
"""

from __future__ import annotations

import os
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from neuron_migrate.verify import runner

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "runtime"


@dataclass
class SimRun:
    exit_code: int
    trace: dict[str, Any]
    out: str
    err: str

    def assert_finished(self, marker: str) -> None:
        """The script exited 0 and printed `marker`, which it prints after its last assert."""
        assert self.exit_code == 0, self.err
        assert marker in self.out

    def op(self, name: str) -> dict[str, Any]:
        matches = [op for op in self.trace["ops"] if op["op"] == name]
        assert matches, f"{name} not in trace: {[op['op'] for op in self.trace['ops']]}"
        return matches[0]


ENGINE_ENV = "NEURON_MIGRATE_SIM_ENGINE"


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """`each_engine` runs a test on both engines, or on the one a run names in
    NEURON_MIGRATE_SIM_ENGINE (.ci/run's second pass, on the Python engine, ran the native one
    in its first pass already)."""
    if "each_engine" in metafunc.fixturenames:
        named = os.environ.get(ENGINE_ENV)
        metafunc.parametrize(
            "each_engine", [named] if named else ["native", "python"], indirect=True
        )


@pytest.fixture
def each_engine(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Runs the test once on each engine (`pytest.mark.usefixtures("each_engine")`)."""
    monkeypatch.setenv(ENGINE_ENV, request.param)
    return request.param


@pytest.fixture
def sim_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]):
    """`sim_run(source_or_path, *args)` runs a Python script under the simulated device."""
    monkeypatch.chdir(tmp_path)

    def run(
        script: str | Path, *args: str, command: list[str] | None = None, target: str | None = None
    ) -> SimRun:
        if command is None:
            if isinstance(script, str):
                path = tmp_path / "script.py"
                path.write_text(textwrap.dedent(script), encoding="utf-8")
                script = path
            command = [sys.executable, str(script), *args]
        capfd.readouterr()
        result = runner.run(command, target)
        captured = capfd.readouterr()
        return SimRun(result.exit_code, result.trace, captured.out, captured.err)

    return run
