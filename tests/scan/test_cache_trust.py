"""The cache is untrusted input: what is read from it can run no code, and a damaged cache
never gives a wrong report -- every format, and the gate's exit code, are a --no-cache scan's."""

from __future__ import annotations

import os
import pickle
import shutil
import sqlite3
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from neuron_migrate.incremental import sealed, stat_index
from neuron_migrate.matrix import newest_version
from neuron_migrate.scan import scan_data
from tests.cli import invoke
from tests.scan.cli_helpers import run_cli

FIXTURES = Path(__file__).parents[2] / "fixtures"
FORMATS = ("terminal", "json", "sarif", "junit", "github", "markdown", "csv", "html")
# Each kind of file a cache folder holds.
KINDS = (
    "scan-results-*.sqlite",
    "rows-*.bin",
    "data-*.pickle",
    "report-snapshots/*.pickle",
    "report-snapshots/*.rows",
)


class Payload:
    """A pickle that runs a command when loaded: what an attacker would put in a cache."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return os.system, (f"touch {self.marker}",)


def _tree(root: Path) -> Path:
    tree = root / "tree"
    shutil.copytree(FIXTURES / "analyze", tree / "analyze", ignore=shutil.ignore_patterns("*.yaml"))
    shutil.copytree(FIXTURES / "projects" / "mixed_status", tree / "mixed_status")
    (tree / "broken.py").write_text("import torch\ndef f(:\n")
    return tree


def _cleared() -> None:
    """Forget the data this process loaded: the next scan reads the cache folder again."""
    scan_data.context_for.cache_clear()
    scan_data.header_for.cache_clear()


def _normal(text: str) -> str:
    """The report but for what differs from run to run and between cached and plain scans."""
    drop = ('"elapsed_s"', "from_cache", "from cache", "files_cached", "elapsed", "cache_dir")
    return "".join(
        line for line in text.splitlines(keepends=True) if not any(word in line for word in drop)
    )


def _scan(tree: Path, form: str, *cache: str) -> tuple[int, str]:
    _cleared()
    result = invoke(["scan", "--format", form, *cache, str(tree)])
    assert "Traceback" not in result.stderr, result.stderr
    return result.exit_code, _normal(result.stdout)


def _primed(tree: Path, cache: Path) -> None:
    """A cache holding every kind of file."""
    for form in ("json", "terminal"):
        code, _ = _scan(tree, form, "--cache-dir", str(cache))
        assert code in (0, 1)
    for kind in KINDS:
        assert list(cache.glob(kind)), kind


def _xor_every_50th(path: Path) -> None:
    data = bytearray(path.read_bytes())
    for at in range(0, len(data), 50):
        data[at] ^= 0xFF
    path.write_bytes(bytes(data))


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, dict[str, tuple]]]:
    tree = _tree(tmp_path_factory.mktemp("plain"))
    yield tree, {form: _scan(tree, form, "--no-cache") for form in FORMATS}


@pytest.fixture(scope="module")
def primed(tmp_path_factory: pytest.TempPathFactory, plain: tuple[Path, dict]) -> Path:
    """A cache of the plain tree holding every kind of file, primed once: each test that damages
    one works on a copy (two scans fewer a fuzzed example)."""
    cache = tmp_path_factory.mktemp("primed")
    _primed(plain[0], cache)
    return cache


def test_the_cached_data_and_snapshot_read_back(tmp_path: Path) -> None:
    """Every class the cache holds is one the data-only reader loads: else every scan would
    load the data afresh and never splice."""
    tree, cache = _tree(tmp_path), tmp_path / "cache"
    _primed(tree, cache)
    (data,) = cache.glob("data-*.pickle")
    _cleared()
    context = scan_data.context_for(newest_version(), cache)
    assert isinstance(context, scan_data.Context)
    assert data.stat().st_mtime_ns == next(cache.glob("data-*.pickle")).stat().st_mtime_ns
    from neuron_migrate.incremental import report_snapshot

    (snapshot,) = cache.glob("report-snapshots/*.pickle")
    assert report_snapshot._read_snapshot(str(snapshot)) is not None


def test_a_pickle_payload_in_any_cache_file_is_never_run(tmp_path: Path) -> None:
    tree, cache, marker = _tree(tmp_path), tmp_path / "cache", tmp_path / "pwned"
    _primed(tree, cache)
    payload = pickle.dumps(Payload(marker))
    for kind in ("data-*.pickle", "report-snapshots/*.pickle"):
        for path in cache.glob(kind):
            path.write_bytes(payload)
    (db,) = cache.glob("scan-results-*.sqlite")
    with sqlite3.connect(db) as connection:
        connection.execute("UPDATE results SET meta = ?", (payload,))
        connection.execute("UPDATE stat_indexes SET records = ?", (payload,))
    # Also sealed with a valid checksum: data only still refuses it.
    (snapshot,) = cache.glob("report-snapshots/*.pickle")
    snapshot.write_bytes(sealed.seal(payload))
    for form in ("json", "terminal"):
        code, err = run_cli(["scan", "-f", form, "--cache-dir", str(cache), str(tree)])[::2]
        assert code in (0, 1), err
    assert not marker.exists()


def test_the_unpickler_loads_plain_data_classes_only() -> None:
    import importlib

    for module, name in sealed.DATA_CLASSES:
        found = getattr(importlib.import_module(module), name)
        assert isinstance(found, type)
        # Nothing of the pickle's choosing runs: no __setstate__, no property that sets.
        assert not any("__setstate__" in vars(klass) for klass in found.__mro__[:-1])
        for attr in vars(found).values():
            assert not (isinstance(attr, property) and attr.fset is not None), (module, name)
    for module in sealed.DATA_MODULES:  # what they hold besides named tuples is not loaded
        loaded = importlib.import_module(module)
        for name, value in vars(loaded).items():
            own = isinstance(value, type) and value.__module__ == module
            if own and (module, name) not in sealed.DATA_CLASSES:
                payload = pickle.dumps(value)
                assert (sealed.loads_payload(payload) is value) == sealed.is_named_tuple(value)
    assert sealed.loads(sealed.seal(pickle.dumps(os.system))) is None
    assert sealed.loads(sealed.seal(pickle.dumps(scan_data.config_digest))) is None
    assert sealed.loads(sealed.dumps((1, "a", b"b", None, [2.0], {"k": frozenset({3})}))) == (
        1,
        "a",
        b"b",
        None,
        [2.0],
        {"k": frozenset({3})},
    )


@pytest.mark.skipif(not hasattr(os, "geteuid"), reason="modes are POSIX")
def test_a_cache_folder_others_may_write_is_refused(tmp_path: Path) -> None:
    tree, cache = _tree(tmp_path), tmp_path / "cache"
    cache.mkdir()
    cache.chmod(0o777)
    for form in ("json", "terminal"):
        result = invoke(["scan", "-f", form, "--cache-dir", str(cache), str(tree)])
        assert result.exit_code == 2
        assert "writable by other users" in result.stderr
        assert len(result.stderr.strip().splitlines()) == 1
    assert os.listdir(cache) == []
    assert stat.S_IMODE(cache.stat().st_mode) == 0o777


@pytest.mark.parametrize("kind", KINDS)
def test_a_damaged_cache_file_gives_the_plain_report_in_every_format(
    tmp_path: Path, kind: str, plain: tuple[Path, dict[str, tuple]], primed: Path
) -> None:
    tree, expected = plain
    damaged = tmp_path / "damaged"
    shutil.copytree(primed, damaged)
    for path in damaged.glob(kind):
        _xor_every_50th(path)
    for form in FORMATS:
        cache = tmp_path / form
        shutil.copytree(damaged, cache)
        assert _scan(tree, form, "--cache-dir", str(cache)) == expected[form], form


def test_an_edited_row_is_never_reported(tmp_path: Path, plain: tuple[Path, dict]) -> None:
    """The attack of the issue: one stored row's status edited, the summary left alone."""
    tree, expected = plain
    cache = tmp_path / "cache"
    _primed(tree, cache)
    for kind in ("rows-*.bin", "report-snapshots/*.rows"):
        for path in cache.glob(kind):
            path.write_bytes(path.read_bytes().replace(b'"unsupported"', b'"native_____"'))
    for form in ("json", "sarif", "terminal"):
        assert _scan(tree, form, "--cache-dir", str(cache)) == expected[form], form


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    kind=st.sampled_from(KINDS),
    at=st.floats(min_value=0, max_value=1, exclude_max=True),
    junk=st.binary(min_size=1, max_size=64),
    form=st.sampled_from(("json", "terminal", "sarif")),
)
def test_random_bytes_in_a_cache_file_never_give_a_traceback_or_a_wrong_report(
    tmp_path_factory: pytest.TempPathFactory,
    plain: tuple[Path, dict],
    primed: Path,
    kind: str,
    at: float,
    junk: bytes,
    form: str,
) -> None:
    tree, expected = plain
    cache = tmp_path_factory.mktemp("fuzzed")
    shutil.copytree(primed, cache, dirs_exist_ok=True)
    for path in cache.glob(kind):
        data = bytearray(path.read_bytes())
        where = int(at * len(data))
        data[where : where + len(junk)] = junk
        path.write_bytes(bytes(data))
    # in a process of its own, as a user runs it: nothing another test left in this one counts
    code, out, err = run_cli(["scan", "--format", form, "--cache-dir", str(cache), str(tree)])
    assert "Traceback" not in err, err
    assert (code, _normal(out)) == expected[form], err


def test_a_truncated_database_is_discarded_and_rebuilt(
    tmp_path: Path, plain: tuple[Path, dict]
) -> None:
    tree, expected = plain
    cache = tmp_path / "cache"
    _primed(tree, cache)
    (db,) = cache.glob("scan-results-*.sqlite")
    db.write_bytes(db.read_bytes()[: db.stat().st_size // 2])
    for _ in range(2):  # the first rebuilds it, the next is answered by it
        assert _scan(tree, "terminal", "--cache-dir", str(cache)) == expected["terminal"]
    with sqlite3.connect(db) as connection:
        (count,) = connection.execute("SELECT count(*) FROM results").fetchone()
    assert count > 0


@pytest.mark.parametrize(
    ("form", "at", "value"),
    [
        ("terminal", 20, 1),  # reserved bytes a page: malformed, found on writing the stat index
        ("sarif", 20, 1),
        ("terminal", 18, 255),  # the write version: SQLite opens it read-only
        ("terminal", 47, 255),  # the schema format: "unsupported file format"
    ],
)
def test_a_database_header_damaged_so_that_sqlite_refuses_writes_is_rebuilt(
    tmp_path: Path,
    plain: tuple[Path, dict],
    primed: Path,
    form: str,
    at: int,
    value: int,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A byte of the header overwritten so that SQLite reads the database but refuses to write
    it, or refuses to open it: that is damage, as a damaged row is, and the database is made
    afresh -- never a "cannot write the cache" error (exit 2, no report). The fuzz test below
    hit the first as random bytes, only where the stat index had to be written (in whole-suite
    runs the tree's files were old enough to be settled, which they were not when it was
    primed); deleting the kept one makes every run write it."""
    monkeypatch.setattr(stat_index, "SETTLED_NS", -(10**12))  # every file settled: indexed
    tree, expected = plain
    cache = tmp_path / "cache"
    shutil.copytree(primed, cache)
    (db,) = cache.glob("scan-results-*.sqlite")
    with sqlite3.connect(db) as connection:  # none kept: the scan writes its stat index
        connection.execute("DELETE FROM stat_indexes")
    connection.close()
    data = bytearray(db.read_bytes())
    data[at] = value
    db.write_bytes(bytes(data))
    for _ in range(2):  # the first rebuilds it, the next is answered by it
        assert _scan(tree, form, "--cache-dir", str(cache)) == expected[form]
    with sqlite3.connect(db) as connection:
        assert connection.execute("PRAGMA integrity_check").fetchone() == ("ok",)


def test_a_stored_name_that_is_not_utf8_is_damage_not_a_busy_database(
    tmp_path: Path, plain: tuple[Path, dict]
) -> None:
    """A byte overwritten inside a text value makes SQLite raise an OperationalError (as it does
    for a lock or a full disk) that says the text cannot be decoded: the database is damaged."""
    tree, expected = plain
    cache = tmp_path / "cache"
    _primed(tree, cache)
    (db,) = cache.glob("scan-results-*.sqlite")
    with sqlite3.connect(db) as connection:
        connection.execute("UPDATE segments SET name = CAST(X'726f7773ff2e62696e' AS TEXT)")
    for form in ("json", "terminal"):
        assert _scan(tree, form, "--cache-dir", str(cache)) == expected[form], form


@pytest.mark.parametrize(
    "damage",
    [
        "ALTER TABLE segments RENAME COLUMN name TO nome",  # "no such column: s.name"
        "ALTER TABLE segments RENAME TO segmentz",  # "no such table: segments"
    ],
)
def test_a_damaged_schema_is_damage_not_a_busy_database(
    tmp_path: Path, plain: tuple[Path, dict], damage: str
) -> None:
    """A byte overwritten in the schema makes a column or table vanish: SQLite raises an
    OperationalError (as for a lock) that names what is missing. The database is damaged."""
    tree, expected = plain
    cache = tmp_path / "cache"
    _primed(tree, cache)
    (db,) = cache.glob("scan-results-*.sqlite")
    with sqlite3.connect(db) as connection:
        connection.execute(damage)
    for form in ("json", "terminal"):
        assert _scan(tree, form, "--cache-dir", str(cache)) == expected[form], form


def test_a_read_only_cache_is_read_without_writing_and_said_once(
    tmp_path: Path, plain: tuple[Path, dict], monkeypatch: pytest.MonkeyPatch
) -> None:
    from neuron_migrate.incremental import cache as result_cache

    tree, _ = plain
    cache = tmp_path / "cache"
    _primed(tree, cache)
    (tree / "new.py").write_text("import torch_xla\n")
    before = {path: path.stat().st_mtime_ns for path in cache.rglob("*")}
    # As a user who may not write it (the tests may run as root, whom modes do not stop).
    monkeypatch.setattr(result_cache, "may_write", lambda folder, path: False)
    monkeypatch.setattr(result_cache, "_said", set())
    _cleared()
    for form in ("terminal", "sarif"):
        result = invoke(["scan", "-f", form, "--cache-dir", str(cache), str(tree)])
        assert result.exit_code == 1 and "Traceback" not in result.stderr
        assert result.stderr.count("read-only") == (1 if form == "terminal" else 0)
    assert {path: path.stat().st_mtime_ns for path in cache.rglob("*")} == before
    (tree / "new.py").unlink()


def test_a_merge_that_fails_costs_nothing_but_the_merge(
    tmp_path: Path, plain: tuple[Path, dict], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The database found damaged (or locked) only when segments are merged at the end."""
    from neuron_migrate.incremental import cache as result_cache

    def damaged(*args: object) -> None:
        raise sqlite3.DatabaseError("database disk image is malformed")

    tree, expected = plain
    monkeypatch.setattr(result_cache, "MAX_SEGMENTS", -1)
    monkeypatch.setattr(result_cache, "merge_segments", damaged)
    assert _scan(tree, "terminal", "--cache-dir", str(tmp_path / "c")) == expected["terminal"]
