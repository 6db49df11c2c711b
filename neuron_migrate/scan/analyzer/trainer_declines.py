"""Why the rewrite leaves a call of NxD's config-based trainer for a person (the `nxd-trainer`
transform, rules/legacy NM850-NM852): the signatures of aws-neuron/neuronx-distributed's
trainer/trainer.py and trainer/checkpoint.py, by parameter name, and the settings the native
helpers have no counterpart for, where the call says them with literals. A value known only at
run time reaches the helper, which raises for those settings."""

from __future__ import annotations

from neuron_migrate.ruleset import Rule
from neuron_migrate.scan.analyzer.arguments import STAR, Arg, bind_site, is_none
from neuron_migrate.scan.analyzer.sites import Site

NXD_CONFIG = (
    "tensor_parallel_size",
    "pipeline_parallel_size",
    "expert_parallel_size",
    "pipeline_config",
    "optimizer_config",
    "activation_checkpoint_config",
    "pad_model",
    "sequence_parallel",
    "model_init_config",
    "lora_config",
    "mixed_precision_config",
)
SAVE_CHECKPOINT = (
    "checkpoint_dir_str",
    "tag",
    "model",
    "optimizer",
    "scheduler",
    "user_content",
    "num_workers",
    "use_xser",
    "num_kept_ckpts",
    "async_save",
    "zero1_optimizer",
)
LOAD_CHECKPOINT = ("path", "tag", "model", "optimizer", "scheduler", "num_workers", "strict")

_UNBOUND = "arguments the rewrite cannot match to the signature (unpacked or unknown)"
_SIZES = ("pipeline_parallel_size", "expert_parallel_size")
_NONE_ONLY = {
    "pipeline_config": "pipeline parallelism: torch.distributed.pipelining, a person decides",
    "lora_config": "LoRA adapters: a person decides (peft, or the adapters built in the model)",
    "mixed_precision_config": (
        "NxD's master weights and fp32 gradient accumulation: FSDP2's MixedPrecisionPolicy, "
        "a person decides"
    ),
}
_FALSE_ONLY = {
    "pad_model": "heads padded to the tensor-parallel size: a person decides",
    "sequence_parallel": (
        "sequence parallelism: SequenceParallel() on the norms and Shard(1) layouts, "
        "a person decides"
    ),
}
_OPTIMIZER_ALONE = (
    "an optimizer's state without its model: torch.distributed.checkpoint saves it with the "
    "model's (get_state_dict(model, optimizer)), a person decides"
)


def nxd_trainer(rule: Rule, site: Site) -> str:
    """Empty where the helper does what NxD's function did with these arguments."""
    name = (site.qualname or "").rpartition(".")[2]
    if name == "neuronx_distributed_config":
        return _config(site.call_args)
    if name == "initialize_parallel_model":
        return _parallel_model(site.call_args)
    if name in ("save_checkpoint", "load_checkpoint"):
        params = SAVE_CHECKPOINT if name == "save_checkpoint" else LOAD_CHECKPOINT
        values = bind_site(site.call_args, params)
        if values is None:
            return _UNBOUND
        if is_none(values.get("model")) and not is_none(values.get("optimizer")):
            return _OPTIMIZER_ALONE
    return ""


def _config(args: tuple[Arg, ...]) -> str:
    values = bind_site(args, NXD_CONFIG)
    if values is None:
        return _UNBOUND
    for size in _SIZES:
        if size in values and not values[size].is_literal("1"):
            return f"{size} other than 1: no native counterpart here, a person decides"
    for option, why in _NONE_ONLY.items():
        if not is_none(values.get(option)):
            return why
    for option, why in _FALSE_ONLY.items():
        if option in values and not values[option].is_literal("False"):
            return why
    checkpointed = values.get("activation_checkpoint_config")
    if checkpointed is not None and checkpointed.is_literal("'full'", '"full"'):
        return (
            'activation_checkpoint_config="full" (the layer classes of a Hugging Face or NxDT '
            "model): name the classes, a person decides"
        )
    return ""


def _parallel_model(args: tuple[Arg, ...]) -> str:
    """(nxd_config, model_fn, include_buffers=False, *model_args, **model_kwargs) since NxD
    added include_buffers; before, the third positional argument was the model function's. A
    literal bool there is include_buffers, and so is a name `include_buffers` (NxD's own
    examples pass one); anything else could be either."""
    positional = [a for a in args if a.keyword is None]
    if any(a.keyword == STAR for a in args) or len(positional) < 2:
        return _UNBOUND
    third = positional[2] if len(positional) > 2 else None
    if third is not None and not (
        third.is_literal("True", "False") or third.text == "include_buffers"
    ):
        return (
            "the third argument is include_buffers in newer NxD and the model function's first "
            "argument in older NxD: pass include_buffers=False and the model's arguments after it"
        )
    return ""
