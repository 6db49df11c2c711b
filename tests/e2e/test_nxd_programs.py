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


# Data parallelism beside tensor parallelism (tensor-parallel size 1 on two ranks: a data-parallel
# group of two). Each rank trains on half the batch and the gradients are averaged, so every rank
# prints the losses and norms of the single process that trains on the whole batch, and of the
# NxD original on the stand-in (at one process and at two).
DP_LINE = re.compile(
    r"DPLOSS rank=(\d+) dp=(\d+)/(\d+) step=(\d+) loss=(-?\d+\.\d+) norm=(-?\d+\.\d+)"
)

DP_PROGRAMS = [
    Program("nxd_dp_mlp", "torchrun", complete=True),
    Program("nxd_dp_mlp", "torchrun", ("--optimizer-step",), complete=True),
]


def _dp_steps(output: str, processes: int) -> list[tuple[float, float]]:
    """(loss, norm) by step, after checking that every rank printed the same ones."""
    by_rank: dict[int, list[tuple[float, float]]] = {}
    for rank, dp_rank, dp_size, _step, loss, norm in DP_LINE.findall(output):
        assert int(dp_size) == processes and int(dp_rank) == int(rank), output
        by_rank.setdefault(int(rank), []).append((float(loss), float(norm)))
    assert sorted(by_rank) == list(range(processes)), output
    first = by_rank[0]
    assert first and all(steps == first for steps in by_rank.values()), by_rank
    return first


@pytest.mark.parametrize("program", DP_PROGRAMS, ids=lambda p: " ".join((p.name, *p.args)))
def test_data_parallel_beside_tensor_parallel_keeps_the_whole_batch_math(tmp_path, program) -> None:
    tree, summary = _migrate(tmp_path, program)
    assert summary["left_for_person"] == 0 and not summary["need_torch_xla"], summary

    reference = _reference_run(program, 1)
    assert reference.returncode == 0, reference.stderr[-3000:]
    want = _dp_steps(reference.stdout, 1)
    reference = _reference_run(program, 2)
    assert reference.returncode == 0, reference.stderr[-3000:]
    _close(_dp_steps(reference.stdout, 2), want, f"the original on two ranks\n{reference.stdout}")
    for processes in (1, 2):
        done = _migrated_run(tree, program, processes)
        said = f"{processes} process(es)\nstdout:\n{done.stdout}\nstderr:\n{done.stderr[-3000:]}"
        assert done.returncode == 0, said
        _close(_dp_steps(done.stdout, processes), want, said)


def test_data_parallel_helpers_refuse_to_average_tensor_parallel_shards(tmp_path) -> None:
    """At tensor-parallel size 2 on two ranks each rank holds a different part of a sharded
    gradient: xm.reduce_gradients over every rank would average different parts (NxD's original
    does, silently). The migrated helper raises and names the data-parallel group."""
    program = Program("nxd_dp_mlp", "torchrun", ("--tensor-parallel-size", "2"), complete=True)
    tree, _summary = _migrate(tmp_path, program)
    done = _migrated_run(tree, program, 2)
    assert done.returncode != 0, done.stdout
    assert "cannot be averaged over every rank" in done.stderr, done.stderr[-3000:]
    assert "DPLOSS" not in done.stdout, done.stdout


def _two_data_parallel_groups(tree, program: Program) -> tuple[list[tuple[float, float]], str]:
    """The migrated program on four ranks at tensor-parallel size 2: (loss, norm) by step, after
    checking that ranks 0-1 and 2-3 say they are data-parallel ranks 0 and 1 of 2 and that every
    rank printed the same; and what to show when they differ from what was wanted."""
    done = _migrated_run(tree, program, 4)
    said = f"stdout:\n{done.stdout}\nstderr:\n{done.stderr[-3000:]}"
    assert done.returncode == 0, said
    by_rank: dict[int, list[tuple[float, float]]] = {}
    for rank, dp_rank, dp_size, _step, loss, norm in DP_LINE.findall(done.stdout):
        assert (int(dp_rank), int(dp_size)) == (int(rank) // 2, 2), said
        by_rank.setdefault(int(rank), []).append((float(loss), float(norm)))
    assert sorted(by_rank) == [0, 1, 2, 3], said
    assert all(steps == by_rank[0] for steps in by_rank.values()), by_rank
    return by_rank[0], said


def test_replica_groups_reduce_over_each_data_parallel_group(tmp_path) -> None:
    """Data parallelism beside tensor parallelism above size 1, NxD's BERT example's shape: four
    ranks, tensor-parallel size 2, two data-parallel groups ([0, 2] and [1, 3]), the gradients
    reduced by xm.reduce_gradients(optimizer, groups=get_data_parallel_group(as_list=True)) and
    the loss by xm.all_reduce(xm.REDUCE_SUM, loss / dp_size, groups=the same groups).
    Each group sums its gradients and torch_xla scales by 1/world size (4, not the group's 2),
    so the gradient norms are half the single process's on the whole batch, and AdamW's steps
    (unclipped), hence the losses, are that process's."""
    args = ("--tensor-parallel-size", "2", "--replica-groups", "--max-norm", "1e9")
    program = Program("nxd_dp_mlp", "torchrun", args, complete=True)
    tree, summary = _migrate(tmp_path, program)
    assert summary["left_for_person"] == 0 and not summary["need_torch_xla"], summary

    alone = _migrated_run(tree, program, 1)
    assert alone.returncode == 0, alone.stderr[-3000:]
    want = [(loss, norm / 2) for loss, norm in _dp_steps(alone.stdout, 1)]
    steps, said = _two_data_parallel_groups(tree, program)
    _close(steps, want, said)


def test_optimizer_step_over_replica_groups_steps_like_the_whole_batch(tmp_path) -> None:
    """The same four ranks with xm.optimizer_step(optimizer, groups=the data-parallel groups),
    which becomes neuron_optimizer_step_in_groups: each group sums its gradients (scaled by
    1/world size, as torch_xla does) before AdamW steps, and the loss is reduced over the groups
    as a tensor and as a list. AdamW's steps do not change with the scale, so every rank prints
    the losses and the parameters' norms of the single process on the whole batch."""
    args = ("--tensor-parallel-size", "2", "--replica-groups", "--optimizer-step")
    program = Program("nxd_dp_mlp", "torchrun", args, complete=True)
    tree, summary = _migrate(tmp_path, program)
    assert summary["left_for_person"] == 0 and not summary["need_torch_xla"], summary
    assert (
        "neuron_optimizer_step_in_groups(optimizer, groups=groups)"
        in (tree / "train.py").read_text()
    )

    alone = _migrated_run(tree, program, 1)
    assert alone.returncode == 0, alone.stderr[-3000:]
    want = _dp_steps(alone.stdout, 1)
    steps, said = _two_data_parallel_groups(tree, program)
    _close(steps, want, said)
