"""Which of some modules a CLI run imports: a fresh interpreter runs the command, then reports."""

from __future__ import annotations

import json
import subprocess
import sys

# Reported by an exit handler: a `scan` or `rewrite` leaves without returning (`cli.leave`).
_RUN = """
import atexit, json, sys
watched = json.loads(sys.argv[1])
sys.argv = ["neuron-migrate", *sys.argv[2:]]

@atexit.register
def report():
    print(json.dumps(sorted(m for m in watched if m in sys.modules)), file=sys.stderr)

from neuron_migrate.cli import main
main()
"""


def loaded_modules(watched: tuple[str, ...], *args: str) -> list[str]:
    """The modules of `watched` that `neuron-migrate ARGS` imported, sorted."""
    done = subprocess.run(
        [sys.executable, "-c", _RUN, json.dumps(watched), *args],
        capture_output=True,
        text=True,
        timeout=300,
    )
    loaded: list[str] = json.loads(done.stderr.strip().splitlines()[-1])
    return loaded


def imported_by(module: str, watched: tuple[str, ...]) -> list[str]:
    """The modules of `watched` that `import MODULE` loads in a fresh interpreter, sorted."""
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            f"import sys, json, {module}; "
            "print(json.dumps(sorted(m for m in json.loads(sys.argv[1]) if m in sys.modules)))",
            json.dumps(watched),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    found: list[str] = json.loads(done.stdout)
    return found
