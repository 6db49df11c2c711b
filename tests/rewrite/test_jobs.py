"""`rewrite --jobs N`: a process pool gives the same results, in the same order, as one process."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from neuron_migrate.rewrite import rewriter
from neuron_migrate.rewrite.rewriter import rewrite_tree
from neuron_migrate.ruleset import load_ruleset
from tests.cli import invoke
from tests.rewrite.projects import FIXTURES, fixture_project


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = fixture_project(tmp_path / "project")
    for n in range(12):  # enough files for several tasks of a few files each
        shutil.copy(FIXTURES / "single_device.in.py", root / "pkg" / f"copy_{n}.py")
    (root / "plain.py").write_text("import torch\n\nprint(torch.ones(2))\n")
    return root


def _key(result):
    return (result.display, result.new, result.outcomes, result.error)


def test_pool_results_match_one_process_in_input_order(project):
    one = [_key(r) for r in rewrite_tree(project, jobs=1)]
    pooled = [_key(r) for r in rewrite_tree(project, jobs=3)]
    assert pooled == one
    assert len(one) == len(list(project.rglob("*.py")))
    assert any(r[3] is not None for r in one)  # the syntax error travels back as an error


def _exit_on_ddp(batch: list[rewriter.Job]):
    """Stands in for the worker function: the worker process dies on one file."""
    if any(job.display.endswith("ddp_spawn.py") for job in batch):
        os._exit(1)
    ruleset = load_ruleset()
    return [rewriter.rewrite_file(job.path, job.display, ruleset, unsafe=False) for job in batch]


def test_a_dead_worker_costs_nothing_but_time(project, monkeypatch):
    one = [_key(r) for r in rewrite_tree(project, jobs=1)]
    monkeypatch.setattr(rewriter, "_rewrite_in_worker", _exit_on_ddp)
    assert [_key(r) for r in rewrite_tree(project, jobs=2)] == one


def test_diffs_are_made_where_files_are_rewritten(project):
    results = list(rewrite_tree(project, jobs=2, diffs=True))
    changed = [r for r in results if r.changed]
    assert changed and all(r.patch is not None for r in changed)
    for result in changed:
        made_here = rewriter.FileRewrite(result.path, result.display, result.old, result.new)
        assert result.diff() == made_here.diff()
    assert all(r.patch is None for r in results if not r.changed)


def test_cli_output_does_not_depend_on_jobs(project):
    single = invoke(["rewrite", str(project), "--jobs", "1", "--no-cache"])
    pooled = invoke(["rewrite", str(project), "--jobs", "4", "--no-cache"])
    assert single.exit_code == pooled.exit_code == 0
    assert "+++ b/pkg/ddp_spawn.py" in single.stdout
    assert pooled.stdout == single.stdout
    assert pooled.stderr == single.stderr


def test_cli_json_does_not_depend_on_jobs(project):
    args = ["rewrite", str(project), "--format", "json", "--no-cache"]
    single = invoke([*args, "-j", "1"])
    pooled = invoke([*args, "-j", "2"])
    assert pooled.stdout == single.stdout


def test_apply_with_a_pool_writes_what_one_process_writes(project, tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(project, copy)
    invoke(["rewrite", str(project), "--apply", "-j", "1"])
    invoke(["rewrite", str(copy), "--apply", "-j", "3"])
    for path in project.rglob("*.py"):
        assert (copy / path.relative_to(project)).read_bytes() == path.read_bytes()
    assert "torch_xla" not in (copy / "pkg" / "single_device.py").read_text()


def test_jobs_below_one_is_a_usage_error(project):
    result = invoke(["rewrite", str(project), "--jobs", "0"])
    assert result.exit_code == 2
    assert "--jobs must be at least 1" in result.stderr
