"""The rewrite cache is untrusted input, as the scan's is (tests/scan/test_cache_trust.py): an
entry is bound to its key, so an intact entry moved under another key is a miss, never the new
text of another file; and every folder of the cache is checked as its root is."""

from __future__ import annotations

import os
import sqlite3
import stat
from pathlib import Path

import pytest

from tests.cli import invoke

XLA = "import torch_xla.core.xla_model as xm\n\ndevice = xm.xla_device()\n"


def _tree(root: Path, count: int = 7) -> Path:
    tree = root / "tree"
    tree.mkdir(parents=True)
    for index in range(count):
        (tree / f"m{index}.py").write_text(XLA + f"value_{index} = device\n" * (index + 1))
    return tree


def _rotate_entries(database: Path) -> int:
    """Each entry moved under the next entry's key: every entry stays intact."""
    with sqlite3.connect(database) as db:
        rows = db.execute("SELECT key, entry FROM rewrites ORDER BY key").fetchall()
        keys = [key for key, _ in rows]
        moved = [(entry, keys[(at + 1) % len(keys)]) for at, (_, entry) in enumerate(rows)]
        db.execute("DELETE FROM rewrites")
        db.executemany("INSERT INTO rewrites (entry, key) VALUES (?, ?)", moved)
    return len(rows)


def test_an_entry_moved_under_another_key_is_never_written(tmp_path: Path) -> None:
    tree, cache = _tree(tmp_path), tmp_path / "cache"
    plain = tmp_path / "plain"
    _tree(plain)
    assert (
        invoke(["rewrite", "--apply", "--no-cache", "-j", "1", str(plain / "tree")]).exit_code == 0
    )
    assert invoke(["rewrite", "--cache-dir", str(cache), "-j", "1", str(tree)]).exit_code == 0
    (database,) = cache.glob("rewrite-results-*.sqlite")
    assert _rotate_entries(database) == 7
    applied = invoke(["rewrite", "--apply", "--cache-dir", str(cache), "-j", "1", str(tree)])
    assert applied.exit_code == 0, applied.stderr
    assert "from the cache" not in applied.stderr
    for path in sorted(tree.glob("*.py")):
        assert path.read_text() == (plain / "tree" / path.name).read_text(), path.name


@pytest.mark.skipif(not hasattr(os, "geteuid"), reason="modes are POSIX")
def test_a_snapshot_folder_others_may_write_is_refused(tmp_path: Path) -> None:
    tree, cache = _tree(tmp_path, 2), tmp_path / "cache"
    first = invoke(["scan", "-f", "json", "--cache-dir", str(cache), str(tree)])
    assert first.exit_code in (0, 1), first.stderr
    snapshots = cache / "report-snapshots"
    assert snapshots.is_dir()
    snapshots.chmod(0o777)
    again = invoke(["scan", "-f", "json", "--cache-dir", str(cache), str(tree)])
    assert again.exit_code == 2
    assert "report-snapshots" in again.stderr and "writable by other users" in again.stderr
    assert len(again.stderr.strip().splitlines()) == 1
    assert stat.S_IMODE(snapshots.stat().st_mode) == 0o777
