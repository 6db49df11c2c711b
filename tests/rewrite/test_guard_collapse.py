"""A `try: import torch_xla... except ImportError:` whose torch_xla names nothing reads any more
collapses to the side the device runs: the import goes, a flag nothing reads goes, a flag still
read keeps the value the torch_xla side gave it; comments stay."""

from __future__ import annotations

import pytest

from neuron_migrate.rewrite.codemod.engine import rewrite_source

COLLAPSED = {
    "flag and name unread once the guards are resolved": (
        "import torch\n\ntry:\n    # optional: the script also trains on GPUs\n"
        "    import torch_xla.core.xla_model as xm\n\n    HAS_XLA = True\n"
        "except ImportError:\n    xm = None\n    HAS_XLA = False\n\n\n"
        "def sync():\n    if HAS_XLA:\n        xm.mark_step()\n",
        "import torch\n\n# optional: the script also trains on GPUs\n\n\ndef sync():\n    pass\n",
    ),
    "a flag still read keeps the torch_xla side's value": (
        "try:\n    import torch_xla.core.xla_model as xm\n    XLA_AVAILABLE = True\n"
        "except ImportError:\n    XLA_AVAILABLE = False\n\n\n"
        "def on_accelerator():\n    return XLA_AVAILABLE\n\n\n"
        "def sync():\n    if XLA_AVAILABLE:\n        xm.mark_step()\n",
        "XLA_AVAILABLE = True\n\n\ndef on_accelerator():\n    return XLA_AVAILABLE\n\n\n"
        "def sync():\n    pass\n",
    ),
    "a flag set in the else clause, a warning in the handler": (
        "import warnings\n\ntry:\n    import torch_xla\n"
        "except ModuleNotFoundError:\n    warnings.warn('no torch_xla: running on the CPU')\n"
        "    USE_XLA = False\nelse:\n    USE_XLA = True\n\n\n"
        "def device(t):\n    print(USE_XLA)\n    return t.to(torch_xla.device())\n",
        "import warnings\nimport torch\n\nUSE_XLA = True\n\n\n"
        'def device(t):\n    print(USE_XLA)\n    return t.to(torch.device("neuron"))\n',
    ),
    # a version-compat try: both sides become the same lambda, nothing can raise any more
    "a version-compat try catching AttributeError too": (
        "import torch_xla.core.xla_model as xm\n\ntry:\n    import torch_xla.runtime as xr\n\n"
        "    get_world = xr.world_size\nexcept (ImportError, AttributeError):\n"
        "    get_world = xm.xrt_world_size\n",
        "import os\nimport torch.distributed as dist\n\n"
        "get_world = lambda: dist.get_world_size() if dist.is_initialized() "
        'else int(os.environ.get("WORLD_SIZE", 1))\n',
    ),
    "inside a function": (
        "def sync():\n    try:\n        import torch_xla.core.xla_model as xm\n"
        "    except ImportError:\n        return\n    xm.mark_step()\n",
        "def sync():\n    pass\n",
    ),
}


@pytest.mark.parametrize("name", sorted(COLLAPSED))
def test_an_import_guard_nothing_reads_collapses_to_the_device_side(name):
    source, expected = COLLAPSED[name]
    done = rewrite_source(source)
    assert done.new == expected
    assert not [o for o in done.outcomes if o.code == "NM198"]
    assert rewrite_source(done.new).new == done.new


KEPT = {
    # `xm` is still tested by a test the guard pass leaves (combined with another)
    "a name still tested": (
        "try:\n    import torch_xla.core.xla_model as xm\nexcept ImportError:\n    xm = None\n\n\n"
        "def f(cuda):\n    if xm is not None and not cuda:\n        print('xla')\n"
    ),
    # the handler sets a name the torch_xla side does not, and code reads it
    "a name only the handler sets, still read": (
        "try:\n    import torch_xla.core.xla_model as xm\nexcept ImportError:\n"
        "    CPU_ONLY = True\n\n\ndef f():\n    return CPU_ONLY\n"
    ),
    # another import in the same try: its ImportError is caught too
    "another module imported in the try": (
        "try:\n    import torch_xla.core.xla_model as xm\n    import apex\n"
        "except ImportError:\n    apex = None\n\n\ndef f(opt):\n    return apex\n"
    ),
    # a finally clause runs either way
    "a finally clause": (
        "try:\n    import torch_xla.core.xla_model as xm\nexcept ImportError:\n    xm = None\n"
        "finally:\n    print('checked')\n"
    ),
}


@pytest.mark.parametrize("name", sorted(KEPT))
def test_an_import_guard_that_still_decides_something_stays_marked(name):
    new = rewrite_source(KEPT[name]).new
    assert "try:\n" in new and "NM198" in new
    assert rewrite_source(new).new == new
