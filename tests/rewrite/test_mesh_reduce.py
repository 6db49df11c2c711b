"""xm.mesh_reduce's rewrite gives XLA's answer with and without a process group."""

from __future__ import annotations

import types

import pytest

from neuron_migrate.rewrite.codemod.engine import rewrite_source

SOURCE = """\
import torch_xla.core.xla_model as xm

def mean_loss(loss):
    return xm.mesh_reduce("loss", loss, lambda values: sum(values) / len(values))
"""


def _run(rewritten: str, dist: types.SimpleNamespace) -> float:
    namespace: dict[str, object] = {"dist": dist}  # one namespace: the module's imports too
    exec(rewritten.replace("import torch.distributed as dist\n", ""), namespace)
    mean_loss = namespace["mean_loss"]
    assert callable(mean_loss)
    return mean_loss(4.0)


def test_without_a_process_group_the_one_value_is_reduced() -> None:
    rewritten = rewrite_source(SOURCE).new
    assert "import torch.distributed as dist" in rewritten
    alone = types.SimpleNamespace(is_initialized=lambda: False)
    assert _run(rewritten, alone) == 4.0


def test_with_a_process_group_every_rank_value_is_gathered_then_reduced() -> None:
    sent: list[object] = []

    def all_gather_object(values: list[object], value: object) -> None:
        sent.append(value)
        assert len(values) == 3
        values[:] = [value, 6.0, 8.0]  # this rank's value and two others'

    group = types.SimpleNamespace(
        is_initialized=lambda: True, get_world_size=lambda: 3, all_gather_object=all_gather_object
    )
    assert _run(rewrite_source(SOURCE).new, group) == 6.0
    assert sent == [4.0]


def test_several_processes_launched_without_a_process_group_raise(monkeypatch) -> None:
    """XLA reduced over every process of the launch: with WORLD_SIZE=2 and no group, reducing
    this rank's value alone would be a silent wrong result; torch's own error says so instead."""

    def get_world_size() -> int:
        raise ValueError("Default process group has not been initialized")

    monkeypatch.setenv("WORLD_SIZE", "2")
    no_group = types.SimpleNamespace(is_initialized=lambda: False, get_world_size=get_world_size)
    with pytest.raises(ValueError, match="not been initialized"):
        _run(rewrite_source(SOURCE).new, no_group)
