"""`init_method="xla://"` (or pjrt://): XLA's rendezvous took ranks from its runtime, so the
script also ran by itself as one process; env:// needs torchrun's variables. The keyword becomes
`neuron_init_method()`, which these tests also run, with and without torchrun's variables."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from neuron_migrate.rewrite.codemod.engine import rewrite_source
from neuron_migrate.rewrite.codemod.helpers import HELPERS

pytest.importorskip("torch")

HEAD = "import torch.distributed as dist\n\n"


@pytest.mark.parametrize(
    "call",
    [
        'dist.init_process_group("xla", init_method="xla://")',
        "dist.init_process_group(backend='xla', init_method='pjrt://', timeout=None)",
    ],
)
def test_the_rendezvous_becomes_the_helper(call: str) -> None:
    new = rewrite_source(HEAD + call + "\n").new
    assert "init_method=neuron_init_method()" in new
    assert "def neuron_init_method():" in new
    assert rewrite_source(new).new == new


@pytest.mark.parametrize(
    "call",
    [
        # the call names its rank: a URL holding one too is refused by torch
        'dist.init_process_group("xla", init_method="xla://", rank=r, world_size=n)',
        # passed positionally, or through a variable: env://, as before
        'dist.init_process_group("xla", "xla://")',
    ],
)
def test_other_shapes_get_env(call: str) -> None:
    new = rewrite_source(HEAD + call + "\n").new
    assert '"env://"' in new
    assert "neuron_init_method" not in new


def _joined(env: dict[str, str]) -> str:
    """What a group made through the helper says of itself, in a fresh interpreter."""
    program = textwrap.dedent(
        """
        import os
        import torch.distributed as dist
        {helper}
        dist.init_process_group("gloo", init_method=neuron_init_method())
        print(dist.get_rank(), dist.get_world_size(), neuron_init_method())
        dist.destroy_process_group()
        """
    ).format(helper=HELPERS["neuron_init_method"].source)
    done = subprocess.run(
        [sys.executable, "-c", program], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_the_helper_makes_a_group_of_one_process_when_run_by_itself() -> None:
    alone = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE")}
    assert _joined(alone) == "0 1 tcp://127.0.0.1:0?rank=0&world_size=1"


def test_the_helper_joins_torchrun_s_group() -> None:
    # port 0: the store of a group of one picks a free port itself
    launched = {**os.environ, "RANK": "0", "WORLD_SIZE": "1", "MASTER_ADDR": "127.0.0.1"}
    launched["MASTER_PORT"] = "0"
    assert _joined(launched) == "0 1 env://"
