"""The messages between a command and the server, over a Unix stream socket.

A request is `MAGIC`, a kind byte and the length of a marshalled payload, sent with the
command's stdin, stdout and stderr attached (`SCM_RIGHTS`), then the payload. A reply is a
kind byte and a signed 32-bit number: `STARTED` and the pid of the child that runs the command
(the command forwards its signals there), `EXITED` and the exit code, `STALE` (the server's code
or data changed on disk since it loaded them: the command runs itself and the server stops), or
`INFO` and the length of a marshalled dict that follows.

marshal, not pickle or JSON: it is built in (nothing to import) and both ends are the same
interpreter, which the socket's name guarantees. The server reads requests only from the
user's own processes.
"""

from __future__ import annotations

import marshal
import os
import socket
import struct

TYPE_CHECKING = False  # `typing` is a few milliseconds to import; mypy reads this name as True
if TYPE_CHECKING:
    from typing import Any

MAGIC = b"NMS1"
RUN, PING, STOP = b"R", b"P", b"T"  # request kinds
STARTED, EXITED, STALE, INFO = b"p", b"x", b"s", b"i"  # reply kinds

_HEADER = struct.Struct(">4scI")
_REPLY = struct.Struct(">ci")
_CREDENTIALS = struct.Struct("3i")  # struct ucred: pid, uid, gid
_MAX_PAYLOAD = 64 << 20


class ProtocolError(Exception):
    """The other end sent something that is not a message of this protocol, or went away."""


def send_request(sock: socket.socket, kind: bytes, payload: Any, fds: list[int]) -> None:
    data = marshal.dumps(payload)
    message = _HEADER.pack(MAGIC, kind, len(data)) + data
    # One send, so that the server wakes once; what the socket's buffer did not take follows.
    sent = socket.send_fds(sock, [message], fds) if fds else sock.send(message)
    if sent < len(message):  # (sending nothing to a peer that has answered and closed fails)
        sock.sendall(message[sent:])


def receive_request(sock: socket.socket, max_fds: int) -> tuple[bytes, Any, list[int]]:
    """The kind, the payload and the attached descriptors (the caller owns them)."""
    header, fds, _flags, _address = socket.recv_fds(sock, _HEADER.size, max_fds)
    try:
        header += read_exactly(sock, _HEADER.size - len(header))
        magic, kind, size = _HEADER.unpack(header)
        if magic != MAGIC or size > _MAX_PAYLOAD:
            raise ProtocolError("not a neuron-migrate request")
        return kind, marshal.loads(read_exactly(sock, size)), fds
    except BaseException:
        for fd in fds:
            _close(fd)
        raise


def send_reply(sock: socket.socket, kind: bytes, number: int = 0, info: Any = None) -> None:
    if kind == INFO:
        data = marshal.dumps(info)
        sock.sendall(_REPLY.pack(kind, len(data)) + data)
    else:
        sock.sendall(_REPLY.pack(kind, number))


def receive_reply(sock: socket.socket) -> tuple[bytes, int, Any]:
    """The kind, the number and, for `INFO`, the dict. ProtocolError when the server went away
    before a whole reply."""
    kind, number = _REPLY.unpack(read_exactly(sock, _REPLY.size))
    if kind == INFO:
        return kind, 0, marshal.loads(read_exactly(sock, number))
    return kind, number, None


def peer_is_this_user(sock: socket.socket) -> bool:
    """Whether the process at the other end is this user's, where the system says
    (SO_PEERCRED); elsewhere the folder's owner and mode are the only check."""
    option = getattr(socket, "SO_PEERCRED", None)
    if option is None:
        return True
    credentials = sock.getsockopt(socket.SOL_SOCKET, option, _CREDENTIALS.size)
    _pid, uid, _gid = _CREDENTIALS.unpack(credentials)
    return bool(uid == os.getuid())


def read_exactly(sock: socket.socket, size: int) -> bytes:
    chunks: list[bytes] = []
    while size > 0:
        chunk = sock.recv(size)
        if not chunk:
            raise ProtocolError("the other end closed the connection")
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def _close(fd: int) -> None:
    try:  # noqa: SIM105  (contextlib: an import the command's path does without)
        os.close(fd)
    except OSError:
        pass
