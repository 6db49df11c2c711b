"""Errors the simulated device raises where a real `neuron` device would refuse."""

from __future__ import annotations


class NeuronSimError(RuntimeError):
    """Base class: something the simulated `neuron` device refuses to do."""


class NeuronUnsupportedOpError(NeuronSimError):
    """An aten op the target TorchNeuron release cannot run, not even on CPU."""

    def __init__(self, op: str, location: str | None, note: str | None = None) -> None:
        self.op = op
        self.location = location
        where = f" at {location}" if location else ""
        detail = f" ({note})" if note else ""
        super().__init__(f"{op} is not supported on the neuron device{where}{detail}")


class NeuronCompileError(NeuronSimError):
    """A graph handed to `torch.compile(backend="neuron")` cannot be lowered."""


class NeuronSetupError(NeuronSimError):
    """The simulated device cannot be installed in this process."""
