"""Namespaces the matrix refuses as a whole meet neuron tensors at their entry points:
`torch.func`'s transforms, and `torch.vmap`, which is `torch.func.vmap` under another name."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.torch
pytest.importorskip("torch")

VMAP = """
import torch
from neuron_sim.errors import NeuronUnsupportedOpError

x = torch.randn(3, 4, device="neuron")
for transform in (torch.vmap, torch.func.vmap):
    try:
        transform(torch.sum)(x)  # line 8
    except NeuronUnsupportedOpError as error:
        assert "script.py:8" in str(error), error
        assert "torch.func" in str(error), error
    else:
        raise AssertionError(f"{transform} ran on neuron tensors")
# The same code on host tensors is the user's business.
assert torch.vmap(torch.sum)(torch.ones(3, 4)).tolist() == [4.0, 4.0, 4.0]
print("VMAP_OK")
"""


def test_torch_vmap_is_refused_like_torch_func_vmap(sim_run) -> None:
    from neuron_migrate.matrix import load_matrix

    rule = load_matrix().namespace_status("torch.vmap")
    assert rule is not None and rule.status == "unsupported"  # the matrix's word, read here
    run = sim_run(VMAP)
    run.assert_finished("VMAP_OK")
    refused = [r["op"] for r in run.trace["refusals"]]
    assert refused == ["torch.vmap", "torch.func.vmap"], refused
