"""Found first on the import path `neuron-migrate run` sets, by a program that imports
torch_neuronx before torch: the real package imports torch itself, and so does this one.
`import torch` installs the simulated device, whose `torch_neuronx` stand-in takes this
module's place in `sys.modules` (the import statement then returns the stand-in)."""

import sys

import torch  # noqa: F401  (installs the device and its stand-in when the run asked for it)

if getattr(sys.modules.get(__name__), "SIMULATED", False) is not True:
    # No device installed (the run's environment was not passed on): no package either.
    del sys.modules[__name__]
    raise ModuleNotFoundError(f"No module named {__name__!r}", name=__name__)
