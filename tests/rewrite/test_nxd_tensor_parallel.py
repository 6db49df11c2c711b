"""NxD tensor parallelism's rewrite: which calls become the mesh and the plan, which stay
marked (the options a plan has no equivalent for), and which modules replicate what is left
whole. That the migrated programs train like the originals is shown by running them
(tests/e2e/test_nxd_programs.py)."""

from __future__ import annotations

import sys
import types

import pytest

from neuron_migrate.rewrite.codemod.engine import rewrite_source
from neuron_migrate.rewrite.codemod.tp_helpers import DEVICE_MESH

HEADER = """\
import torch
from neuronx_distributed.parallel_layers import parallel_state
from neuronx_distributed.parallel_layers.layers import ColumnParallelLinear, RowParallelLinear
"""


def _statuses(source: str) -> list[tuple[str, str]]:
    return [(o.code, o.status) for o in rewrite_source(source).outcomes]


def _body(new: str) -> str:
    """The migrated code below the helpers added to the file."""
    return new[new.index("class ") if "class " in new else 0 :]


def test_the_state_calls_become_the_mesh_and_its_answers() -> None:
    source = HEADER + (
        "parallel_state.initialize_model_parallel(tensor_model_parallel_size=2, "
        "pipeline_model_parallel_size=1)\n"
        "tp = parallel_state.get_tensor_model_parallel_size()\n"
        "group = parallel_state.get_data_parallel_group(as_list=False)\n"
        "parallel_state.destroy_model_parallel()\n"
    )
    new = rewrite_source(source).new
    assert "neuron_init_device_mesh(tensor_model_parallel_size=2)\n" in new
    assert 'tp = neuron_device_mesh()["tp"].size()\n' in new
    assert 'group = neuron_device_mesh()["dp"].get_group()\n' in new
    assert "destroy_model_parallel" not in new and "neuronx_distributed" not in new
    assert 'init_device_mesh("neuron", (world // tp, tp), mesh_dim_names=("dp", "tp"))' in new


def test_pipeline_stages_and_rank_lists_stay_marked() -> None:
    source = HEADER + (
        "parallel_state.initialize_model_parallel(2, pipeline_model_parallel_size=2)\n"
        "ranks = parallel_state.get_tensor_model_parallel_group(as_list=flag)\n"
        "src = parallel_state.get_tensor_model_parallel_src_rank()\n"
    )
    assert sorted(_statuses(source)) == [
        ("NM830", "marked"),
        ("NM835", "marked"),
        ("NM836", "marked"),
    ]
    new = rewrite_source(source).new
    assert "TODO(neuron-migrate NM835): use a DeviceMesh" in new
    assert "pipeline stages: torch.distributed.pipelining" in new


def test_groups_as_lists_become_the_meshs_replica_groups() -> None:
    """NxD's as_list=True is every group of its kind (group._mesh): the ("dp", "tp") mesh's
    rows are the tensor-parallel groups, its columns the data-parallel ones; xm.reduce_gradients
    takes them as replica groups."""
    source = HEADER + (
        "import torch_xla.core.xla_model as xm\n"
        "tp_groups = parallel_state.get_tensor_model_parallel_group(as_list=True)\n"
        "xm.reduce_gradients(opt, groups=parallel_state.get_data_parallel_group(as_list=True))\n"
    )
    assert sorted(_statuses(source)) == [
        ("NM312", "rewritten"),
        ("NM836", "rewritten"),
        ("NM836", "rewritten"),
    ]
    new = rewrite_source(source).new
    assert "tp_groups = neuron_device_mesh().mesh.tolist()\n" in new
    assert "neuron_reduce_gradients(opt, groups=neuron_device_mesh().mesh.T.tolist())\n" in new
    assert "def neuron_replica_group(groups):" in new


def test_the_layers_become_full_size_linears_sharded_by_their_style() -> None:
    source = HEADER + (
        "class MLP(torch.nn.Module):\n"
        "    def __init__(me, hidden):\n"
        "        super().__init__()\n"
        "        self_norm = torch.nn.LayerNorm(hidden)\n"
        "        me.up = ColumnParallelLinear(hidden, 4 * hidden, False, False, "
        "dtype=torch.bfloat16, init_method=torch.nn.init.zeros_)\n"
        "        me.down = RowParallelLinear(4 * hidden, hidden, input_is_parallel=flag)\n"
    )
    body = _body(rewrite_source(source).new)
    # an init_method: the layer made without its own initialisation, which the helper does
    assert (
        "me.up = neuron_column_parallel(torch.nn.utils.skip_init(torch.nn.Linear, hidden, "
        "4 * hidden, bias=False, dtype=torch.bfloat16), gather_output=False, "
        "init_method=torch.nn.init.zeros_)\n"
    ) in body
    down = "neuron_row_parallel(torch.nn.Linear(4 * hidden, hidden), input_is_parallel=flag)"
    assert down in body
    # the owner's own name for itself, at the end of its __init__
    assert body.rstrip().endswith("neuron_replicate_unsharded(me)")


def test_what_a_plan_cannot_say_stays_marked_and_its_owner_is_left_alone() -> None:
    source = HEADER + (
        "class MLP(torch.nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.a = ColumnParallelLinear(8, 8, keep_master_weight=True)\n"
        "        self.b = RowParallelLinear(8, 8, skip_bias_add=True)\n"
        "        self.c = ColumnParallelLinear(8, 24, stride=3)\n"
        "        self.d = RowParallelLinear(8, 8, pad=True)\n"
        "        self.e = ColumnParallelLinear(*sizes)\n"
    )
    assert _statuses(source) == [("NM838", "marked")] * 5
    new = rewrite_source(source).new
    assert "neuron_replicate_unsharded" not in new
    assert "def neuron_" not in new.split("class MLP")[0]  # no helper added for a marked layer


def test_a_module_built_of_owners_replicates_too_and_an_early_return_is_left_alone() -> None:
    source = HEADER + (
        "class Block(torch.nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.up = ColumnParallelLinear(8, 16, gather_output=False)\n"
        "        if True:\n"
        "            self.down = RowParallelLinear(16, 8, input_is_parallel=True)\n"
        "\n"
        "\n"
        "class Model(torch.nn.Module):\n"
        "    def __init__(self, n):\n"
        "        super().__init__()\n"
        "        self.blocks = torch.nn.ModuleList([Block() for _ in range(n)])\n"
        "        self.norm = torch.nn.LayerNorm(8)\n"
        "\n"
        "    def forward(self, x):\n"
        "        return x\n"
        "\n"
        "\n"
        "class Odd(torch.nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.head = ColumnParallelLinear(8, 16)\n"
        "        return\n"
    )
    body = _body(rewrite_source(source).new)
    block, model = body.split("class Model")
    model, odd = model.split("class Odd")
    assert block.rstrip().endswith(
        "            self.down = neuron_row_parallel(torch.nn.Linear(16, 8), "
        "input_is_parallel=True)\n        neuron_replicate_unsharded(self)"
    )
    assert "self.norm = torch.nn.LayerNorm(8)\n        neuron_replicate_unsharded(self)\n" in model
    assert "neuron_replicate_unsharded" not in odd


def test_a_second_run_changes_nothing() -> None:
    source = HEADER + (
        "parallel_state.initialize_model_parallel(tensor_model_parallel_size=2)\n"
        "class MLP(torch.nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.up = ColumnParallelLinear(8, 16, gather_output=False)\n"
        "        self.down = RowParallelLinear(16, 8, input_is_parallel=True)\n"
    )
    once = rewrite_source(source).new
    twice = rewrite_source(once)
    assert twice.new == once and not twice.changed


def test_embeddings_become_full_size_tables_and_what_nxd_did_otherwise_stays_marked() -> None:
    source = (
        "import torch\n"
        "from neuronx_distributed.parallel_layers import ParallelEmbedding\n"
        "class Embed(torch.nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.a = ParallelEmbedding(100, 8, norm_type=2.0, dtype=torch.bfloat16)\n"
        "        self.b = ParallelEmbedding(100, 8, shard_across_embedding=True)\n"
        "        self.c = ParallelEmbedding(100, 8, padding_idx=0)\n"
        "        self.d = ParallelEmbedding(100, 8, max_norm=1.0)\n"
        "        self.e = ParallelEmbedding(100, 8, sparse=True)\n"
    )
    assert _statuses(source) == [("NM839", "rewritten")] * 2 + [("NM839", "marked")] * 3
    body = _body(rewrite_source(source).new)
    table = "neuron_parallel_embedding(torch.nn.Embedding(100, 8, dtype=torch.bfloat16))"
    assert f"self.a = {table}\n" in body
    split = "neuron_parallel_embedding(torch.nn.Embedding(100, 8), shard_across_embedding=True)"
    assert f"self.b = {split}\n" in body
    assert body.rstrip().endswith("neuron_replicate_unsharded(self)")


def test_the_mesh_made_in_one_migrated_module_is_found_from_another(monkeypatch) -> None:
    """The layers may be built in a module other than the one that made the mesh; a lazy
    module whose __getattr__ imports (and fails) is not asked."""
    made, reader = types.ModuleType("made_here"), types.ModuleType("reads_it")
    for module in (made, reader):
        module.sys = sys  # the migrated file imports it for the helper
        exec(DEVICE_MESH, module.__dict__)
    lazy = types.ModuleType("lazy")

    def _import_on_access(name: str) -> object:
        raise ImportError(f"lazy {name}")

    lazy.__getattr__ = _import_on_access  # type: ignore[method-assign]
    monkeypatch.setitem(sys.modules, "lazy", lazy)
    monkeypatch.setitem(sys.modules, "made_here", made)
    with pytest.raises(RuntimeError, match="no device mesh"):
        reader.neuron_device_mesh()
    mesh = object()
    made.neuron_device_mesh.mesh = mesh
    assert reader.neuron_device_mesh() is mesh


def test_region_functions_become_redistributions_and_other_signatures_stay_marked() -> None:
    source = (
        "from neuronx_distributed.parallel_layers import mappings\n"
        "from neuronx_distributed.parallel_layers import gather_from_tensor_model_parallel_region\n"
        "a = mappings.reduce_from_tensor_model_parallel_region(y)\n"
        "b = gather_from_tensor_model_parallel_region(input_=y)\n"
        "c = mappings.gather_from_tensor_model_parallel_region(y, dim=0)\n"
        "d = mappings.gather_from_tensor_model_parallel_region_with_dim(y, 1)\n"
    )
    assert _statuses(source) == [
        ("NM840", "rewritten"),
        ("NM840", "rewritten"),
        ("NM840", "marked"),
        ("NM832", "marked"),
    ]
    new = rewrite_source(source).new
    assert "a = neuron_reduce_from_tp_region(y)\n" in new
    assert "b = neuron_gather_from_tp_region(input_=y)\n" in new
    assert "def neuron_gather_from_tp_region(input_):" in new  # NxD's parameter name
