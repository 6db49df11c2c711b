"""`neuron-migrate lsp`: the language server, over stdin and stdout (the `lsp` extra)."""

from __future__ import annotations

import contextlib
import os
import sys
from typing import TYPE_CHECKING

from neuron_migrate.errors import UsageError

if TYPE_CHECKING:
    import typer


def register(app: typer.Typer) -> None:
    app.command("lsp")(lsp)


def lsp() -> int:
    """Serve the Language Server Protocol (3.17) over stdin and stdout, for an editor.

    Diagnostics as the buffer is typed (the findings `scan` reports for its text), a quick fix
    per site the rewrite changes, a fix-all source action (`source.fixAll.neuron-migrate`), and
    the matrix entry of an op on hover. Exits 0 after the client's `shutdown` and `exit`.
    """
    try:
        from neuron_migrate.lsp.server import serve
    except ImportError as exc:
        raise UsageError(
            f"the language server needs the lsp extra ({exc.name} is missing): "
            "pip install 'neuron-migrate[lsp]'"
        ) from None
    code = serve()
    # The thread that read stdin may still wait in a read the client never ends: leave without
    # joining it.
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a client gone, a stream closed
            stream.flush()
    os._exit(code)
