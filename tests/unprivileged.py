"""Run the CLI as a user without privileges: CI runs as root, which reads every file and folder
whatever its mode, so a test of what a mode forbids would prove nothing there. As root the
command runs as `nobody` (`setpriv`); the test is skipped where neither is possible."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

NOBODY = 65534


def _prefix() -> list[str]:
    if not hasattr(os, "geteuid"):
        pytest.skip("modes are POSIX")
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root without setpriv: no unprivileged user to run as")
    return [setpriv, f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]


@contextmanager
def shared_folder() -> Iterator[Path]:
    """A folder the unprivileged user may enter and read (pytest's tmp_path is root's own)."""
    folder = Path(tempfile.mkdtemp(prefix="nm-unpriv-"))
    folder.chmod(0o755)
    try:
        yield folder
    finally:
        for path in [folder, *folder.rglob("*")]:
            if path.is_dir() and not path.is_symlink():
                path.chmod(0o755)
        shutil.rmtree(folder, ignore_errors=True)


def neuron_migrate(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """`neuron-migrate ARGS` as an unprivileged user, with a home of its own in `cwd`."""
    home = cwd / "home"
    home.mkdir(exist_ok=True)
    if os.geteuid() == 0:
        os.chown(home, NOBODY, NOBODY)
    env = {
        **os.environ,
        "HOME": str(home),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "NEURON_MIGRATE_CACHE_DIR": str(home / ".cache" / "neuron-migrate"),
        "NEURON_MIGRATE_NO_SERVER": "1",
    }
    return subprocess.run(
        [*_prefix(), sys.executable, "-m", "neuron_migrate", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
