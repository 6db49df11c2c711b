"""neuron-migrate: move PyTorch code from torch_xla to the native TorchNeuron `neuron` device."""

__version__ = "0.1.0"
