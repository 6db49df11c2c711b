"""XLA's replica groups where torch_xla takes them beside a step or a list: xm.optimizer_step(...,
groups=g) reduces over this rank's group and steps (neuron_optimizer_step_in_groups), a list
literal all-reduced with groups=g is reduced in place over it. That they train like one process
on the whole batch is shown by running NxD's data-parallel program on four ranks
(tests/e2e/test_nxd_programs.py)."""

from __future__ import annotations

from neuron_migrate.rewrite.codemod.engine import rewrite_source

SOURCE = """\
import torch
import torch_xla.core.xla_model as xm
from torch.nn.parallel import DistributedDataParallel as DDP


def step(model, optimizer, groups, a, b):
    ddp = DDP(model)
    ddp(torch.ones(2)).sum().backward()
    xm.optimizer_step(optimizer, groups=groups, optimizer_args={"closure": None}, barrier=True)
    xm.optimizer_step(optimizer, groups=None)
    xm.all_reduce(xm.REDUCE_MAX, [a, b], scale=2.0, groups=groups)
"""


def test_replica_groups_are_reduced_over_beside_a_step_and_a_list() -> None:
    result = rewrite_source(SOURCE)
    assert all(o.status == "rewritten" for o in result.outcomes), result.outcomes
    new = result.new
    body = new[new.index("def step(") :]
    # the groups given: reduced over them as torch_xla did, a DDP wrap or not
    assert (
        "    neuron_optimizer_step_in_groups(optimizer, "
        'optimizer_args={"closure": None}, groups=groups)\n'
    ) in body
    assert "    optimizer.step()\n" in body  # groups=None: DDP reduces
    assert (
        "    _group = neuron_replica_group(groups)\n"
        "    for _tensor in [a, b]:\n"
        "        dist.all_reduce(_tensor, op=dist.ReduceOp.MAX, group=_group)\n"
        "        _tensor.mul_(2.0)\n"
    ) in body
    assert "def neuron_reduce_gradients(" in new and "def neuron_replica_group(" in new
    compile(new, "<migrated>", "exec")
    assert rewrite_source(new).new == new
