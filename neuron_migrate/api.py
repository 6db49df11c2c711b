"""The Python API that the CLI and the tests use."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from neuron_migrate.cache import NoCache, ResultCache, default_cache_dir
from neuron_migrate.discover import discover
from neuron_migrate.engine import ScanSettings, default_jobs, scan_files
from neuron_migrate.findings import FileError, FileResult, Finding
from neuron_migrate.gate import failing, parse_fail_on
from neuron_migrate.matrix import load_matrix, newest_version
from neuron_migrate.source import DEFAULT_MAX_BYTES


@dataclass
class ScanReport:
    root: str
    target: str
    torch_version: str
    findings: list[Finding] = field(default_factory=list)
    errors: list[FileError] = field(default_factory=list)
    skipped: list[dict[str, str]] = field(default_factory=list)
    unmapped_apis: Counter[str] = field(default_factory=Counter)
    files_total: int = 0
    files_analyzed: int = 0
    files_prefiltered: int = 0
    files_cached: int = 0
    elapsed_s: float = 0.0
    fail_on: frozenset[str] = frozenset()
    files_done: int = 0

    @property
    def gate_failures(self) -> list[Finding]:
        return failing(self.findings, self.fail_on)

    @property
    def passed(self) -> bool:
        return not self.gate_failures


def scan(
    path: str | Path,
    *,
    target: str | None = None,
    fail_on: tuple[str, ...] = (),
    jobs: int | None = None,
    use_cache: bool = True,
    cache_dir: Path | None = None,
    exclude: tuple[str, ...] = (),
    max_bytes: int = DEFAULT_MAX_BYTES,
    on_progress: Callable[[int, int], None] | None = None,
) -> ScanReport:
    """Scan a file or a tree. Never executes the scanned code."""
    started = time.perf_counter()
    root = Path(path)
    version = target or newest_version()
    matrix = load_matrix(version)
    statuses = parse_fail_on(fail_on)
    files = list(discover(root, exclude))
    report = ScanReport(
        root=str(root),
        target=matrix.version,
        torch_version=matrix.torch_version,
        files_total=len(files),
        fail_on=statuses,
    )
    cache = ResultCache(cache_dir or default_cache_dir()) if use_cache else NoCache()
    try:
        for result in scan_files(
            files,
            ScanSettings(target=matrix.version, max_bytes=max_bytes),
            jobs=jobs or default_jobs(),
            cache=cache,
        ):
            _collect(report, result)
            if on_progress is not None:
                on_progress(report.files_done, report.files_total)
    finally:
        cache.close()
    report.elapsed_s = time.perf_counter() - started
    return report


def _collect(report: ScanReport, result: FileResult) -> None:
    report.files_done += 1
    if result.error is not None:
        report.errors.append(result.error)
        return
    if result.skipped_by_prefilter:
        report.files_prefiltered += 1
        return
    skipped = result.extra.get("skipped")
    if skipped:
        report.skipped.append({"path": result.path, "reason": str(skipped)})
        return
    report.files_analyzed += 1
    report.files_cached += result.from_cache
    report.findings.extend(result.findings)
    report.unmapped_apis.update(result.extra.get("unmapped_apis", {}))
