"""A CPU stand-in for the parts of NeuronX Distributed (NxD) the end-to-end programs call, for the
reference runs only: NxD's tensor-parallel semantics on plain CPU tensors and a gloo process
group, written for the tests from the public source of aws-neuron/neuronx-distributed (signatures,
defaults, weight initialisation, and which collective each layer runs forward and backward).
"""

from neuronx_distributed import parallel_layers, utils  # noqa: F401
