"""`neuron-migrate server start | stop | status`: the process that runs `scan` and `rewrite`
for the command line (`neuron_migrate.incremental.server`)."""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import TYPE_CHECKING, Any

from neuron_migrate.cli.commands import add_command, add_group
from neuron_migrate.errors import ServerError

if TYPE_CHECKING:
    from neuron_migrate.cli.commands import Commands

_START_WAIT_S = 60.0  # the warm-up scans and rewrites a sample: a second or two
_STOP_WAIT_S = 10.0


def register(commands: Commands) -> None:
    """Add the `server` commands."""
    group = add_group(
        commands,
        "server",
        "Keep a process that runs scan and rewrite for this installation, loaded and warm.",
    )
    start = add_command(group, "start", server_start)
    start.add_argument(
        "--idle-timeout",
        metavar="SECONDS",
        type=float,
        default=3600.0,
        help="Stop after this long without a command (default: 3600).",
    )
    start.add_argument(
        "--foreground", action="store_true", help="Serve in this process until stopped."
    )
    add_command(group, "stop", server_stop)
    status = add_command(group, "status", server_status)
    status.add_argument(
        "-f",
        "--format",
        dest="fmt",
        choices=("text", "json"),
        default="text",
        help="text (the default) or json.",
    )


def server_start(args: argparse.Namespace) -> int:
    """Start the server, which runs each later `scan` and `rewrite` of this installation.

    The server loads the tool and its bundled data once; each command then hands it its
    command line, folder, environment and streams, and exits with the code it sends back,
    skipping the interpreter's start and the imports. Each command runs in a fresh fork, so
    the output is what the command would print by itself. The server stops after
    --idle-timeout seconds without a command, on `server stop`, and when its code or data
    changes on disk (the command then runs by itself). NEURON_MIGRATE_NO_SERVER=1 makes a
    command run by itself while a server runs.
    """
    import os
    import subprocess

    if os.name != "posix":
        raise ServerError("the server needs a Unix system (it passes descriptors over a socket)")
    from neuron_migrate.incremental.server import zygote
    from neuron_migrate.incremental.server.client import ask
    from neuron_migrate.incremental.server.location import location, make_private
    from neuron_migrate.incremental.server.protocol import PING

    running = ask(PING)
    if running is not None:
        print(f"a server already runs (pid {running['pid']})")
        return 0
    where = location()
    try:
        make_private(where.folder)
    except OSError as exc:
        raise ServerError(str(exc)) from None
    if args.foreground:
        try:
            zygote.serve(args.idle_timeout)
        except (zygote.AlreadyRunning, OSError) as exc:
            raise ServerError(str(exc)) from None
        return 0
    with open(where.log, "wb") as log:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "neuron_migrate.incremental.server",
                "--idle-timeout",
                f"{args.idle_timeout}",
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=log,
            start_new_session=True,
        )
    deadline = time.monotonic() + _START_WAIT_S
    while time.monotonic() < deadline:
        info = ask(PING)
        if info is not None:
            print(f"server started (pid {info['pid']}), listening at {where.socket}")
            return 0
        if process.poll() is not None:
            raise ServerError(f"the server did not start: {_last_line(where.log)}")
        time.sleep(0.05)
    process.terminate()
    raise ServerError(f"the server did not start within {_START_WAIT_S:.0f} s")


def server_stop(args: argparse.Namespace) -> int:
    """Stop the server. Commands it is running finish."""
    import os

    from neuron_migrate.incremental.server.client import ask
    from neuron_migrate.incremental.server.location import location
    from neuron_migrate.incremental.server.protocol import STOP

    info = ask(STOP)
    if info is None:
        print("no server runs")
        return 0
    deadline = time.monotonic() + _STOP_WAIT_S
    while os.path.exists(location().socket) and time.monotonic() < deadline:
        time.sleep(0.02)
    print(f"server stopped (pid {info['pid']})")
    return 0


def server_status(args: argparse.Namespace) -> int:
    """Say whether a server runs, and what it is; exit code 1 when none runs."""
    from neuron_migrate.incremental.server.client import ask
    from neuron_migrate.incremental.server.location import location
    from neuron_migrate.incremental.server.protocol import PING

    info = ask(PING)
    socket_path = location().socket
    if args.fmt == "json":
        print(json.dumps({"running": info is not None, "socket": socket_path, **(info or {})}))
    elif info is None:
        print("no server runs")
    else:
        print(_described(info, socket_path))
    return 0 if info is not None else 1


def _described(info: dict[str, Any], socket_path: str) -> str:
    started = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(info["started"]))
    return "\n".join(
        (
            f"server running: pid {info['pid']}, neuron-migrate {info['version']}",
            f"  python:       {info['python']}",
            f"  socket:       {socket_path}",
            f"  started:      {started}",
            f"  commands run: {info['served']}",
            f"  idle timeout: {info['idle_timeout_s']:g} s",
            *(
                f"  read ahead:   {tree['root']} ({tree['files']:,} files, "
                + ("watched)" if tree["watched"] else "statted at each re-scan)")
                for tree in info.get("trees_ahead", ())
            ),
        )
    )


def _last_line(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            lines = [line.strip() for line in handle if line.strip()]
    except OSError:
        lines = []
    return lines[-1] if lines else "it exited without a message"
