"""The plain path needs no speed machinery: with `neuron_migrate.incremental` made unimportable,
`scan --no-cache` and `rewrite --no-cache` over the sample projects print what they print with
it, and exit as they do."""

from __future__ import annotations

import json
import os
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


def _console_script() -> Path:
    """The installed `neuron-migrate` script beside this interpreter."""
    script = Path(sys.executable).parent / "neuron-migrate"
    if not script.exists():
        found = shutil.which("neuron-migrate")
        if found is None:
            pytest.skip("the console script is not installed")
        script = Path(found)
    return script


def _imported_by_console(args: list[str], env: dict[str, str], cwd: Path) -> set[str]:
    """The modules `neuron-migrate ARGS` imports, as the console script runs it (a process of its
    own; `-X importtime` through the environment lists each module on stderr)."""
    environment = {k: v for k, v in os.environ.items() if not k.startswith("NEURON_MIGRATE_")}
    environment.update(env, PYTHONPROFILEIMPORTTIME="1")
    done = subprocess.run(
        [str(_console_script()), *args],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=cwd,
        env=environment,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return {
        line.rsplit("|", 1)[1].strip()
        for line in done.stderr.splitlines()
        if line.startswith("import time:") and line.count("|") == 2
    }


_COMMANDS = [
    ["scan", "empty", "--no-cache", "-f", "json"],
    ["rewrite", "empty", "--no-cache"],
    ["scan", "empty", "-f", "json", "--cache-dir", "cache"],  # the cache loads; the server not
]


@pytest.mark.parametrize("args", _COMMANDS, ids=lambda a: " ".join(a[:3]))
@pytest.mark.parametrize("plain", ["no-server-env", "no-server-folder"])
def test_the_console_entry_asks_for_no_server_without_the_speed_layer(
    tmp_path: Path, args: list[str], plain: str
) -> None:
    (tmp_path / "empty").mkdir()
    folder = tmp_path / "servers"
    if plain == "no-server-env":
        folder.mkdir(mode=0o700)  # a folder where a server would be: not even looked at
        env = {"NEURON_MIGRATE_NO_SERVER": "1", "NEURON_MIGRATE_SERVER_DIR": str(folder)}
    else:
        env = {"NEURON_MIGRATE_SERVER_DIR": str(folder)}  # not there: no server can be
    imported = _imported_by_console(args, env, tmp_path)
    assert "neuron_migrate.cli" in imported  # the log is read
    client = "neuron_migrate.incremental.server.client"
    assert client not in imported
    if "--no-cache" in args:
        assert not any(m.startswith("neuron_migrate.incremental") for m in imported)


def test_with_a_server_folder_the_console_entry_asks_the_server(tmp_path: Path) -> None:
    """The check above is real: where a server may listen, the client is imported to ask."""
    (tmp_path / "empty").mkdir()
    folder = tmp_path / "servers"
    folder.mkdir(mode=0o700)
    env = {"NEURON_MIGRATE_SERVER_DIR": str(folder)}
    imported = _imported_by_console(_COMMANDS[0], env, tmp_path)
    assert "neuron_migrate.incremental.server.client" in imported
