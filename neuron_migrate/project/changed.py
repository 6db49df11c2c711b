"""`--changed-since REF`: the files git says changed since a ref (committed, staged, unstaged
and untracked), so a pull request scans only what it touches."""

from __future__ import annotations

import subprocess
from pathlib import Path

from neuron_migrate.errors import UsageError


def _git(args: list[str], cwd: Path) -> str:
    try:
        proc = subprocess.run(
            ["git", *args], cwd=cwd, capture_output=True, text=True, timeout=120, check=False
        )
    except FileNotFoundError:
        raise UsageError("--changed-since needs git, and git is not installed") from None
    if proc.returncode != 0:
        first = (proc.stderr.strip().splitlines() or ["git failed"])[0]
        raise UsageError(f"--changed-since: git {args[0]}: {first}")
    return proc.stdout


def changed_files(path: Path, ref: str) -> set[Path]:
    """Resolved paths of files changed since `ref` in the repository holding `path`."""
    folder = path if path.is_dir() else path.parent
    top = Path(_git(["rev-parse", "--show-toplevel"], folder).strip())
    try:
        _git(["rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"], top)
    except UsageError:
        raise UsageError(f"--changed-since: unknown git ref {ref!r}") from None
    names = _git(["diff", "--name-only", "-z", "--diff-filter=ACMRT", ref, "--"], top).split("\0")
    names += _git(["ls-files", "--others", "--exclude-standard", "-z"], top).split("\0")
    return {(top / name).resolve() for name in names if name}
