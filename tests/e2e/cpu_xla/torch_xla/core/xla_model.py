"""xm on the CPU: ranks from the environment, collectives over a gloo group made on first use."""

import os
import random
import socket
import sys
import time

import torch
import torch.distributed as dist

from torch_xla import runtime


def xla_device(n=None, devkind=None):
    return torch.device("cpu")


def xrt_world_size(defval=1):
    return runtime.world_size()


def get_ordinal(defval=0):
    return runtime.global_ordinal()


def get_local_ordinal(defval=0):
    return runtime.local_ordinal()


def is_master_ordinal(local=True):
    return (get_local_ordinal() if local else get_ordinal()) == 0


def master_print(*args, fd=sys.stdout, local=False, flush=False):
    if is_master_ordinal(local=local):
        print(*args, file=fd, flush=flush)


def mark_step(wait=False):
    return None


def free_port():
    """A free port below the ephemeral range, as tests/ports.py picks one: a port-0 probe's port
    can go to another process's socket before the group listens on it (tests run in parallel)."""
    pick = random.SystemRandom()
    for _ in range(50):
        port = pick.randint(15000, 29399)
        with socket.socket() as sock:
            try:
                sock.bind(("localhost", port))
            except OSError:
                continue
            return port
    with socket.socket() as sock:
        sock.bind(("localhost", 0))
        return sock.getsockname()[1]


def _group():
    """The default group, made over gloo when the program made none (as PJRT had one)."""
    if xrt_world_size() == 1:
        return False
    if not dist.is_initialized():
        os.environ.setdefault("MASTER_ADDR", "localhost")
        dist.init_process_group("gloo", rank=get_ordinal(), world_size=xrt_world_size())
    return True


def optimizer_step(optimizer, barrier=False, optimizer_args=None, groups=None):
    reduce_gradients(optimizer)
    return optimizer.step(**(optimizer_args or {}))


def reduce_gradients(optimizer, groups=None, pin_layout=True):
    if _group():
        for group in optimizer.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    dist.all_reduce(p.grad)
                    p.grad.div_(xrt_world_size())


def broadcast_master_param(model):
    if _group():
        with torch.no_grad():
            for p in model.parameters():
                dist.broadcast(p, src=0)


def all_gather(value, dim=0, groups=None, output=None, pin_layout=True):
    if not _group():
        return value
    parts = [torch.empty_like(value) for _ in range(xrt_world_size())]
    dist.all_gather(parts, value.contiguous())
    return torch.cat(parts, dim=dim)


REDUCE_SUM = "sum"
REDUCE_MAX = "max"
_OPS = {REDUCE_SUM: dist.ReduceOp.SUM, REDUCE_MAX: dist.ReduceOp.MAX}


def all_reduce(reduce_type, inputs, scale=1.0, groups=None, pin_layout=True):
    """A tensor in: a new reduced tensor out; a list of tensors: reduced in place."""
    tensors = [inputs] if isinstance(inputs, torch.Tensor) else list(inputs)
    out = [t.clone() for t in tensors] if isinstance(inputs, torch.Tensor) else tensors
    for tensor in out:
        if _group():
            dist.all_reduce(tensor, op=_OPS[reduce_type])
        if scale != 1.0:
            tensor.mul_(scale)
    return out[0] if isinstance(inputs, torch.Tensor) else inputs


def mesh_reduce(tag, data, reduce_fn):
    if not _group():
        return reduce_fn([data])
    values = [None] * xrt_world_size()
    dist.all_gather_object(values, data)
    return reduce_fn(values)


def rendezvous(tag, payload=b"", replicas=()):
    if _group():
        dist.barrier()


def xla_rendezvous(payload=b"", ordinals=None, tag=None):
    if not _group():
        return [payload]
    values = [None] * xrt_world_size()
    dist.all_gather_object(values, payload)
    return values


def save(data, file_or_path, master_only=True, global_master=False):
    if not master_only or is_master_ordinal(local=not global_master):
        torch.save(data, file_or_path)


class RateTracker:
    def __init__(self, smooth_factor=0.4):
        self.start = time.time()
        self.count = 0

    def add(self, count):
        self.count += count

    def rate(self):
        return self.global_rate()

    def global_rate(self):
        return self.count / max(time.time() - self.start, 1e-9)
