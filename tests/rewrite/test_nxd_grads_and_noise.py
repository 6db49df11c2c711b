"""NxD's replica-group queries, its grads module, its message and arithmetic helpers and its
vocabulary-parallel cross entropy: which calls become native code and which stay marked. That
the migrated gradient helpers and loss compute what NxD's did is shown by running them on two
ranks (tests/e2e/test_nxd_grads.py)."""

from __future__ import annotations

from neuron_migrate.rewrite.codemod.engine import rewrite_source

HEADER = """\
import torch
from neuronx_distributed.parallel_layers import parallel_state
"""


def _statuses(source: str) -> list[tuple[str, str]]:
    return sorted((o.code, o.status) for o in rewrite_source(source).outcomes)


def test_replica_group_queries_become_the_meshs_rows_and_columns() -> None:
    """get_data_parallel_replica_groups() is what get_data_parallel_group(as_list=True) returns
    in NxD (its _DATA_PARALLEL_GROUP_SPMD), and the tensor-parallel one likewise."""
    source = HEADER + (
        "dp_groups = parallel_state.get_data_parallel_replica_groups()\n"
        "tp_groups = parallel_state.get_tensor_model_parallel_replica_groups()\n"
    )
    assert _statuses(source) == [("NM836", "rewritten"), ("NM836", "rewritten")]
    new = rewrite_source(source).new
    assert "dp_groups = neuron_device_mesh().mesh.T.tolist()\n" in new
    assert "tp_groups = neuron_device_mesh().mesh.tolist()\n" in new
    assert "neuronx_distributed" not in new


def test_pipeline_replica_groups_and_odd_calls_stay_marked() -> None:
    source = HEADER + (
        "pp_groups = parallel_state.get_pipeline_model_parallel_replica_groups()\n"
        "dp_groups = parallel_state.get_data_parallel_replica_groups(extra)\n"
    )
    assert _statuses(source) == [("NM830", "marked"), ("NM836", "marked")]


GRADS = "from neuronx_distributed.parallel_layers import grads\n"


def test_clipping_and_the_data_parallel_mean_become_helpers() -> None:
    source = GRADS + (
        "norm = grads.clip_grad_norm(model.parameters(), 1.0, norm_type=2, force_spmd=False)\n"
        "norm = grads.clip_grad_norm(params, 1.0, zero1_optimizer=False)\n"
        "grads.bucket_allreduce_gradients(grad_list)\n"
        "total = grads.get_grad_norm(params, norm_type=2)\n"
    )
    assert _statuses(source) == [("NM870", "rewritten")] * 4
    new = rewrite_source(source).new
    assert "neuron_clip_grad_norm(model.parameters(), 1.0, norm_type=2, force_spmd=False)" in new
    assert "norm = neuron_clip_grad_norm(params, 1.0)\n" in new
    assert "neuron_bucket_allreduce_gradients(grad_list)\n" in new
    assert "total = neuron_grad_norm(params, norm_type=2)\n" in new
    assert "torch.nn.utils.clip_grad_norm_(parameters, max_norm, norm_type)" in new
    assert "neuronx_distributed" not in new


def test_zero1_clipping_and_the_rest_of_grads_stay_marked() -> None:
    source = GRADS + (
        "grads.clip_grad_norm(params, 1.0, zero1_optimizer=True)\n"
        "grads.clip_grad_norm(params, 1.0, zero1_optimizer_groups=groups)\n"
        "grads.param_is_not_shared(param)\n"
    )
    assert _statuses(source) == [("NM833", "marked"), ("NM870", "marked"), ("NM870", "marked")]


def test_rank_messages_and_extra_heads_become_helpers() -> None:
    """rmsg prefixed a message with the rank's place in the parallel groups; the number of
    extra heads is arithmetic: neither needs NxD."""
    source = (
        "from neuronx_distributed.parallel_layers.parallel_state import rmsg\n"
        "from neuronx_distributed.parallel_layers.pad import get_number_of_extra_heads\n"
        "logger.warning(rmsg(f'{layers} do not exist'))\n"
        "padded = heads + get_number_of_extra_heads(heads, tp_degree)\n"
    )
    assert _statuses(source) == [("NM871", "rewritten"), ("NM872", "rewritten")]
    new = rewrite_source(source).new
    assert "logger.warning(neuron_rmsg(f'{layers} do not exist'))\n" in new
    assert "padded = heads + neuron_number_of_extra_heads(heads, tp_degree)\n" in new
    assert "neuronx_distributed" not in new


def _defined(source: str) -> dict:
    namespace: dict = {}
    exec(compile(rewrite_source(source).new, "<migrated>", "exec"), namespace)
    return namespace


def test_the_extra_heads_are_nxds_count() -> None:
    source = (
        "from neuronx_distributed.parallel_layers.pad import get_number_of_extra_heads\n"
        "n = get_number_of_extra_heads(1, 1)\n"
    )
    extra = _defined(source)["neuron_number_of_extra_heads"]
    # NxD's: 0 where tp_degree divides n_head, else what makes it divide
    assert [extra(n, 4) for n in (4, 5, 6, 7, 8)] == [0, 3, 2, 1, 0]
    assert extra(25, 8) == 7 and extra(24, 8) == 0


def test_the_rank_message_is_prefixed_as_nxds() -> None:
    """No process group and no mesh: rank 0 and -1 for the parallel ranks (NxD's
    xm.get_ordinal() and its AssertionError fallback)."""
    source = (
        "from neuronx_distributed.parallel_layers.parallel_state import rmsg\nm = rmsg('hello')\n"
    )
    namespace = _defined(source)
    assert namespace["m"] == "[rank_0_pp-1_tp-1_dp-1] hello"


def test_the_rank_message_reads_the_mesh() -> None:
    """With the mesh: its tensor- and data-parallel ranks, pipeline rank 0 (NxD's with one
    pipeline stage)."""
    namespace = _defined(
        "from neuronx_distributed.parallel_layers.parallel_state import rmsg\n"
        "def m():\n    return rmsg('hello')\n"
    )

    class Dim:
        def __init__(self, rank: int) -> None:
            self.rank = rank

        def get_local_rank(self) -> int:
            return self.rank

    namespace["neuron_device_mesh"].mesh = {"tp": Dim(1), "dp": Dim(3)}
    assert namespace["m"]() == "[rank_0_pp0_tp1_dp3] hello"


LOSS = "from neuronx_distributed.parallel_layers.loss_functions import parallel_cross_entropy\n"


def test_parallel_cross_entropy_and_its_alias_become_the_loss_parallel_helper() -> None:
    source = LOSS + (
        "loss = parallel_cross_entropy(logits, labels, label_smoothing=0.0)\n"
        "loss_fct = parallel_cross_entropy\n"
        "lm_loss = loss_fct(shift_logits.view(-1, vocab), labels.view(-1))\n"
    )
    assert _statuses(source) == [("NM873", "rewritten")] * 3
    new = rewrite_source(source).new
    assert "loss = neuron_parallel_cross_entropy(logits, labels)\n" in new
    assert "loss_fct = neuron_parallel_cross_entropy\n" in new
    assert "lm_loss = neuron_parallel_cross_entropy(shift_logits.view(-1, vocab), labels" in new
    assert "with loss_parallel():" in new and "neuronx_distributed" not in new


def test_label_smoothing_stays_marked() -> None:
    """NxD smoothed by alpha * K / (K - 1) and loss_parallel refuses any smoothing."""
    source = LOSS + "loss = parallel_cross_entropy(logits, labels, 0.1)\n"
    assert _statuses(source) == [("NM873", "marked")]


def test_a_reduce_kept_only_for_its_in_place_sum_stays_marked() -> None:
    """NxD's reduce_from_tensor_model_parallel_region all-reduced its argument in place; the
    helper returns the sum. A call whose value is dropped (a sample's own sequence-parallel
    gradient all-reduce) would lose the reduction: it is marked, not rewritten."""
    source = (
        "from neuronx_distributed.parallel_layers.mappings import (\n"
        "    reduce_from_tensor_model_parallel_region,\n"
        ")\n"
        "for grad in grads:\n"
        "    reduce_from_tensor_model_parallel_region(grad)\n"
        "y = reduce_from_tensor_model_parallel_region(x)\n"
    )
    assert _statuses(source) == [("NM840", "marked"), ("NM840", "rewritten")]
