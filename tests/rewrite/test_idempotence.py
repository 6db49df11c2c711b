"""A second `rewrite --apply` changes nothing: over the smallest cases that once broke it, and
over a copy of the whole fixtures/ tree."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from neuron_migrate.rewrite.codemod.engine import rewrite_source
from neuron_migrate.ruleset import load_ruleset
from tests.cli import invoke

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"

CASES = {
    # the launched function is itself a torch_xla function, left for a person
    "launch of a torch_xla function": (
        "import torch_xla\nimport torch_xla.core.xla_model as xm\n\n"
        'if __name__ == "__main__":\n    torch_xla.launch(xm.xla_device)\n'
    ),
    # the marker of a variable read in the call that becomes an `if`
    "marker above a made if": (
        "import os\nimport torch_xla.core.xla_model as xm\n\n\ndef f(m):\n"
        "    xm.save(m, os.environ['XLA_FLAGS'])\n"
    ),
    # the backend import is kept for a process group left for a person
    "xla_backend import kept": (
        "import torch.distributed as dist\nimport torch_xla.core.xla_model as xm\n"
        "import torch_xla.distributed.xla_backend\n\n\ndef main(flag):\n"
        "    dist.init_process_group(flag and 'xla')\n"
        "    xm.master_print(f\"{xm.get_xla_supported_devices('TPU')}\")\n"
    ),
    # a printer passed to a step closure: the closure's call and the printer, in one run
    "test_utils printer in a step closure": (
        "import torch_xla.core.xla_model as xm\nimport torch_xla.test.test_utils as test_utils\n"
        "\n\ndef report(device, step, accuracy):\n"
        "    xm.add_step_closure(test_utils.print_test_update, args=(device, accuracy, 1, step))\n"
    ),
    # one device string that is the process group's backend too: its rewrite serves both
    "a device string as the backend": (
        "import torch.distributed as dist\nimport torch_xla.distributed.parallel_loader as pl\n"
        "import torch_xla.distributed.xla_backend\n\n\ndef main(loader):\n"
        "    device = 'xla'\n    dist.init_process_group(device)\n"
        "    return pl.MpDeviceLoader(loader, device)\n"
    ),
    # a parameter's default: callers may pass anything, so the group is marked and the
    # backend import it may need is kept, by the next run too (the default is "neuron" then)
    "a backend import kept for a device parameter": (
        "import torch.distributed as dist\nimport torch_xla.distributed.parallel_loader as pl\n"
        "import torch_xla.distributed.xla_backend  # noqa: F401\n\n\n"
        "def main(loader, device='xla'):\n    dist.init_process_group(device)\n"
        "    return pl.MpDeviceLoader(loader, device)\n"
    ),
    # indented by two spaces (pytorch/xla's style): the helpers and the stand-in class are
    # written so, and the next run knows them as its own
    "two-space indentation, a helper and a kept import": (
        "import torch\nimport torch_xla.core.xla_model as xm\n\n\ndef train(model, opt):\n"
        "  if model.training:\n    print(xm.get_memory_info(model))\n  xm.optimizer_step(opt)\n"
    ),
}


def test_a_printer_given_to_a_step_closure_becomes_the_helper_in_one_run():
    new = rewrite_source(CASES["test_utils printer in a step closure"]).new
    assert "    neuron_print_test_update(device, accuracy, 1, step)\n" in new
    assert "torch_xla" not in new and "TODO" not in new


def test_a_device_string_that_is_the_backend_is_one_site_rewritten_once():
    result = rewrite_source(CASES["a device string as the backend"])
    assert "    device = 'neuron'\n    dist.init_process_group(device)\n" in result.new
    assert "torch_xla" not in result.new and "TODO" not in result.new
    assert {(o.code, o.status) for o in result.outcomes} == {
        ("NM405", "rewritten"),
        ("NM402", "rewritten"),
    }


@pytest.mark.parametrize("name", sorted(CASES))
def test_second_run_changes_nothing(name):
    once = rewrite_source(CASES[name]).new
    assert rewrite_source(once).new == once


def _snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*.py*"))}


def test_apply_twice_over_the_whole_fixtures_tree_changes_nothing_the_second_time(tmp_path):
    tree = tmp_path / "fixtures"
    shutil.copytree(FIXTURES, tree)
    first = invoke(["rewrite", "--no-cache", "--jobs", "1", "--apply", str(tree)])
    assert first.exit_code == 0, first.stderr
    after_first = _snapshot(tree)
    second = invoke(["rewrite", "--no-cache", "--jobs", "1", "--apply", str(tree)])
    assert second.exit_code == 0, second.stderr
    changed = [p for p, data in _snapshot(tree).items() if after_first[p] != data]
    assert changed == []
    assert second.stderr.startswith("0 of ")


@pytest.mark.parametrize("first", [True, False])
def test_an_import_deleted_on_a_later_run_takes_its_own_marker_with_it(first):
    """The code an NM100 marker spoke of was migrated by hand, the marker left: the import
    goes on the next run, and its marker with it (a person's own comment above it stays)."""
    marker = load_ruleset().get("NM100").marker()
    head = "" if first else "import torch\n"
    source = (
        head + "# the XLA model helpers\n" + marker + "\n"
        "import torch_xla.core.xla_model as xm\n\n\ndef f(opt):\n    opt.step()\n"
    )
    new = rewrite_source(source).new
    assert "NM100" not in new and "torch_xla" not in new
    assert "# the XLA model helpers" in new
