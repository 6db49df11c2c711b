"""NeuronX Distributed tensor-parallel programs, migrated with `rewrite --apply` and run with no
hand edit (fixtures/e2e/<name>/train.py, written for this project in NxD's style).

Tensor parallelism must not change the math: the migrated program's losses and gradient norms
are equal on every rank, equal under `torchrun --nproc-per-node 2` (tensor-parallel size 2) and
as one process (size 1), and equal to the NxD original run on the CPU stand-in
(tests/e2e/cpu_xla/neuronx_distributed) at size 1. The original is compared at size 1 only: NxD
initialises biases per partition, so at size 2 it is not the same model. A gradient norm that
covered only a rank's shards would differ between the sizes.
"""

from __future__ import annotations

import re

import pytest

from tests.e2e.test_migrated_programs import (
    LOSS_ATOL,
    LOSS_RTOL,
    Program,
    _migrate,
    _migrated_run,
    _reference_run,
)

pytest.importorskip("torch")
pytestmark = [pytest.mark.torch, pytest.mark.slow]

TP_LINE = re.compile(
    r"TPLOSS rank=(\d+) tp=(\d+)/(\d+) step=(\d+) loss=(-?\d+\.\d+) norm=(-?\d+\.\d+)"
)

NXD_PROGRAMS = [
    Program("nxd_tp_mlp", "torchrun", complete=True),
    Program("nxd_embed_attention", "torchrun", complete=True),
]


def _steps(output: str, processes: int) -> list[tuple[float, float]]:
    """(loss, norm) by step, after checking that every rank printed the same ones."""
    by_rank: dict[int, list[tuple[float, float]]] = {}
    for rank, tp_rank, tp_size, _step, loss, norm in TP_LINE.findall(output):
        assert int(tp_size) == processes and int(tp_rank) == int(rank), output
        by_rank.setdefault(int(rank), []).append((float(loss), float(norm)))
    assert sorted(by_rank) == list(range(processes)), output
    first = by_rank[0]
    assert first and all(steps == first for steps in by_rank.values()), by_rank
    return first


def _close(got: list[tuple[float, float]], want: list[tuple[float, float]], said: str) -> None:
    assert len(got) == len(want), said
    for (loss, norm), (loss_want, norm_want) in zip(got, want, strict=True):
        assert loss == pytest.approx(loss_want, rel=LOSS_RTOL, abs=LOSS_ATOL), said
        assert norm == pytest.approx(norm_want, rel=LOSS_RTOL, abs=LOSS_ATOL), said


@pytest.mark.parametrize("program", NXD_PROGRAMS, ids=lambda p: p.name)
def test_tensor_parallel_program_migrates_and_keeps_its_math(tmp_path, program) -> None:
    tree, summary = _migrate(tmp_path, program)
    assert summary["left_for_person"] == 0 and not summary["need_torch_xla"], summary
    source = (tree / "train.py").read_text()
    assert "TODO(neuron-migrate" not in source and "neuronx_distributed" not in source, source

    reference = _reference_run(program, 1)
    assert reference.returncode == 0, reference.stderr[-3000:]
    want = _steps(reference.stdout, 1)
    for processes in (1, 2):
        done = _migrated_run(tree, program, processes)
        said = f"{processes} process(es)\nstdout:\n{done.stdout}\nstderr:\n{done.stderr[-3000:]}"
        assert done.returncode == 0, said
        _close(_steps(done.stdout, processes), want, said)
