"""The rewrite cache is untrusted input, as the scan's is (tests/scan/test_cache_trust.py): an
entry is bound to its key, so an intact entry moved under another key is a miss, never the new
text of another file; a damaged database is discarded and made afresh, never an exit 2; and
every folder of the cache is checked as its root is."""

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


# Bytes of the database overwritten: the header's magic (not a database), its page counts
# (malformed), its reserved bytes a page (malformed once written), its write version (read-only
# to SQLite), its schema format (unsupported); a page of the table; the file cut in half.
DAMAGE = [(0, 1), (28, 1), (20, 1), (18, 255), (47, 255), (4096, 255), ("half", 0)]


@pytest.mark.parametrize(("at", "value"), DAMAGE)
def test_a_damaged_database_is_discarded_and_rebuilt(
    tmp_path: Path, at: int | str, value: int
) -> None:
    tree, cache = _tree(tmp_path), tmp_path / "cache"
    assert invoke(["rewrite", "--cache-dir", str(cache), "-j", "1", str(tree)]).exit_code == 0
    (tree / "new.py").write_text(XLA)  # a result to write
    plain = invoke(["rewrite", "--no-cache", "-j", "1", str(tree)])
    (database,) = cache.glob("rewrite-results-*.sqlite")
    data = bytearray(database.read_bytes())
    if at == "half":
        data = data[: len(data) // 2]
    else:
        assert isinstance(at, int) and at < len(data)
        data[at] = value
    database.write_bytes(bytes(data))
    for _ in range(2):  # the first rebuilds it, the next is answered by it
        done = invoke(["rewrite", "--cache-dir", str(cache), "-j", "1", str(tree)])
        assert (done.exit_code, done.stdout) == (plain.exit_code, plain.stdout), done.stderr
    assert "from the cache" in done.stderr


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
