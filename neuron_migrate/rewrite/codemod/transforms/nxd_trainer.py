"""NxD's config-based trainer on native PyTorch: each function becomes the helper the rule's
options name (`trainer_helpers.py`), with the same arguments; which calls qualify is in
`scan/analyzer/trainer_declines.py`."""

from __future__ import annotations

import libcst as cst

from neuron_migrate.rewrite.codemod.targets import CallTarget, expression
from neuron_migrate.rewrite.codemod.transforms.helper_calls import helper_call


@expression("nxd-trainer")
def nxd_trainer(t: CallTarget) -> cst.BaseExpression | None:
    """`nxd.save_checkpoint(dir, tag, model=m)` -> `neuron_save_checkpoint(dir, tag, model=m)`."""
    return helper_call(t)
