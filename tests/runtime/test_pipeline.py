"""Point-to-point and `torch.distributed.pipelining` over the neuron process group, two ranks.

Whether the device runs `c10d::send` / `c10d::recv_` is the matrix's word (the released docs list
pipeline parallelism as supported but name no point-to-point op): where the matrix says native,
a two-stage GPipe run must train the same weights as on the host with gloo; where it does not,
the first send is refused at the user's line.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "runtime"

pytestmark = [pytest.mark.torch, pytest.mark.slow]
pytest.importorskip("torch")

_RANK_LINE = re.compile(r"rank=(\d) p2p=(\[[^\]]*\]) stage_checksum=(\S+)")


def _torchrun(port: int) -> list[str]:
    return [
        "--nproc-per-node",
        "2",
        "--master-port",
        str(port),
        str(FIXTURES / "pipeline_train.py"),
    ]


def _ranks(out: str) -> dict[str, tuple[str, float]]:
    found = {m.group(1): (m.group(2), float(m.group(3))) for m in _RANK_LINE.finditer(out)}
    assert set(found) == {"0", "1"}, out
    return found


def _on_the_host(port: int) -> dict[str, tuple[str, float]]:
    env = {**os.environ, "DEVICE": "cpu"}
    env.pop("NEURON_MIGRATE_SIM", None)
    torchrun = str(Path(sys.executable).with_name("torchrun"))
    done = subprocess.run(
        [torchrun, *_torchrun(port)], env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr
    return _ranks(done.stdout)


def test_a_two_stage_pipeline_as_the_matrix_says(sim_run) -> None:
    from neuron_migrate.matrix import load_matrix

    send = load_matrix().op_status("c10d::send").status
    run = sim_run(None, command=["torchrun", *_torchrun(29651)])
    if send != "native":
        assert run.exit_code != 0
        assert "c10d::send is not supported on the neuron device at " in run.err
        assert "pipeline_train.py:" in run.err
        return
    assert run.exit_code == 0, run.err
    ranks = _ranks(run.out)
    assert ranks["0"][0] == "[0.0, 10.0]" and ranks["1"][0] == "[0.0, 1.0, 2.0, 3.0]"
    host = _on_the_host(29652)
    for rank in ("0", "1"):  # each stage trained the weights the host run trained
        assert ranks[rank][1] == pytest.approx(host[rank][1], abs=1e-5)
    assert run.op("c10d::send")["processes"] == 2 and run.op("c10d::recv_")["processes"] == 2
