"""Run the real console entry point in a subprocess: exit codes and streams as a user sees them."""

from __future__ import annotations

import subprocess
import sys


def run_cli(args: list[str], cwd: str | None = None) -> tuple[int, str, str]:
    proc = subprocess.run(
        [sys.executable, "-m", "neuron_migrate", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=300,
    )
    return proc.returncode, proc.stdout, proc.stderr
