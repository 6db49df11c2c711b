"""Report rows in cache segments: copied into the report by the kernel, merged when they pile
up, and never trusted when a segment is gone or short."""

from __future__ import annotations

import os
import pickle
import re
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from neuron_migrate import api
from neuron_migrate.incremental import cache, row_store
from neuron_migrate.incremental.row_store import Segment, StoredBytes
from neuron_migrate.pieces import coalesced
from neuron_migrate.scan.file_findings import ROW_SEPARATOR

FIXTURES = Path(__file__).parents[2] / "fixtures"
SEP = ROW_SEPARATOR


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "tree"
    shutil.copytree(FIXTURES / "projects", root)
    return root


def _scan_cli(tree: Path, cache_dir: Path, *extra: str, stdout: object = subprocess.PIPE) -> bytes:
    command = [sys.executable, "-m", "neuron_migrate", "scan", str(tree), "-f", "json"]
    done = subprocess.run(
        [*command, "--cache-dir", str(cache_dir), *extra],
        stdout=stdout,
        stderr=subprocess.PIPE,
        timeout=120,
        check=False,
    )
    assert done.returncode in (0, 1), done.stderr.decode()
    return done.stdout or b""


def _timeless(report: bytes) -> bytes:
    report = re.sub(rb'"elapsed_s": [0-9.e-]+', b"", report)
    return re.sub(rb'"from_cache": \d+', b"", report)


def _segments(cache_dir: Path) -> list[Path]:
    return sorted(cache_dir.glob("rows-*.bin"))


def test_a_warm_report_is_the_cold_one_to_a_pipe_a_file_an_appended_file_and_o(
    tree: Path, tmp_path: Path
) -> None:
    cache_dir = tmp_path / "cache"
    cold = _scan_cli(tree, cache_dir)
    assert _segments(cache_dir)
    piped = _scan_cli(tree, cache_dir)
    into_file = tmp_path / "file.json"
    with into_file.open("wb") as handle:
        _scan_cli(tree, cache_dir, stdout=handle)
    appended = tmp_path / "appended.json"
    appended.write_bytes(b"before\n")
    with appended.open("ab") as handle:  # copy_file_range refuses O_APPEND: the fallbacks
        _scan_cli(tree, cache_dir, stdout=handle)
    _scan_cli(tree, cache_dir, "-o", str(tmp_path / "o.json"))
    assert b'"from_cache": 0' in cold and b'"from_cache": 0' not in piped
    expected = _timeless(cold)
    assert _timeless(piped) == expected
    assert _timeless(into_file.read_bytes()) == expected
    assert _timeless(appended.read_bytes()) == b"before\n" + expected
    assert _timeless((tmp_path / "o.json").read_bytes()) == expected


def test_each_entry_is_followed_by_the_separator_in_its_segment(tree: Path, tmp_path: Path) -> None:
    cache_dir = tmp_path / "cache"
    api.scan(tree, jobs=1, cache_dir=cache_dir)
    (database,) = cache_dir.glob("scan-results-*.sqlite")
    with sqlite3.connect(database) as db:
        entries = db.execute(
            "SELECT s.name, r.start, r.length FROM results r JOIN segments s ON s.id = r.segment"
        ).fetchall()
    assert entries
    for name, start, length in entries:
        data = (cache_dir / name).read_bytes()
        assert data[start + length : start + length + len(SEP)] == SEP
        assert data[start : start + 1] == b"{" and data[start + length - 1 : start + length] == b"}"


def test_segments_past_the_limit_are_merged_into_one(
    tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cache, "MAX_SEGMENTS", 2)
    cache_dir = tmp_path / "cache"
    first = api.scan(tree, jobs=1, cache_dir=cache_dir)
    edited = sorted(tree.rglob("*.py"))[0]
    for n in range(3):  # each scan analyses the edited file and writes one segment
        edited.write_text(edited.read_text() + f"\n# edit {n}\n")
        api.scan(tree, jobs=1, cache_dir=cache_dir)
    assert len(_segments(cache_dir)) <= 2
    (database,) = cache_dir.glob("scan-results-*.sqlite")
    with sqlite3.connect(database) as db:
        (count,) = db.execute("SELECT count(*) FROM segments").fetchone()
    assert count == len(_segments(cache_dir))
    warm = api.scan(tree, jobs=1, cache_dir=cache_dir)
    assert warm.files_cached == warm.files_analyzed
    untouched = [f for f in first.findings if f.path != edited.relative_to(tree).as_posix()]
    assert [f for f in warm.findings if f in untouched] == untouched


def test_a_missing_or_short_segment_means_analysing_again(tree: Path, tmp_path: Path) -> None:
    cache_dir = tmp_path / "cache"
    cold = api.scan(tree, jobs=1, cache_dir=cache_dir)
    (segment,) = _segments(cache_dir)
    segment.write_bytes(segment.read_bytes()[:-100])  # the last entry's rows are cut short
    short = api.scan(tree, jobs=1, cache_dir=cache_dir)
    # Its checksum no longer holds: no entry with rows in it is trusted.
    with_rows = {f.path for f in cold.findings}
    assert short.files_cached == short.files_analyzed - len(with_rows) < short.files_analyzed
    assert short.findings == cold.findings
    for path in _segments(cache_dir):
        path.unlink()
    gone = api.scan(tree, jobs=1, cache_dir=cache_dir)
    assert gone.findings == cold.findings
    assert gone.files_cached == short.files_cached  # only files with no rows are still hits


def test_a_merge_drops_entries_whose_segment_is_unreadable(tree: Path, tmp_path: Path) -> None:
    cache_dir = tmp_path / "cache"
    cold = api.scan(tree, jobs=1, cache_dir=cache_dir)
    (segment,) = _segments(cache_dir)
    segment.unlink()
    (database,) = cache_dir.glob("scan-results-*.sqlite")
    with sqlite3.connect(database) as db:
        (with_rows,) = db.execute("SELECT count(*) FROM results WHERE length > 0").fetchone()
        cache.merge_segments(db, cache_dir)
        (left,) = db.execute("SELECT count(*) FROM results WHERE length > 0").fetchone()
    assert with_rows > 0 and left == 0
    assert api.scan(tree, jobs=1, cache_dir=cache_dir).findings == cold.findings


@pytest.mark.skipif(os.name == "nt", reason="Windows keeps an open file from being deleted")
def test_rows_read_before_a_merge_stay_readable_after_it(tree: Path, tmp_path: Path) -> None:
    cache_dir = tmp_path / "cache"
    api.scan(tree, jobs=1, cache_dir=cache_dir)
    held = api.scan(tree, jobs=1, cache_dir=cache_dir)  # its rows point into the segment
    stored = [t.rows for t in held.files if isinstance(t.rows, StoredBytes)]
    assert stored
    before = [bytes(rows) for rows in stored]
    merged = _segments(cache_dir)
    (database,) = cache_dir.glob("scan-results-*.sqlite")
    with sqlite3.connect(database) as db:
        cache.merge_segments(db, cache_dir)
    assert not any(path.exists() for path in merged)
    assert [bytes(rows) for rows in stored] == before


def test_orphan_segments_go_once_old(tree: Path, tmp_path: Path) -> None:
    cache_dir = tmp_path / "cache"
    api.scan(tree, jobs=1, cache_dir=cache_dir)
    old, fresh = cache_dir / "rows-old.bin", cache_dir / "rows-fresh.bin"
    old.write_bytes(b"x")
    fresh.write_bytes(b"y")
    hours_ago = time.time() - 2 * 3600
    os.utime(old, (hours_ago, hours_ago))
    (database,) = cache_dir.glob("scan-results-*.sqlite")
    with sqlite3.connect(database) as db:
        cache.merge_segments(db, cache_dir)
    assert not old.exists() and fresh.exists()  # fresh: maybe another scan's next commit
    assert len(_segments(cache_dir)) == 2


def _segment_of(folder: Path, data: bytes) -> Segment:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "segment.bin"
    path.write_bytes(data)
    return Segment(path)


def test_stored_bytes_read_slice_compare_and_pickle_as_bytes(tmp_path: Path) -> None:
    stored = StoredBytes(_segment_of(tmp_path, b"0123456789"), 2, 6)
    assert bytes(stored) == b"234567" and len(stored) == 6
    assert bytes(stored[1:3]) == b"34" and bytes(stored[4:]) == b"67"
    assert stored == b"234567" and stored != b"2345"
    assert pickle.loads(pickle.dumps(stored)) == b"234567"
    with pytest.raises(OSError, match="ended 2 bytes early"):
        bytes(StoredBytes(stored.segment, 8, 4))


@pytest.mark.parametrize("kernel", [True, False])
def test_copy_to_a_file_and_a_pipe(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kernel: bool
) -> None:
    if not kernel:  # the read-and-write path every platform has
        monkeypatch.setattr(row_store, "_COPY_FILE_RANGE", False)
        monkeypatch.setattr(row_store, "_SENDFILE", False)
    data = os.urandom(3 << 20)
    stored = StoredBytes(_segment_of(tmp_path, data), 5, len(data) - 10)
    with (tmp_path / "out").open("wb") as out:
        out.write(b"head")
        out.flush()
        stored.copy_to(out.fileno())
        out.write(b"tail")
    assert (tmp_path / "out").read_bytes() == b"head" + data[5:-5] + b"tail"
    read_end, write_end = os.pipe()
    reader = subprocess.Popen(
        [sys.executable, "-c", "import sys; sys.stdout.buffer.write(sys.stdin.buffer.read())"],
        stdin=read_end,
        stdout=subprocess.PIPE,
    )
    os.close(read_end)
    stored.copy_to(write_end)
    os.close(write_end)
    assert reader.communicate(timeout=60)[0] == data[5:-5]


def test_coalesced_joins_only_runs_that_lie_together(tmp_path: Path) -> None:
    rows = [b'{"a": 1}', b'{"b": 2}', b'{"c": 3}']
    segment = _segment_of(tmp_path, b"".join(row + SEP for row in rows))
    a = StoredBytes(segment, 0, len(rows[0]))
    b = StoredBytes(segment, a.length + len(SEP), len(rows[1]))
    c = StoredBytes(segment, b.start + b.length + len(SEP), len(rows[2]))
    joined = list(coalesced([b"[", a, SEP, b, SEP, c, b"]"], SEP))
    assert len(joined) == 3 and b"".join(map(bytes, joined)) == b"[" + SEP.join(rows) + b"]"
    # Out of order, or with anything else between: left as they are.
    apart = [a, SEP, c, b"x", b, SEP]
    assert list(coalesced(apart, SEP)) == apart
    other = StoredBytes(_segment_of(tmp_path / "other", b"".join(rows)), 0, 8)
    assert list(coalesced([a, SEP, other], SEP)) == [a, SEP, other]


def test_scans_sharing_a_cache_at_once_each_write_their_own_segments(
    tree: Path, tmp_path: Path
) -> None:
    other = tmp_path / "other"
    shutil.copytree(FIXTURES / "analyze", other, ignore=shutil.ignore_patterns("*.yaml"))
    cache_dir = tmp_path / "cache"
    command = [sys.executable, "-m", "neuron_migrate", "scan", "-f", "json", "-j", "1"]
    running = [
        subprocess.Popen(
            [*command, str(root), "--cache-dir", str(cache_dir)],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        for root in (tree, other, tree)
    ]
    cold = [process.communicate(timeout=120)[0] for process in running]
    assert len(_segments(cache_dir)) >= 2  # one a writer at least: never a shared file
    for root, first in zip((tree, other, tree), cold, strict=True):
        assert _timeless(_scan_cli(root, cache_dir)) == _timeless(first)
        assert _timeless(_scan_cli(root, tmp_path / "fresh")) == _timeless(first)
