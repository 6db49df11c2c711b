"""A converted spawn makes the process group its workers' XLA collectives reduce over, whatever
path the script's own init_process_group takes; a DDP wrap on some paths only keeps
xm.optimizer_step's all-reduce. The programs that show it run in tests/e2e (spawn_optional_ddp);
these pin the shapes."""

from __future__ import annotations

import ast

import pytest

from neuron_migrate.rewrite.codemod.engine import rewrite_source
from neuron_migrate.rewrite.codemod.wrapped import wraps_on_some_paths_only

HEAD = (
    "import torch.distributed as dist\n"
    "import torch_xla.core.xla_model as xm\n"
    "import torch_xla.distributed.xla_multiprocessing as xmp\n\n\n"
)
ENTRY = "\n\nif __name__ == '__main__':\n    xmp.spawn(_mp_fn, args=(False,))\n"
MADE = 'dist.init_process_group("neuron", store=dist.HashStore(), rank=0, world_size=1)'


def migrated(source: str) -> str:
    new = rewrite_source(source).new
    ast.parse(new)
    assert rewrite_source(new).new == new  # a second run changes nothing
    return new


@pytest.mark.parametrize(
    "worker",
    [
        # under a flag
        "def _mp_fn(index, ddp):\n    if ddp:\n        dist.init_process_group('xla')\n"
        "    xm.rendezvous('go')\n",
        # in a helper function
        "def setup():\n    dist.init_process_group('xla', init_method='xla://')\n\n\n"
        "def _mp_fn(index, ddp):\n    if ddp:\n        setup()\n    xm.rendezvous('go')\n",
        # only for more than one device, over another backend
        "def _mp_fn(index, ddp):\n    if xm.xrt_world_size() > 1:\n"
        "        dist.init_process_group('gloo')\n    xm.rendezvous('go')\n",
        # on a one-line `if`, with a comment
        "def _mp_fn(index, ddp):\n    if ddp: dist.init_process_group('xla')  # for DDP\n"
        "    xm.rendezvous('go')\n",
        # unconditional
        "def _mp_fn(index, ddp):\n    dist.init_process_group('xla')\n    xm.rendezvous('go')\n",
    ],
)
def test_the_launch_makes_the_group_and_own_inits_join_it(worker: str) -> None:
    new = migrated(HEAD + worker + ENTRY)
    assert MADE in new
    tree = ast.parse(new)
    inits = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.If)
        and ast.unparse(node.test) == "not dist.is_initialized()"
        and "init_process_group" in ast.unparse(node.body[0])
    ]
    own = new.count("init_process_group(") - 2  # the two the launch made
    assert own == 1 and len(inits) == 1, new


def test_a_one_line_if_keeps_its_comment_on_its_header() -> None:
    worker = (
        "def _mp_fn(index, ddp):\n    if ddp: dist.init_process_group('xla')  # for DDP\n"
        "    xm.rendezvous('go')\n"
    )
    new = migrated(HEAD + worker + ENTRY)
    assert "    if ddp:  # for DDP\n        if not dist.is_initialized():\n" in new


def test_a_worker_without_collectives_gets_no_group() -> None:
    worker = "def _mp_fn(index, ddp):\n    if ddp:\n        dist.init_process_group('xla')\n"
    new = migrated(HEAD + worker + ENTRY)
    assert MADE not in new and "is_initialized" not in new


def _some_paths_only(source: str) -> bool:
    from neuron_migrate.scan.analyzer.sites import find_sites

    tree = ast.parse(source)
    sites = find_sites(source, tree)
    calls = {s.call_span: s.qualname for s in sites if s.call_span and s.qualname}
    return wraps_on_some_paths_only(tree, calls)


DDP = "from torch.nn.parallel import DistributedDataParallel as DDP\nimport torch_xla\n\n"


@pytest.mark.parametrize(
    ("body", "some_paths_only"),
    [
        ("def f(m):\n    return DDP(m)\n", False),
        ("def f(m):\n    with ctx():\n        m = DDP(m)\n", False),
        ("def f(m):\n    try:\n        m = DDP(m)\n    finally:\n        pass\n", False),
        ("if __name__ == '__main__':\n    model = DDP(model)\n", False),
        ("if flag:\n    def f(m):\n        return DDP(m)\n", False),
        ("def f(m, ddp):\n    if ddp:\n        m = DDP(m)\n", True),
        ("def f(m, ddp):\n    return DDP(m) if ddp else m\n", True),
        ("def f(ms):\n    for m in ms:\n        DDP(m)\n", True),
        ("def f(m):\n    try:\n        pass\n    except E:\n        m = DDP(m)\n", True),
        ("def f(m):\n    return m\n", False),
    ],
)
def test_a_wrap_on_some_paths_only(body: str, some_paths_only: bool) -> None:
    assert _some_paths_only(DDP + body) is some_paths_only
