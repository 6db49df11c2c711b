"""A `rewrite --apply` the server runs leaves a file edited after it was read as the command
run by itself does (tests/rewrite/test_apply_edited_meanwhile.py), and stops when its client is
killed, as the command run by itself would, or when the server is stopped (`server stop`).

The edit is injected in the server's own process: a `sitecustomize` module on its PYTHONPATH
wraps the tree rewrite, so that each file read is edited before its result is written, in the
commands whose environment asks for it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.server.test_server import _cli, _served_count, env, server

__all__ = ["env", "server"]  # the fixtures, used by name

XLA = "import torch_xla.core.xla_model as xm\n\ndevice = xm.xla_device()\n"
EDIT = "# a line a person added while the rewrite ran\n"

SITECUSTOMIZE = f"""
import os

from neuron_migrate.rewrite import rewriter

_tree_rewrite = rewriter.rewrite_tree


def _edited_after_read(*args, **kwargs):
    for result in _tree_rewrite(*args, **kwargs):
        if result.changed and os.environ.get("EDIT_MEANWHILE"):
            with open(result.path, "a", encoding="utf-8") as handle:
                handle.write({EDIT!r})
        yield result


rewriter.rewrite_tree = _edited_after_read
"""


@pytest.fixture
def edits_in_server(tmp_path: Path, env: dict[str, str]) -> dict[str, str]:
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    (hooks / "sitecustomize.py").write_text(SITECUSTOMIZE)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(hooks), env.get("PYTHONPATH")]))
    return env


@pytest.mark.parametrize("cache", [["--no-cache"], ["--cache-dir", "cache"]])
def test_a_served_apply_leaves_files_edited_after_they_were_read(
    edits_in_server: dict[str, str], tmp_path: Path, cache: list[str]
) -> None:
    started = _cli("server", "start", "--idle-timeout", "300", env=edits_in_server)
    assert started.returncode == 0, started.stderr
    tree = tmp_path / "tree"
    tree.mkdir()
    for index in range(4):
        (tree / f"m{index}.py").write_text(XLA)
    if "--cache-dir" in cache:  # the results the --apply finds stored
        assert _cli("rewrite", *cache, "tree", env=edits_in_server, cwd=tmp_path).returncode == 0
    before = _served_count(edits_in_server)
    applied = _cli(
        "rewrite",
        "--apply",
        *cache,
        "tree",
        env={**edits_in_server, "EDIT_MEANWHILE": "1"},
        cwd=tmp_path,
    )
    assert _served_count(edits_in_server) == before + 1  # the server ran it
    assert applied.returncode == 2, applied.stderr
    for index in range(4):
        assert f"m{index}.py: changed since it was read" in applied.stderr
        assert (tree / f"m{index}.py").read_text() == XLA + EDIT


def _migrated(tree: Path) -> int:
    return sum("xla_device" not in path.read_text() for path in tree.glob("*.py"))


@pytest.mark.parametrize("stop", ["kill -9 of the client", "server stop"])
def test_a_killed_client_or_server_stop_stops_the_rewrite_the_server_runs(
    server: dict[str, str], tmp_path: Path, stop: str
) -> None:
    tree = tmp_path / "tree"
    tree.mkdir()
    count = 1500
    for index in range(count):
        (tree / f"m{index:04}.py").write_text(XLA + f"x_{index} = device\n" * 20)
    before = _served_count(server)
    command = ["rewrite", "--apply", "--no-cache", "-j", "1", str(tree)]
    client = subprocess.Popen(
        [sys.executable, "-m", "neuron_migrate", *command],
        env=server,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while _migrated(tree) == 0 and time.monotonic() < deadline:  # writing has begun
        time.sleep(0.05)
    assert _served_count(server) == before + 1  # the server runs it
    if stop == "server stop":
        assert _cli("server", "stop", env=server).returncode == 0
        assert client.wait(timeout=10) == 2
    else:
        client.kill()
        client.wait(timeout=10)
    time.sleep(1.0)  # what was in flight
    stopped_at = _migrated(tree)
    time.sleep(3.0)
    assert _migrated(tree) == stopped_at < count
