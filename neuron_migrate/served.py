"""Whether a server may run this command line, asked without the speed machinery.

The console entry asks on every command; a command no server can take -- not `scan` or
`rewrite`, `NEURON_MIGRATE_NO_SERVER` set, no server folder -- never imports
`neuron_migrate.incremental`. Where the folder is, `incremental.server.client` asks the socket.
Imports nothing beyond the interpreter's own.
"""

from __future__ import annotations

import os

# The commands worth handing over: what they cost is mostly start-up when the cache answers.
SERVED_COMMANDS = ("scan", "rewrite")
NO_SERVER_ENV = "NEURON_MIGRATE_NO_SERVER"


def server_folder() -> str:
    """Where this user's servers listen (`incremental.server.location`)."""
    configured = os.environ.get("NEURON_MIGRATE_SERVER_DIR")
    if configured:
        return configured
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime:
        return os.path.join(runtime, "neuron-migrate")
    base = os.environ.get("TMPDIR") or "/tmp"
    return os.path.join(base, f"neuron-migrate-{os.getuid()}")


def may_be_served(words: list[str]) -> bool:
    """False when no server can run `neuron-migrate WORDS`; True when one might (a server
    makes its folder before it listens, and a folder may outlive its servers)."""
    if not words or words[0] not in SERVED_COMMANDS or os.environ.get(NO_SERVER_ENV):
        return False
    if os.name != "posix":  # no descriptors over sockets
        return False
    return os.path.isdir(server_folder())
