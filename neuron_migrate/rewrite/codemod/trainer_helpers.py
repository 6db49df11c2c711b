"""The sources of the helpers NxD's config-based trainer becomes (rules/legacy NM850-NM852):
the config as a dict with NxD's defaults beside the DeviceMesh (`tp_helpers.py`), the model built
by its function, checkpointed (torch.utils.checkpoint) and sharded over the data-parallel ranks
(FSDP2) where NxD's config said so, an optimizer that clips where NxD's did, and checkpoints
written with torch.distributed.checkpoint. Registered in `helpers.HELPERS`; the facts they rest
on, with where they come from, are in docs/nxd-trainer.md."""

NXD_CONFIG = '''
def neuron_nxd_config(
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
    """NxD's trainer config: the settings as a dict, with NxD's defaults (ZeRO-1 off,
    clipping on at a norm of 1.0), and the ("dp", "tp") DeviceMesh made where a process group
    exists, as NxD made its parallel state. Settings with no native counterpart here raise."""
    unsupported = {
        "pipeline_parallel_size": pipeline_parallel_size != 1,
        "expert_parallel_size": expert_parallel_size != 1,
        "pipeline_config": pipeline_config is not None,
        "pad_model": bool(pad_model),
        "sequence_parallel": bool(sequence_parallel),
        "lora_config": lora_config is not None,
        "mixed_precision_config": mixed_precision_config is not None,
    }
    unsupported["meta_device_init"] = bool((model_init_config or {}).get("meta_device_init"))
    asked = [name for name, on in unsupported.items() if on]
    if asked:
        raise NotImplementedError(f"NxD settings with no native counterpart here: {asked}")
    optimizer_config = dict(optimizer_config or {})
    optimizer_config.setdefault("zero_one_enabled", False)
    optimizer_config.setdefault("grad_clipping", True)
    if optimizer_config["grad_clipping"]:
        optimizer_config.setdefault("max_grad_norm", 1.0)
    config = {
        "tensor_parallel_size": tensor_parallel_size,
        "pipeline_parallel_size": 1,
        "expert_parallel_size": 1,
        "optimizer_config": optimizer_config,
        "activation_checkpoint_config": activation_checkpoint_config,
        "sequence_parallel": False,
        "model_init_config": dict(model_init_config or {}),
    }
    if torch.distributed.is_initialized():
        neuron_init_device_mesh(tensor_model_parallel_size=tensor_parallel_size)
    return config
'''

PARALLEL_MODEL = '''
def neuron_parallel_model(nxd_config, model_fn, include_buffers=False, *model_args, **model_kwargs):
    """NxD's initialize_parallel_model: model_fn's model (its parallel layers already sharded
    over the mesh's "tp" dimension) on the neuron device; the modules of the classes NxD's
    activation_checkpoint_config names recompute their activations in the backward pass
    (torch.utils.checkpoint, non-reentrant); with ZeRO-1 on, fully_shard (FSDP2) shards the
    parameters, gradients and optimizer state over the "dp" dimension. include_buffers only
    mattered to NxD's meta-device init."""
    init = nxd_config.get("model_init_config") or {}
    unsupported = {  # a config NxD's own function made may hold them
        "pipeline_parallel_size": nxd_config.get("pipeline_parallel_size", 1) != 1,
        "sequence_parallel": bool(nxd_config.get("sequence_parallel")),
        "meta_device_init": bool(init.get("meta_device_init")),
        # NxD re-initialised every module with it after model_fn, each rank its own part
        "param_init_fn": init.get("param_init_fn") is not None,
    }
    asked = [name for name, on in unsupported.items() if on]
    if asked:
        raise NotImplementedError(f"NxD settings with no native counterpart here: {asked}")
    try:
        mesh = neuron_device_mesh()
    except RuntimeError:
        mesh = neuron_init_device_mesh(nxd_config["tensor_parallel_size"])
    model = model_fn(*model_args, **model_kwargs).to(torch.device("neuron"))
    classes = nxd_config.get("activation_checkpoint_config")
    if classes is not None:
        from functools import partial

        from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import (
            CheckpointImpl,
            apply_activation_checkpointing,
            checkpoint_wrapper,
        )

        if classes == "full":
            raise NotImplementedError(
                'activation_checkpoint_config="full" named the transformer layer classes of a '
                "Hugging Face or NxDT model: name the classes"
            )
        classes = tuple(classes) if isinstance(classes, (list, tuple)) else (classes,)
        apply_activation_checkpointing(
            model,
            checkpoint_wrapper_fn=partial(
                checkpoint_wrapper, checkpoint_impl=CheckpointImpl.NO_REENTRANT
            ),
            check_fn=lambda module: isinstance(module, classes),
        )
    if nxd_config["optimizer_config"]["zero_one_enabled"]:
        from torch.distributed.fsdp import fully_shard

        fully_shard(model, mesh=mesh["dp"])
    return model
'''

NXD_OPTIMIZER = '''
class NeuronNxDOptimizer(torch.optim.Optimizer):
    """NxD's NxDOptimizer around `optimizer`: step() averages the gradients over the mesh's
    "dp" dimension (FSDP2 has done it where ZeRO-1 is on), clips them by the norm of the full
    parameters with torch.nn.utils.clip_grad_norm_ where the config clips, and steps;
    grad_norm is that norm (a tensor of one element, as NxD's), None where nothing clipped."""

    def __init__(self, optimizer, nxd_config):
        self.optimizer = optimizer
        self.nxd_config = nxd_config
        self._grad_norm = None

    def __repr__(self):
        return f"NeuronNxDOptimizer({self.optimizer!r})"

    @property
    def grad_norm(self):
        return self._grad_norm

    @property
    def state(self):
        return self.optimizer.state

    @property
    def param_groups(self):
        return self.optimizer.param_groups

    @property
    def defaults(self):
        return self.optimizer.defaults

    def add_param_group(self, param_group):
        self.optimizer.add_param_group(param_group)

    def state_dict(self):
        return self.optimizer.state_dict()

    def load_state_dict(self, state_dict):
        self.optimizer.load_state_dict(state_dict)

    def zero_grad(self, set_to_none=False):
        self.optimizer.zero_grad(set_to_none=set_to_none)

    def step(self, closure=None):
        from torch.distributed.tensor import DTensor

        config = self.nxd_config["optimizer_config"]
        params = [p for group in self.param_groups for p in group["params"]]
        grads = [p.grad for p in params if p.grad is not None]
        dp = neuron_device_mesh()["dp"]
        if not config["zero_one_enabled"] and dp.size() > 1:
            for grad in grads:  # a DTensor's rank holds the same part across "dp"
                local = grad.to_local() if isinstance(grad, DTensor) else grad
                local.div_(dp.size())
                torch.distributed.all_reduce(local, group=dp.get_group())
        if config["grad_clipping"]:
            norm = torch.nn.utils.clip_grad_norm_(params, config["max_grad_norm"])
            norm = norm.full_tensor() if isinstance(norm, DTensor) else norm
            self._grad_norm = norm.reshape(1)
        return self.optimizer.step(closure=closure)
'''

PARALLEL_OPTIMIZER = '''
def neuron_parallel_optimizer(nxd_config, optimizer_class, parameters, **defaults):
    """NxD's initialize_parallel_optimizer: optimizer_class over `parameters`, in a
    NeuronNxDOptimizer that averages and clips the gradients before each step as NxD's did."""
    return NeuronNxDOptimizer(optimizer_class(parameters, **defaults), nxd_config)
'''

# NxD's checkpoint layout kept where it says what is done: a directory per tag, a `done` file
# once every rank has written, tags ordered by when they were done (NxD's newest-tag rule).
CHECKPOINT_TAGS = '''
def neuron_checkpoint_tags(checkpoint_dir):
    """The tags under checkpoint_dir whose save finished (a `done` file), oldest first."""
    if not os.path.isdir(checkpoint_dir):
        return []
    done = [
        (os.path.getmtime(os.path.join(checkpoint_dir, tag, "done")), tag)
        for tag in os.listdir(checkpoint_dir)
        if os.path.isfile(os.path.join(checkpoint_dir, tag, "done"))
    ]
    return [tag for _, tag in sorted(done)]
'''

HAS_CHECKPOINT = '''
def neuron_has_checkpoint(checkpoint_dir_str):
    """NxD's has_checkpoint: whether a finished checkpoint is under checkpoint_dir_str."""
    return len(neuron_checkpoint_tags(checkpoint_dir_str)) > 0
'''

SAVE_CHECKPOINT = '''
def neuron_save_checkpoint(
    checkpoint_dir_str,
    tag,
    model=None,
    optimizer=None,
    scheduler=None,
    user_content=None,
    num_workers=8,
    use_xser=False,
    num_kept_ckpts=None,
    async_save=False,
    zero1_optimizer=False,
):
    """NxD's save_checkpoint with torch.distributed.checkpoint: the model's and the optimizer's
    state (get_state_dict: every rank writes its shards, whole tensors once) under
    checkpoint_dir_str/tag, the scheduler and user_content beside it from rank 0, then `done`; at
    most num_kept_ckpts finished checkpoints kept. Saved at once (async_save too): NxD's
    finalize_checkpoint has nothing left to wait for. num_workers and use_xser were NxD's file
    layout."""
    import shutil

    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint.state_dict import get_model_state_dict, get_state_dict

    path = os.path.join(checkpoint_dir_str, str(tag))
    rank = torch.distributed.get_rank()
    optimizer = getattr(optimizer, "optimizer", optimizer)  # NeuronNxDOptimizer's own
    state = {}
    if isinstance(model, dict):
        state["model"] = model
    elif model is not None and optimizer is not None:
        state["model"], state["optim"] = get_state_dict(model, optimizer)
    elif model is not None:
        state["model"] = get_model_state_dict(model)
    elif optimizer is not None:
        raise NotImplementedError("an optimizer's state is saved with its model's: pass model=")
    if state:
        dcp.save(state, checkpoint_id=path)
    if rank == 0:
        os.makedirs(path, exist_ok=True)
        if scheduler is not None:
            torch.save(scheduler.state_dict(), os.path.join(path, "scheduler.pt"))
        if user_content is not None:
            torch.save(user_content, os.path.join(path, "user_content.pt"))
    torch.distributed.barrier()
    if rank == 0:
        with open(os.path.join(path, "done"), "w") as done:
            done.write("1")
        tags = neuron_checkpoint_tags(checkpoint_dir_str)
        if num_kept_ckpts is not None and num_kept_ckpts != -1:
            for old in tags[: max(len(tags) - num_kept_ckpts, 0)]:
                shutil.rmtree(os.path.join(checkpoint_dir_str, old))
    torch.distributed.barrier()
'''

LOAD_CHECKPOINT = '''
def neuron_load_checkpoint(
    path, tag=None, model=None, optimizer=None, scheduler=None, num_workers=8, strict=True
):
    """NxD's load_checkpoint of a checkpoint neuron_save_checkpoint wrote (the newest finished
    one without a tag): torch.distributed.checkpoint reads each rank's shards in place and
    set_state_dict loads them; the scheduler too; returns the user_content saved, or None."""
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint.state_dict import (
        StateDictOptions,
        get_model_state_dict,
        get_state_dict,
        set_model_state_dict,
        set_state_dict,
    )

    if tag is None:
        tags = neuron_checkpoint_tags(path)
        if not tags:
            raise RuntimeError(f"no checkpoint under {path}")
        tag = tags[-1]
    where = os.path.join(path, str(tag))
    optimizer = getattr(optimizer, "optimizer", optimizer)  # NeuronNxDOptimizer's own
    options = StateDictOptions(strict=strict)
    if model is not None and optimizer is not None:
        model_state, optim_state = get_state_dict(model, optimizer)
        state = {"model": model_state, "optim": optim_state}
        dcp.load(state, checkpoint_id=where)
        set_state_dict(
            model,
            optimizer,
            model_state_dict=state["model"],
            optim_state_dict=state["optim"],
            options=options,
        )
    elif model is not None:
        state = {"model": get_model_state_dict(model)}
        dcp.load(state, checkpoint_id=where)
        set_model_state_dict(model, state["model"], options=options)
    elif optimizer is not None:
        raise NotImplementedError("an optimizer's state is loaded with its model's: pass model=")
    if scheduler is not None:
        scheduler.load_state_dict(torch.load(os.path.join(where, "scheduler.pt")))
    user_content = os.path.join(where, "user_content.pt")
    torch.distributed.barrier()
    return torch.load(user_content, weights_only=False) if os.path.isfile(user_content) else None
'''

FINALIZE_CHECKPOINT = '''
def neuron_finalize_checkpoint():
    """NxD's finalize_checkpoint waited for asynchronous saves; neuron_save_checkpoint's are
    done when it returns."""
'''
