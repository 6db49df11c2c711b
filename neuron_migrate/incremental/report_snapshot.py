"""The last JSON report of a tree, kept so that a re-scan which finds few files changed splices
their rows into it instead of assembling the whole report again.

A warm re-scan of a tree of thousands of files spends most of its time on steps it takes once
per file: a cache lookup, a copy of the file's rows from wherever its cache entry lies, its
table counted into the summary. With a snapshot, a re-scan stats each file and compares the
signature with the one recorded when the last report was written (the folders first: while
none has changed, neither has the list of files, and the tree is not walked again); it scans
only the files that differ, appeared or vanished, and writes the report from the last one's
rows (one kernel copy per run of unchanged files), the head and tail (summary, lists, gate)
made again from the totals kept beside them. What it writes is what a full scan writes (tests
compare the two byte for byte), but for `elapsed_s`.

It is used for a JSON report with the cache on and no baseline, shard or `--changed-since`;
other scans run in full. A snapshot belongs to the scans of one path from one working folder
(its scope) and holds a digest of everything besides the files that the report depends on (the
tool, the data, the config, the flags): another digest means a full scan, which replaces it.
Signatures follow the stat index's rules (`incremental.stat_index`): a file that had not
settled when it was read is scanned again every time. Past `MAX_SPLICED_FILES` changed files,
the full scan (with its workers) is faster.

While no folder has changed, the files are statted in report order; then the report's first
bytes -- its opening and the rows of the files before the first changed one -- are written by a
thread while the changed files are scanned (`incremental.report_prefix`). Not when a changed
file names `compile`: a compile of what an earlier file defines changes that file's findings
(`scan.cross_file`); and a snapshot of a tree where a file compiles another's code is not
spliced at all (`ScanReport.compiling_files`). A server's spare that read the snapshot ahead
may also have watched its tree since (`incremental.tree_watch`): a re-scan it serves stats
only the files the watch names.
"""

import contextlib
import os
import pickle
import threading
import time
from collections import Counter, deque
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from neuron_migrate.api import (
    Listing,
    ScanPlan,
    ScanReport,
    collect_result,
    scan_planned,
    scanned,
    select_files,
)
from neuron_migrate.digests import cache_digest
from neuron_migrate.errors import CacheError
from neuron_migrate.incremental import sealed
from neuron_migrate.incremental.cache import ResultCache, default_cache_dir
from neuron_migrate.incremental.report_prefix import PrefixWriter, Rows, row_runs
from neuron_migrate.incremental.row_store import (
    DamagedSegment,
    Segment,
    StoredBytes,
    after,
    file_checksum,
    write_all,
)
from neuron_migrate.incremental.stat_index import (
    Signature,
    Taken,
    settled,
    settled_before,
    signature,
    signature_of,
)
from neuron_migrate.pieces import HeldBytes, Piece
from neuron_migrate.project.discover import SourcePath, sources_then_notebooks
from neuron_migrate.report.json_report import (
    around_findings,
    framed,
    json_chunks,
    listed_rows,
    opening,
)
from neuron_migrate.report.output import Sink
from neuron_migrate.scan.engine import ScanSettings
from neuron_migrate.scan.file_findings import ROW_SEPARATOR, FileFindings, Kind
from neuron_migrate.scan.scan_data import config_digest

if TYPE_CHECKING:
    from neuron_migrate.incremental.tree_watch import TreeWatch
    from neuron_migrate.scan.scanned import ScannedFile

# More changed files than this: a full scan, whose workers share the analysis.
MAX_SPLICED_FILES = 32
# A splice writes the changed files' rows to a file of their own; past this many row files, the
# snapshot's rows are copied into one.
MAX_ROW_FILES = 16
# The layout of a snapshot; another layout is never read.
_LAYOUT = 5
_FOLDER = "report-snapshots"
# A row file no snapshot names is deleted once this old (until then it may be another scan's).
_ORPHAN_AGE_S = 3600.0
_NEW_ROWS = os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)


class Detail(NamedTuple):
    """What one file gave the last report, besides its rows and unmapped APIs."""

    outcome: str  # "error", "prefiltered", "skipped" or "analyzed"
    kinds: tuple[tuple[Kind, int], ...]  # its reported findings, counted by kind
    failing: int  # how many of them fail the gate


Unmapped = tuple[tuple[str, int], ...]  # a file's unmapped APIs, in its order


class Snapshot(NamedTuple):
    """One column a field, a row a file, in the order the scan took them: columns of plain
    values load (and store) in a few milliseconds where records of nested tuples take tens."""

    settings: str  # `settings_digest` of the scans it serves
    report: ScanReport  # the lists and counts, `files` empty, the tables counted `elsewhere`
    displays: list[str]  # report paths
    paths: list[str]  # as opened
    signatures: list[Signature | None]  # None: not settled when read, never trusted
    details: list[bytes]  # pickled `Detail`s, read only for the files that changed
    unmapped: list[Unmapped]
    rows: list[Rows | None]  # None: no findings
    order: list[int]  # the files' indices in report order (by display path)
    # The folders listed to find the files, and their signatures (None: not settled). While
    # none has changed, neither has the list of files in it: a re-scan need not list them.
    folders: list[str]
    folder_signatures: list[Signature | None]

    def detail(self, index: int) -> Detail:
        return Detail(*sealed.loads_payload(self.details[index]))


class FileEntry(NamedTuple):
    """One file's row of a snapshot."""

    path: str
    signature: Signature | None
    detail: bytes
    unmapped: Unmapped
    rows: Rows | None


def _entry(
    path: str,
    sig: Signature | None,
    result: "ScannedFile",
    table: FileFindings | None,
    failing: int,
) -> FileEntry:
    detail = (_outcome(result), _counted(table), failing)
    read = result.error is None or result.error.partial
    unmapped = tuple(result.unmapped_apis.items()) if read else ()
    return FileEntry(path, sig, pickle.dumps(detail, pickle.HIGHEST_PROTOCOL), unmapped, None)


def _columns(snapshot: Snapshot, entries: dict[str, FileEntry]) -> Snapshot:
    """`snapshot` with these files' entries."""
    values = entries.values()
    displays = list(entries)
    return Snapshot(
        snapshot.settings,
        snapshot.report,
        displays,
        [e.path for e in values],
        [e.signature for e in values],
        [e.detail for e in values],
        [e.unmapped for e in values],
        [e.rows for e in values],
        sorted(range(len(displays)), key=displays.__getitem__),
        snapshot.folders,
        snapshot.folder_signatures,
    )


def _entries_after(
    snapshot: Snapshot, files: list[SourcePath], at: dict[str, int], fresh: dict[str, FileEntry]
) -> dict[str, FileEntry]:
    """The entries of `files`, in the order a scan takes them: `fresh` ones for the files
    scanned now, the snapshot's for the others."""
    entries = {}
    for source in _scan_order(files):
        display = source.display
        entry = fresh.get(display)
        if entry is None:
            index = at[display]
            entry = FileEntry(
                snapshot.paths[index],
                snapshot.signatures[index],
                snapshot.details[index],
                snapshot.unmapped[index],
                snapshot.rows[index],
            )
        entries[display] = entry
    return entries


def settings_digest(plan: ScanPlan) -> str:
    """Everything besides the files that a JSON report depends on."""
    parts = (
        _LAYOUT,
        config_digest(plan.target),  # the tool's version, the target, the rules and matrices
        os.getcwd(),
        str(plan.root),
        str(plan.base),
        plan.exclude,
        plan.max_bytes,
        plan.config,
        plan.policy,
    )
    return cache_digest(repr(_canonical(parts)).encode()).hexdigest()


def _canonical(value: Any) -> Any:
    """`value` with its sets sorted and paths as text: a repr that is the same in every
    process (a set's order follows the string hash, which differs from one process to the
    next)."""
    if isinstance(value, frozenset | set):
        return tuple(sorted(map(_canonical, value), key=repr))
    if isinstance(value, tuple | list):
        return tuple(map(_canonical, value))
    if isinstance(value, Path):
        return str(value)
    return value


class SnapshotFolder:
    """The snapshots beside a result cache: for each scope, `SCOPE.pickle` and the row files
    `SCOPE-TOKEN.rows` it names. The snapshot is sealed (`incremental.sealed`) with the
    checksums of its row files, each checked when first opened, before a byte of it is copied
    into a report: a damaged one makes the scan run in full."""

    def __init__(self, cache_dir: Path, plan: ScanPlan) -> None:
        sealed.check_folder(cache_dir)
        self.folder = cache_dir / _FOLDER
        sealed.check_folder(self.folder)  # each folder of the cache, as its root
        self.checksums: dict[str, int] = {}  # of the row files, by name
        self.scope = cache_digest(f"{os.getcwd()}\0{plan.root}".encode()).hexdigest()[:32]
        self._opened: dict[str, Segment] = {}
        self._created: set[str] = set()  # row files this process wrote
        # What changed in the tree since the snapshot `load` gave, when a spare watched it.
        self.watch: TreeWatch | None = None

    def load(self, settings: str) -> Snapshot | None:
        """The scope's snapshot if it was written with these settings and can be read."""
        path = os.path.abspath(self.folder / f"{self.scope}.pickle")
        used.append((path, os.getcwd()))
        kept, watch = _taken_ahead(path)
        if kept is None:
            kept = _read_snapshot(path)  # None: none, damaged or another build's: scan in full
        if kept is None or kept[0].settings != settings:
            if watch is not None:
                watch.close()
            return None
        self.watch = watch
        snapshot, self.checksums = kept[0], dict(kept[1])
        return snapshot

    def segment(self, name: str) -> Segment:
        found = self._opened.get(name)
        if found is None:
            checksum = self.checksums.get(name)
            if checksum is None:
                raise DamagedSegment(f"row file {name} has no recorded checksum")
            found = self._opened[name] = Segment(self.folder / name, checksum)
        return found

    def stored(self, name: str, start: int, length: int) -> StoredBytes:
        """The bytes at `start` of the row file `name`; OSError when it is shorter."""
        segment = self.segment(name)
        if start + length > segment.size:
            raise OSError(f"row file {name} is shorter than its snapshot says")
        return StoredBytes(segment, start, length)

    def new_rows(self) -> tuple[str, int]:
        """A new row file: its name and a descriptor open to write it."""
        self.folder.mkdir(parents=True, exist_ok=True)
        name = f"{self.scope}-{os.urandom(8).hex()}.rows"
        self._created.add(name)
        return name, os.open(self.folder / name, _NEW_ROWS, 0o644)

    def store(self, snapshot: Snapshot, replaced_rows: set[str]) -> None:
        """Write `snapshot` for the scope (atomically), then delete the row files that only the
        snapshot it replaces named (`replaced_rows`) or this process wrote, and orphans old
        enough to be no other scan's."""
        tmp = self.folder / f".{self.scope}.{os.urandom(8).hex()}.tmp"
        live = _row_files(snapshot)
        checksums = {name: self.checksums[name] for name in live if name in self.checksums}
        # Without a memo: a snapshot holds no cycles and little sharing, and noting each of its
        # tens of thousands of objects made pickling it three times slower (the longest step
        # left of a re-scan after its report is written).
        data = sealed.dumps((snapshot, checksums), fast=True)
        try:
            with open(tmp, "wb") as handle:
                handle.write(data)
            os.replace(tmp, self.folder / f"{self.scope}.pickle")
        finally:
            with contextlib.suppress(OSError):
                tmp.unlink()
        dropped = replaced_rows | self._created
        now = time.time()
        for path in self.folder.glob(f"{self.scope}-*.rows"):
            if path.name in live:
                continue
            with contextlib.suppress(OSError):  # held open on Windows: a later scan deletes it
                if path.name in dropped or now - path.stat().st_mtime > _ORPHAN_AGE_S:
                    path.unlink()


# The snapshot files this process looked for last, each with the working folder it looked from
# (the snapshot's paths are relative to it): what a server's spare reads ahead next.
used: deque[tuple[str, str]] = deque(maxlen=8)


# A snapshot as stored: it, and the checksums of its row files by name.
Kept = tuple[Snapshot, dict[str, int]]


def _read_snapshot(path: str) -> Kept | None:
    """The snapshot in the file at `path`; None when missing, damaged or another build's."""
    kept = sealed.read(path)
    if not isinstance(kept, tuple) or len(kept) != 2:
        return None
    snapshot, checksums = kept
    if not isinstance(snapshot, Snapshot) or not isinstance(checksums, dict):
        return None
    return snapshot, checksums


class _Ahead(NamedTuple):
    """A snapshot read before a scan asked for it, with the signature its file had, and the
    watch of its tree when one was asked for and could be had."""

    signature: Signature
    snapshot: Snapshot
    checksums: dict[str, int]
    watch: "TreeWatch | None"

    def forget(self) -> None:
        if self.watch is not None:
            self.watch.close()


# Snapshots read ahead, by file: a server's spare reads those its last commands used while it
# waits for the next (`read_ahead`). A scan takes one only while its file still has that
# signature. A snapshot file is never written in place, only replaced (by rename), so another
# snapshot has another signature.
_read_ahead: dict[str, _Ahead] = {}


def read_ahead(
    listed: Iterable[tuple[str, str]],
    *,
    watch: bool = False,
    stop: Callable[[], bool] | None = None,
) -> bool:
    """Read the snapshots at the `listed` paths ahead (each with the working folder its paths
    are relative to), unless read already and unchanged since; forget the others. With
    `watch`, watch each one's tree (`incremental.tree_watch`), unless `stop` says to give
    up meanwhile: then leave that snapshot for the next call, and return False."""
    kept: dict[str, _Ahead] = {}
    complete = True
    for path, cwd in listed:
        known = _read_ahead.pop(path, None)
        if known is not None:
            if known.signature == signature(path):
                kept[path] = known
                continue
            known.forget()
        try:
            sig = signature_of(os.stat(path))
        except OSError:  # none (yet): the scan reads what is there
            continue
        stored = _read_snapshot(path)
        if stored is None or signature(path) != sig:  # not a snapshot, or replaced meanwhile
            continue
        snapshot, checksums = stored
        tree = _watched(snapshot, cwd, stop) if watch else None
        if tree is None and watch and stop is not None and stop():
            complete = False  # given up for a command: watched next time, if there is one
            continue
        kept[path] = _Ahead(sig, snapshot, checksums, tree)
    for forgotten in _read_ahead.values():
        forgotten.forget()
    _read_ahead.clear()
    _read_ahead.update(kept)
    return complete


def _watched(snapshot: Snapshot, cwd: str, stop: Callable[[], bool] | None) -> "TreeWatch | None":
    from neuron_migrate.incremental.tree_watch import (
        TreeWatch,  # ctypes: only a server's spare loads it
    )

    return TreeWatch.start(
        cwd,
        snapshot.paths,
        snapshot.signatures,
        snapshot.folders,
        snapshot.folder_signatures,
        stop,
    )


def drain_watches() -> None:
    """Take in what the watches of the snapshots read ahead have seen (the kernel's queue of
    events is bounded: past it, a watch is lost)."""
    for ahead in _read_ahead.values():
        if ahead.watch is not None:
            ahead.watch.drain()


def held_ahead() -> list[dict[str, object]]:
    """The trees whose snapshots this process holds ahead, for `server status`: each one's
    root (as scanned), its files, and whether a watch vouches for it."""
    return [
        {
            "root": ahead.snapshot.report.root,
            "files": len(ahead.snapshot.paths),
            "watched": ahead.watch is not None and ahead.watch.changed() is not None,
        }
        for ahead in _read_ahead.values()
    ]


def _taken_ahead(path: str) -> "tuple[Kept | None, TreeWatch | None]":
    """The snapshot at `path` as read ahead, if the file has not changed since, and the watch
    of its tree, if one watched it from this working folder."""
    known = _read_ahead.pop(path, None)
    if known is None or signature(path) != known.signature:
        if known is not None:
            known.forget()
        return None, None
    watch = known.watch
    if watch is not None and watch.cwd != os.getcwd():
        watch.close()
        watch = None
    return (known.snapshot, known.checksums), watch


def _row_files(snapshot: Snapshot) -> set[str]:
    return {rows[0] for rows in snapshot.rows if rows is not None}


class Recorder:
    """Observes a full scan (`api.ScanObserver`): each file's signature before it is read,
    then what its result gave the report."""

    def __init__(self) -> None:
        self._sources: dict[str, tuple[str, Signature | None]] = {}
        self.results: dict[str, tuple[ScannedFile, FileFindings | None]] = {}
        self.folders: list[str] = []
        self.folder_signatures: list[Signature | None] = []

    def signatures(self) -> Taken:
        return Taken()

    def started(self, listing: Listing) -> None:
        taken = listing.taken
        assert taken is not None  # from `signatures`, or the caller's listing
        for source in listing.files:
            sig = settled(taken.signature(source.path), taken.before)
            self._sources[source.display] = (source.path, sig)
        # Taken after the folders were listed, but a change since then is too recent to be
        # settled: such a folder is listed again next time.
        self.folders = listing.folders
        self.folder_signatures = _folder_signatures(listing.folders)

    def collected(self, result: "ScannedFile", table: FileFindings | None) -> None:
        self.results[result.path] = (result, table)

    def entries(self, report: ScanReport) -> dict[str, FileEntry]:
        """Each file's entry, in the order the scan took them, with no rows yet."""
        entries = {}
        for display, (result, table) in self.results.items():
            path, sig = self._sources[display]
            failing = report.failing_in(table) if table is not None else 0
            entries[display] = _entry(path, sig, result, table, failing)
        return entries


def _folder_signatures(folders: list[str]) -> list[Signature | None]:
    before = settled_before()
    return [settled(signature(folder), before) for folder in folders]


def _outcome(result: "ScannedFile") -> str:
    if result.error is not None and not result.error.partial:  # else its other cells count
        return "error"
    if result.prefiltered:
        return "prefiltered"
    return "skipped" if result.skipped else "analyzed"


def _counted(table: FileFindings | None) -> tuple[tuple[Kind, int], ...]:
    return tuple(zip(table.kinds, table.kind_counts, strict=True)) if table else ()


# Scans the changed sources and notebooks: each with its result, sources first.
ScanChanged = Callable[[list[SourcePath]], list[tuple[SourcePath, "ScannedFile"]]]


class Written(NamedTuple):
    """A report, the pieces that write it as JSON, and the snapshot that holds its rows (None:
    the one it was spliced from, unchanged)."""

    report: ScanReport
    pieces: list[Piece]
    snapshot: Snapshot | None


def recorded(
    report: ScanReport, recorder: Recorder, settings: str, folder: SnapshotFolder
) -> Written:
    """The report of a full scan, written through a new snapshot: every file's rows go to one
    row file, and the report copies them from there."""
    empty = Snapshot(
        settings,
        report,
        *([], [], [], [], [], [], []),
        recorder.folders,
        recorder.folder_signatures,
    )
    snapshot = _columns(empty, recorder.entries(report))
    snapshot = snapshot._replace(report=_totals_of(report, _unmapped(snapshot.unmapped)))
    at = _positions(snapshot)
    _with_rows(report, snapshot, at, report.files, folder)
    return Written(report, _report_pieces(report, snapshot, folder), snapshot)


def _totals_of(report: ScanReport, unmapped: Counter[str]) -> ScanReport:
    """What a snapshot keeps of `report`: its lists and counts, its tables counted, not held,
    and `unmapped`, its files' unmapped APIs counted in their order (`_unmapped`)."""
    kept = report.counted_elsewhere()
    kept.unmapped_apis = Counter(unmapped)
    return kept


class Changes(NamedTuple):
    """How the tree differs from a snapshot's."""

    changed: dict[str, tuple[SourcePath, Signature | None]]  # and appeared: with signatures
    vanished: list[str]
    same_files: bool  # the same files as the snapshot's (so in the same order)


def _changes(
    snapshot: Snapshot, files: list[SourcePath], at: dict[str, int], taken: Taken
) -> Changes | None:
    """The files that changed, appeared or vanished since `snapshot`, with the signatures the
    changed ones have now (None if not settled); None when more than `MAX_SPLICED_FILES`. The
    signatures it takes are kept in `taken`."""
    changed: dict[str, tuple[SourcePath, Signature | None]] = {}
    appeared = 0
    signatures, paths = snapshot.signatures, snapshot.paths
    for source in files:
        index = at.get(source.display)
        sig = taken.signature(source.path)
        if index is None:
            appeared += 1
        elif sig is not None and signatures[index] == sig and paths[index] == source.path:
            continue
        changed[source.display] = (source, settled(sig, taken.before))
        if len(changed) > MAX_SPLICED_FILES:
            return None
    vanished: list[str] = []
    if len(files) - appeared != len(at):
        seen = {source.display for source in files}
        vanished = [display for display in snapshot.displays if display not in seen]
    if len(changed) + len(vanished) > MAX_SPLICED_FILES:
        return None
    return Changes(changed, vanished, not appeared and not vanished)


def _edits(snapshot: Snapshot, taken: Taken, prefix: PrefixWriter | None) -> list[int] | None:
    """The indices of the snapshot's files that changed, when its files are the tree's (no
    folder changed), so that only edits are possible; None past `MAX_SPLICED_FILES`. The
    files are statted in report order; then `prefix` is told how far they are all as they
    were (`_confirm`)."""
    signatures, paths, order = snapshot.signatures, snapshot.paths, snapshot.order
    edited: list[int] = []
    for index in order:
        sig = taken.signature(paths[index])
        if sig is not None and signatures[index] == sig:
            continue
        edited.append(index)
        if len(edited) > MAX_SPLICED_FILES:
            return None
    _confirm(snapshot, edited, prefix)
    return edited


def _confirm(snapshot: Snapshot, edited: list[int], prefix: PrefixWriter | None) -> None:
    """Tell `prefix` the files before the first edited one (in report order) are as they
    were, unless an edited file now names `compile`: a compile of what another file defines
    changes that file's findings (`scan.cross_file`), so no row may be written ahead."""
    if prefix is None:
        return
    for index in edited:
        try:
            with open(snapshot.paths[index], "rb") as file:
                if b"compile" in file.read():
                    return
        except OSError:
            continue  # gone or unreadable: it names nothing
    order = snapshot.order
    prefix.confirm(min((order.index(i) for i in edited), default=len(order)))


def _edits_among(
    snapshot: Snapshot, candidates: frozenset[int], taken: Taken, prefix: PrefixWriter | None
) -> list[int] | None:
    """`_edits`, where only the files at `candidates` (indices) may have changed: a watch of
    the tree has seen no event for the others, nor any change of a folder."""
    signatures, paths = snapshot.signatures, snapshot.paths
    edited = []
    for index in candidates:
        sig = taken.signature(paths[index])
        if sig is None or signatures[index] != sig:
            edited.append(index)
    if len(edited) > MAX_SPLICED_FILES:
        return None
    _confirm(snapshot, edited, prefix)
    return edited


def _edited(snapshot: Snapshot, edited: list[int], taken: Taken) -> tuple[Changes, dict[str, int]]:
    """The changes of the snapshot's own files at `edited` (indices), with the signatures
    they have now (None if not settled); and their indices, by display path."""
    indices = sorted(edited)  # the order a scan takes them
    sources = [SourcePath(snapshot.paths[i], snapshot.displays[i]) for i in indices]
    changed = {s.display: (s, settled(taken.signature(s.path), taken.before)) for s in sources}
    return Changes(changed, [], True), {s.display: i for s, i in zip(sources, indices, strict=True)}


def spliced(
    snapshot: Snapshot,
    plan: ScanPlan,
    folder: SnapshotFolder,
    scan_changed: ScanChanged,
    started: float,
    prefix: PrefixWriter | None = None,
    watch: "TreeWatch | None" = None,
) -> Written | Listing:
    """The report of a re-scan made from `snapshot` (which it changes), the files that
    changed scanned by `scan_changed`; when too many changed, or a row file is gone, the
    files as it listed them, for a full scan. While no folder has changed, `prefix` is told
    how far the files are unchanged. A `watch` of the tree since the snapshot, when it can
    tell, names the only files that may have changed."""
    taken = Taken()
    folders = snapshot.folders
    relisted = False  # and the folders' signatures changed: the snapshot is stored again
    candidates = None
    if watch is not None:  # used once: the snapshot it watched for is changed now
        candidates = watch.changed()
        watch.close()
    files: list[SourcePath] | None = None  # listed again: the snapshot's are not the tree's
    found: Changes | None = None
    if candidates is not None or _no_folder_changed(snapshot):  # its files are the tree's
        if candidates is not None:
            edited = _edits_among(snapshot, candidates, taken, prefix)
        else:
            edited = _edits(snapshot, taken, prefix)
        if edited is not None:
            found, at = _edited(snapshot, edited, taken)  # the positions of the changed only
    else:
        folders = []
        files = select_files(plan, folders=folders)
        folder_signatures = _folder_signatures(folders)
        if (folders, folder_signatures) != (snapshot.folders, snapshot.folder_signatures):
            snapshot = snapshot._replace(folders=folders, folder_signatures=folder_signatures)
            relisted = True
        at = _positions(snapshot)
        found = _changes(snapshot, files, at, taken)
    if found is None:  # too many changed
        return _given_up(snapshot, files, folders, taken)
    report = snapshot.report
    dropped = {*found.changed, *found.vanished}
    _count_out(report, snapshot, at, dropped)
    # What is left came from the snapshot; the files scanned now count themselves.
    report.files_cached = report.files_analyzed
    # The snapshot's files' unmapped APIs, counted (which scanning the changed files adds to).
    unmapped = report.unmapped_apis
    report.unmapped_apis = Counter()
    unmapped_before = [snapshot.unmapped[at[display]] for display in sorted(dropped & at.keys())]
    try:
        if dropped:
            tables, fresh = _scanned_now(report, found.changed, scan_changed)
            if report.compiling_files:  # a compile of another file's code: scan in full
                return _given_up(snapshot, files, folders, taken)
            if found.same_files:
                _replace_entries(snapshot, at, fresh)
                unmapped_now = [snapshot.unmapped[at[display]] for display in sorted(dropped)]
            else:
                assert files is not None  # listed again: files appeared or vanished
                snapshot = _columns(snapshot, _entries_after(snapshot, files, at, fresh))
                at = _positions(snapshot)
                unmapped_now = None
            _with_rows(report, snapshot, at, tables, folder)
            # Counted again over every file only when a changed file's unmapped APIs changed.
            if unmapped_now != unmapped_before:
                unmapped = _unmapped(snapshot.unmapped)
            snapshot = snapshot._replace(report=_totals_of(report, unmapped))
        report.unmapped_apis = unmapped
        report.files_total = report.files_done = len(snapshot.paths)
        report.elapsed_s = time.perf_counter() - started
        pieces = _report_pieces(report, snapshot, folder)
    except OSError:  # a row file gone or cut short: scan in full
        return _given_up(snapshot, files, folders, taken)
    return Written(report, pieces, snapshot if dropped or relisted else None)


def _given_up(
    snapshot: Snapshot, files: list[SourcePath] | None, folders: list[str], taken: Taken
) -> Listing:
    """What a full scan is handed when a splice gives up: the files as listed (the snapshot's,
    when the splice listed none) and the signatures it took."""
    return Listing(files if files is not None else _snapshot_files(snapshot), folders, taken)


def _positions(snapshot: Snapshot) -> dict[str, int]:
    """Each file's index in `snapshot`, by display path."""
    return {display: index for index, display in enumerate(snapshot.displays)}


def _no_folder_changed(snapshot: Snapshot) -> bool:
    """Whether every folder listed to find the snapshot's files is as it was then (a file
    added, removed or renamed in a folder changes the folder's mtime)."""
    for folder, recorded in zip(snapshot.folders, snapshot.folder_signatures, strict=True):
        if recorded is None or signature(folder) != recorded:
            return False
    return True


def _snapshot_files(snapshot: Snapshot) -> list[SourcePath]:
    return list(map(SourcePath, snapshot.paths, snapshot.displays))


def _scanned_now(
    report: ScanReport,
    changed: dict[str, tuple[SourcePath, Signature | None]],
    scan_changed: ScanChanged,
) -> tuple[list[FileFindings], dict[str, FileEntry]]:
    """Scan the changed files and count them into `report`: their tables, and their entries
    (no rows yet)."""
    sources = [source for source, _ in changed.values()]
    tables: list[FileFindings] = []
    fresh: dict[str, FileEntry] = {}
    for source, result in scan_changed(sources):
        table = collect_result(report, result)
        if table is not None:
            tables.append(table)
        failing = report.failing_in(table) if table is not None else 0
        sig = changed[source.display][1]
        fresh[source.display] = _entry(source.path, sig, result, table, failing)
    return tables, fresh


def _replace_entries(snapshot: Snapshot, at: dict[str, int], fresh: dict[str, FileEntry]) -> None:
    for display, entry in fresh.items():
        index = at[display]
        snapshot.paths[index] = entry.path
        snapshot.signatures[index] = entry.signature
        snapshot.details[index] = entry.detail
        snapshot.unmapped[index] = entry.unmapped
        snapshot.rows[index] = entry.rows


def _scan_order(files: list[SourcePath]) -> Iterator[SourcePath]:
    """The order a scan takes `files` (`api.scanned`)."""
    for part in sources_then_notebooks(files):
        yield from part


def _count_out(
    report: ScanReport, snapshot: Snapshot, at: dict[str, int], displays: set[str]
) -> None:
    """Take what the files at `displays` gave the report, by `snapshot`, out of it (a file
    not in the snapshot gave it nothing)."""
    assert report.elsewhere is not None
    for detail in (snapshot.detail(at[d]) for d in displays if d in at):
        if detail.outcome == "prefiltered":
            report.files_prefiltered -= 1
        elif detail.outcome == "analyzed":
            report.files_analyzed -= 1
            if detail.kinds:
                report.elsewhere.add(detail.kinds, detail.failing, sign=-1)
    if displays:
        report.errors = [e for e in report.errors if e.path not in displays]
        report.skipped = [s for s in report.skipped if s["path"] not in displays]
        report.unused_suppressions = [
            u for u in report.unused_suppressions if u.path not in displays
        ]
        report.suppressed = [s for s in report.suppressed if s.finding.path not in displays]


def _unmapped(per_file: Iterable[Unmapped]) -> Counter[str]:
    """The unmapped APIs over all files, counted in the files' order as a scan counts them
    (the report lists ties in the order of first use)."""
    counts: dict[str, int] = {}
    for unmapped in per_file:
        for api, count in unmapped:  # a plain dict: Counter.update costs microseconds a call
            counts[api] = counts.get(api, 0) + count
    return Counter(counts)


def _with_rows(
    report: ScanReport,
    snapshot: Snapshot,
    at: dict[str, int],
    tables: list[FileFindings],
    folder: SnapshotFolder,
) -> None:
    """Put the rows of `tables` (the files scanned now) in a new row file, and all rows in one
    when they would span more than `MAX_ROW_FILES`; `snapshot.rows` says where. Rows in a row
    file are written in report order with ROW_SEPARATOR between, as the report lists them: a
    run of them is copied at once."""
    rows = snapshot.rows
    if tables:
        scanned = sorted(tables, key=_path)
        _new_row_file(folder, rows, ((at[t.path], listed_rows(report, t)) for t in scanned))
    if len({place[0] for place in rows if place is not None}) <= MAX_ROW_FILES:
        return

    def stored(index: int) -> list[Piece]:
        place = rows[index]
        assert place is not None  # in report order: it has rows
        return [folder.stored(*place)]

    _new_row_file(folder, rows, ((index, stored(index)) for index in _report_order(snapshot)))


def _new_row_file(
    folder: SnapshotFolder,
    rows: list[Rows | None],
    files: Iterable[tuple[int, Iterable[Piece]]],
) -> None:
    """Write each file's rows (`files`: its index, its pieces) to a new row file, in order,
    ROW_SEPARATOR between, and set `rows[index]` to where they went. The pieces of a file are
    taken before its place is set (a stored piece reads the old one)."""
    name, fd = folder.new_rows()
    try:
        start = 0
        for position, (index, pieces) in enumerate(files):
            if position:
                write_all(fd, ROW_SEPARATOR)
                start += len(ROW_SEPARATOR)
            length = _write_pieces(fd, pieces)
            rows[index] = (name, start, length)
            start += length
        # Read back: most of its bytes were copied by the kernel, never seen by this process.
        folder.checksums[name] = file_checksum(fd, start)
    finally:
        os.close(fd)


def _report_order(snapshot: Snapshot) -> list[int]:
    """The files with findings, in the order the report lists them (by path)."""
    rows = snapshot.rows
    return [index for index in snapshot.order if rows[index] is not None]


def _path(table: FileFindings) -> str:
    return table.path


def _report_pieces(report: ScanReport, snapshot: Snapshot, folder: SnapshotFolder) -> list[Piece]:
    """The JSON report (`json_report.json_chunks`'s text), its rows copied from row files a
    run of files at a time. OSError when a row file is shorter than the snapshot says."""
    head, tail = around_findings(report)
    return list(framed(head, tail, row_runs(_report_order(snapshot), snapshot.rows, folder.stored)))


def _write_pieces(fd: int, pieces: Iterable[Piece]) -> int:
    """Append `pieces` to `fd`; how many bytes they were."""
    length = 0
    for piece in pieces:
        if isinstance(piece, HeldBytes):
            piece.copy_to(fd)
        else:
            write_all(fd, piece)
        length += len(piece)
    return length


def scan_json(
    plan: ScanPlan,
    *,
    output: Path | None,
    jobs: int | None = None,
    cache_dir: Path | None = None,
    on_progress: Callable[[int, int], None] | None = None,
) -> ScanReport:
    """Scan by `plan` and write the JSON report to `output` (stdout when None), spliced into
    the last report when few files changed; the report (when spliced, its tables are only the
    files scanned now)."""
    started = time.perf_counter()
    cache_dir = cache_dir or default_cache_dir()
    settings = settings_digest(plan)
    folder = SnapshotFolder(cache_dir, plan)
    last = folder.load(settings)
    if last is not None and last.report.compiling_files:
        # Its files' findings may depend on one another (a compile in one file of what
        # another defines): any edit may change a file that did not change.
        last = None
    last_rows = _row_files(last) if last is not None else set()  # before a splice changes it
    changed = _ChangedFiles(plan, cache_dir)
    try:
        with Sink(output) as sink:
            outcome, skip = None, 0  # `skip`: the bytes of the report written ahead
            if last is not None:
                outcome, skip = _spliced_writing_ahead(last, plan, folder, changed, started, sink)
            if isinstance(outcome, Written):
                written = outcome
            else:
                recorder = Recorder()
                report = scan_planned(
                    plan,
                    jobs=jobs,
                    cache_dir=cache_dir,
                    on_progress=on_progress,
                    observer=recorder,
                    listing=outcome,  # as the splice that gave up listed them
                )
                try:
                    written = recorded(report, recorder, settings, folder)
                except OSError:  # no room for the snapshot: the report as a scan writes it
                    sink.write(after(json_chunks(report), skip))
                    return report
            if written.snapshot is None:
                sink.write(after(written.pieces, skip))
                return written.report
            # The snapshot is stored, and the changed files' results cached, each on a thread
            # of its own while the report is written: pickling holds the interpreter, copying
            # the rows (`copy_file_range`) and syncing to disk do not. The rows it copies are
            # open already, so the row files that storing deletes stay readable.
            storing = [
                threading.Thread(target=_store_quietly, args=(folder, written.snapshot, last_rows)),
                threading.Thread(target=changed.close),
            ]
            for thread in storing:
                thread.start()
            try:
                sink.write(after(written.pieces, skip))
            finally:
                for thread in storing:
                    thread.join()
            return written.report
    finally:
        changed.close()  # when no snapshot was stored


def _spliced_writing_ahead(
    last: Snapshot,
    plan: ScanPlan,
    folder: SnapshotFolder,
    scan_changed: ScanChanged,
    started: float,
    sink: Sink,
) -> tuple[Written | Listing, int]:
    """`spliced`, and the first bytes of the report written to `sink` meanwhile (the opening
    and the rows of the files before the first changed one: the start of the report that a
    splice or a full scan writes); with how many bytes that was."""
    prefix = PrefixWriter(sink, opening(last.report), last.order, last.rows, folder.stored)
    try:
        outcome = spliced(last, plan, folder, scan_changed, started, prefix, folder.watch)
    except BaseException:
        with contextlib.suppress(BaseException):  # the error that matters is this one
            prefix.stop()
        raise
    return outcome, prefix.stop()


def _store_quietly(folder: SnapshotFolder, snapshot: Snapshot, replaced_rows: set[str]) -> None:
    with contextlib.suppress(OSError):  # without it, the next scan runs in full
        folder.store(snapshot, replaced_rows)


class _ChangedFiles:
    """Scans the changed files of a spliced re-scan in this process (too few for workers),
    through the result cache. What they add to it is written by `close`, which the re-scan
    calls while its report is copied (`scan_json`): a cache that cannot be written then only
    costs a later scan their analysis."""

    def __init__(self, plan: ScanPlan, cache_dir: Path) -> None:
        self._plan = plan
        self._cache_dir = cache_dir
        self._cache: ResultCache | None = None

    def __call__(self, files: list[SourcePath]) -> "list[tuple[SourcePath, ScannedFile]]":
        cache = self._cache = self._cache or ResultCache(self._cache_dir)
        settings = ScanSettings(self._plan.target, self._plan.max_bytes, cache.directory)
        found = scanned(files, settings, jobs=1, cache=cache, use_stat_index=False)
        return list(zip(_scan_order(files), found, strict=True))

    def close(self) -> None:
        cache, self._cache = self._cache, None
        if cache is not None:
            with contextlib.suppress(CacheError):
                cache.close()
