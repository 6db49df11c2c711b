"""The per-file scan pipeline and the process pool that runs it.

read -> prefilter -> cache lookup (main process) -> decode -> ast.parse -> sites -> findings
(workers). Results stream back in input order; a failure in one file becomes a `FileError` for
that file and never stops the run.
"""

from __future__ import annotations

import ast
import hashlib
import multiprocessing
import os
import pickle
import warnings
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass, replace
from functools import lru_cache

from neuron_migrate import __version__
from neuron_migrate.analyzer.classify import Context, classify_sites
from neuron_migrate.analyzer.sites import find_sites
from neuron_migrate.cache import NoCache, ResultCache, file_key
from neuron_migrate.discover import SourcePath, may_hold_findings
from neuron_migrate.findings import FileError, FileResult
from neuron_migrate.matrix import load_matrix
from neuron_migrate.matrix.api_map import load_api_map
from neuron_migrate.resources import matrix_dir, rules_dir
from neuron_migrate.ruleset import load_ruleset
from neuron_migrate.source import DEFAULT_MAX_BYTES, decode, read_bytes, syntax_error
from neuron_migrate.suppressions import MARKER, parse_suppressions


@dataclass(frozen=True)
class ScanSettings:
    target: str
    max_bytes: int = DEFAULT_MAX_BYTES


@lru_cache(maxsize=4)
def context_for(target: str) -> Context:
    matrix = load_matrix(target)
    torch_minor = ".".join(matrix.torch_version.split(".")[:2])
    return Context(matrix=matrix, api_map=load_api_map(torch_minor), rules=load_ruleset())


@lru_cache(maxsize=4)
def config_digest(target: str) -> str:
    """A digest of everything besides the file that a result depends on."""
    digest = hashlib.sha256(__version__.encode() + b"\0" + target.encode())
    for folder in (rules_dir(), matrix_dir()):
        for path in sorted(folder.rglob("*.yaml")):
            digest.update(str(path.relative_to(folder)).encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()


def analyze_source(text: str, display: str, target: str) -> FileResult:
    """Findings for one decoded file. Never raises for bad input."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SyntaxWarning)  # invalid escapes in user code
            tree = ast.parse(text, filename=display)
    except SyntaxError as exc:
        return FileResult(display, error=syntax_error(exc, display))
    except (ValueError, RecursionError, MemoryError) as exc:
        return FileResult(display, error=FileError(display, f"cannot parse: {exc}", "syntax"))
    try:
        sites = find_sites(text, tree)
        classified = classify_sites(context_for(target), display, text, sites)
    except RecursionError:
        return FileResult(
            display, error=FileError(display, "too deeply nested to analyze", "internal")
        )
    except Exception as exc:  # a bug of ours: report it for this file, keep going
        reason = f"internal error: {type(exc).__name__}: {exc}".splitlines()[0]
        return FileResult(display, error=FileError(display, reason, "internal"))
    return FileResult(
        display,
        findings=tuple(classified.findings),
        extra={"unmapped_apis": dict(classified.unmapped_apis)} if classified.unmapped_apis else {},
    )


def _analyze_bytes(job: tuple[bytes, str, str]) -> FileResult:
    data, display, target = job
    decoded = decode(data, display)
    if isinstance(decoded, FileError):
        return FileResult(display, error=decoded)
    return _with_suppressions(analyze_source(decoded.text, display, target), data, decoded.text)


def _with_suppressions(result: FileResult, data: bytes, text: str | None) -> FileResult:
    """The file's suppression comments ride with its result (and its cache entry), so the main
    process never reads the file a second time to find them."""
    if result.error is not None or MARKER not in data:
        return result
    if text is None:
        decoded = decode(data, result.path)
        if isinstance(decoded, FileError):
            return result
        text = decoded.text
    suppressions = tuple(parse_suppressions(text, result.path))
    return replace(result, extra={**result.extra, "suppressions": suppressions})


def _analyze_batch(jobs: list[tuple[bytes, str, str]]) -> list[bytes]:
    """Worker side: results come back pickled, so that the main process unpickles each once and
    stores the same bytes in the cache instead of pickling the result again."""
    return [pickle.dumps(_analyze_bytes(job), protocol=pickle.HIGHEST_PROTOCOL) for job in jobs]


def _pool(jobs: int) -> ProcessPoolExecutor:
    methods = multiprocessing.get_all_start_methods()
    # fork shares the already-loaded rules and matrix with the workers at no cost.
    context = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
    return ProcessPoolExecutor(max_workers=jobs, mp_context=context)


def default_jobs() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


# Files go to the workers in batches (one task, one round trip each): per-task overhead is
# paid once per batch rather than once per file. Small enough to keep both cores busy to the end.
BATCH_FILES = 8
BATCH_BYTES = 256 * 1024


class _Batch:
    """Files sent to a worker as one task; `blobs` holds the pickled results once back."""

    __slots__ = ("blobs", "future", "jobs", "size")

    def __init__(self) -> None:
        self.jobs: list[tuple[bytes, str, str]] = []
        self.size = 0
        self.future: Future[list[bytes]] | None = None
        self.blobs: list[bytes] | None = None


def scan_files(
    files: Iterable[SourcePath],
    settings: ScanSettings,
    *,
    jobs: int,
    cache: ResultCache | NoCache,
    on_result: Callable[[FileResult], None] | None = None,
) -> Iterator[FileResult]:
    """Scan files, yielding one FileResult per file in input order.

    The rules, matrix and API map are loaded, and the worker pool started, only once a file
    needs analysis: a re-scan that the cache answers entirely does neither.
    """
    digest = config_digest(settings.target)

    def prepared() -> Iterator[tuple[FileResult | None, tuple[bytes, str, str] | None, str]]:
        for source in files:
            data = read_bytes(source.path, source.display, settings.max_bytes)
            if isinstance(data, FileError):
                yield FileResult(source.display, error=data), None, ""
                continue
            if not data.strip():
                yield FileResult(source.display, extra={"skipped": "empty file"}), None, ""
                continue
            if not may_hold_findings(data):
                skipped = FileResult(source.display, skipped_by_prefilter=True)
                yield _with_suppressions(skipped, data, None), None, ""
                continue
            key = file_key(digest, source.display, data)
            cached = cache.get(key)
            if cached is not None:
                yield (
                    FileResult(
                        cached.path, cached.findings, cached.error, False, True, cached.extra
                    ),
                    None,
                    "",
                )
                continue
            yield None, (data, source.display, settings.target), key

    def finish(result: FileResult) -> FileResult:
        if on_result is not None:
            on_result(result)
        return result

    if jobs <= 1:
        for done, job, key in prepared():
            if done is not None:
                yield finish(done)
            else:
                assert job is not None
                context_for(settings.target)
                result = _analyze_bytes(job)
                cache.put(key, result)
                yield finish(result)
        return
    yield from _scan_in_pool(prepared(), settings.target, jobs, cache, finish)


def _scan_in_pool(
    prepared: Iterator[tuple[FileResult | None, tuple[bytes, str, str] | None, str]],
    target: str,
    jobs: int,
    cache: ResultCache | NoCache,
    finish: Callable[[FileResult], FileResult],
) -> Iterator[FileResult]:
    # A bounded window of files in flight, so memory does not grow with the tree; results are
    # yielded in input order. Each pending entry: a finished result, or (batch, index, key).
    window = jobs * BATCH_FILES * 4
    pending: deque[tuple[FileResult | None, _Batch | None, int, str]] = deque()
    pool: ProcessPoolExecutor | None = None
    batch = _Batch()

    def submit(current: _Batch) -> None:
        nonlocal pool, batch
        if pool is None:
            context_for(target)  # load (and validate) the data once, before the fork
            pool = _pool(jobs)
        current.future = pool.submit(_analyze_batch, current.jobs)
        if current is batch:
            batch = _Batch()

    def drain(limit: int) -> Iterator[FileResult]:
        while len(pending) > limit:
            done, owner, index, key = pending.popleft()
            if done is not None:
                yield finish(done)
                continue
            assert owner is not None
            if owner.blobs is None:
                if owner.future is None:
                    submit(owner)  # a partial batch at the head of the line: send it now
                assert owner.future is not None
                owner.blobs = owner.future.result()
            blob = owner.blobs[index]
            result = pickle.loads(blob)
            cache.put_pickled(key, blob)
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
