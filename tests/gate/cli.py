"""Run the console entry point in this process (fast: no interpreter start-up per call), with
the exit code, stdout and stderr a user would see."""

from __future__ import annotations

import contextlib
import io
import sys

from neuron_migrate.cli import main


def invoke(args: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    argv = sys.argv
    sys.argv = ["neuron-migrate", *args]
    code = 0
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            main()
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    finally:
        sys.argv = argv
    return code, out.getvalue(), err.getvalue()
