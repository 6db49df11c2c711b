"""neuron_sim: a simulated TorchNeuron `neuron` device for CPU-only machines.

`neuron-migrate run` installs it in every process through the `torch.backends` entry point
(`neuron_sim.autoload`); `neuron_sim.install.install()` does the same by hand. The compatibility
matrix of the chosen torch-neuronx version decides what each aten op does.
"""
