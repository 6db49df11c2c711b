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
import warnings
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
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
    return analyze_source(decoded.text, display, target)


def _pool(jobs: int) -> ProcessPoolExecutor:
    methods = multiprocessing.get_all_start_methods()
    # fork shares the already-loaded rules and matrix with the workers at no cost.
    context = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
    return ProcessPoolExecutor(max_workers=jobs, mp_context=context)


def default_jobs() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def scan_files(
    files: Iterable[SourcePath],
    settings: ScanSettings,
    *,
    jobs: int,
    cache: ResultCache | NoCache,
    on_result: Callable[[FileResult], None] | None = None,
) -> Iterator[FileResult]:
    """Scan files, yielding one FileResult per file in input order."""
    digest = config_digest(settings.target)
    context_for(settings.target)  # load (and validate) the data once, before any fork

    def prepared() -> Iterator[tuple[str, FileResult | tuple[bytes, str, str], str]]:
        for source in files:
            data = read_bytes(source.path, source.display, settings.max_bytes)
            if isinstance(data, FileError):
                yield ("done", FileResult(source.display, error=data), "")
                continue
            if not data.strip():
                yield ("done", FileResult(source.display, extra={"skipped": "empty file"}), "")
                continue
            if not may_hold_findings(data):
                yield ("done", FileResult(source.display, skipped_by_prefilter=True), "")
                continue
            key = file_key(digest, source.display, data)
            cached = cache.get(key)
            if cached is not None:
                yield (
                    "done",
                    FileResult(
                        cached.path, cached.findings, cached.error, False, True, cached.extra
                    ),
                    "",
                )
                continue
            yield ("todo", (data, source.display, settings.target), key)

    def finish(result: FileResult) -> FileResult:
        if on_result is not None:
            on_result(result)
        return result

    if jobs <= 1:
        for state, payload, key in prepared():
            if state == "done":
                assert isinstance(payload, FileResult)
                yield finish(payload)
            else:
                assert isinstance(payload, tuple)
                result = _analyze_bytes(payload)
                cache.put(key, result)
                yield finish(result)
        return

    # Keep a bounded window of work in flight so memory does not grow with the tree.
    window = jobs * 8
    with _pool(jobs) as pool:
        pending: deque[tuple[str, object, str]] = deque()

        def drain(limit: int) -> Iterator[FileResult]:
            while len(pending) > limit:
                state, payload, key = pending.popleft()
                if state == "done":
                    assert isinstance(payload, FileResult)
                    yield finish(payload)
                else:
                    result = payload.result()  # type: ignore[attr-defined]
                    cache.put(key, result)
                    yield finish(result)

        for state, payload, key in prepared():
            if state == "todo":
                pending.append((state, pool.submit(_analyze_bytes, payload), key))
            else:
                pending.append((state, payload, key))
            yield from drain(window)
        yield from drain(0)
