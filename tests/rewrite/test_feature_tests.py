"""A test of the torch_xla version (`hasattr(torch_xla, "launch")`) takes its first, newer arm
once that arm reads no torch_xla name; otherwise it stays, and the module it reads keeps a
marker."""

from __future__ import annotations

from neuron_migrate.rewrite.codemod.engine import rewrite_source


def test_a_feature_test_whose_newer_arm_still_reads_torch_xla_stays():
    source = (
        "import torch_xla\nimport torch_xla.core.xla_model as xm\n\n\n"
        "def flush():\n    if hasattr(torch_xla, 'step'):\n        torch_xla.step().__enter__()\n"
        "    else:\n        xm.mark_step()\n"
    )
    new = rewrite_source(source).new
    assert "if hasattr(torch_xla, 'step'):" in new
    assert "import torch_xla\n" in new and "TODO(neuron-migrate" in new
    assert rewrite_source(new).new == new


def test_a_feature_test_kept_as_a_value_is_still_a_torch_xla_use():
    source = "import torch_xla\n\nNEW_API = hasattr(torch_xla, 'launch')\n"
    new = rewrite_source(source).new
    assert "NEW_API = hasattr(torch_xla, 'launch')" in new
    assert "NM199" in new


def test_an_expression_feature_test_keeps_its_parentheses():
    source = (
        "import torch_xla\nimport torch_xla.core.xla_model as xm\n\n"
        "DEVICE = (torch_xla.device() if hasattr(torch_xla, 'device') else xm.xla_device())\n"
    )
    new = rewrite_source(source).new
    assert new == 'import torch\n\nDEVICE = (torch.device("neuron"))\n'


def test_a_name_only_in_a_comment_of_the_branch_reads_nothing():
    source = (
        "import torch_xla.core.xla_model as xm\n\ntry:\n    import torch_xla\n"
        "except ImportError:\n    torch_xla = None\n\n\ndef main(fn):\n"
        "    if torch_xla is not None:\n        # the launcher that replaced xm's spawn\n"
        "        fn()\n"
    )
    assert (
        rewrite_source(source).new
        == "def main(fn):\n    # the launcher that replaced xm's spawn\n    fn()\n"
    )
