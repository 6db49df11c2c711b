"""`neuron-migrate server start | stop | status`: the process that runs `scan` and `rewrite`
for the command line (`neuron_migrate.incremental.server`)."""

from __future__ import annotations

import json
import sys
import time
from typing import TYPE_CHECKING, Annotated, Any

from neuron_migrate.cli.app import new_group
from neuron_migrate.cli.options import checked_choice, option
from neuron_migrate.errors import ServerError

if TYPE_CHECKING:
    import typer

_START_WAIT_S = 60.0  # the warm-up scans and rewrites a sample: a second or two
_STOP_WAIT_S = 10.0


group = new_group("server")


def register(app: typer.Typer) -> None:
    """Add the `server` commands."""
    app.add_typer(group)


@group.command("start")
def server_start(
    idle_timeout: Annotated[
        float,
        option(
            "--idle-timeout",
            metavar="SECONDS",
            help="Stop after this long without a command (default: 3600).",
        ),
    ] = 3600.0,
    foreground: Annotated[
        bool, option("--foreground", help="Serve in this process until stopped.")
    ] = False,
) -> int:
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
    if foreground:
        try:
            zygote.serve(idle_timeout)
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
                f"{idle_timeout}",
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


@group.command("stop")
def server_stop() -> int:
    """Stop the server, and the commands it is running (their clients exit 2)."""
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


@group.command("status")
def server_status(
    fmt: Annotated[
        str, option("-f", "--format", metavar="{text,json}", help="text (the default) or json.")
    ] = "text",
) -> int:
    """Say whether a server runs, and what it is; exit code 1 when none runs."""
    from neuron_migrate.incremental.server.client import ask
    from neuron_migrate.incremental.server.location import location
    from neuron_migrate.incremental.server.protocol import PING

    checked_choice(fmt, ("text", "json"))
    info = ask(PING)
    socket_path = location().socket
    if fmt == "json":
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
