"""What the rewrite says it did: every marker counted, every file that still needs torch_xla
named with what holds it, and a re-run over migrated code that says so."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from neuron_migrate.rewrite.codemod.engine import rewrite_source
from neuron_migrate.ruleset import load_ruleset
from tests.cli import invoke
from tests.rewrite.no_torch_xla import without_torch_xla

# A star import is left for a person: it stays as it is, and stops the program at start where
# torch_xla is missing.
HELD = "import torch\nfrom torch_xla.core.xla_model import *\n\ndef step(opt):\n    mark_step()\n"
# xm.optimizer_step with arguments unpacked is left for a person: its import stays, with an NM100
# marker, and binds `xm` to a stand-in where torch_xla is missing.
STOOD_IN = (
    "import torch\n"
    "import torch_xla.core.xla_model as xm\n\n"
    "def step(opt):\n"
    "    xm.optimizer_step(opt, **opt.defaults)\n"
    "    xm.mark_step()\n"
)
# An availability guard still tested, with another test, and no torch_xla API read any more: an
# NM198 marker; the file runs without torch_xla.
GUARDED = (
    "try:\n"
    "    import torch_xla.core.xla_model as xm\n"
    "except ImportError:\n"
    "    xm = None\n\n"
    "def step(cuda):\n"
    "    if xm is not None and not cuda:\n"
    "        xm.mark_step()\n"
)
DONE = "import torch_xla.core.xla_model as xm\n\ndevice = xm.xla_device()\n"


def _tree(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "held.py").write_text(HELD)
    (root / "guarded.py").write_text(GUARDED)
    (root / "done.py").write_text(DONE)
    (root / "stood_in.py").write_text(STOOD_IN)
    return root


def test_import_markers_are_counted_as_marked():
    outcomes = rewrite_source(STOOD_IN).outcomes
    assert ("NM100", 2, "marked") in {(o.code, o.line, o.status) for o in outcomes}
    guarded = rewrite_source(GUARDED).outcomes
    assert ("NM198", 2, "marked") in {(o.code, o.line, o.status) for o in guarded}


def test_a_file_that_still_imports_torch_xla_is_named_with_what_holds_it(tmp_path):
    root = _tree(tmp_path)
    result = invoke(["rewrite", "--no-cache", str(root), "--format", "json"])
    report = json.loads(result.stdout)
    files = {f["path"]: f for f in report["files"]}
    assert files["held.py"]["runs_without_torch_xla"] is False
    assert files["held.py"]["torch_xla_held_by"] == [{"code": "NM197", "line": 2}]
    assert files["guarded.py"]["runs_without_torch_xla"] is True
    assert files["done.py"]["runs_without_torch_xla"] is True
    assert files["stood_in.py"]["runs_without_torch_xla"] is True
    assert report["summary"]["need_torch_xla"] == ["held.py"]
    assert report["summary"]["stop_at_start"] == 1
    assert report["summary"]["conversion_percent"] < 100
    assert "will not run without torch_xla" in result.stderr
    assert "held.py" in result.stderr and "NM197 (line 2)" in result.stderr


def test_a_site_whose_import_a_stand_in_holds_raises_if_reached(tmp_path):
    """Where torch_xla is missing, the file migrated with a site left for a person imports and
    runs up to that site, which raises naming its rule and advice; the report counts the site
    as left for a person, and as one that raises if reached."""
    root = _tree(tmp_path)
    result = invoke(["rewrite", "--no-cache", str(root), "--format", "json"])
    report = json.loads(result.stdout)
    files = {f["path"]: f for f in report["files"]}
    assert files["stood_in.py"]["raise_if_reached"] == [{"code": "NM501", "line": 5}]
    assert files["stood_in.py"]["torch_xla_held_by"] == []
    assert {
        "code": "NM501",
        "line": 5,
        "api": "torch_xla.core.xla_model.optimizer_step",
        "status": "marked",
    } in files["stood_in.py"]["sites"]
    assert report["summary"]["raise_if_reached"] == 1
    assert "1 raise NotImplementedError if reached" in " ".join(result.stderr.split())

    new = rewrite_source(STOOD_IN).new
    namespace: dict = {}
    with without_torch_xla():
        exec(compile(new, "stood_in.py", "exec"), namespace)  # the program starts
    advice = load_ruleset().get("NM501").manual
    with pytest.raises(NotImplementedError, match=re.escape(f"neuron-migrate NM501: {advice}")):
        namespace["step"](None)
    assert rewrite_source(new).new == new


def test_a_second_run_over_migrated_code_says_nothing_is_left_to_rewrite(tmp_path):
    root = _tree(tmp_path)
    first = invoke(["rewrite", "--no-cache", "--apply", str(root)])
    assert first.exit_code == 0
    second = invoke(["rewrite", "--no-cache", str(root), "--format", "json"])
    assert "0% converted" not in second.stderr
    assert "nothing left to rewrite" in second.stderr
    summary = json.loads(second.stdout)["summary"]
    assert summary["files_changed"] == 0
    assert summary["already_marked"] == summary["left_for_person"] > 0


SPAWN_FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "rewrite" / "spawn_rendezvous"


def test_a_marker_whose_site_an_earlier_run_removed_is_still_counted():
    """The spawn is converted on the first run; a conditional MASTER_ADDR setting keeps its
    NM411 marker, but without the spawn no site is found there any more: the marker itself
    is the site left for a person, on every later run."""
    first = rewrite_source(SPAWN_FIXTURE.with_suffix(".in.py").read_text())
    again = rewrite_source(first.new)
    assert again.new == first.new
    marked = [(o.code, o.status) for o in first.outcomes if o.status != "rewritten"]
    assert marked == [("NM411", "marked")]
    assert [(o.code, o.line, o.status) for o in again.outcomes] == [("NM411", 37, "marked")]


def test_a_rerun_counts_every_marker_left(tmp_path):
    root = tmp_path / "project"
    root.mkdir()
    (root / "launch.py").write_text(SPAWN_FIXTURE.with_suffix(".in.py").read_text())
    first = json.loads(
        invoke(["rewrite", "--no-cache", "--apply", str(root), "--format", "json"]).stdout
    )
    second = json.loads(invoke(["rewrite", "--no-cache", str(root), "--format", "json"]).stdout)
    assert first["summary"]["left_for_person"] == 1
    assert second["summary"]["left_for_person"] == second["summary"]["already_marked"] == 1
