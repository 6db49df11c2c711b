"""NeuronX Distributed sequence parallelism, migrated with `rewrite --apply` and run with no
hand edit (fixtures/e2e/nxd_sequence_parallel/train.py: the flag from a config, as NxD's Llama
example passes it).

Sequence parallelism changes where the sequence lives, not the math: the migrated program's
losses and gradient norms are equal on every rank, equal under `torchrun --nproc-per-node 2`
(tensor-parallel size 2, each rank holding half the sequence between the layers) and as one
process, and equal to the NxD original on the CPU stand-in at size 1. The original itself, on
the stand-in's sequence-parallel collectives, gives at size 2 the losses it gives at size 1
(the program's row-parallel biases start at zero, so NxD's per-partition bias bound draws
nothing that differs between the sizes); it runs unclipped there, since torch's
clip_grad_norm_ over NxD's plain shards clips each rank by its own part's norm. A norm whose
gradient were not summed over the ranks' sequence parts changes the migrated program's
gradient norms at size 2 (1.3716 for 1.3747 at the first step when the model's own marked
RMSNorm is replicated instead of given SequenceParallel).
"""

from __future__ import annotations

import pytest

from tests.e2e.test_migrated_programs import (
    Program,
    _migrate,
    _migrated_run,
    _reference_run,
)
from tests.e2e.test_nxd_programs import TP_LINE, _close, _steps

pytest.importorskip("torch")
pytestmark = [pytest.mark.torch, pytest.mark.slow]

PROGRAM = Program("nxd_sequence_parallel", "torchrun", complete=True)


def test_sequence_parallel_program_migrates_and_keeps_its_math(tmp_path) -> None:
    tree, summary = _migrate(tmp_path, PROGRAM)
    assert summary["left_for_person"] == 0 and not summary["need_torch_xla"], summary
    source = (tree / "train.py").read_text()
    assert "TODO(neuron-migrate" not in source and "neuronx_distributed" not in source, source

    reference = _reference_run(PROGRAM, 1)
    assert reference.returncode == 0, reference.stderr[-3000:]
    want = _steps(reference.stdout, 1)
    # the original's sequence parallelism at size 2, unclipped (NxD's norms there are per rank)
    unclipped = Program(PROGRAM.name, "torchrun", ("--max-norm", "1e9"))
    alone, pair = _reference_run(unclipped, 1), _reference_run(unclipped, 2)
    assert alone.returncode == 0 and pair.returncode == 0, (
        alone.stderr[-2000:] + pair.stderr[-2000:]
    )
    losses = {
        (r, int(step)): float(loss) for r, _, _, step, loss, _ in TP_LINE.findall(pair.stdout)
    }
    alone_losses = [loss for loss, _norm in _steps(alone.stdout, 1)]
    assert sorted(losses) == [(r, step) for r in "01" for step in range(len(alone_losses))]
    for (_rank, step), loss in losses.items():
        assert loss == pytest.approx(alone_losses[step], rel=1e-5, abs=1e-6), pair.stdout
    for processes in (1, 2):
        done = _migrated_run(tree, PROGRAM, processes)
        said = f"{processes} process(es)\nstdout:\n{done.stdout}\nstderr:\n{done.stderr[-3000:]}"
        assert done.returncode == 0, said
        _close(_steps(done.stdout, processes), want, said)
