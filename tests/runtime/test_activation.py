"""Activation: the device exists only under `neuron-migrate run`; exit codes and traces survive."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from neuron_migrate.errors import UnknownTargetError, UsageError
from neuron_migrate.verify import runner

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "runtime"

pytestmark = pytest.mark.torch
pytest.importorskip("torch")


def _python(
    code: str, env: dict[str, str], cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=cwd, capture_output=True, text=True, timeout=120
    )


def test_import_torch_is_untouched_without_activation() -> None:
    env = {k: v for k, v in os.environ.items() if k != runner.TARGET_ENV}
    result = _python(
        "import sys, torch\n"
        "print(torch._C._get_privateuse1_backend_name(), hasattr(torch, 'neuron'),"
        " 'neuron_sim.tensor' in sys.modules, 'torch_neuronx' in sys.modules)",
        env,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["privateuseone", "False", "False", "False"]


def test_refuses_beside_the_real_torch_neuronx(tmp_path: Path) -> None:
    (tmp_path / "torch_neuronx").mkdir()
    (tmp_path / "torch_neuronx" / "__init__.py").write_text("")
    env = dict(os.environ, PYTHONPATH=str(tmp_path), **{runner.TARGET_ENV: "2.13.3.0"})
    result = _python("import torch", env, cwd=tmp_path)
    assert result.returncode != 0
    assert "the real torch-neuronx is installed" in result.stderr


def test_a_raising_script_keeps_its_exit_code_and_trace(sim_run) -> None:
    run = sim_run(FIXTURES / "raises.py")
    assert run.exit_code == 1
    assert "ValueError: training diverged" in run.err
    assert "sum=6.0" in run.out
    assert len(run.trace["processes"]) == 1
    assert run.op("aten::mul.Tensor")["count"] == 1
    assert run.trace["exit_code"] == 1


def test_cli_writes_the_trace_and_exits_with_the_command_code(tmp_path: Path) -> None:
    trace_path = tmp_path / "out" / "trace.json"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "neuron_migrate",
            "run",
            "--target",
            "2.13.3.0",
            "--trace",
            str(trace_path),
            "--",
            "python",
            str(FIXTURES / "raises.py"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert result.returncode == 1, result.stderr
    assert trace_path.exists(), result.stderr
    trace = json.loads(trace_path.read_text())
    assert trace["schema_version"] == runner.SCHEMA_VERSION
    assert trace["target"] == "2.13.3.0"
    assert trace["exit_code"] == 1
    assert "neuron-migrate run: torch-neuronx 2.13.3.0" in result.stderr
    assert "trace written to" in result.stderr


def test_python_dash_m_pytest_runs_on_the_device(sim_run, tmp_path: Path) -> None:
    (tmp_path / "test_on_device.py").write_text(
        "import torch\n\n"
        "def test_device():\n"
        "    x = torch.arange(4.0, device='neuron')\n"
        "    assert x.device.type == 'neuron' and x.sum().item() == 6.0\n"
    )
    run = sim_run(
        None,
        command=["python", "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_on_device.py"],
    )
    assert run.exit_code == 0, run.out + run.err
    assert "1 passed" in run.out
    assert run.op("aten::sum")["count"] >= 1


def test_usage_errors() -> None:
    with pytest.raises(UsageError, match="give the command"):
        runner.run([], None)
    with pytest.raises(UsageError, match="no such script"):
        runner.run(["missing_script.py"], None)
    with pytest.raises(UnknownTargetError):
        runner.run(["python", "-c", "pass"], "0.0.1")


def test_a_program_that_never_compiles_loads_no_compiler(
    sim_run, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On the native engine functorch, dynamo and the sympy they bring load at a program's
    first compile: at start they cost every process on the device about half a second of CPU.
    (The Python engine still loads sympy at start, by another path.)"""
    monkeypatch.setenv("NEURON_MIGRATE_SIM_ENGINE", "native")
    run = sim_run(
        """
        import sys
        import torch

        x = torch.ones(2, device="neuron") * 2
        heavy = ("sympy", "torch._functorch.compile_utils", "torch._dynamo")
        print("LOADED", [name for name in heavy if name in sys.modules], x.sum().item())
        """
    )
    run.assert_finished("LOADED")
    assert "LOADED [] 4.0" in run.out, run.out


def test_torch_neuronx_imported_before_torch_is_the_stand_in(sim_run) -> None:
    """The real package imports torch itself, so a file whose first import is torch_neuronx
    works; so must the stand-in, in the parent and in its spawned children."""
    run = sim_run(
        """
        import torch_neuronx
        from torch_neuronx.utils import get_neuron_registered_ops
        import torch
        import torch.multiprocessing as mp

        def child(index):
            import torch_neuronx as again
            assert again is torch_neuronx and again.SIMULATED

        if __name__ == "__main__":
            assert torch_neuronx.SIMULATED and "aten::add.Tensor" in get_neuron_registered_ops()
            x = torch.arange(4.0, device="neuron") + 1
            assert x.device.type == "neuron"
            assert "aten::add.Tensor" in torch_neuronx.get_executed_ops()
            mp.spawn(child, nprocs=1)
            print("STAND-IN FIRST OK")
        """
    )
    run.assert_finished("STAND-IN FIRST OK")


def test_torch_neuronx_is_missing_where_the_device_is_not_installed(tmp_path: Path) -> None:
    """Outside `run` nothing stands in: `import torch_neuronx` fails as it does on a machine
    without the package, even with the run's import path set by hand."""
    env = {k: v for k, v in os.environ.items() if k != runner.TARGET_ENV}
    _, run_env = runner.prepare(["python", "-c", "pass"], "2.13.3.0", tmp_path)
    env["PYTHONPATH"] = run_env["PYTHONPATH"]
    result = _python("import torch_neuronx", env, cwd=tmp_path)
    assert result.returncode != 0
    assert "ModuleNotFoundError: No module named 'torch_neuronx'" in result.stderr
