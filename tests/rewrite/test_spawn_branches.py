"""A spawn on one branch of an `if`: the process group it gets is made on that branch only, so
the rewrite says so where another branch may run the workers without it (under torchrun)."""

from __future__ import annotations

import ast

import pytest

from neuron_migrate.rewrite.codemod.engine import rewrite_source
from neuron_migrate.ruleset import load_ruleset

HEAD = (
    "import torch.distributed as dist\n"
    "import torch_xla.core.xla_model as xm\n"
    "import torch_xla.distributed.xla_multiprocessing as xmp\n\n\n"
    "def _mp_fn(index):\n"
    "    xm.rendezvous('ready')\n\n\n"
)
NOTE = "NOTE(neuron-migrate NM401): the process group is created on this branch only"


def migrated(source: str) -> str:
    new = rewrite_source(source, load_ruleset(), unsafe=False).new
    ast.parse(new)
    assert 'dist.init_process_group("neuron")' in new
    return new


@pytest.mark.parametrize(
    "main",
    [
        # the header holds no site: the `if` is outlined and read from its source
        "if dist.is_torchelastic_launched():\n    _mp_fn(0)\nelse:\n    xmp.spawn(_mp_fn)\n",
        "if not dist.is_torchelastic_launched():\n    xmp.spawn(_mp_fn)\nelse:\n    _mp_fn(0)\n",
        "if launched():\n    _mp_fn(0)\nelif spawned():\n    xmp.spawn(_mp_fn)\n",
        # the header holds a site, so the `if` is a parsed node
        "if xm.xrt_world_size() > 1:\n    _mp_fn(0)\nelse:\n    xmp.spawn(_mp_fn)\n",
        "def main():\n"
        "    if launched():\n        _mp_fn(0)\n    else:\n        xmp.spawn(_mp_fn)\n",
    ],
)
def test_a_spawn_on_one_branch_of_several_is_noted(main: str):
    new = migrated(HEAD + main)
    assert new.count(NOTE) == 1
    note_line = next(line for line in new.splitlines() if NOTE in line)
    init_line = new.splitlines()[new.splitlines().index(note_line) + 1]
    assert init_line.strip() == 'if "RANK" in os.environ:'


@pytest.mark.parametrize(
    "main",
    [
        "if __name__ == '__main__':\n    xmp.spawn(_mp_fn)\n",
        "xmp.spawn(_mp_fn)\n",
        # the `if` with another branch is outside the function the spawn is in
        "if launched():\n    pass\nelse:\n    def main():\n        xmp.spawn(_mp_fn)\n",
        # a loop's `else` is no other branch
        "for _ in range(1):\n    pass\nelse:\n    xmp.spawn(_mp_fn)\n",
    ],
)
def test_a_spawn_with_no_other_branch_is_not_noted(main: str):
    assert NOTE not in migrated(HEAD + main)
