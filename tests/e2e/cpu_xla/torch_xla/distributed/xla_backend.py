"""The 'xla' process group, as gloo on the CPU. Like torch_xla's, the xla:// init method needs
no MASTER_ADDR / MASTER_PORT (the runtime knows its peers); env:// does."""

import os

import torch.distributed as dist

_init = dist.init_process_group


def _init_process_group(backend=None, init_method=None, *args, **kwargs):
    if backend == "xla":
        backend = "gloo"
        if init_method == "xla://":
            init_method = None
            os.environ.setdefault("MASTER_ADDR", "localhost")
            if "MASTER_PORT" not in os.environ:  # a single process run without a launcher
                from torch_xla.core.xla_model import free_port

                os.environ["MASTER_PORT"] = str(free_port())
            # the runtime's ranks, as torch_xla's rendezvous reads them (one process: 0 of 1)
            from torch_xla import runtime

            kwargs.setdefault("rank", runtime.global_ordinal())
            kwargs.setdefault("world_size", runtime.world_size())
    return _init(backend, init_method, *args, **kwargs)


dist.init_process_group = _init_process_group
