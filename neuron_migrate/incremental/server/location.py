"""Where a server listens: one per user and installation.

The socket is named by the environment (`sys.prefix`), the interpreter, the package's folder,
the tool version, `PYTHONPATH` and the UTF-8 mode, so a command reaches only a server running
the very code it would run itself. It lives in a folder
that only the user may enter (`$NEURON_MIGRATE_SERVER_DIR`, else
`$XDG_RUNTIME_DIR/neuron-migrate`, else `$TMPDIR/neuron-migrate-UID`): any process that can
connect to the socket can run commands as the user.

Imports nothing beyond the interpreter's own: the command line reads this before it knows
whether it will run the command itself.
"""

from __future__ import annotations

import contextlib
import os
import stat
import sys
import zlib

from neuron_migrate import __version__
from neuron_migrate.served import server_folder

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class Location:
    """The folder, the socket, the lock, the log and the snapshot list of this installation's
    server."""

    def __init__(self, folder: str) -> None:
        interpreter = os.path.realpath(sys.executable)
        # What else decides which code and defaults a process runs: its import path and mode.
        imports = os.environ.get("PYTHONPATH", "")
        mode = f"utf8={sys.flags.utf8_mode}"
        identity = "\0".join((sys.prefix, interpreter, _PACKAGE_DIR, __version__, imports, mode))
        stem = f"server-{zlib.crc32(identity.encode()):08x}"
        self.folder = folder
        self.socket = os.path.join(folder, stem + ".sock")
        self.lock = os.path.join(folder, stem + ".lock")
        self.log = os.path.join(folder, stem + ".log")
        # The report snapshots the last commands used, for the spare to read ahead.
        self.snapshots = os.path.join(folder, stem + ".snapshots")


def location() -> Location:
    return Location(server_folder())


def private(folder: str) -> bool:
    """Whether `folder` is a real folder of this user's that no one else may enter."""
    try:
        info = os.lstat(folder)
    except OSError:
        return False
    return (
        stat.S_ISDIR(info.st_mode)
        and info.st_uid == os.getuid()
        and not info.st_mode & (stat.S_IRWXG | stat.S_IRWXO)
    )


def make_private(folder: str) -> None:
    """Create `folder` for the server; raises OSError when it exists and is not private."""
    with contextlib.suppress(FileExistsError):
        os.makedirs(folder, mode=0o700)
    if not private(folder):
        raise OSError(
            f"{folder} must be a folder of this user's that others cannot enter (mode 700)"
        )
