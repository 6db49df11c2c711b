"""The plain path needs no speed machinery: with `neuron_migrate.incremental` made unimportable,
`scan --no-cache` and `rewrite --no-cache` over the sample projects print what they print with
it, and exit as they do."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from neuron_migrate.resources import sample_projects_dir

# The command run in this process (`main(argv)`: what the console entry runs when no server
# was started, and what a server's child runs), in an interpreter where importing the speed
# subpackage fails.
_BLOCKED_RUN = """
import importlib.abc, sys

class Blocked(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "neuron_migrate.incremental" or name.startswith("neuron_migrate.incremental."):
            raise ImportError(f"{name} is blocked: the plain path must not need it")
        return None

if sys.argv[1] == "blocked":
    sys.meta_path.insert(0, Blocked())
from neuron_migrate.cli import main
main(sys.argv[2:])
"""


def _run(mode: str, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", _BLOCKED_RUN, mode, *args],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=cwd,
    )


@pytest.fixture
def projects(tmp_path: Path) -> Path:
    tree = tmp_path / "projects"
    shutil.copytree(sample_projects_dir(), tree)
    return tree


def _without_timing(report: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(report)
    del data["summary"]["elapsed_s"]
    return data


@pytest.mark.parametrize("fmt", ["json", "sarif", "terminal"])
def test_scan_no_cache_runs_without_the_incremental_package(projects: Path, fmt: str) -> None:
    args = ("scan", ".", "--no-cache", "-f", fmt, "--fail-on", "any", "-j", "2")
    blocked = _run("blocked", *args, cwd=projects)
    plain = _run("plain", *args, cwd=projects)
    assert "is blocked" not in blocked.stderr, blocked.stderr
    assert blocked.returncode == plain.returncode == 1  # --fail-on any: the samples fail it
    if fmt == "json":
        assert _without_timing(blocked.stdout) == _without_timing(plain.stdout)
    elif fmt == "sarif":
        assert json.loads(blocked.stdout) == json.loads(plain.stdout)
        assert '"fixes"' in blocked.stdout  # the fixes come from the rewrite, also uncached
    else:
        assert blocked.stdout.splitlines()[1:] == plain.stdout.splitlines()[1:]  # not timing


def test_the_blocked_import_is_seen_where_the_cache_is_used(projects: Path) -> None:
    """The check above is real: a scan that uses the cache does fail with the block in place."""
    done = _run("blocked", "scan", ".", "-f", "json", "--cache-dir", "cache", cwd=projects)
    assert done.returncode != 0
    assert "is blocked" in done.stderr


@pytest.mark.parametrize("mode", ["diff", "apply"])
def test_rewrite_no_cache_runs_without_the_incremental_package(
    projects: Path, tmp_path: Path, mode: str
) -> None:
    other = tmp_path / "other"
    shutil.copytree(projects, other)
    args = ("rewrite", ".", "--no-cache", "-j", "2", *(["--apply"] if mode == "apply" else []))
    blocked = _run("blocked", *args, cwd=projects)
    plain = _run("plain", *args, cwd=other)
    assert "is blocked" not in blocked.stderr, blocked.stderr
    assert blocked.returncode == plain.returncode == 0
    assert blocked.stdout == plain.stdout
    assert blocked.stderr == plain.stderr
    if mode == "diff":
        assert blocked.stdout.startswith("--- a/")
    else:
        for path in sorted(other.rglob("*.py")):
            assert (projects / path.relative_to(other)).read_text() == path.read_text()
        assert any("torch_xla" not in p.read_text() for p in projects.rglob("train*.py"))
