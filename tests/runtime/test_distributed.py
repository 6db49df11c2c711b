"""torch.distributed on the neuron backend: DDP and collectives across processes."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "runtime"

pytestmark = [pytest.mark.torch, pytest.mark.slow]
pytest.importorskip("torch")

_RANK_LINE = re.compile(
    r"rank=(\d) checksum=(\S+) allreduce=(\S+, \S+) broadcast=(\S+) "
    r"reduce_scatter=(\S+)"
)


def _check_ranks(out: str) -> None:
    ranks = {m.group(1): m.groups()[1:] for m in _RANK_LINE.finditer(out)}
    assert set(ranks) == {"0", "1"}, out
    assert ranks["0"][0] == ranks["1"][0]  # parameters identical across ranks after DDP
    for _checksum, allreduce, broadcast, reduce_scatter in ranks.values():
        assert allreduce == "[3.0, 3.0]" and broadcast == "7.0" and reduce_scatter == "2.0"


def test_torchrun_ddp_merges_two_traces(sim_run) -> None:
    run = sim_run(
        None,
        command=[
            "torchrun",
            "--nproc-per-node",
            "2",
            "--master-port",
            "29631",
            str(FIXTURES / "ddp_train.py"),
        ],
    )
    assert run.exit_code == 0, run.err
    _check_ranks(run.out)
    assert [p["rank"] for p in run.trace["processes"]] == [0, 1]
    allreduce = run.op("c10d::allreduce_")
    assert allreduce["processes"] == 2 and allreduce["status"] == "native"
    collectives = ("c10d::allgather_", "c10d::broadcast_", "c10d::_reduce_scatter_base_")
    for collective in (*collectives, "c10d::barrier"):
        assert run.op(collective)["count"] >= 2


def test_multiprocessing_spawn_children_get_the_device(sim_run) -> None:
    run = sim_run(FIXTURES / "ddp_train.py", "spawn", "29632")
    assert run.exit_code == 0, run.err
    _check_ranks(run.out)
    assert len(run.trace["processes"]) == 2
