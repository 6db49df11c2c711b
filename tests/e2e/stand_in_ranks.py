"""A script run on gloo ranks under torchrun with the stand-ins (tests/e2e/cpu_xla: torch_xla,
NxD) on its path: the two-rank checks of the migration's helpers against NxD's semantics."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from tests.exit_abort import run_twice_on_exit_abort
from tests.ports import free_port

STAND_IN = Path(__file__).resolve().parent / "cpu_xla"
_LAUNCHER_VARIABLES = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "PYTHONUNBUFFERED")


def run_on_ranks(script: Path, *args: str, processes: int = 2) -> subprocess.CompletedProcess[str]:
    """`python script args...` on `processes` ranks, once more where a rank aborted in its
    teardown. The workers run as plain, buffered python (`--no-python`): torchrun's own
    `python -u` writes a print's text and its newline apart, and another rank's line lands
    between them."""
    env = {k: v for k, v in os.environ.items() if k not in _LAUNCHER_VARIABLES}
    env["PYTHONPATH"] = str(STAND_IN)

    def once() -> subprocess.CompletedProcess[str]:
        argv = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", str(processes)]
        argv += ["--master-port", str(free_port()), "--no-python", sys.executable, str(script)]
        argv += args
        return subprocess.run(
            argv, env=env, capture_output=True, text=True, timeout=300, check=False
        )

    # A finished gloo rank now and then aborts in interpreter teardown (tests/exit_abort.py).
    return run_twice_on_exit_abort(once)


def run_with_helpers(script: Path, text: str, helpers: Sequence[str], *args: str) -> str:
    """Write `text` to `script` with the migration's `helpers` in place of its line
    `HELPERS`, run it on two ranks (`run_on_ranks`) and return what they printed; a rank that
    fails fails the test."""
    script.write_text(text.replace("HELPERS", "\n".join(helpers)))
    done = run_on_ranks(script, *args)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout
