"""The per-file scan pipeline and the process pool that runs it.

stat index, else read -> prefilter -> cache lookup (main process) -> decode -> ast.parse ->
sites -> findings -> suppressions -> report rows (workers). Results stream back in input order
as `ScannedFile`s; a failure in one file becomes a `FileError` for that file and never stops
the run.
"""

import os
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from neuron_migrate.gc_tuning import FEW_CYCLES, collect_less
from neuron_migrate.parent_watch import die_with_parent
from neuron_migrate.project.discover import (
    FOLDER_LINK,
    OUTSIDE_LINK,
    OutsideLink,
    SourcePath,
    is_folder_link,
    may_hold_findings,
    unlisted_folder,
)
from neuron_migrate.project.source import DEFAULT_MAX_BYTES, NOT_REGULAR, decode, read_bytes
from neuron_migrate.project_files.kinds import kind_of
from neuron_migrate.scan.findings import FileError, FileResult
from neuron_migrate.scan.scan_data import Context, config_digest, context_for
from neuron_migrate.scan.scanned import ScannedFile, empty, prefiltered, scanned
from neuron_migrate.scan.store import (
    EMPTY,
    NO_FILE_INDEX,
    PREFILTERED,
    FileIndex,
    ResultStore,
    SignatureSource,
    file_key,
)
from neuron_migrate.scan.suppressions import MARKER, parse_suppressions

if TYPE_CHECKING:
    from concurrent.futures import Future, ProcessPoolExecutor


class ScanSettings(NamedTuple):
    target: str
    max_bytes: int = DEFAULT_MAX_BYTES
    data_dir: Path | None = None  # where the data snapshot lives (`scan_data`); None: none

    def context(self) -> Context:
        return context_for(self.target, self.data_dir)


def _analyze_bytes(
    data: bytes, display: str, context: Context, compiled_from: dict[str, str] | None = None
) -> ScannedFile:
    # The analyzer is imported here, not above: a re-scan the cache answers never loads it.
    from neuron_migrate.scan.analysis import analyze_source

    decoded = decode(data, display)
    if isinstance(decoded, FileError):
        return ScannedFile(display, error=decoded)
    kind = (
        None
        if display.endswith(".py") and not display.endswith("setup.py")
        else (kind_of(display, data))
    )
    if kind is not None:
        from neuron_migrate.project_files.scan import project_file_result

        files = project_file_result(decoded.text, display, kind, context)
        if kind != "setup-py":
            return _with_suppressions(files, data, decoded.text, kind)
    result = analyze_source(decoded.text, display, context, compiled_from)
    if kind == "setup-py" and result.error is None and files.error is None:  # its dependencies
        ordered = sorted((*result.findings, *files.findings), key=lambda f: (f.line, f.col))
        result = result._replace(findings=tuple(ordered))
    return _with_suppressions(result, data, decoded.text, None)


def _with_suppressions(result: FileResult, data: bytes, text: str, kind: str | None) -> ScannedFile:
    """The file's findings with its own suppression comments applied: Python comments, or the
    `#` comments of a project file (JSON has none)."""
    whole = result.error is not None and not result.error.partial  # no finding to suppress
    if whole or MARKER not in data or kind == "json":
        return scanned(result)
    if kind is None:
        return scanned(result, parse_suppressions(text, result.path))
    from neuron_migrate.project_files.comments import hash_comment_suppressions

    return scanned(result, hash_comment_suppressions(text, result.path))


def _prefiltered(data: bytes, display: str) -> ScannedFile:
    """A file the prefilter skips still has its suppression comments read: they are unused."""
    if MARKER not in data:
        return prefiltered(display)
    decoded = decode(data, display)
    if isinstance(decoded, FileError):
        return prefiltered(display)
    kind = None if display.endswith(".py") else kind_of(display, data)
    if kind is None:
        return prefiltered(display, parse_suppressions(decoded.text, display))
    if kind == "json":
        return prefiltered(display)
    from neuron_migrate.project_files.comments import hash_comment_suppressions

    return prefiltered(display, hash_comment_suppressions(decoded.text, display))


# The data a pool worker classifies with, handed over once when the worker starts.
_worker_context: Context | None = None


def _start_worker(context: Context, parent: int) -> None:
    global _worker_context
    die_with_parent(parent)  # a scan killed with SIGKILL leaves no worker behind
    _worker_context = context
    collect_less(FEW_CYCLES)


def _analyze_batch(jobs: list[tuple[bytes, str]]) -> list[ScannedFile]:
    assert _worker_context is not None
    return [_analyze_bytes(data, display, _worker_context) for data, display in jobs]


def _pool(jobs: int, context: Context) -> "ProcessPoolExecutor":
    # Imported here: a re-scan that the cache answers starts no pool.
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    methods = multiprocessing.get_all_start_methods()
    # fork hands the loaded data to the workers as it is; spawn pickles it once per worker.
    start = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
    return ProcessPoolExecutor(
        max_workers=jobs,
        mp_context=start,
        initializer=_start_worker,
        initargs=(context, os.getpid()),
    )


def _kept(cache: ResultStore, key: str, result: ScannedFile) -> None:
    """Cache `result`, unless it is a file that ran out of time (a slower moment's verdict)."""
    if result.error is None or result.error.kind != "timeout":
        cache.put(key, result)


def default_jobs() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


# Files go to the workers in batches (one task, one round trip each): per-task overhead is
# paid once per batch rather than once per file. Small enough to keep both cores busy to the end.
BATCH_FILES = 8
BATCH_BYTES = 256 * 1024


class _Batch:
    """Files sent to a worker as one task; `results` holds what came back."""

    __slots__ = ("future", "jobs", "results", "size")

    def __init__(self) -> None:
        self.jobs: list[tuple[bytes, str]] = []
        self.size = 0
        self.future: Future[list[ScannedFile]] | None = None
        self.results: list[ScannedFile] | None = None


# Files whose cache entries are looked up in one query.
LOOKUP_FILES = 256


def scan_files(
    files: Iterable[SourcePath],
    settings: ScanSettings,
    *,
    jobs: int,
    cache: ResultStore,
    on_result: Callable[[ScannedFile], None] | None = None,
    use_stat_index: bool = True,
    taken: SignatureSource | None = None,
) -> Iterator[ScannedFile]:
    """Scan files, yielding one ScannedFile per file in input order.

    The rules, matrix and API map are loaded, and the worker pool started, only once a file
    needs analysis: a re-scan that the cache answers entirely does neither. `use_stat_index`
    false reads every file and leaves the stat index as it is (a few files of a tree, whose
    index a scan of the whole tree keeps). `taken`: stat signatures the caller took before any
    file was read, which the index uses instead of statting those files again.
    """
    digest = config_digest(settings.target)
    index = cache.file_index(digest, taken) if use_stat_index else NO_FILE_INDEX

    def prepared() -> Iterator[_Prepared]:
        for group in _groups(files, LOOKUP_FILES):
            yield from _prepared(group, settings, digest, cache, index)

    def finish(result: ScannedFile) -> ScannedFile:
        if on_result is not None:
            on_result(result)
        return result

    if jobs <= 1:
        for done, job, key in prepared():
            if done is None:
                assert job is not None
                done = _analyze_bytes(*job, settings.context())
                _kept(cache, key, done)
            yield finish(done)
    else:
        yield from _scan_in_pool(prepared(), settings, jobs, cache, finish)
    cache.keep_file_index(digest, index)


_Prepared = tuple[ScannedFile | None, tuple[bytes, str] | None, str]


def _prepared(
    group: list[SourcePath],
    settings: ScanSettings,
    digest: str,
    cache: ResultStore,
    index: FileIndex,
) -> Iterator[_Prepared]:
    """Each file of `group` as a result (an error, a skip, a cache hit) or as a job to analyse,
    in order. A file the stat index recalls is not read, unless its result has left the cache."""
    sigs = [index.signature(s.path) for s in group]
    outcomes = [
        index.recall(s.path, s.display, sig)
        if sig is not None and sig[0] <= settings.max_bytes
        else None
        for s, sig in zip(group, sigs, strict=True)
    ]
    data: list[bytes | FileError | None] = [
        None
        if outcome is not None or is_folder_link(s) or isinstance(s, OutsideLink)
        else read_bytes(s.path, s.display, settings.max_bytes)
        for s, outcome in zip(group, outcomes, strict=True)
    ]
    keys = [
        _key_of(item, digest, source.display) if outcome is None else _recalled_key(outcome)
        for source, outcome, item in zip(group, outcomes, data, strict=True)
    ]
    cached = cache.get_many([key for key in keys if key])
    for source, sig, outcome, item, key in zip(group, sigs, outcomes, data, keys, strict=True):
        display = source.display
        if isinstance(source, OutsideLink):
            yield ScannedFile(display, skipped=OUTSIDE_LINK), None, ""
            continue
        if is_folder_link(source):
            unlisted = unlisted_folder(source)
            if unlisted is None:
                yield ScannedFile(display, skipped=FOLDER_LINK), None, ""
            else:  # an error: --fail-on error fails on code never read
                yield (
                    ScannedFile(display, error=FileError(display, unlisted, "unreadable")),
                    None,
                    "",
                )
            continue
        if outcome == PREFILTERED:
            yield prefiltered(display), None, ""
            continue
        if outcome == EMPTY:
            yield empty(display), None, ""
            continue
        if (hit := cached.get(key)) is not None:
            hit.from_cache = True
            yield hit, None, ""
            if outcome is None:
                index.remember(source.path, display, sig, key)
            continue
        if item is None:  # recalled, but the cache no longer holds the result
            item = read_bytes(source.path, display, settings.max_bytes)
            key = _key_of(item, digest, display)
        if isinstance(item, FileError) and item.kind == NOT_REGULAR:  # a FIFO: never opened
            yield ScannedFile(display, skipped=item.reason), None, ""
        elif isinstance(item, FileError):
            yield ScannedFile(display, error=item), None, ""
        elif _blank(item):
            index.remember(source.path, display, sig, EMPTY)
            yield empty(display), None, ""
        elif not key:
            if MARKER not in item:
                index.remember(source.path, display, sig, PREFILTERED)
            yield _prefiltered(item, display), None, ""
        else:
            index.remember(source.path, display, sig, key)
            yield None, (item, display), key


def _recalled_key(outcome: str) -> str:
    return "" if outcome in (PREFILTERED, EMPTY) else outcome


def _key_of(data: bytes | FileError | None, digest: str, display: str) -> str:
    """The cache key of a file that may hold findings; "" for any other."""
    if isinstance(data, bytes) and not _blank(data) and may_hold_findings(data, display):
        return file_key(digest, display, data)
    return ""


def _blank(data: bytes) -> bool:
    """Empty, or whitespace only (as `not data.strip()`, without copying the file)."""
    return not data or data.isspace()


def _groups(items: Iterable[SourcePath], size: int) -> Iterator[list[SourcePath]]:
    group: list[SourcePath] = []
    for item in items:
        group.append(item)
        if len(group) == size:
            yield group
            group = []
    if group:
        yield group


def _scan_in_pool(
    prepared: Iterator[_Prepared],
    settings: ScanSettings,
    jobs: int,
    cache: ResultStore,
    finish: Callable[[ScannedFile], ScannedFile],
) -> Iterator[ScannedFile]:
    # A bounded window of files in flight, so memory does not grow with the tree; results are
    # yielded in input order. Each pending entry: a finished result, or (batch, index, key).
    window = jobs * BATCH_FILES * 16
    pending: deque[tuple[ScannedFile | None, _Batch | None, int, str]] = deque()
    pool: ProcessPoolExecutor | None = None
    batch = _Batch()

    def submit(current: _Batch) -> None:
        nonlocal pool, batch
        if pool is None:
            pool = _pool(jobs, settings.context())  # loaded once, before the fork
        current.future = pool.submit(_analyze_batch, current.jobs)
        if current is batch:
            batch = _Batch()

    def drain(limit: int) -> Iterator[ScannedFile]:
        nonlocal batch
        while len(pending) > limit:
            done, owner, index, key = pending.popleft()
            if done is not None:
                yield finish(done)
                continue
            assert owner is not None
            if owner.results is None:
                if owner.future is None and pool is None:
                    # Fewer files to analyse than one batch so far (a re-scan after a small
                    # change): not worth starting the workers for.
                    context = settings.context()
                    owner.results = [_analyze_bytes(*job, context) for job in owner.jobs]
                    if owner is batch:
                        batch = _Batch()
                else:
                    if owner.future is None:
                        submit(owner)  # a partial batch at the head of the line: send it now
                    assert owner.future is not None
                    owner.results = owner.future.result()
            result = owner.results[index]
            _kept(cache, key, result)
            yield finish(result)

    try:
        for done, job, key in prepared:
            if job is None:
                pending.append((done, None, 0, ""))
            else:
                batch.jobs.append(job)
                batch.size += len(job[0])
                pending.append((None, batch, len(batch.jobs) - 1, key))
                if len(batch.jobs) >= BATCH_FILES or batch.size >= BATCH_BYTES:
                    submit(batch)
            yield from drain(window)
        yield from drain(0)
    finally:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)


def with_regions_compiled_elsewhere(
    results: list[ScannedFile],
    sources: list[SourcePath],
    settings: ScanSettings,
    cache: ResultStore,
) -> list[ScannedFile]:
    """`results` (of `sources`, in order), each file whose functions or classes other files
    compile analysed again with those regions marked (`scan.cross_file`). Such a result is
    cached under the file's bytes and what compiles it, so a change in a compiling file gives
    another key, never a stale result."""
    compiling = [(r.path, r.compiles) for r in results if r.compiles]
    if not compiling:
        return results
    from neuron_migrate.scan.cross_file import compiled_elsewhere

    targets = compiled_elsewhere(compiling, (r.path for r in results))
    if not targets:
        return results
    digest = config_digest(settings.target)
    out = list(results)
    for index, (source, result) in enumerate(zip(sources, results, strict=True)):
        names = targets.get(result.path)
        if names is None or result.error is not None or result.findings is None:
            continue
        data = read_bytes(source.path, source.display, settings.max_bytes)
        if isinstance(data, FileError):
            continue
        key = file_key(f"{digest}|compiled from {sorted(names.items())!r}", source.display, data)
        hit = cache.get_many([key]).get(key)
        if hit is not None:
            hit.from_cache = True
            out[index] = hit
            continue
        out[index] = _analyze_bytes(data, source.display, settings.context(), names)
        _kept(cache, key, out[index])
    return out


def scan_data(data: bytes, display: str, context: Context) -> ScannedFile:
    """One file's result from bytes in hand (an editor's unsaved buffer), decided as a scan
    without a cache decides it: an empty file is skipped, one the prefilter rules out is not
    parsed, any other is analysed. Its functions compiled by other files are not known here
    (`with_regions_compiled_elsewhere` needs the tree)."""
    if _blank(data):
        return empty(display)
    if not may_hold_findings(data, display):
        return _prefiltered(data, display)
    return _analyze_bytes(data, display, context)
