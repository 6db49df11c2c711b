"""A torch_xla import kept only for sites left for a person binds a stand-in where torch_xla is
missing: the module starts, and a site that runs raises naming its rule and advice. A later run
writes the stand-in again for what is still left, and drops it, and its class, once nothing is."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from neuron_migrate.rewrite.codemod.engine import rewrite_source
from neuron_migrate.ruleset import load_ruleset
from tests.rewrite.no_torch_xla import without_torch_xla

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "rewrite" / "left_sites"


def _started(source: str) -> dict:
    namespace: dict = {"__name__": "migrated"}
    with without_torch_xla():
        exec(compile(source, "migrated.py", "exec"), namespace)
    return namespace


pytest.importorskip("torch")


def _raises(code: str):
    advice = load_ruleset().get(code).manual
    return pytest.raises(NotImplementedError, match=re.escape(f"neuron-migrate {code}: {advice}"))


def test_each_site_raises_its_own_rule_only_when_it_runs():
    new = rewrite_source(FIXTURE.with_suffix(".in.py").read_text()).new
    module = _started(new)  # the module's own code ran
    assert module["LAYERS"] == 2
    with _raises("NM116"):
        module["report"]("neuron")  # memory(device): the name itself, called
    with _raises("NM501"):
        module["step"](None)  # xm.optimizer_step: the attribute read
    with _raises("NM503"):
        module["checkpoint"]({}, "x.pt")  # an import in a function, stood in there


def test_a_site_done_by_a_person_drops_its_stand_in_and_the_last_drops_the_class():
    new = rewrite_source(FIXTURE.with_suffix(".in.py").read_text()).new
    assert rewrite_source(new).new == new
    # the optimizer step done by hand: `xm` is read by nothing left
    step = "    xm.optimizer_step(optimizer, **optimizer.defaults)\n"
    assert step in new
    done = new.replace(step, "    optimizer.step()\n")
    again = rewrite_source(done).new
    assert "import torch_xla.core.xla_model as xm" not in again
    assert "xm = NotMigrated" not in again and "class NotMigrated" in again
    _started(again)
    # every site done: no torch_xla, no stand-in, no class
    rest = again
    for marked, done_by_hand in (
        ('print("memory", memory(device))', 'print("memory", torch.neuron.memory_allocated())'),
        ("print(torch_xla._XLAC._get_xla_tensors_text([]))", "pass"),
        ("xser.save(state, path)", "torch.save(state, path)"),
    ):
        assert marked in rest
        rest = rest.replace(marked, done_by_hand)
    rest = "\n".join(line for line in rest.splitlines() if "# TODO(neuron-migrate" not in line)
    last = rewrite_source(rest + "\n").new
    assert "import torch_xla" not in last and "NotMigrated" not in last, last
    assert rewrite_source(last).new == last


def test_a_rewrite_of_one_line_adds_no_stand_in_and_keeps_those_it_finds():
    """An editor's quick fix migrates one line's sites: what the other lines still need of
    torch_xla is not its to judge, and the stand-ins an earlier run wrote stay as they are."""
    source = FIXTURE.with_suffix(".in.py").read_text()
    line = source.splitlines().index("    xm.mark_step()") + 1
    fixed = rewrite_source(source, line=line).new
    assert "NotMigrated" not in fixed and "    xm.mark_step()" not in fixed
    migrated = rewrite_source(source).new
    at = migrated.splitlines().index("    xm.optimizer_step(optimizer, **optimizer.defaults)") + 1
    assert rewrite_source(migrated, line=at).new == migrated
