"""A CPU stand-in for the XLA-based torch-neuronx's `trace`, for the reference runs only.

The real `torch_neuronx.trace` runs the model once on the example inputs and returns a
TorchScript module holding the compiled graph, which takes and gives CPU tensors and can be
saved with `torch.jit.save`. Here the graph is `torch.jit.trace`'s, run on the CPU: the model's
own math, which is what a migrated program must reproduce.
"""

import torch


def trace(func, example_inputs, *_, compiler_workdir=None, compiler_args=None, **options):
    return torch.jit.trace(func, example_inputs)
