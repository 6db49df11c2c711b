"""A CPU stand-in for the few torch_xla APIs the end-to-end programs call, for the reference
runs only: the original program's logic on plain CPU with a gloo process group.

Ranks come from the launcher (torchrun's RANK / WORLD_SIZE), or from `spawn`, which starts
CPU_XLA_DEVICES processes as xmp.spawn starts one per device. Not torch_xla: just the
semantics these programs rely on (gradients averaged by optimizer_step, barriers, payload
exchange), written for the tests.
"""

import types

import torch

from torch_xla import runtime  # noqa: F401
from torch_xla.debug import metrics as _metrics

# The C++ binding; only the metrics report, which met.metrics_report returns.
_XLAC = types.SimpleNamespace(_xla_metrics_report=_metrics.metrics_report)


def device(index=None):
    return torch.device("cpu")


def sync(wait=False):
    return None


def compile(fn=None, full_graph=False, name=None, num_different_graphs_allowed=None):
    return fn


def launch(fn, args=(), start_method="spawn", debug_single_process=False):
    from torch_xla.distributed import xla_multiprocessing

    xla_multiprocessing.spawn(fn, args=args, start_method=start_method)
