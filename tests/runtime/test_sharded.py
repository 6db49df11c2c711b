"""FSDP2 (`fully_shard`), FSDP1 and DTensor tensor parallelism on the neuron device, two ranks
under torchrun, as the released TorchNeuron lists them supported.

The sharded runs are compared with the same training on the host (gloo): the simulated device
computes on the host, so the weights must agree to float32 rounding, and across ranks exactly.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.exit_abort import run_twice_on_exit_abort

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "runtime"

pytestmark = [pytest.mark.torch, pytest.mark.slow]
pytest.importorskip("torch")

_RANK_LINE = re.compile(r"rank=(\d) flavour=(\w+) checksum=(\S+)")


def _torchrun(port: int, script: str, *args: str) -> list[str]:
    return [
        "torchrun",
        "--nproc-per-node",
        "2",
        "--master-port",
        str(port),
        str(FIXTURES / script),
        *args,
    ]


def _checksums(out: str) -> dict[str, float]:
    found = {m.group(1): float(m.group(3)) for m in _RANK_LINE.finditer(out)}
    assert set(found) == {"0", "1"}, out
    return found


def _on_the_host(port: int, flavour: str) -> float:
    torchrun = Path(sys.executable).with_name("torchrun")
    command = [str(torchrun), *_torchrun(port, "fsdp_train.py", flavour)[1:]]
    env = {**os.environ, "DEVICE": "cpu"}
    env.pop("NEURON_MIGRATE_SIM", None)
    done = run_twice_on_exit_abort(
        lambda: subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    )
    assert done.returncode == 0, done.stderr
    return _checksums(done.stdout)["0"]


@pytest.mark.parametrize(("flavour", "port"), [("fsdp2", 29641), ("fsdp1", 29643)])
def test_fsdp_training_keeps_ranks_equal_and_matches_the_host(sim_run, flavour, port) -> None:
    run = sim_run(None, command=_torchrun(port, "fsdp_train.py", flavour))
    assert run.exit_code == 0, run.err
    checksums = _checksums(run.out)
    assert checksums["0"] == checksums["1"]  # every rank holds the same full weights
    assert checksums["0"] == pytest.approx(_on_the_host(port + 1, flavour), abs=1e-5)
    assert [p["rank"] for p in run.trace["processes"]] == [0, 1]
    # the shards really travelled between the ranks over the neuron group
    assert run.op("c10d::_allgather_base_")["processes"] == 2
    assert run.op("c10d::_reduce_scatter_base_")["processes"] == 2


def test_dtensor_tensor_parallel_matches_the_whole_model(sim_run) -> None:
    run = sim_run(None, command=_torchrun(29645, "tp_train.py"))
    assert run.exit_code == 0, run.err
    lines = re.findall(r"rank=(\d) tp_out=(\S+) gathered=(\S+) TP_OK", run.out)
    assert sorted(rank for rank, _, _ in lines) == ["0", "1"], run.out
    assert len({out for _, out, _ in lines}) == 1
    assert all(gathered == "28.0" for _, _, gathered in lines)
