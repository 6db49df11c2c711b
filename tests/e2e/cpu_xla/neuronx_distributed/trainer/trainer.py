"""NxD's config-based trainer (trainer/trainer.py) for what the stand-in has: the config dict with
NxD's defaults, the model-parallel state made where a process group exists, the model from its
function with activation checkpointing of the classes named, and the optimizer wrapper. No
pipeline, expert or sequence parallelism, LoRA, padding, meta-device init or ZeRO-1 (its sharded
optimizer is NxD's own)."""

import torch
import torch_xla.core.xla_model as xm
from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import (
    apply_activation_checkpointing,
)

from neuronx_distributed.parallel_layers import parallel_state
from neuronx_distributed.trainer.model import NxDModel
from neuronx_distributed.trainer.optimizer import NxDOptimizer


def neuronx_distributed_config(
    tensor_parallel_size=1,
    pipeline_parallel_size=1,
    expert_parallel_size=1,
    pipeline_config=None,
    optimizer_config=None,
    activation_checkpoint_config=None,
    pad_model=False,
    sequence_parallel=False,
    model_init_config=None,
    lora_config=None,
    mixed_precision_config=None,
):
    assert pipeline_parallel_size == 1 and expert_parallel_size == 1, "not in the stand-in"
    assert not pad_model and not sequence_parallel and lora_config is None, "not in the stand-in"
    if optimizer_config is None:
        optimizer_config = {"zero_one_enabled": False, "grad_clipping": True, "max_grad_norm": 1.0}
    optimizer_config.setdefault("zero_one_enabled", False)
    optimizer_config.setdefault("grad_clipping", True)
    if optimizer_config["grad_clipping"]:
        optimizer_config.setdefault("max_grad_norm", 1.0)
    config = {
        "tensor_parallel_size": tensor_parallel_size,
        "pipeline_parallel_size": pipeline_parallel_size,
        "expert_parallel_size": expert_parallel_size,
        "optimizer_config": optimizer_config,
        "activation_checkpoint_config": activation_checkpoint_config,
        "sequence_parallel": sequence_parallel,
        "model_init_config": model_init_config or {"meta_device_init": False},
    }
    if torch.distributed.is_initialized():
        parallel_state.initialize_model_parallel(tensor_model_parallel_size=tensor_parallel_size)
    return config


def initialize_parallel_model(
    nxd_config, model_fn, include_buffers=False, *model_args, **model_kwargs
):
    if not parallel_state.model_parallel_is_initialized():
        parallel_state.initialize_model_parallel(
            tensor_model_parallel_size=nxd_config["tensor_parallel_size"]
        )
    model = model_fn(*model_args, **model_kwargs).to(xm.xla_device())
    nxd_model = NxDModel(model, nxd_config)
    classes = nxd_config["activation_checkpoint_config"]
    if classes is not None:
        assert classes != "full", "not in the stand-in"
        classes = tuple(classes) if isinstance(classes, (list, tuple)) else (classes,)
        apply_activation_checkpointing(nxd_model, check_fn=lambda m: isinstance(m, classes))
    return nxd_model


def initialize_parallel_optimizer(nxd_config, optimizer_class, parameters, **defaults):
    assert not nxd_config["optimizer_config"]["zero_one_enabled"], "ZeRO-1: not in the stand-in"
    return NxDOptimizer(optimizer_class(parameters, **defaults), nxd_config)
