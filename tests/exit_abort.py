"""A two-rank worker that finished its program sometimes dies in interpreter teardown with
"terminate called without an active exception" (SIGABRT), on the simulated device and in a plain
CPU/gloo run alike (runtime/README.md, "Known bug"): torch's and gloo's teardown, not what the
tests check. Such a run is run once more; the second must pass every check."""

from __future__ import annotations

import subprocess
from collections.abc import Callable

EXIT_ABORT = "terminate called without an active exception"


def run_twice_on_exit_abort(
    once: Callable[[], subprocess.CompletedProcess[str]],
) -> subprocess.CompletedProcess[str]:
    done = once()
    if done.returncode != 0 and EXIT_ABORT in done.stderr:
        done = once()
    return done
