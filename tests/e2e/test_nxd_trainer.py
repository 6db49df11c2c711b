"""NeuronX Distributed's config-based trainer (fixtures/e2e/nxd_trainer/train.py, written for this
project in NxD's style), migrated with `rewrite --apply` once for this module and run with no hand
edit.

The program trains through initialize_parallel_model / initialize_parallel_optimizer, whose step()
averages the gradients over the data-parallel ranks and clips them (max_grad_norm 0.5, below every
step's norm, so each step is clipped); it prints each step's loss and optimizer.grad_norm, saves a
checkpoint, loads it into a model and optimizer built from another seed, and prints the output of
both on a fixed batch and the losses of two more steps of the model that went on and of the
reloaded one. The NxD original runs on the CPU stand-in (tests/e2e/cpu_xla/neuronx_distributed),
compared at tensor-parallel size 1 (NxD draws biases per partition above it).
"""

from __future__ import annotations

import re
from pathlib import Path

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

TRAINER = Program("nxd_trainer", "torchrun", complete=True)
STEP = re.compile(
    r"TRAINER rank=(\d+) tp=(\d+)/(\d+) step=(\d+) loss=(-?\d+\.\d+) norm=(-?\d+\.\d+)"
)
RELOAD = re.compile(
    r"RELOAD rank=(\d+) step=(\d+) saved=(-?\d+\.\d+) fresh=(-?\d+\.\d+) loaded=(-?\d+\.\d+)"
)
CHECKPOINTED = re.compile(r"CHECKPOINTED rank=(\d+) blocks=(\d+)")
KEPT = re.compile(r"KEPT rank=(\d+) tags=(.*)")
RESUMED = re.compile(r"RESUMED rank=(\d+) step=(\d+) went_on=(-?\d+\.\d+) reloaded=(-?\d+\.\d+)")


@pytest.fixture(scope="module")
def migrated(tmp_path_factory) -> Path:
    tree, summary = _migrate(tmp_path_factory.mktemp("trainer"), TRAINER)
    assert summary["left_for_person"] == 0 and not summary["need_torch_xla"], summary
    assert summary["rules"]["NM850"] == {"rewritten": 3}, summary
    assert summary["rules"]["NM851"] == {"rewritten": 4}, summary
    return tree


@pytest.fixture(scope="module")
def reference() -> list[tuple[float, float]]:
    done = _reference_run(TRAINER, 1)
    assert done.returncode == 0, done.stderr[-3000:]
    return _steps(done.stdout, 1, 1)


def _steps(output: str, processes: int, tp_size: int) -> list[tuple[float, float]]:
    """(loss, grad norm) by step, after checking that every rank printed the same ones and that
    the checkpoint reloaded on every rank."""
    by_rank: dict[int, list[tuple[float, float]]] = {}
    for rank, tp_rank, size, _step, loss, norm in STEP.findall(output):
        assert (int(tp_rank), int(size)) == (int(rank) % tp_size, tp_size), output
        by_rank.setdefault(int(rank), []).append((float(loss), float(norm)))
    assert sorted(by_rank) == list(range(processes)), output
    first = by_rank[0]
    assert first and all(steps == first for steps in by_rank.values()), by_rank
    # activation_checkpoint_config=Block: both blocks recompute their activations in backward
    assert CHECKPOINTED.findall(output) and all(
        blocks == "2" for _, blocks in CHECKPOINTED.findall(output)
    ), output
    _check_reload(output, processes)
    return first


def _check_reload(output: str, processes: int) -> None:
    """The fresh model differed from the saved one, and after load_checkpoint (no tag: the newest
    finished checkpoint) its output is the saved model's (its parameters came back); two more
    steps of each give the same losses (the optimizer's state came back too: AdamW's second
    step depends on it)."""
    # a checkpoint after each of the 3 steps, the last two kept (num_kept_ckpts=2)
    kept = KEPT.findall(output)
    assert sorted(int(r) for r, _ in kept) == list(range(processes)), output
    assert all(tags.split() == ["step2", "step3"] for _, tags in kept), output
    reloads = RELOAD.findall(output)
    assert sorted(int(r[0]) for r in reloads) == list(range(processes)), output
    for _rank, _step, saved, fresh, loaded in reloads:
        assert float(loaded) == pytest.approx(float(saved), rel=1e-6, abs=1e-6), output
        assert float(fresh) != pytest.approx(float(saved), rel=1e-3), output
    resumed = RESUMED.findall(output)
    assert len(resumed) == 2 * processes, output
    for _rank, _step, went_on, reloaded in resumed:
        assert float(reloaded) == pytest.approx(float(went_on), rel=1e-6, abs=1e-6), output


def _close(got: list[tuple[float, float]], want: list[tuple[float, float]], said: str) -> None:
    assert len(got) == len(want), said
    for (loss, norm), (loss_want, norm_want) in zip(got, want, strict=True):
        assert loss == pytest.approx(loss_want, rel=LOSS_RTOL, abs=LOSS_ATOL), said
        assert norm == pytest.approx(norm_want, rel=LOSS_RTOL, abs=LOSS_ATOL), said


def test_trainer_migrates_with_no_marker(migrated) -> None:
    source = (migrated / "train.py").read_text()
    assert "TODO(neuron-migrate" not in source and "neuronx_distributed" not in source, source
    for native in ("fully_shard(", "clip_grad_norm_(", "dcp.save(", "set_state_dict("):
        assert native in source, native


@pytest.mark.parametrize("processes", [1, 2])
def test_tensor_parallel_trainer_keeps_the_math_and_reloads(migrated, reference, processes):
    """At tensor-parallel size 1 and 2 every rank prints the NxD original's losses and gradient
    norms: a norm over a rank's shards only would differ at size 2, and the clipping it scales
    by would change the losses."""
    done = _migrated_run(migrated, TRAINER, processes)
    said = f"{processes} process(es)\nstdout:\n{done.stdout}\nstderr:\n{done.stderr[-3000:]}"
    assert done.returncode == 0, said
    _close(_steps(done.stdout, processes, processes), reference, said)


@pytest.mark.parametrize("zero1", [False, True], ids=["dp", "zero1"])
def test_data_beside_tensor_parallel_trainer_keeps_the_whole_batch_math(
    migrated, reference, zero1
) -> None:
    """Four ranks at tensor-parallel size 2: two data-parallel ranks of each tensor-parallel
    rank, each on half the batch, print the losses and norms of the original on one process with
    the whole batch. Without ZeRO-1 the optimizer's step() averages the gradients' local parts
    over "dp" (over every rank it would mix different shards); with it, step() leaves them to
    fully_shard (FSDP2 over "dp", beside the "tp" sharding), so equal losses show its reduction
    ran."""
    args = ("--tensor-parallel-size", "2", *(("--zero1",) if zero1 else ()))
    program = Program(TRAINER.name, TRAINER.launcher, args, complete=True)
    done = _migrated_run(migrated, program, 4)
    said = f"stdout:\n{done.stdout}\nstderr:\n{done.stderr[-3000:]}"
    assert done.returncode == 0, said
    _close(_steps(done.stdout, 4, 2), reference, said)
