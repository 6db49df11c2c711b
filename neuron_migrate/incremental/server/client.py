"""The command's end: hand a `scan` or `rewrite` to the server, if one runs, and wait.

Without a server this costs one `stat` of the socket's path (and without a server folder, or
with `NEURON_MIGRATE_NO_SERVER`, the console entry does not import this module at all:
`neuron_migrate.served`). Anything short of a server that accepts the command -- no socket, one
left by a server that died, a folder that is not the user's, a server whose code changed on
disk -- means the command runs itself, as it would have. Once the server has started the
command, its exit code is the command's.
"""

from __future__ import annotations

import os
import sys

from neuron_migrate.incremental.server.location import Location, location, private
from neuron_migrate.served import NO_SERVER_ENV, SERVED_COMMANDS, may_be_served

__all__ = ["NO_SERVER_ENV", "SERVED_COMMANDS", "ask", "connect", "hand_over"]

TYPE_CHECKING = False  # `typing` is a few milliseconds to import; mypy reads this name as True
if TYPE_CHECKING:
    import socket
    from typing import Any

_START_TIMEOUT_S = 60.0


def hand_over(words: list[str]) -> int | None:
    """The exit code of `neuron-migrate WORDS` run by the server; None when the caller must
    run it itself."""
    if not may_be_served(words):
        return None
    where = location()
    try:
        os.stat(where.socket)
    except OSError:
        return None
    streams = _streams()
    if streams is None:
        return None
    sock = connect(where)
    if sock is None:
        return None
    with sock:
        return _run(sock, words, streams)


def connect(where: Location) -> socket.socket | None:
    """A connection to the server, or None when none listens, or its folder or the process
    that listens is not this user's."""
    if not private(where.folder):
        return None
    import socket

    from neuron_migrate.incremental.server.protocol import peer_is_this_user

    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(where.socket)
        if peer_is_this_user(sock):
            return sock
    except OSError:
        pass
    sock.close()
    return None


def ask(kind: bytes) -> dict[str, Any] | None:
    """The server's answer to PING or STOP: a dict of what it is; None when none runs."""
    from neuron_migrate.incremental.server.protocol import (
        ProtocolError,
        receive_reply,
        send_request,
    )

    if os.name != "posix":
        return None
    sock = connect(location())
    if sock is None:
        return None
    with sock:
        try:
            send_request(sock, kind, None, [])
            _kind, _number, info = receive_reply(sock)
        except (OSError, ProtocolError):
            return None
    return info if isinstance(info, dict) else None


def _run(sock: socket.socket, words: list[str], streams: list[tuple[str, str]]) -> int | None:
    import signal

    from neuron_migrate.incremental.server.protocol import (
        EXITED,
        RUN,
        STARTED,
        ProtocolError,
        receive_reply,
        send_request,
    )

    umask = os.umask(0)
    os.umask(umask)
    try:
        cwd = os.getcwd()
    except OSError:  # the folder is gone: the command says so by itself
        return None
    payload = {
        "argv": [sys.argv[0], *words],
        "cwd": cwd,
        "env": dict(os.environ),
        "umask": umask,
        "streams": streams,
    }
    # A server that does not start the command in time is given up on. It starts a command
    # only once it has told this end so, which a closed connection refuses.
    sock.settimeout(_START_TIMEOUT_S)
    try:
        send_request(sock, RUN, payload, [0, 1, 2])
        kind, pid, _ = receive_reply(sock)
    except (OSError, ProtocolError):
        return None  # nothing ran: run it here
    if kind != STARTED:
        return None  # STALE: the server stops, and the command runs here
    sock.settimeout(None)
    forwarded: list[int] = []

    def forward(signum: int, _frame: object) -> None:
        forwarded.append(signum)
        try:  # noqa: SIM105  (contextlib: an import the command's path does without)
            os.kill(pid, signum)
        except OSError:
            pass

    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, forward)
    try:
        kind, code, _ = receive_reply(sock)
        if kind == EXITED:
            return code
    except (OSError, ProtocolError):
        pass
    if forwarded:
        return 128 + forwarded[-1]
    print(
        "neuron-migrate: the command was ended before it finished: its server was stopped "
        "(`server stop`) or its process killed",
        file=sys.stderr,
    )
    return 2


def _streams() -> list[tuple[str, str]] | None:
    """The encoding and error handler of stdin, stdout and stderr; None when one is missing
    (a server could not stand in for it)."""
    found: list[tuple[str, str]] = []
    for stream in (sys.stdin, sys.stdout, sys.stderr):
        try:
            if stream is None or stream.fileno() != len(found):
                return None
            os.fstat(stream.fileno())
        except (AttributeError, OSError, ValueError):
            return None
        found.append((stream.encoding, stream.errors or "strict"))
    return found
