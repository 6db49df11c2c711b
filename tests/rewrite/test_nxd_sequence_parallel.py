"""NxD sequence parallelism's rewrite: a parallel linear layer's `sequence_parallel_enabled`
(a literal or a value known at run time) picks the helper that chooses the plan's layouts when
the layer is built, NxD's LayerNorm becomes torch.nn.LayerNorm (SequenceParallel when its flag
is set), the sequence-parallel region functions become redistributions, and NxD's gradient sum
for the sequence-parallel parameters goes. That the helpers run NxD's collectives, and that a
migrated program trains like the original, is shown by running them
(tests/e2e/test_nxd_sequence_parallel.py)."""

from __future__ import annotations

from neuron_migrate.rewrite.codemod.engine import rewrite_source

HEADER = """\
import torch
from neuronx_distributed.parallel_layers.layers import ColumnParallelLinear, RowParallelLinear
from neuronx_distributed.parallel_layers.layer_norm import LayerNorm
"""


def _statuses(source: str) -> list[tuple[str, str]]:
    return [(o.code, o.status) for o in rewrite_source(source).outcomes]


def _body(new: str) -> str:
    """The migrated code below the helpers added to the file."""
    return new[new.index("class ") if "class " in new else 0 :]


def test_a_run_time_flag_picks_the_plan_when_the_layer_is_built() -> None:
    source = HEADER + (
        "class MLP(torch.nn.Module):\n"
        "    def __init__(self, config):\n"
        "        super().__init__()\n"
        "        self.up = ColumnParallelLinear(8, 32, gather_output=False, "
        "sequence_parallel_enabled=config.sequence_parallel_enabled)\n"
        "        self.down = RowParallelLinear(32, 8, input_is_parallel=True, "
        "sequence_parallel_enabled=True, sequence_dimension=1)\n"
        "        self.plain = ColumnParallelLinear(8, 8, sequence_parallel_enabled=False, "
        "sequence_dimension=0)\n"
    )
    assert _statuses(source) == [("NM838", "rewritten")] * 3
    new = rewrite_source(source).new
    body = _body(new)
    assert (
        "self.up = neuron_column_parallel_sp(torch.nn.Linear(8, 32), gather_output=False, "
        "sequence_parallel_enabled=config.sequence_parallel_enabled)\n"
    ) in body
    assert (
        "self.down = neuron_row_parallel_sp(torch.nn.Linear(32, 8), input_is_parallel=True, "
        "sequence_parallel_enabled=True, sequence_dimension=1)\n"
    ) in body
    # a literal False is NxD's plain layer: no flag, no dimension (NxD reads none)
    assert "self.plain = neuron_column_parallel(torch.nn.Linear(8, 8))\n" in body
    assert "ColwiseParallel(input_layouts=Shard(dim))" in new
    assert "RowwiseParallel(output_layouts=Shard(dim))" in new
    # the sequence-parallel helpers fall back on the plain ones, added beside them
    assert "def neuron_column_parallel(" in new and "def neuron_row_parallel(" in new
    assert body.rstrip().endswith("neuron_replicate_unsharded(self)")
    compile(new, "<migrated>", "exec")


def test_nxds_layer_norm_becomes_torchs_and_its_flag_sequence_parallel() -> None:
    source = HEADER + (
        "a = LayerNorm(16, eps=1e-6)\n"
        "b = LayerNorm(16, 1e-5, True, sequence_parallel_enabled=False)\n"
        "c = LayerNorm((16,), sequence_parallel_enabled=config.sp, dtype=torch.float32)\n"
    )
    assert _statuses(source) == [("NM861", "rewritten")] * 3
    new = rewrite_source(source).new
    assert "a = torch.nn.LayerNorm(16, eps=1e-6)\n" in new
    assert "b = torch.nn.LayerNorm(16, eps=1e-5, elementwise_affine=True)\n" in new
    assert (
        "c = neuron_sequence_parallel_norm(torch.nn.LayerNorm((16,), dtype=torch.float32), "
        "sequence_parallel_enabled=config.sp)\n"
    ) in new
    assert "SequenceParallel(sequence_dim=0)" in new
    assert "neuronx_distributed" not in new


def test_sequence_parallel_regions_become_redistributions() -> None:
    source = (
        "from neuronx_distributed.parallel_layers import mappings\n"
        "from neuronx_distributed.parallel_layers.grads import "
        "allreduce_sequence_parallel_gradients\n"
        "a = mappings.scatter_to_sequence_parallel_region(x)\n"
        "b = mappings.gather_from_sequence_parallel_region(x, 0, to_model_parallel=False)\n"
        "c = mappings.reduce_scatter_to_sequence_parallel_region(x, process_group=None)\n"
        "d = mappings.reduce_scatter_to_sequence_parallel_region(x, process_group=group)\n"
        "e = mappings.gather_from_sequence_parallel_region(x, tile_cc=True)\n"
        "allreduce_sequence_parallel_gradients(optimizer)\n"
    )
    assert _statuses(source) == [
        ("NM860", "rewritten"),
        ("NM860", "rewritten"),
        ("NM860", "rewritten"),
        ("NM860", "marked"),
        ("NM860", "marked"),
        ("NM862", "rewritten"),
    ]
    new = rewrite_source(source).new
    assert "a = neuron_scatter_to_sp_region(x)\n" in new
    assert "b = neuron_gather_from_sp_region(x, 0, to_model_parallel=False)\n" in new
    assert "c = neuron_reduce_scatter_to_sp_region(x)\n" in new
    assert "allreduce_sequence_parallel_gradients(optimizer)" not in new
    compile(new, "<migrated>", "exec")


def test_a_second_run_changes_nothing() -> None:
    source = HEADER + (
        "class MLP(torch.nn.Module):\n"
        "    def __init__(self, sp):\n"
        "        super().__init__()\n"
        "        self.norm = LayerNorm(8, sequence_parallel_enabled=sp)\n"
        "        self.up = ColumnParallelLinear(8, 32, gather_output=False, "
        "sequence_parallel_enabled=sp)\n"
    )
    once = rewrite_source(source).new
    assert rewrite_source(once).new == once


def test_the_gqa_qkv_layer_becomes_three_planned_projections() -> None:
    source = (
        "import torch\n"
        "from neuronx_distributed.modules.qkv_linear import GQAQKVColumnParallelLinear\n"
        "class Attention(torch.nn.Module):\n"
        "    def __init__(self, config):\n"
        "        super().__init__()\n"
        "        self.qkv = GQAQKVColumnParallelLinear(64, [64, 16], bias=False, "
        "gather_output=False, sequence_parallel_enabled=config.sp, keep_master_weight=False, "
        "kv_size_multiplier=config.kv, fuse_qkv=config.fuse)\n"
        "        self.kept = GQAQKVColumnParallelLinear(64, [64, 16], keep_master_weight=True)\n"
        "def check(module):\n"
        "    return isinstance(module, GQAQKVColumnParallelLinear)\n"
    )
    assert _statuses(source) == [("NM863", "rewritten"), ("NM863", "marked"), ("NM863", "marked")]
    new = rewrite_source(source).new
    assert (
        "self.qkv = NeuronQKVLinear(64, [64, 16], bias=False, gather_output=False, "
        "sequence_parallel_enabled=config.sp, kv_size_multiplier=config.kv, "
        "fuse_qkv=config.fuse)\n"
    ) in new
    assert "class NeuronQKVLinear(torch.nn.Module):" in new
    assert "def neuron_column_parallel_sp(" in new
    assert (
        new.rstrip().splitlines()[-1].strip()
        == "return isinstance(module, GQAQKVColumnParallelLinear)"
    )
    compile(new, "<migrated>", "exec")


def test_a_strided_column_layer_becomes_its_blocks_and_a_gathered_one_stays_marked() -> None:
    source = HEADER + (
        "class MLP(torch.nn.Module):\n"
        "    def __init__(self, config):\n"
        "        super().__init__()\n"
        "        self.gate_up = ColumnParallelLinear(8, 64, stride=2, bias=False, "
        "gather_output=False, sequence_parallel_enabled=config.sp)\n"
        "        self.gathered = ColumnParallelLinear(8, 64, stride=2)\n"
        "        self.row = RowParallelLinear(64, 8, stride=2, input_is_parallel=True)\n"
    )
    assert _statuses(source) == [("NM838", "rewritten"), ("NM838", "marked"), ("NM838", "marked")]
    new = rewrite_source(source).new
    assert (
        "self.gate_up = NeuronStridedColumnParallel(torch.nn.Linear(8, 64, bias=False), "
        "stride=2, gather_output=False, sequence_parallel_enabled=config.sp)\n"
    ) in new
    assert "class NeuronStridedColumnParallel(torch.nn.Module):" in new
    compile(new, "<migrated>", "exec")
