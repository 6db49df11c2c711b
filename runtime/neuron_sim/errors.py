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


class NeuronNotSimulatedError(NeuronSimError):
    """An op the matrix lets run that the simulated device cannot run: it runs every op with
    torch's CPU kernel, and torch has none for this one (a cuDNN-only fused cell, say). Not a
    finding about TorchNeuron: the run cannot show what the device does with it."""

    def __init__(self, op: str, status: str, source: str | None, version: str, where: str) -> None:
        self.op = op
        super().__init__(
            f"{op} is {status} in torch-neuronx {version} [{source}], but the simulated neuron "
            f"device cannot run it{where}: it runs each op with torch's CPU kernel, and torch "
            "has no CPU kernel for this one. This run cannot show what a device does with it; "
            "run it on a Trn2/Trn3 instance (`neuron-migrate matrix probe`)."
        )


class NeuronCompileError(NeuronSimError):
    """A graph handed to `torch.compile(backend="neuron")` cannot be lowered."""


class NeuronSetupError(NeuronSimError):
    """The simulated device cannot be installed in this process."""
