"""The stat index: a re-scan does not read a file whose stat signature is the one recorded,
and reads every file whose bytes may have changed since."""

from __future__ import annotations

import os
import shutil
import sqlite3
import time
from pathlib import Path

import pytest

from neuron_migrate import api
from neuron_migrate.incremental import stat_index
from neuron_migrate.project.source import read_bytes
from neuron_migrate.scan import engine
from neuron_migrate.scan.findings import FileError

FIXTURES = Path(__file__).parents[2] / "fixtures"
XLA = "import torch_xla.core.xla_model as xm\nxm.mark_step()\n"


def _count_reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The display paths of the files the engine reads, as it reads them."""
    seen: list[str] = []

    def counting(path: str, display: str, max_bytes: int) -> bytes | FileError:
        seen.append(display)
        return read_bytes(path, display, max_bytes)

    monkeypatch.setattr(engine, "read_bytes", counting)
    return seen


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The files the engine reads. Every file counts as settled as soon as it is written (the
    real rule, 3 s, has a test of its own)."""
    monkeypatch.setattr(stat_index, "SETTLED_NS", -(10**12))
    return _count_reads(monkeypatch)


def _rows(report: api.ScanReport) -> list[tuple[str, int, int, str, str]]:
    return sorted((f.path, f.line, f.col, f.code, f.status) for f in report.findings)


def _counts(report: api.ScanReport) -> tuple[int, int, int, int]:
    return (
        report.files_total,
        report.files_analyzed,
        report.files_prefiltered,
        len(report.errors) + len(report.skipped),
    )


def test_an_unchanged_tree_is_rescanned_without_reading_a_file(
    tmp_path: Path, reads: list[str]
) -> None:
    tree, cache = tmp_path / "tree", tmp_path / "cache"
    shutil.copytree(FIXTURES / "analyze", tree)
    (tree / "plain.py").write_text("def add(a, b):\n    return a + b\n")
    (tree / "__init__.py").write_text("")
    (tree / "blank.py").write_text("\n   \n")
    first = api.scan(tree, jobs=1, cache_dir=cache)
    assert len(reads) == first.files_total
    reads.clear()
    again = api.scan(tree, jobs=1, cache_dir=cache)
    assert reads == []
    assert _rows(again) == _rows(first) and _counts(again) == _counts(first)
    assert again.files_cached == again.files_analyzed > 0
    assert again.files_prefiltered >= 1
    assert again.skipped == first.skipped
    assert {s["path"] for s in again.skipped} >= {"__init__.py", "blank.py"}


def test_an_empty_file_that_gets_code_is_read_and_analysed(
    tmp_path: Path, reads: list[str]
) -> None:
    tree, cache = tmp_path / "tree", tmp_path / "cache"
    tree.mkdir()
    (tree / "m.py").write_text("")
    assert api.scan(tree, jobs=1, cache_dir=cache).skipped == [
        {"path": "m.py", "reason": "empty file"}
    ]
    (tree / "m.py").write_text(XLA)
    reads.clear()
    report = api.scan(tree, jobs=1, cache_dir=cache)
    assert reads == ["m.py"] and report.skipped == []
    assert [f.api for f in report.findings] == ["torch_xla.core.xla_model.mark_step"]


def test_a_rewrite_that_restores_size_and_mtime_is_read_again(
    tmp_path: Path, reads: list[str]
) -> None:
    # ctime is in the signature: `touch -d` and `rsync -t` put an old mtime back, not the ctime.
    old, new = XLA + "xm.mark_step()  # a\n", XLA + "xm.xla_device()   #\n"
    assert len(old) == len(new)
    target = tmp_path / "a.py"
    target.write_text(old)
    cache = tmp_path / "cache"
    first = api.scan(tmp_path, jobs=1, cache_dir=cache)
    before = os.stat(target)
    time.sleep(0.05)  # past the filesystem's timestamp granularity
    target.write_text(new)
    os.utime(target, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert (os.stat(target).st_size, os.stat(target).st_mtime_ns) == (
        before.st_size,
        before.st_mtime_ns,
    )
    reads.clear()
    again = api.scan(tmp_path, jobs=1, cache_dir=cache)
    assert reads == ["a.py"]
    assert _rows(again) == _rows(api.scan(tmp_path, jobs=1, use_cache=False)) != _rows(first)


def test_a_file_written_just_now_is_not_recorded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A second write within the timestamp granularity could leave the signature as it was, so
    a file changed less than 3 s before a scan is read again by the next one."""
    (tmp_path / "a.py").write_text(XLA)
    cache = tmp_path / "cache"
    reads = _count_reads(monkeypatch)
    api.scan(tmp_path, jobs=1, cache_dir=cache)
    api.scan(tmp_path, jobs=1, cache_dir=cache)
    assert reads == ["a.py", "a.py"]


def test_a_lower_size_limit_still_reports_a_recalled_file_too_large(
    tmp_path: Path, reads: list[str]
) -> None:
    (tmp_path / "a.py").write_text(XLA)
    cache = tmp_path / "cache"
    api.scan(tmp_path, jobs=1, cache_dir=cache)
    again = api.scan(tmp_path, jobs=1, cache_dir=cache, max_bytes=10)
    assert [e.kind for e in again.errors] == ["too_large"]


def test_a_recalled_file_whose_result_left_the_cache_is_analysed_again(
    tmp_path: Path, reads: list[str]
) -> None:
    (tmp_path / "a.py").write_text(XLA)
    cache = tmp_path / "cache"
    first = api.scan(tmp_path, jobs=1, cache_dir=cache)
    (database,) = cache.glob("scan-results-*.sqlite")
    with sqlite3.connect(database) as db:
        db.execute("DELETE FROM results")
    reads.clear()
    again = api.scan(tmp_path, jobs=1, cache_dir=cache)
    assert reads == ["a.py"]
    assert _rows(again) == _rows(first) and again.files_cached == 0


def test_records_are_per_display_path(tmp_path: Path, reads: list[str]) -> None:
    """A key covers the display path: scanning the parent folder recalls no record."""
    sub = tmp_path / "pkg"
    sub.mkdir()
    (sub / "a.py").write_text(XLA)
    cache = tmp_path / "cache"
    api.scan(sub, jobs=1, cache_dir=cache)
    reads.clear()
    parent = api.scan(tmp_path, jobs=1, cache_dir=cache, exclude=("cache",))
    assert reads == ["pkg/a.py"]
    assert {f.path for f in parent.findings} == {"pkg/a.py"}


def test_a_deleted_file_drops_out_and_a_new_one_is_read(tmp_path: Path, reads: list[str]) -> None:
    (tmp_path / "a.py").write_text(XLA)
    (tmp_path / "b.py").write_text(XLA)
    cache = tmp_path / "cache"
    api.scan(tmp_path, jobs=1, cache_dir=cache, exclude=("cache",))
    (tmp_path / "b.py").unlink()
    (tmp_path / "c.py").write_text(XLA)
    reads.clear()
    again = api.scan(tmp_path, jobs=1, cache_dir=cache, exclude=("cache",))
    assert reads == ["c.py"]
    assert {f.path for f in again.findings} == {"a.py", "c.py"}


def test_an_unreadable_index_is_ignored() -> None:
    index = stat_index.StatIndex(b"not a pickle")
    assert index.recall("a.py", "a.py", (1, 2, 3, 4, 5)) is None
    assert not index.changed()
