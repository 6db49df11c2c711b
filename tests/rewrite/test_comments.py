"""Comments inside the code a rule replaces survive the rewrite, above the statement."""

from __future__ import annotations

import pytest

from neuron_migrate.rewrite.codemod.engine import rewrite_source

SOURCE = """import torch
import torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.runtime as xr


def step(n, model, opt):
    device = xm.xla_device(
        # which core to use
        n,
    )
    with torch_xla.step():  # one training step
        loss = model(device)
    world = xr.world_size(  # replicas
    )
    xm.mark_step(
        wait=False,  # nothing to wait for
    )
    return loss, world
"""


def test_comments_in_replaced_calls_and_unwrapped_blocks_survive():
    new = rewrite_source(SOURCE).new
    comments = [line.strip() for line in new.splitlines() if line.strip().startswith("#")]
    assert comments == [
        "# which core to use",
        "# one training step",
        "# replicas",
        "# nothing to wait for",
    ]
    lines = new.splitlines()
    assert lines[lines.index("    # which core to use") + 1] == (
        '    device = torch.device("neuron", n)'
    )
    assert rewrite_source(new).new == new


def test_a_kept_name_keeps_its_comment_in_a_parenthesized_from_import():
    source = """from torch_xla.core.xla_model import (
    xla_device,  # the device
    get_memory_info,  # memory, still needed
)
from torch_xla.core.xla_model import (get_memory_info as memory, mark_step)

device = xla_device()
print(get_memory_info(device), memory(device))
"""
    lines = rewrite_source(source).new.splitlines()
    # (each kept import in the `try` that binds a stand-in where torch_xla is missing)
    first = lines.index("    from torch_xla.core.xla_model import (")
    # the removed name's comment goes with it; the kept one's stays on its line
    assert lines[first + 1 : first + 3] == [
        "        get_memory_info,  # memory, still needed",
        "    )",
    ]
    # on one line, no comma is left before the parenthesis
    assert "    from torch_xla.core.xla_model import (get_memory_info as memory)" in lines


def test_a_kept_name_keeps_its_comment_when_the_last_name_goes():
    source = """def f():
    from torch_xla.core.xla_model import (
        get_memory_info,  # memory, still needed
        xla_device  # the device
    )

    return get_memory_info(xla_device())
"""
    lines = rewrite_source(source).new.splitlines()
    first = lines.index("        from torch_xla.core.xla_model import (")
    # the removed last name's comment goes with it, as it does after a comma
    assert lines[first + 1 : first + 3] == [
        "            get_memory_info,  # memory, still needed",
        "        )",
    ]


@pytest.mark.parametrize("comma", ["", ","])
def test_comment_lines_after_a_removed_last_name_stay(comma: str):
    source = f"""from torch_xla.core.xla_model import (
    get_memory_info,
    mark_step{comma}  # the step's own comment
    # a comment line of its own
)

print(get_memory_info(None))
mark_step()
"""
    new = rewrite_source(source).new
    start = new.index("    from torch_xla.core.xla_model import (")  # in the stand-in `try`
    assert new[start:].startswith(
        "    from torch_xla.core.xla_model import (\n"
        "        get_memory_info,\n"
        "        # a comment line of its own\n"
        "    )\n"
    )
    assert "the step's own comment" not in new
    assert rewrite_source(new).new == new
