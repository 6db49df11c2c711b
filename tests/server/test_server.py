"""`neuron-migrate server`: commands handed to it print, write and exit exactly as they would
by themselves; anything short of a live server of this installation means the command runs
by itself."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from neuron_migrate.incremental import tree_watch
from neuron_migrate.incremental.server import zygote
from neuron_migrate.incremental.server.client import NO_SERVER_ENV
from neuron_migrate.incremental.server.location import Location
from neuron_migrate.incremental.stat_index import SETTLED_NS
from neuron_migrate.resources import rules_dir

FIXTURES = Path(__file__).parents[2] / "fixtures"
XLA = "import torch_xla.core.xla_model as xm\ndevice = xm.xla_device()\nxm.mark_step()\n"

pytestmark = pytest.mark.skipif(os.name != "posix", reason="the server needs Unix sockets")


def _cli(
    *args: str, env: dict[str, str], cwd: Path | None = None, served: bool = True
) -> subprocess.CompletedProcess[str]:
    env = dict(env)
    if not served:
        env[NO_SERVER_ENV] = "1"
    return subprocess.run(
        [sys.executable, "-m", "neuron_migrate", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=120,
    )


def _status(env: dict[str, str]) -> dict[str, object]:
    done = _cli("server", "status", "--format", "json", env=env)
    status: dict[str, object] = json.loads(done.stdout)
    assert done.returncode == (0 if status["running"] else 1)
    return status


@pytest.fixture
def env() -> Iterator[dict[str, str]]:
    """The environment of a command, with a server folder of its own (short: a socket's path
    has a limit of about 100 bytes)."""
    folder = tempfile.mkdtemp(prefix="nm-srv-")
    environment = dict(os.environ)
    environment["NEURON_MIGRATE_SERVER_DIR"] = folder
    environment.pop(NO_SERVER_ENV, None)
    yield environment
    status = _status(environment)
    if status["running"]:
        _cli("server", "stop", env=environment)
        if _status(environment)["running"]:
            os.kill(int(str(status["pid"])), 15)
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def server(env: dict[str, str]) -> dict[str, str]:
    started = _cli("server", "start", "--idle-timeout", "300", env=env)
    assert started.returncode == 0, started.stderr
    assert "server started" in started.stdout
    return env


def _project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    shutil.copytree(FIXTURES / "projects" / "mixed_status", root)
    (root / "extra.py").write_text(XLA)
    return root


def _wait_until_stopped(env: dict[str, str], timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while _status(env)["running"] and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _status(env)["running"]


def _served_count(env: dict[str, str]) -> int:
    return int(str(_status(env)["served"]))


def _without_elapsed(report: str) -> dict[str, object]:
    data: dict[str, object] = json.loads(report)
    summary = data["summary"]
    assert isinstance(summary, dict)
    summary.pop("elapsed_s")
    return data


def test_a_served_scan_prints_and_exits_as_the_command_by_itself(
    server: dict[str, str], tmp_path: Path
) -> None:
    root = _project(tmp_path)
    for args in (
        ["scan", "--no-cache", "--format", "json", "project"],
        ["scan", "--no-cache", "project"],
        ["scan", "--no-cache", "--format", "sarif", "--fail-on", "never", "project"],
    ):
        before = _served_count(server)
        alone = _cli(*args, env=server, cwd=tmp_path, served=False)
        served = _cli(*args, env=server, cwd=tmp_path)
        assert _served_count(server) == before + 1
        assert served.returncode == alone.returncode
        if "json" in args:
            assert _without_elapsed(served.stdout) == _without_elapsed(alone.stdout)
        elif "sarif" not in args:
            assert served.stdout == alone.stdout
        assert served.stderr == alone.stderr
    # "project" is found in the command's working folder, and the gate fails there too.
    assert _cli("scan", "--no-cache", "project", env=server, cwd=tmp_path).returncode == 1
    assert (root / "extra.py").is_file()


def test_served_rewrite_shows_and_applies_the_same_changes(
    server: dict[str, str], tmp_path: Path
) -> None:
    root = _project(tmp_path)
    alone = _cli("rewrite", "--no-cache", str(root), env=server, served=False)
    served = _cli("rewrite", "--no-cache", str(root), env=server)
    assert (served.returncode, served.stdout) == (alone.returncode, alone.stdout)
    assert "+device = torch.device(" in served.stdout
    copy = tmp_path / "copy"
    shutil.copytree(root, copy)
    applied = _cli("rewrite", "--no-cache", "--apply", str(root), env=server)
    assert applied.returncode == 0, applied.stderr
    _cli("rewrite", "--no-cache", "--apply", str(copy), env=server, served=False)
    for path in root.rglob("*.py"):
        assert path.read_text() == (copy / path.relative_to(root)).read_text()
    assert "torch_xla" not in (root / "extra.py").read_text()


def test_the_commands_environment_reaches_the_server(
    server: dict[str, str], tmp_path: Path
) -> None:
    root = _project(tmp_path)
    env = dict(server, NEURON_MIGRATE_CACHE_DIR=str(tmp_path / "cache"))
    first = _cli("scan", "--format", "json", str(root), env=env)
    second = _cli("scan", "--format", "json", str(root), env=env)
    assert (tmp_path / "cache").is_dir()  # the command's cache, not the server's
    files = json.loads(second.stdout)["summary"]["files"]
    assert json.loads(first.stdout)["summary"]["files"]["from_cache"] == 0
    assert files["from_cache"] == files["analyzed"] > 0


def test_served_scans_list_their_snapshots_for_the_spare_to_read_ahead(
    server: dict[str, str], tmp_path: Path
) -> None:
    root = _project(tmp_path)
    # Folders changed within SETTLED_NS of a scan are listed again by the next: never watched.
    time.sleep(SETTLED_NS / 1e9 + 0.2)
    scan = ["scan", "--format", "json", "--cache-dir", "cache", "project"]
    _cli(*scan, env=server, cwd=tmp_path)
    listing = Path(Location(server["NEURON_MIGRATE_SERVER_DIR"]).snapshots).read_text()
    ((listed, cwd),) = json.loads(listing)
    assert Path(listed).parent == tmp_path / "cache" / "report-snapshots"  # absolute
    assert cwd == str(tmp_path)  # where the snapshot's paths are relative to
    assert Path(listed).exists()
    for edit in range(2):
        time.sleep(0.5)  # the spare reads it ahead meanwhile
        (root / "extra.py").write_text(XLA + f"# edit {edit}\n")
        served = _cli(*scan, env=server, cwd=tmp_path)
        full = _cli(*scan[:3], "--no-cache", "project", env=server, cwd=tmp_path, served=False)
        assert served.returncode == full.returncode
        assert _without_cached(served.stdout) == _without_cached(full.stdout)
    # Each was served: a spare that read a snapshot ahead and watched its tree (loading the
    # watch's module) still runs the server's code.
    assert _status(server)["running"] and _served_count(server) == 3
    # The spare that answers holds the tree ahead, watched where the watch can vouch for it.
    time.sleep(0.5)
    (tree,) = _status(server)["trees_ahead"]  # type: ignore[misc]
    local = tree_watch.filesystem_type(str(tmp_path)) in tree_watch.LOCAL_FILESYSTEMS
    scanned = json.loads(full.stdout)["summary"]["files"]["total"]  # sources and project files
    assert tree == {"root": "project", "files": scanned, "watched": local}
    described = _cli("server", "status", env=server).stdout
    assert "read ahead:   project (" in described and ("watched)" in described) == local


def _without_cached(report: str) -> dict[str, object]:
    data = _without_elapsed(report)
    data["summary"]["files"].pop("from_cache")  # type: ignore[index]
    return data


def test_the_snapshot_list_keeps_the_last_ones_and_is_read_again_when_it_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    listing = str(tmp_path / "server.snapshots")
    for used in ([("a", "/x")], [("b", "/x"), ("c", "/y")], [("a", "/x")], []):
        zygote._list_snapshots(listing, used)
    assert zygote._listed(listing) == [("a", "/x"), ("c", "/y")]
    read: list[tuple[list[tuple[str, str]], bool]] = []

    def read_ahead(pairs: list[tuple[str, str]], watch: bool, stop: object) -> bool:
        read.append((pairs, watch))
        return True

    monkeypatch.setattr(zygote.report_snapshot, "read_ahead", read_ahead)
    seen = zygote._read_ahead(listing, None)
    assert zygote._read_ahead(listing, seen) == seen
    assert read == [([("a", "/x"), ("c", "/y")], True)]  # read once, its trees watched
    zygote._list_snapshots(listing, [("d", "/x")])
    zygote._read_ahead(listing, seen)
    assert read[-1][0] == [("d", "/x"), ("a", "/x")]
    assert zygote._read_ahead(str(tmp_path / "none"), seen) is None
    Path(listing).write_text("not json")
    assert zygote._read_ahead(listing, None) is None


def test_usage_errors_and_help_come_back_as_they_are(server: dict[str, str]) -> None:
    for args in (["scan", "--format", "nope", "."], ["scan", "missing-folder"], ["scan", "-h"]):
        alone = _cli(*args, env=server, served=False)
        served = _cli(*args, env=server)
        assert (served.returncode, served.stdout, served.stderr) == (
            alone.returncode,
            alone.stdout,
            alone.stderr,
        )
    assert _cli("scan", "missing-folder", env=server).returncode == 2


def test_commands_run_side_by_side(server: dict[str, str], tmp_path: Path) -> None:
    _project(tmp_path)
    args = [sys.executable, "-m", "neuron_migrate", "scan", "--no-cache", "--format", "json"]
    running = [
        subprocess.Popen([*args, "project"], cwd=tmp_path, env=server, stdout=subprocess.PIPE)
        for _ in range(4)
    ]
    outputs = [process.communicate(timeout=120)[0] for process in running]
    alone = _cli(
        "scan", "--no-cache", "--format", "json", "project", env=server, cwd=tmp_path, served=False
    )
    for process, output in zip(running, outputs, strict=True):
        assert process.returncode == alone.returncode
        assert _without_elapsed(output.decode()) == _without_elapsed(alone.stdout)
    assert _served_count(server) == 4


def test_no_server_variable_and_other_commands_run_by_themselves(
    server: dict[str, str], tmp_path: Path
) -> None:
    _project(tmp_path)
    _cli("scan", "--no-cache", "project", env=server, cwd=tmp_path, served=False)
    _cli("matrix", "list", env=server)
    assert _served_count(server) == 0


def test_a_change_on_disk_stops_the_server_and_the_command_runs_by_itself(
    server: dict[str, str], tmp_path: Path
) -> None:
    _project(tmp_path)
    data_file = sorted(rules_dir().rglob("*.yaml"))[0]
    stamp = data_file.stat()
    try:
        os.utime(data_file, ns=(stamp.st_atime_ns, stamp.st_mtime_ns + 1_000_000_000))
        alone = _cli("scan", "--no-cache", "project", env=server, cwd=tmp_path, served=False)
        done = _cli("scan", "--no-cache", "project", env=server, cwd=tmp_path)
    finally:
        os.utime(data_file, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))
    assert (done.returncode, done.stdout) == (alone.returncode, alone.stdout)
    _wait_until_stopped(server, 10)


def test_stop_status_and_a_second_start(server: dict[str, str]) -> None:
    status = _status(server)
    assert status["running"] and status["served"] == 0
    again = _cli("server", "start", env=server)
    assert again.returncode == 0 and "already runs" in again.stdout
    stopped = _cli("server", "stop", env=server)
    assert stopped.returncode == 0 and "server stopped" in stopped.stdout
    assert not _status(server)["running"]
    assert not Path(str(status["socket"])).exists()
    assert _cli("server", "stop", env=server).stdout.strip() == "no server runs"
    text = _cli("server", "status", env=server)
    assert (text.returncode, text.stdout.strip()) == (1, "no server runs")


def test_an_idle_server_stops(env: dict[str, str]) -> None:
    assert _cli("server", "start", "--idle-timeout", "1", env=env).returncode == 0
    _wait_until_stopped(env, 20)


def test_a_left_socket_or_a_folder_others_may_enter_is_passed_over(
    env: dict[str, str], tmp_path: Path
) -> None:
    _project(tmp_path)
    where = Location(env["NEURON_MIGRATE_SERVER_DIR"])
    import socket

    left = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    left.bind(where.socket)  # a socket no one listens on: what a killed server leaves
    left.close()
    alone = _cli("scan", "--no-cache", "project", env=env, cwd=tmp_path, served=False)
    done = _cli("scan", "--no-cache", "project", env=env, cwd=tmp_path)
    assert (done.returncode, done.stdout) == (alone.returncode, alone.stdout)
    os.chmod(where.folder, 0o755)
    started = _cli("server", "start", env=env)
    assert started.returncode == 2
    assert "must be a folder of this user's that others cannot enter" in started.stderr
    assert len(started.stderr.strip().splitlines()) == 1


def _big_tree(tmp_path: Path) -> Path:
    tree = tmp_path / "big"
    if not tree.exists():
        for index in range(3000):
            folder = tree / f"pkg_{index // 100}"
            folder.mkdir(parents=True, exist_ok=True)
            (folder / f"m_{index}.py").write_text(XLA + f"x_{index} = device\n" * 20)
    return tree


def _long_scan(
    server: dict[str, str], tmp_path: Path, stderr: Path | None = None
) -> subprocess.Popen[bytes]:
    """A served scan that takes a few seconds, once the server has taken it."""
    tree = _big_tree(tmp_path)
    command = [sys.executable, "-m", "neuron_migrate", "scan", "--no-cache", "-j", "1"]
    before = _served_count(server)
    with (tmp_path / "big.json").open("wb") as report:
        errors = stderr.open("wb") if stderr is not None else None
        process = subprocess.Popen(
            [*command, "--format", "json", str(tree)], env=server, stdout=report, stderr=errors
        )
        if errors is not None:
            errors.close()
    deadline = time.monotonic() + 30
    while _served_count(server) == before and time.monotonic() < deadline:
        time.sleep(0.05)
    return process


def test_ctrl_c_reaches_the_command_the_server_runs(server: dict[str, str], tmp_path: Path) -> None:
    process = _long_scan(server, tmp_path)
    process.send_signal(signal.SIGINT)
    assert process.wait(timeout=60) == 130


def test_server_stop_ends_the_commands_it_runs(server: dict[str, str], tmp_path: Path) -> None:
    """`server stop` stops the server's work, a command still running included: its client
    says so on one line and exits 2, and no report is written."""
    process = _long_scan(server, tmp_path, stderr=tmp_path / "big.err")
    assert _cli("server", "stop", env=server).returncode == 0
    assert process.wait(timeout=30) == 2
    assert (tmp_path / "big.err").read_text() == (
        "neuron-migrate: the command was ended before it finished: its server was stopped "
        "(`server stop`) or its process killed\n"
    )
    assert (tmp_path / "big.json").read_text() == ""
    restarted = _cli("server", "start", env=server)
    assert restarted.returncode == 0 and "server started" in restarted.stdout, restarted.stderr


def test_a_command_outlives_an_idle_stop_and_holds_nothing_of_its_server(
    env: dict[str, str], tmp_path: Path
) -> None:
    """A server that stops for want of new commands lets the one it runs finish."""
    _big_tree(tmp_path)
    started = _cli("server", "start", "--idle-timeout", "2", env=env)
    assert started.returncode == 0, started.stderr
    process = _long_scan(env, tmp_path)
    _wait_until_stopped(env, 20)
    restarted = _cli("server", "start", env=env)  # the running command holds no lock
    assert restarted.returncode == 0 and "server started" in restarted.stdout, restarted.stderr
    assert process.wait(timeout=120) == 0
    assert json.loads((tmp_path / "big.json").read_text())["summary"]["files"]["total"] == 3000


def test_a_killed_server_leaves_no_spare_and_commands_run_by_themselves(
    server: dict[str, str], tmp_path: Path
) -> None:
    _project(tmp_path)
    os.kill(int(str(_status(server)["pid"])), signal.SIGKILL)
    _wait_until_stopped(server, 10)  # its spare went with it
    alone = _cli("scan", "--no-cache", "project", env=server, cwd=tmp_path, served=False)
    done = _cli("scan", "--no-cache", "project", env=server, cwd=tmp_path)
    assert (done.returncode, done.stdout) == (alone.returncode, alone.stdout)
    assert _cli("server", "start", env=server).returncode == 0


def test_a_spare_is_stale_only_when_a_file_the_server_stamped_changed(tmp_path: Path) -> None:
    stamp = zygote.code_stamp()
    # A module the process loads afterwards (a spare's watch, say) is not in the server's stamp.
    stamped = [path for path, _, _ in stamp]
    added = [*stamped, str(tmp_path / "loaded_later.py")]
    (tmp_path / "loaded_later.py").write_text("")
    assert zygote.code_stamp(added) != stamp
    assert zygote.code_stamp(path for path, _, _ in stamp) == stamp
    changed = tmp_path / "module.py"
    changed.write_text("x = 1\n")
    before = zygote.code_stamp([*stamped, str(changed)])
    changed.write_text("x = 22\n")
    assert zygote.code_stamp([*stamped, str(changed)]) != before
