"""NxD's config-based trainer's rewrite (NM850, NM851): which calls become the helpers, under each
import form, and which stay marked (settings with no native counterpart, arguments whose meaning
depends on NxD's version). That the migrated trainer trains like the original and that its
checkpoints reload is shown by running it (tests/e2e/test_nxd_trainer.py)."""

from __future__ import annotations

import pytest

from neuron_migrate.rewrite.codemod.engine import rewrite_source
from neuron_migrate.rewrite.codemod.trainer_helpers import NXD_CONFIG, PARALLEL_MODEL

TRAINER = """\
import torch
import neuronx_distributed as nxd

def build(model_fn, flags):
    config = nxd.neuronx_distributed_config(
        tensor_parallel_size=flags.tp,
        optimizer_config={"zero_one_enabled": True, "grad_clipping": True, "max_grad_norm": 1.0},
        activation_checkpoint_config=Block,
    )
    model = nxd.initialize_parallel_model(config, model_fn, False, flags.hidden)
    optimizer = nxd.initialize_parallel_optimizer(config, torch.optim.AdamW, model.parameters())
    return config, model, optimizer
"""


def _statuses(source: str) -> list[tuple[str, str]]:
    return sorted((o.code, o.status) for o in rewrite_source(source).outcomes)


def _body(new: str) -> str:
    """The migrated code below the helpers added to the file."""
    return new[new.index("def build") :]


def test_config_model_and_optimizer_become_the_helpers_with_the_same_arguments() -> None:
    new = rewrite_source(TRAINER).new
    body = _body(new)
    assert "config = neuron_nxd_config(\n        tensor_parallel_size=flags.tp," in body
    assert "model = neuron_parallel_model(config, model_fn, False, flags.hidden)" in body
    assert "optimizer = neuron_parallel_optimizer(config, torch.optim.AdamW, model" in body
    assert "neuronx_distributed" not in new and "nxd." not in new
    # the native parts the helpers added to the file are made of
    for native in (
        'init_device_mesh("neuron"',
        'fully_shard(model, mesh=mesh["dp"])',
        "torch.nn.utils.clip_grad_norm_(params",
        "CheckpointImpl.NO_REENTRANT",
        "class NeuronNxDOptimizer(torch.optim.Optimizer):",
    ):
        assert native in new, native
    assert _statuses(TRAINER) == [("NM850", "rewritten")] * 3


@pytest.mark.parametrize(
    "imports",
    [
        "from neuronx_distributed import save_checkpoint, load_checkpoint, has_checkpoint",
        "from neuronx_distributed.trainer import save_checkpoint, load_checkpoint, has_checkpoint",
        "from neuronx_distributed.trainer.checkpoint import (\n"
        "    save_checkpoint, load_checkpoint, has_checkpoint\n)",
    ],
)
def test_checkpoint_calls_become_torch_distributed_checkpoint_under_each_import(imports) -> None:
    source = imports + (
        "\n\ndef resume(model, optimizer, flags):\n"
        "    if has_checkpoint(flags.dir):\n"
        "        return load_checkpoint(flags.dir, model=model, optimizer=optimizer)\n"
        '    save_checkpoint(flags.dir, "0", model=model, optimizer=optimizer, async_save=True)\n'
    )
    new = rewrite_source(source).new
    assert "    if neuron_has_checkpoint(flags.dir):\n" in new
    assert "return neuron_load_checkpoint(flags.dir, model=model, optimizer=optimizer)" in new
    assert 'neuron_save_checkpoint(flags.dir, "0", model=model, optimizer=optimizer, async' in new
    assert "dcp.save(state, checkpoint_id=path)" in new and "set_state_dict(" in new
    assert "neuronx_distributed" not in new
    assert _statuses(source) == [("NM851", "rewritten")] * 3


def test_save_checkpoint_passed_to_a_step_closure_becomes_the_helper() -> None:
    """NxD's Llama example saves from a step closure, its arguments positional: the helper has
    NxD's signature, so the function passed around becomes the helper (and the closure, run at
    once on the native device, a call of it)."""
    source = (
        "import neuronx_distributed as nxd\n"
        "import torch_xla.core.xla_model as xm\n\n"
        "def save(flags, model, optimizer, scheduler, step):\n"
        "    xm.add_step_closure(\n"
        "        nxd.save_checkpoint,\n"
        '        (flags.dir, "last", model, optimizer, scheduler, {"step": step}, 8, True, 2),\n'
        "    )\n"
    )
    new = rewrite_source(source).new
    call = 'neuron_save_checkpoint(flags.dir, "last", model, optimizer, scheduler, {"step": step}'
    assert call in new and "def neuron_save_checkpoint(" in new and "nxd." not in new
    assert ("NM851", "rewritten") in _statuses(source)


def test_finalize_checkpoint_becomes_a_helper_that_waits_for_nothing() -> None:
    source = "import neuronx_distributed as nxd\n\nnxd.finalize_checkpoint()\n"
    new = rewrite_source(source).new
    assert new.endswith("\n\nneuron_finalize_checkpoint()\n") and "neuronx_distributed" not in new


@pytest.mark.parametrize(
    "arguments",
    [
        "tensor_parallel_size=8, pipeline_parallel_size=4",
        "expert_parallel_size=flags.ep",
        "pipeline_config={'num_microbatches': 4}",
        "lora_config=lora",
        "mixed_precision_config={'use_master_weights': True}",
        "pad_model=True",
        "sequence_parallel=flags.sp",
        "activation_checkpoint_config='full'",
        "**settings",
    ],
)
def test_config_settings_with_no_native_counterpart_stay_marked(arguments) -> None:
    call = f"config = nxd.neuronx_distributed_config({arguments})\n"
    source = "import neuronx_distributed as nxd\n\n" + call
    assert _statuses(source) == [("NM850", "marked")]
    assert "TODO(neuron-migrate NM850): build the model with the mesh" in rewrite_source(source).new


@pytest.mark.parametrize(
    ("call", "status"),
    [
        ("initialize_parallel_model(config, model_fn)", "rewritten"),
        ("initialize_parallel_model(config, model_fn, True, flags)", "rewritten"),
        ("initialize_parallel_model(config, model_fn, include_buffers=False)", "rewritten"),
        # NxD's own examples: `include_buffers = True` and the name passed third
        ("initialize_parallel_model(config, model_fn, include_buffers, flags)", "rewritten"),
        # the model's argument in NxD before include_buffers, include_buffers after it
        ("initialize_parallel_model(config, model_fn, flags)", "marked"),
        ("initialize_parallel_model(config, *args)", "marked"),
    ],
)
def test_the_third_argument_of_initialize_parallel_model_must_be_unambiguous(call, status) -> None:
    source = f"import neuronx_distributed as nxd\n\nmodel = nxd.{call}\n"
    assert _statuses(source) == [("NM850", status)]


@pytest.mark.parametrize(
    "call",
    [
        'save_checkpoint("ckpt", "0", optimizer=optimizer)',
        'load_checkpoint("ckpt", optimizer=optimizer)',
    ],
)
def test_an_optimizer_saved_or_loaded_without_its_model_stays_marked(call) -> None:
    source = f"import neuronx_distributed as nxd\n\nnxd.{call}\n"
    assert _statuses(source) == [("NM851", "marked")]
    assert "the optimizer's state needs its model" in rewrite_source(source).new


def test_the_config_helper_keeps_nxds_defaults_and_refuses_meta_device_init() -> None:
    torch = pytest.importorskip("torch")
    namespace = {"torch": torch}
    exec(NXD_CONFIG, namespace)  # no process group: the mesh is left for later
    config = namespace["neuron_nxd_config"](tensor_parallel_size=2)
    assert config["optimizer_config"] == {
        "zero_one_enabled": False,
        "grad_clipping": True,
        "max_grad_norm": 1.0,
    }
    off = namespace["neuron_nxd_config"](optimizer_config={"grad_clipping": False})
    assert "max_grad_norm" not in off["optimizer_config"]
    with pytest.raises(NotImplementedError, match="meta_device_init"):
        namespace["neuron_nxd_config"](model_init_config={"meta_device_init": True})


def test_the_model_helper_refuses_settings_a_config_of_nxds_own_may_hold() -> None:
    """A config NxD's own function made (its call left marked) may reach the helper: settings
    with no native counterpart there raise before any model is built."""
    torch = pytest.importorskip("torch")
    namespace = {"torch": torch}
    exec(PARALLEL_MODEL, namespace)
    init = {"meta_device_init": True, "param_init_fn": print}
    config = {"sequence_parallel": True, "model_init_config": init}
    with pytest.raises(NotImplementedError, match=r"sequence_parallel.*meta_device_init.*param_"):
        namespace["neuron_parallel_model"](config, lambda: pytest.fail("built"), False)
