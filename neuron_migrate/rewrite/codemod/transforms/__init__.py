"""The named Python transforms rules refer to. Importing this package registers them all."""

from neuron_migrate.rewrite.codemod.transforms import (  # noqa: F401  (imported to register)
    collectives,
    device,
    helper_calls,
    launch,
    legacy,
    literals,
    nxd,
    nxd_sp,
    nxd_trainer,
    steps,
)
