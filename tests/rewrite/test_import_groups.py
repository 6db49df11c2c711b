"""Imports the rewrite adds join the file's own groups: `os` among the standard library in
order, `torch.distributed` after the last torch import."""

from __future__ import annotations

from neuron_migrate.rewrite.codemod.engine import rewrite_source
from neuron_migrate.ruleset import load_ruleset

SOURCE = """import argparse
import sys

import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm

from model import Net


def main():
    rank = xm.get_ordinal()
    local = xm.get_local_ordinal()
    return rank, local, sys.argv, argparse, torch, nn, Net
"""


def test_added_imports_join_their_groups() -> None:
    new = rewrite_source(SOURCE).new
    head = new.split("\n\n\ndef main")[0]
    assert head == (
        "import argparse\n"
        "import os\n"
        "import sys\n"
        "\n"
        "import torch\n"
        "import torch.nn as nn\n"
        "import torch.distributed as dist\n"
        "\n"
        "from model import Net"
    )


def test_imports_added_in_place_of_a_removed_block_keep_the_blank_lines_below_it() -> None:
    for definition in ("def f():\n    return xr.world_size()\n", "@cache\nclass C:\n    n = 1\n"):
        for blanks in ("\n", "\n\n"):
            source = "import torch_xla\nimport torch_xla.runtime as xr\n" + blanks + definition
            source += "\n\ndef g():\n    return xr.world_size()\n"
            new = rewrite_source(source).new
            first = definition.split("\n")[0]
            assert new.startswith("import os\nimport torch.distributed as dist\n" + blanks + first)


def test_a_removed_first_import_leaves_no_blank_lines_at_the_top() -> None:
    source = "import torch_xla.core.xla_model as xm\n\n\ndef f():\n    xm.mark_step()\n"
    assert rewrite_source(source).new == "def f():\n    pass\n"


def test_an_import_whose_name_is_only_bound_elsewhere_goes_with_its_last_use() -> None:
    """`global xm` and `xm = None` bind the name; once every read is migrated, the lazy import
    goes too (kept, the migrated code would still need torch_xla)."""
    source = (
        "import torch\n\n"
        "xm = None\n\n\n"
        "def _lazy_init():\n"
        "    global xm\n"
        "    import torch_xla.core.xla_model as xm\n\n\n"
        "def device():\n"
        "    _lazy_init()\n"
        "    return xm.xla_device()\n"
    )
    new = rewrite_source(source).new
    assert "torch_xla" not in new
    assert "def _lazy_init():\n    global xm\n" in new
    compile(new, "lazy.py", "exec")


def test_a_guard_whose_fallback_only_binds_the_name_goes_as_unused() -> None:
    source = (
        "import torch\n\n"
        "try:\n"
        "    import torch_xla.core.xla_model as xm\n"
        "except ImportError:\n"
        "    xm = None\n\n\n"
        "def device():\n"
        "    return xm.xla_device()\n"
    )
    new = rewrite_source(source).new
    # `xm = None` binds the name, reads nothing: the guard collapses (test_guard_collapse.py)
    assert "torch_xla" not in new and "try:" not in new and "xm = None" not in new
    assert "NM100" not in new and "NM198" not in new


def test_an_import_added_first_leaves_the_marker_above_its_own_import() -> None:
    source = (
        "import torch_xla.runtime as xr\n\n\n"
        "def info():\n"
        "    return xr.local_process_count(), xr.global_device_count()\n"
    )
    new = rewrite_source(source).new
    assert new.startswith("import os\n\n\nclass NotMigrated:\n")
    marker = load_ruleset().get("NM100").marker()
    assert f"\n{marker}\ntry:\n    import torch_xla.runtime as xr\n" in new
    assert rewrite_source(new).new == new


def test_a_side_effect_import_stays_while_the_name_it_binds_is_read() -> None:
    """`import torch_xla.distributed.xla_backend` also binds `torch_xla`: removed while a
    marked `torch_xla._XLAC` call still reads it, the migrated code raised NameError."""
    source = (
        "import torch.distributed as dist\n"
        "import torch_xla.distributed.xla_backend\n\n\n"
        "def setup():\n"
        '    dist.init_process_group("xla")\n'
        "    return torch_xla._XLAC._xla_get_default_device()\n"
    )
    new = rewrite_source(source).new
    assert "\nimport torch_xla.distributed.xla_backend\n" in new
    assert 'dist.init_process_group("neuron")' in new
    # with a plain import of torch_xla to bind the name, the side-effect import goes
    plain = source.replace("import torch_xla.", "import torch_xla\nimport torch_xla.")
    new = rewrite_source(plain).new
    assert "xla_backend" not in new
    assert "\ntry:\n    import torch_xla\nexcept ImportError:\n" in new


def test_a_backend_import_stays_while_a_marked_process_group_may_ask_for_xla() -> None:
    """A process group whose backend variable may hold 'xla' is marked, not rewritten: it still
    asks for 'xla', which only `import torch_xla.distributed.xla_backend` registers."""
    source = (
        "import torch.distributed as dist\n"
        "from torch_xla.distributed import xla_backend\n\n\n"
        "def init(use_gloo):\n"
        '    backend = "xla"\n'
        "    if use_gloo:\n"
        '        backend = "gloo"\n'
        "    dist.init_process_group(backend=backend)\n"
    )
    new = rewrite_source(source).new
    assert "\nfrom torch_xla.distributed import xla_backend\n" in new
    assert "TODO(neuron-migrate NM100)" in new
    assert rewrite_source(new).new == new
    # a backend assigned once is rewritten to 'neuron': nothing needs the import any more
    once = source.replace('    if use_gloo:\n        backend = "gloo"\n', "")
    assert "xla_backend" not in rewrite_source(once).new
