"""Run the console entry point in this process (fast: no interpreter start-up per call), with
the exit code, stdout and stderr a user would see."""

from __future__ import annotations

import contextlib
import io
from typing import NamedTuple

from neuron_migrate.cli import main


class Result(NamedTuple):
    exit_code: int
    stdout: str
    stderr: str


def invoke(args: list[str]) -> Result:
    out, err = io.StringIO(), io.StringIO()
    code = 0
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            main(args)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    return Result(code, out.getvalue(), err.getvalue())
