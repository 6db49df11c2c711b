"""A CPU stand-in for the parts of NeuronX Distributed (NxD) the end-to-end programs call, for the
reference runs only: NxD's tensor-parallel semantics on plain CPU tensors and a gloo process
group, written for the tests from the public source of aws-neuron/neuronx-distributed (signatures,
defaults, weight initialisation, and which collective each layer runs forward and backward).
"""

from neuronx_distributed import parallel_layers, trainer, utils  # noqa: F401
from neuronx_distributed.trainer import (  # noqa: F401
    finalize_checkpoint,
    has_checkpoint,
    initialize_parallel_model,
    initialize_parallel_optimizer,
    load_checkpoint,
    neuronx_distributed_config,
    save_checkpoint,
)
