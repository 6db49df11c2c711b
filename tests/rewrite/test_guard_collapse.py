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


SAME_ARMS = {
    "torch_xla.launch, or xmp.spawn on an older torch_xla": (
        "import torch_xla\n\n\ndef _mp_fn(index):\n    print(index)\n\n\n"
        'if __name__ == "__main__":\n    try:\n        torch_xla.launch(_mp_fn, args=())\n'
        "    except AttributeError:\n"
        "        import torch_xla.distributed.xla_multiprocessing as xmp\n\n"
        "        xmp.spawn(_mp_fn, args=())\n",
        '_mp_fn(int(os.environ.get("LOCAL_RANK", 0)))\n',
    ),
    "the import inside the try, the handler a tuple of API errors": (
        "def _mp_fn(index):\n    print(index)\n\n\n"
        'if __name__ == "__main__":\n    try:\n        import torch_xla\n'
        "        torch_xla.launch(_mp_fn, args=())\n"
        "    except (ImportError, AttributeError):\n"
        "        import torch_xla.distributed.xla_multiprocessing as xmp\n"
        "        xmp.spawn(_mp_fn, args=())\n",
        '_mp_fn(int(os.environ.get("LOCAL_RANK", 0)))\n',
    ),
}


@pytest.mark.parametrize("name", sorted(SAME_ARMS))
def test_a_version_compat_try_whose_sides_became_the_same_code_is_its_try_side(name):
    source, last_line = SAME_ARMS[name]
    done = rewrite_source(source)
    assert "try:" not in done.new and "except" not in done.new
    assert "torch_xla" not in done.new.replace("(neuron-migrate", "")
    assert done.new.endswith("    " + last_line)
    assert done.new.count(last_line) == 1
    assert rewrite_source(done.new).new == done.new


KEPT_TRIES = {
    # a retry: the same call again is what the program means
    "a retry on another error": (
        "import torch_xla.core.xla_model as xm\n\n\ndef step():\n    try:\n"
        "        xm.mark_step()\n        run()\n    except RuntimeError:\n"
        "        xm.mark_step()\n        run()\n"
    ),
    "sides that still differ": (
        "import torch_xla\n\n\ndef _mp_fn(index):\n    print(index)\n\n\ntry:\n"
        "    torch_xla.launch(_mp_fn, args=())\nexcept AttributeError:\n    _mp_fn(0)\n"
    ),
}


@pytest.mark.parametrize("name", sorted(KEPT_TRIES))
def test_a_try_whose_sides_differ_or_that_retries_stays(name):
    done = rewrite_source(KEPT_TRIES[name])
    assert "try:" in done.new and "except" in done.new


def test_an_import_in_a_function_is_kept_only_by_what_that_function_reads():
    # `_mp_fn` imports torch_xla for its own use, all rewritten; `notebook` imports it again and
    # keeps a marked internal call: only `notebook`'s import stays, and the module's goes
    source = (
        "import torch_xla\n\n\ndef _mp_fn(index):\n    import torch_xla\n"
        "    import torch_xla.core.xla_model as xm\n\n    print(xm.xla_device())\n\n\n"
        "def notebook():\n    import torch_xla\n\n"
        "    if torch_xla._XLAC._xla_runtime_is_initialized():\n        return\n\n\n"
        "def devices():\n    return torch_xla.device()\n"
    )
    done = rewrite_source(source)
    lines = done.new.splitlines()
    kept = [i for i, line in enumerate(lines) if line.strip() == "import torch_xla"]
    assert len(kept) == 1
    # in the `try` that binds a stand-in where torch_xla is missing, the marker above it
    assert lines[kept[0] - 1].strip() == "try:"
    assert lines[kept[0] - 2].strip().startswith("# TODO(neuron-migrate NM100)")
    assert lines.index("def notebook():") < kept[0]
    assert rewrite_source(done.new).new == done.new


def test_a_closure_reads_the_import_of_the_function_around_it():
    source = (
        "def outer():\n    import torch_xla\n\n    def inner():\n"
        "        return torch_xla._XLAC._xla_runtime_is_initialized()\n\n    return inner\n"
    )
    done = rewrite_source(source)
    assert "    import torch_xla\n" in done.new
