"""Entry point torch calls at `import torch` (group `torch.backends`).

It does nothing unless `neuron-migrate run` set `NEURON_MIGRATE_SIM`, so merely having
neuron-migrate installed never changes torch.
"""

from __future__ import annotations

import os


def autoload() -> None:
    if not os.environ.get("NEURON_MIGRATE_SIM"):
        return
    from neuron_sim.install import install_from_environment

    install_from_environment()
