"""Availability guards around migrated torch_xla code take their torch_xla branch; any other
test of the name stays as it was (fixtures/rewrite/availability_guards.* holds a whole script)."""

from __future__ import annotations

import ast

import pytest

from neuron_migrate.rewrite.codemod.engine import rewrite_source

TRY_XLA = (
    "import torch\n\ntry:\n    import torch_xla\n    import torch_xla.core.xla_model as xm\n"
    "except ImportError:\n    torch_xla = None\n\n"
)

RESOLVED = {
    "module level, with an else": (
        TRY_XLA + "if torch_xla is not None:\n    device = xm.xla_device()\n"
        "else:\n    device = torch.device('cuda')\nprint(device)\n",
        '\ndevice = torch.device("neuron")\nprint(device)\n',
    ),
    "a negative guard that raises": (
        TRY_XLA + "def main():\n    if xm is None:\n        raise RuntimeError('needs torch_xla')\n"
        "    return xm.xla_device()\n",
        '\ndef main():\n    return torch.device("neuron")\n',
    ),
    "a guard left with nothing in it": (
        TRY_XLA + "def sync():\n    if xm:\n        xm.mark_step()\n",
        "\ndef sync():\n    pass\n",
    ),
    # the other devices' fallbacks after the torch_xla branch's return can no longer run
    "a return, then fallbacks": (
        TRY_XLA + "def pick():\n    # the accelerator first\n    if xm is not None:\n"
        "        return xm.xla_device()\n    if torch.cuda.is_available():\n"
        "        return torch.device('cuda')\n    return torch.device('cpu')\n",
        '\ndef pick():\n    # the accelerator first\n    return torch.device("neuron")\n',
    ),
    # a one-line guard, then a loop body's rest
    "a continue in a loop": (
        TRY_XLA + "def run(batches):\n    for b in batches:\n"
        "        if xm: xm.mark_step(); continue\n        print(b)\n    return 0\n",
        "\ndef run(batches):\n    for b in batches:\n        continue\n    return 0\n",
    ),
    # the head of an elif chain asks: its branch is taken, the chain's other questions go
    "a chain headed by a guard": (
        TRY_XLA + "def world():\n    if xm is not None:\n        size = xm.xrt_world_size()\n"
        "    elif torch.distributed.is_initialized():\n"
        "        size = torch.distributed.get_world_size()\n    else:\n        size = 1\n"
        "    return max(1, size)\n",
        "\ndef world():\n    size = dist.get_world_size() if dist.is_initialized() "
        'else int(os.environ.get("WORLD_SIZE", 1))\n    return max(1, size)\n',
    ),
    # guards through a function that asks whether torch_xla is there
    # diffusers' pipelines: a flag set by the library's check, tested in the loop
    "diffusers.utils.is_torch_xla_available and its flag": (
        "from diffusers.utils import is_torch_xla_available, logging\n\n"
        "if is_torch_xla_available():\n    import torch_xla.core.xla_model as xm\n\n"
        "    XLA_AVAILABLE = True\nelse:\n    XLA_AVAILABLE = False\n\n"
        "logger = logging.get_logger(__name__)\n\n\n"
        "def denoise(latents, steps):\n    for t in range(steps):\n"
        "        latents = latents * 0.9\n        if XLA_AVAILABLE:\n            xm.mark_step()\n"
        "    return latents\n\n\ndef on_xla():\n    return XLA_AVAILABLE\n",
        "from diffusers.utils import logging\n\nXLA_AVAILABLE = True\n\n"
        "logger = logging.get_logger(__name__)\n\n\n"
        "def denoise(latents, steps):\n    for t in range(steps):\n"
        "        latents = latents * 0.9\n    return latents\n\n\n"
        "def on_xla():\n    return XLA_AVAILABLE\n",
    ),
    # transformers' check, imported with another name the file still uses
    "transformers.utils.is_torch_xla_available": (
        "from transformers.utils import is_torch_xla_available, logging\n\n"
        "if is_torch_xla_available():\n    import torch_xla.core.xla_model as xm\n\n"
        "logger = logging.get_logger(__name__)\n\n\n"
        "def sync():\n    if is_torch_xla_available():\n        xm.mark_step()\n",
        "from transformers.utils import logging\n\n"
        "logger = logging.get_logger(__name__)\n\n\ndef sync():\n    pass\n",
    ),
    # the older name, with its keyword
    "transformers.is_torch_tpu_available(check_device=False)": (
        "import torch\nfrom transformers import is_torch_tpu_available\n\n"
        "if is_torch_tpu_available(check_device=False):\n"
        "    import torch_xla.core.xla_model as xm\n\n\n"
        "def device():\n    if not is_torch_tpu_available(check_device=False):\n"
        "        return torch.device('cpu')\n    return xm.xla_device()\n",
        'import torch\n\n\ndef device():\n    return torch.device("neuron")\n',
    ),
    # a function of the file's own that tries the import
    "a local _xla_available()": (
        "import torch\n\n\ndef _xla_available():\n    try:\n"
        "        import torch_xla  # noqa: F401\n"
        "    except ImportError:\n        return False\n    return True\n\n\n"
        "def device():\n    if _xla_available():\n        import torch_xla.core.xla_model as xm\n\n"
        "        return xm.xla_device()\n    return torch.device('cpu')\n",
        'import torch\n\n\ndef device():\n    return torch.device("neuron")\n',
    ),
}


@pytest.mark.parametrize("name", sorted(RESOLVED))
def test_guard_around_migrated_code_takes_the_torch_xla_branch(name):
    source, tail = RESOLVED[name]
    new = rewrite_source(source).new
    assert new.endswith(tail), new
    assert rewrite_source(new).new == new


KEPT = {
    # `xm` is the function's own parameter here, not the module
    "a parameter of the same name": (
        "import torch\nimport torch_xla\nimport torch_xla.core.xla_model as xm\n\n\n"
        "def f(xm, t):\n    t = t.to(torch_xla.device())\n    if xm is not None:\n"
        "        return t\n    return None\n\n\ndef g():\n    return xm.xla_device()\n",
        "    if xm is not None:\n        return t\n",
    ),
    # an `elif` asks more than one question
    "an elif": (
        TRY_XLA + "def pick(n):\n    if xm.xrt_world_size() > n:\n        return None\n"
        "    elif xm is not None:\n        return xm.xla_device()\n"
        "    return torch.device('cpu')\n",
        "    elif xm is not None:\n",
    ),
    # a test combined with another one
    "a combined test": (
        TRY_XLA + "def pick(cuda):\n    if xm is not None and not cuda:\n"
        "        return xm.xla_device()\n    return None\n",
        "    if xm is not None and not cuda:\n",
    ),
    # what a returning branch would leave unreachable holds a site left for a person: dropping
    # it would drop its marker
    "a marker after a returning branch": (
        TRY_XLA + "def pick(t):\n    if xm is not None:\n        return xm.xla_device()\n"
        "    xm.optimizer_step(t, **t.defaults)\n    return None\n",
        "    if xm is not None:\n",
    ),
}


@pytest.mark.parametrize("name", sorted(KEPT))
def test_other_tests_of_the_name_stay(name):
    source, kept = KEPT[name]
    new = rewrite_source(source).new
    ast.parse(new)
    assert kept in new
    assert rewrite_source(new).new == new


def test_a_comment_on_the_guards_line_keeps_the_guard():
    source = TRY_XLA + "def sync():\n    if xm is not None:  # TPU only\n        xm.mark_step()\n"
    assert "    if xm is not None:  # TPU only\n" in rewrite_source(source).new


# What a taken branch holds, each statement spanning several lines: lifted one block out, every
# line of it moves (a nested block's own lines included), and a string's text stays as it was.
NESTED_BODY = (
    "xm.mark_step()\n"
    "if args.log:\n"
    "    print('logged',\n"
    "          loss.item())\n"
    "    if args.verbose:\n"
    "        print('more')\n"
    "for k in range(3):\n"
    "    if k:\n"
    '        note = """a\n'
    'b"""\n'
    "# a comment of the block\n"
    "total = (1 +\n"
    "         2)\n"
    "with torch.no_grad():\n"
    "    try:\n"
    "        if args.strict:\n"
    "            raise ValueError(\n"
    "                'strict'\n"
    "            )\n"
    "    except ValueError:\n"
    "        pass\n"
)
NESTED_GUARDS = {
    # transformers' predicate, as neuronx-distributed-training's trainers call it
    "is_torch_tpu_available()": (
        "import torch\nfrom transformers.utils import is_torch_tpu_available\n\n"
        "if is_torch_tpu_available():\n    import torch_xla.core.xla_model as xm\n\n\n"
        "def step(loss, args):\n    if is_torch_tpu_available():\n{body}    return loss\n"
    ),
    # the flag a torch_xla try-import sets, as NeMo-Megatron ports test it
    "a try-import flag": (
        "import torch\n\ntry:\n    import torch_xla.core.xla_model as xm\n\n"
        "    HAVE_XLA = True\nexcept (ImportError, ModuleNotFoundError):\n"
        "    HAVE_XLA = False\n\n\n"
        "def step(loss, args):\n    if HAVE_XLA:\n{body}    else:\n"
        "        torch.cuda.synchronize()\n    return loss\n"
    ),
}


@pytest.mark.parametrize("name", sorted(NESTED_GUARDS))
def test_a_taken_branch_moves_every_line_of_its_nested_blocks(name):
    indented = "".join(
        "        " + line if line.strip() and line != 'b"""\n' else line
        for line in NESTED_BODY.splitlines(keepends=True)
    )
    new = rewrite_source(NESTED_GUARDS[name].format(body=indented)).new
    ast.parse(new)
    lifted = "".join(
        "    " + line if line.strip() and line != 'b"""\n' else line
        for line in NESTED_BODY.splitlines(keepends=True)[1:]
    )
    assert new.endswith("def step(loss, args):\n" + lifted + "    return loss\n"), new
