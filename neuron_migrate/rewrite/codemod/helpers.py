"""Small functions and classes a rewrite adds to the migrated file, where torch_xla's behaviour
is defined and PyTorch has the parts but no one call says it (gradients averaged before a step,
a payload exchange, a rate tracker). Migrated code never depends on this tool: the helper's
source goes into the file, next to its imports.

Each helper names only the modules in its `modules` (by those names), and the helpers it lists
in `uses`.
"""

from __future__ import annotations

from dataclasses import dataclass

from neuron_migrate.rewrite.codemod import (
    gqa_helpers,
    nxd_grads_helpers,
    nxd_util_helpers,
    sp_helpers,
    tp_helpers,
    trainer_helpers,
)
from neuron_migrate.rewrite.codemod.context import FileContext
from neuron_migrate.scan.analyzer.availability import STAND_IN


@dataclass(frozen=True)
class Helper:
    name: str
    source: str
    modules: tuple[str, ...] = ("torch",)
    uses: tuple[str, ...] = ()


# XLA's collectives reduced over every process of the launch, with or without a torch.distributed
# group. Natively they need one: a launch of several processes without it raises, where skipping
# the reduction would train each rank on its own gradients, silently.
_WORLD_SIZE = '''
def neuron_world_size():
    """The number of processes XLA's collectives reduce over: the process group's size, 1 for a
    process alone; several processes launched (WORLD_SIZE) without a process group raise."""
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        return torch.distributed.get_world_size()
    launched = int(os.environ.get("WORLD_SIZE", 1))
    if launched > 1:
        raise RuntimeError(
            f"{launched} processes were launched (WORLD_SIZE) but no process group exists: call "
            'torch.distributed.init_process_group("neuron") before the collectives run'
        )
    return 1
'''

_LOCAL_GRADS = '''
def neuron_local_grads(optimizer, every_rank=True):
    """The optimizer's gradients as the tensors each rank all-reduces in place: a DTensor's (a
    tensor-parallel model's) its rank's local tensor. Averaged over every rank, a gradient of
    which a rank holds only a part would mix parts: that raises."""
    from torch.distributed.tensor import DTensor

    grads = [p.grad for g in optimizer.param_groups for p in g["params"] if p.grad is not None]
    local = [g.to_local() if isinstance(g, DTensor) else g for g in grads]
    if every_rank and any(part.shape != grad.shape for part, grad in zip(local, grads)):
        raise RuntimeError(
            "gradients sharded by tensor parallelism cannot be averaged over every rank: "
            "average them over the data-parallel groups only, neuron_reduce_gradients(optimizer, "
            "groups=neuron_device_mesh().mesh.T.tolist())"
        )
    return local
'''

_OPTIMIZER_STEP = '''
def neuron_optimizer_step(optimizer, optimizer_args=None):
    """Average the gradients over the process group's ranks, then step (xm.optimizer_step)."""
    world_size = neuron_world_size()
    if world_size > 1:
        for grad in neuron_local_grads(optimizer):
            torch.distributed.all_reduce(grad)
            grad.div_(world_size)
    return optimizer.step(**(optimizer_args or {}))
'''

_OPTIMIZER_STEP_IN_GROUPS = '''
def neuron_optimizer_step_in_groups(optimizer, optimizer_args=None, groups=None):
    """xm.optimizer_step with replica groups: the gradients summed over this rank's group of
    `groups` and divided by the world size (neuron_reduce_gradients, as torch_xla's), then the
    step."""
    neuron_reduce_gradients(optimizer, groups=groups)
    return optimizer.step(**(optimizer_args or {}))
'''

_REDUCE_GRADIENTS = '''
def neuron_reduce_gradients(optimizer, groups=None, pin_layout=True):
    """Sum the gradients over the process group's ranks, or over this rank's group of `groups`
    (XLA replica groups), and divide by the world size, as xm.reduce_gradients does."""
    world_size = neuron_world_size()
    if world_size == 1:
        return
    group = neuron_replica_group(groups)
    for grad in neuron_local_grads(optimizer, every_rank=groups is None):
        torch.distributed.all_reduce(grad, group=group)
        grad.div_(world_size)
'''

# XLA names a collective's ranks by replica groups on every call; torch.distributed needs a process
# group per group, made by every rank in the same order: made once per list of groups, kept.
_REPLICA_GROUP = '''
def neuron_replica_group(groups):
    """The process group of this rank's group in `groups` (XLA replica groups, lists of ranks;
    None: every rank)."""
    if groups is None:
        return None
    key = tuple(tuple(int(rank) for rank in group) for group in groups)
    made = neuron_replica_group.__dict__.setdefault("made", {})
    if key not in made:
        made[key] = torch.distributed.new_subgroups_by_enumeration([list(g) for g in key])[0]
    if made[key] is None:
        raise ValueError(f"rank {torch.distributed.get_rank()} is in none of the groups {groups}")
    return made[key]
'''

_ALL_GATHER = '''
def neuron_all_gather(value, dim=0, groups=None, output=None, pin_layout=True):
    """Every rank's `value` concatenated along `dim`, in rank order (xm.all_gather)."""
    world_size = neuron_world_size()
    if world_size == 1:
        return value
    parts = [torch.empty_like(value) for _ in range(world_size)]
    torch.distributed.all_gather(parts, value.contiguous())
    return torch.cat(parts, dim=dim)
'''

_BROADCAST_MASTER_PARAM = '''
def neuron_broadcast_master_param(model):
    """Rank 0's parameters and buffers on every rank (xm.broadcast_master_param)."""
    if neuron_world_size() == 1:
        return
    with torch.no_grad():
        for tensor in [*model.parameters(), *model.buffers()]:
            torch.distributed.broadcast(tensor, src=0)
'''

_RENDEZVOUS = '''
def neuron_rendezvous(payload=b"", ordinals=None, tag=None):
    """Every rank's payload, in rank order (xm.xla_rendezvous); a process alone gets its own."""
    world_size = neuron_world_size()
    if world_size == 1:
        return [payload]
    payloads = [None] * world_size
    torch.distributed.all_gather_object(payloads, payload)
    return payloads
'''

_SERIAL_EXECUTOR = '''
class NeuronSerialExecutor:
    """Runs a function on one process of this machine at a time (xmp.MpSerialExecutor)."""

    def run(self, fn):
        dist = torch.distributed
        if not (dist.is_available() and dist.is_initialized()) or dist.get_world_size() == 1:
            return fn()
        local_rank = int(os.environ.get("LOCAL_RANK", 0))
        result = None
        for turn in range(int(os.environ.get("LOCAL_WORLD_SIZE", 1))):
            if turn == local_rank:
                result = fn()
            dist.barrier()
        return result
'''

_RATE_TRACKER = '''
class NeuronRateTracker:
    """Samples per second, smoothed and since the start (xm.RateTracker)."""

    def __init__(self, smooth_factor=None):
        if smooth_factor is None:
            smooth_factor = float(os.environ.get("RATE_TRACKER_SMOOTHING", 0.4))
        self._smooth_factor = smooth_factor
        self._start_time = time.time()
        self._partial_time = self._start_time
        self._partial_count = 0.0
        self._partial_rate = None
        self._count = 0.0

    def add(self, count):
        self._count += count

    def rate(self):
        now = time.time()
        elapsed = now - self._partial_time
        if elapsed <= 0:
            return 0.0
        current = self._count / elapsed
        if self._partial_rate is not None:
            current = (1 - self._smooth_factor) * current + self._smooth_factor * self._partial_rate
        self._partial_count += self._count
        self._count = 0.0
        self._partial_time = now
        self._partial_rate = current
        return current

    def global_rate(self):
        elapsed = time.time() - self._start_time
        return (self._partial_count + self._count) / elapsed if elapsed > 0 else 0.0
'''

_SAMPLE_GENERATOR = '''
class NeuronSampleGenerator:
    """Yields the same `data` `sample_count` times, like a DataLoader (xu.SampleGenerator)."""

    def __init__(self, data, sample_count):
        self.data = data
        self.sample_count = sample_count

    def __iter__(self):
        for _ in range(self.sample_count):
            yield self.data

    def __len__(self):
        return self.sample_count
'''

_PARALLEL_LOADER = '''
class NeuronParallelLoader:
    """pl.ParallelLoader(loader, devices): per_device_loader(device) moves each batch there."""

    def __init__(self, loader, devices):
        self.loader = loader
        self.devices = devices

    def per_device_loader(self, device):
        return NeuronDeviceLoader(self.loader, device)
'''

_TRAINING_UPDATE = '''
def neuron_print_training_update(
    device, step, loss, rate, global_rate, epoch=None, summary_writer=None
):
    """One training progress line (test_utils.print_training_update)."""
    rank = torch.distributed.get_rank() if torch.distributed.is_initialized() else None
    where = str(device) if rank is None else f"{device}/{rank}"
    fields = [
        "Training",
        f"Device={where}",
        f"Epoch={epoch}" if epoch is not None else None,
        f"Step={step}",
        f"Loss={loss:.5f}",
        f"Rate={rate:.2f}",
        f"GlobalRate={global_rate:.2f}",
        f"Time={time.strftime('%H:%M:%S')}",
    ]
    print("|", " ".join(f for f in fields if f), flush=True)
    if summary_writer is not None:
        summary_writer.add_scalar("examples/sec", rate)
        summary_writer.add_scalar("average_examples/sec", global_rate)
'''

_TEST_UPDATE = '''
def neuron_print_test_update(device, accuracy, epoch=None, step=None):
    """One evaluation result line (test_utils.print_test_update)."""
    rank = torch.distributed.get_rank() if torch.distributed.is_initialized() else None
    where = str(device) if rank is None else f"{device}/{rank}"
    fields = [
        "Test",
        f"Device={where}",
        f"Step={step}" if step is not None else None,
        f"Epoch={epoch}" if epoch is not None else None,
        f"Accuracy={accuracy:.2f}" if accuracy is not None else None,
        f"Time={time.strftime('%H:%M:%S')}",
    ]
    print("|", " ".join(f for f in fields if f), flush=True)
'''

_WRITE_TO_SUMMARY = '''
def neuron_write_to_summary(summary_writer, global_step=None, dict_to_write=None):
    """Each scalar of `dict_to_write` at `global_step`; nothing without a writer
    (test_utils.write_to_summary)."""
    if summary_writer is None:
        return
    for name, value in (dict_to_write or {}).items():
        summary_writer.add_scalar(name, value, global_step)
'''

_GET_SUMMARY_WRITER = '''
def neuron_get_summary_writer(logdir):
    """A tensorboard SummaryWriter for `logdir` that starts with a timestamp; None without a
    log directory, and tensorboard is imported only then (test_utils.get_summary_writer)."""
    if not logdir:
        return None
    from torch.utils.tensorboard import SummaryWriter

    writer = SummaryWriter(log_dir=logdir)
    neuron_write_to_summary(writer, 0, dict_to_write={"TensorboardStartTimestamp": time.time()})
    return writer
'''

_CLOSE_SUMMARY_WRITER = '''
def neuron_close_summary_writer(summary_writer):
    """Flush and close the writer, if there is one (test_utils.close_summary_writer)."""
    if summary_writer is not None:
        summary_writer.flush()
        summary_writer.close()
'''

_TRACE = '''
def neuron_trace(func, example_inputs):
    """The XLA-based torch-neuronx's trace, on the native device: a copy of the model on
    "neuron", compiled with the neuron backend (static shapes) and run once on the example
    inputs. Like the traced module it takes and gives CPU tensors, for inference (no autograd)."""
    if isinstance(func, torch.nn.Module):
        func = copy.deepcopy(func).to("neuron")
    compiled = torch.compile(func, backend="neuron", dynamic=False)

    def moved(value, device):
        return torch.utils._pytree.tree_map(
            lambda t: t.to(device) if isinstance(t, torch.Tensor) else t, value
        )

    def traced(*inputs):
        with torch.no_grad():
            return moved(compiled(*moved(inputs, "neuron")), "cpu")

    traced(*(example_inputs if isinstance(example_inputs, tuple) else (example_inputs,)))
    return traced
'''

_NXD_LOGGER = '''
def neuron_nxd_logger(name="neuronx_distributed"):
    """The logger NxD's get_logger gave: to stdout, at the level NXD_LOG_LEVEL names (info by
    default, off for none), not passed on to the root logger."""
    logger = logging.getLogger(name)
    if not any(getattr(h, "nxd_format", False) for h in logger.handlers):
        handler = logging.StreamHandler(sys.stdout)
        handler.nxd_format = True
        handler.setFormatter(
            logging.Formatter(
                "[%(asctime)s.%(msecs)03d: %(levelname).1s %(filename)s:%(lineno)d] %(message)s",
                datefmt="%Y-%m-%d %H:%M:%S",
            )
        )
        logger.handlers = [handler]
        levels = {
            "off": logging.FATAL + 1,
            "fatal": logging.FATAL,
            "error": logging.ERROR,
            "warning": logging.WARNING,
            "debug": logging.DEBUG,
            "trace": logging.DEBUG,
        }
        logger.setLevel(levels.get(os.environ.get("NXD_LOG_LEVEL", "info").lower(), logging.INFO))
        logger.propagate = False
    return logger
'''

_ENSURE_DIVISIBILITY = '''
def neuron_ensure_divisibility(numerator, denominator):
    """Assert that `denominator` divides `numerator` exactly (NxD's ensure_divisibility)."""
    assert numerator % denominator == 0, f"{numerator} is not divisible by {denominator}"
'''

_DIVIDE = '''
def neuron_divide(numerator, denominator):
    """`numerator // denominator`, asserting that the division is exact (NxD's divide)."""
    neuron_ensure_divisibility(numerator, denominator)
    return numerator // denominator
'''

_MASTER_PRINT = '''
def neuron_master_print(*args, fd=None, local=False, flush=False):
    """Print on the master process only (xm.master_print). The arguments were evaluated on
    every rank, as torch_xla evaluates them: one may run a collective all ranks must join."""
    if local:
        rank = int(os.environ.get("LOCAL_RANK", 0))
    elif torch.distributed.is_available() and torch.distributed.is_initialized():
        rank = torch.distributed.get_rank()
    else:
        rank = int(os.environ.get("RANK", 0))
    if rank == 0:
        print(*args, file=fd, flush=flush)
'''

_NOW = '''
def neuron_now(format="%H:%M:%S"):
    """The local time as text (test_utils.now)."""
    from datetime import datetime

    return datetime.now().strftime(format)
'''

_DEVICE_TYPE = '''
def neuron_device_type():
    """The device type torch_xla's runtime reported: NEURON where the neuron device is, else
    CPU (xr.device_type)."""
    return "NEURON" if hasattr(torch, "neuron") and torch.neuron.is_available() else "CPU"
'''

# XLA's xla:// rendezvous took the ranks from its runtime, one process when the script ran by
# itself; env:// needs torchrun's variables.
_INIT_METHOD = '''
def neuron_init_method():
    """The rendezvous XLA's xla:// made: torchrun's (env://), or a group of this process alone
    when the script runs by itself."""
    if "RANK" in os.environ:
        return "env://"
    return "tcp://127.0.0.1:0?rank=0&world_size=1"
'''

_NOT_MIGRATED = '''
class NotMigrated:
    """Stands in for a torch_xla name where torch_xla is not installed: the program starts,
    and code marked TODO(neuron-migrate) that still uses the name raises, saying what to do
    (for the attribute it reads, when the advice is given by attribute)."""

    def __init__(self, *todo, **todo_by_attribute):
        self.todo = "; ".join([*todo, *todo_by_attribute.values()])
        self.todo_by_attribute = todo_by_attribute

    def __getattr__(self, name):
        if name.startswith("__") or name.startswith("todo"):
            raise AttributeError(name)
        todo = self.todo_by_attribute.get(name, self.todo)
        raise NotImplementedError(f"neuron-migrate {todo}")

    def __call__(self, *args, **kwargs):
        raise NotImplementedError(f"neuron-migrate {self.todo}")
'''

_SIZED = ("neuron_world_size",)
_GRADS = ("neuron_world_size", "neuron_local_grads")
_MESH = ("neuron_device_mesh",)
_LAYER = ("neuron_device_mesh", "neuron_nxd_init")
# NxD's config-based trainer (trainer_helpers.py)
_NEW_MESH = ("neuron_device_mesh", "neuron_init_device_mesh")
_TAGS = ("neuron_checkpoint_tags",)
_TRAINER = (
    Helper("neuron_nxd_config", trainer_helpers.NXD_CONFIG, uses=_NEW_MESH),
    Helper("neuron_parallel_model", trainer_helpers.PARALLEL_MODEL, uses=_NEW_MESH),
    Helper("NeuronNxDOptimizer", trainer_helpers.NXD_OPTIMIZER, uses=_MESH),
    Helper(
        "neuron_parallel_optimizer",
        trainer_helpers.PARALLEL_OPTIMIZER,
        (),
        ("NeuronNxDOptimizer", *_MESH),
    ),
    Helper("neuron_checkpoint_tags", trainer_helpers.CHECKPOINT_TAGS, ("os",)),
    Helper("neuron_has_checkpoint", trainer_helpers.HAS_CHECKPOINT, (), _TAGS),
    Helper("neuron_save_checkpoint", trainer_helpers.SAVE_CHECKPOINT, ("os", "torch"), _TAGS),
    Helper("neuron_load_checkpoint", trainer_helpers.LOAD_CHECKPOINT, ("os", "torch"), _TAGS),
    Helper("neuron_finalize_checkpoint", trainer_helpers.FINALIZE_CHECKPOINT, ()),
)
_SP_COLUMN = (*_LAYER, "neuron_column_parallel")
_SP_ROW = (*_LAYER, "neuron_row_parallel")

HELPERS: dict[str, Helper] = {
    h.name: h
    for h in (
        Helper("neuron_world_size", _WORLD_SIZE, ("os", "torch")),
        Helper("neuron_local_grads", _LOCAL_GRADS),
        Helper("neuron_optimizer_step", _OPTIMIZER_STEP, uses=_GRADS),
        Helper("neuron_replica_group", _REPLICA_GROUP),
        Helper(
            "neuron_reduce_gradients",
            _REDUCE_GRADIENTS,
            uses=(*_GRADS, "neuron_replica_group"),
        ),
        Helper(
            "neuron_optimizer_step_in_groups",
            _OPTIMIZER_STEP_IN_GROUPS,
            uses=(*_GRADS, "neuron_replica_group", "neuron_reduce_gradients"),
        ),
        Helper("neuron_broadcast_master_param", _BROADCAST_MASTER_PARAM, uses=_SIZED),
        Helper("neuron_all_gather", _ALL_GATHER, uses=_SIZED),
        Helper("neuron_rendezvous", _RENDEZVOUS, uses=_SIZED),
        Helper("NeuronSerialExecutor", _SERIAL_EXECUTOR, ("os", "torch")),
        Helper("NeuronRateTracker", _RATE_TRACKER, ("os", "time")),
        Helper("NeuronSampleGenerator", _SAMPLE_GENERATOR, ()),
        Helper("NeuronParallelLoader", _PARALLEL_LOADER, (), ("NeuronDeviceLoader",)),
        Helper("neuron_print_training_update", _TRAINING_UPDATE, ("time", "torch")),
        Helper("neuron_print_test_update", _TEST_UPDATE, ("time", "torch")),
        Helper("neuron_write_to_summary", _WRITE_TO_SUMMARY, ()),
        Helper(
            "neuron_get_summary_writer",
            _GET_SUMMARY_WRITER,
            ("time",),
            ("neuron_write_to_summary",),
        ),
        Helper("neuron_close_summary_writer", _CLOSE_SUMMARY_WRITER, ()),
        Helper("neuron_trace", _TRACE, ("copy", "torch")),
        Helper("neuron_nxd_logger", _NXD_LOGGER, ("logging", "os", "sys")),
        Helper("neuron_ensure_divisibility", _ENSURE_DIVISIBILITY, ()),
        Helper("neuron_divide", _DIVIDE, (), ("neuron_ensure_divisibility",)),
        Helper("neuron_rmsg", nxd_util_helpers.RANK_MESSAGE, uses=_MESH),
        Helper(
            "NeuronParallelCrossEntropy",
            nxd_grads_helpers.PARALLEL_CROSS_ENTROPY_FUNCTION,
            uses=_MESH,
        ),
        Helper(
            "neuron_parallel_cross_entropy",
            nxd_grads_helpers.PARALLEL_CROSS_ENTROPY,
            (),
            ("NeuronParallelCrossEntropy", *_MESH),
        ),
        Helper("neuron_number_of_extra_heads", nxd_util_helpers.EXTRA_HEADS, ()),
        Helper("neuron_master_print", _MASTER_PRINT, ("os", "torch")),
        Helper("neuron_now", _NOW, ()),
        Helper(STAND_IN, _NOT_MIGRATED, ()),
        Helper("neuron_device_type", _DEVICE_TYPE),
        Helper("neuron_init_method", _INIT_METHOD, ("os",)),
        Helper("neuron_device_mesh", tp_helpers.DEVICE_MESH, ("sys",)),
        Helper("neuron_init_device_mesh", tp_helpers.INIT_DEVICE_MESH, uses=_MESH),
        Helper("neuron_nxd_init", tp_helpers.NXD_INIT),
        Helper("neuron_column_parallel", tp_helpers.COLUMN_PARALLEL, uses=_LAYER),
        Helper("neuron_row_parallel", tp_helpers.ROW_PARALLEL, uses=_LAYER),
        Helper("neuron_parallel_embedding", tp_helpers.PARALLEL_EMBEDDING, uses=_LAYER),
        Helper("neuron_copy_to_tp_region", tp_helpers.COPY_TO_REGION, uses=_MESH),
        Helper("neuron_reduce_from_tp_region", tp_helpers.REDUCE_FROM_REGION, uses=_MESH),
        Helper("neuron_scatter_to_tp_region", tp_helpers.SCATTER_TO_REGION, uses=_MESH),
        Helper("neuron_gather_from_tp_region", tp_helpers.GATHER_FROM_REGION, uses=_MESH),
        Helper("neuron_replicate_unsharded", tp_helpers.REPLICATE_UNSHARDED, uses=_MESH),
        Helper("neuron_clip_grad_norm", nxd_grads_helpers.CLIP_GRAD_NORM),
        Helper("neuron_grad_norm", nxd_grads_helpers.GRAD_NORM),
        Helper("neuron_bucket_allreduce_gradients", nxd_grads_helpers.BUCKET_ALLREDUCE, uses=_MESH),
        *_TRAINER,
        Helper("neuron_column_parallel_sp", sp_helpers.COLUMN_PARALLEL_SP, uses=_SP_COLUMN),
        Helper("neuron_row_parallel_sp", sp_helpers.ROW_PARALLEL_SP, uses=_SP_ROW),
        Helper("neuron_sequence_parallel_norm", sp_helpers.SEQUENCE_PARALLEL_NORM, uses=_MESH),
        Helper("neuron_scatter_to_sp_region", sp_helpers.SCATTER_TO_SP_REGION, uses=_MESH),
        Helper("neuron_gather_from_sp_region", sp_helpers.GATHER_FROM_SP_REGION, uses=_MESH),
        Helper(
            "neuron_reduce_scatter_to_sp_region", sp_helpers.REDUCE_SCATTER_TO_SP_REGION, uses=_MESH
        ),
        Helper(
            "NeuronStridedColumnParallel",
            sp_helpers.STRIDED_COLUMN_PARALLEL,
            uses=("neuron_column_parallel_sp", *_SP_COLUMN),
        ),
        Helper(
            "NeuronQKVLinear",
            gqa_helpers.QKV_LINEAR,
            ("torch",),
            ("neuron_column_parallel_sp", *_SP_COLUMN),
        ),
    )
}


def use_helper(ctx: FileContext, name: str) -> bool:
    """Add helper `name` (and those it uses) to the file; False when the file's own code
    already binds that name to something else."""
    helper = HELPERS[name]
    if name in ctx.taken and name not in ctx.own_helpers:
        return False
    for used in helper.uses:
        if used in ctx.taken and used not in ctx.own_helpers:
            return False
    ctx.helpers.add(name)
    ctx.helpers.update(helper.uses)
    ctx.use_names(helper.modules)
    for used in helper.uses:  # NeuronDeviceLoader, defined in launch.py, names torch
        ctx.use_names(HELPERS[used].modules if used in HELPERS else ("torch",))
    return True
