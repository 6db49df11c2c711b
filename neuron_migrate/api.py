"""The Python API that the CLI and the tests use."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from neuron_migrate.baseline import Baseline
from neuron_migrate.cache import NoCache, ResultCache, default_cache_dir
from neuron_migrate.config import Config, Policy, make_policy, resolve_config
from neuron_migrate.discover import NOTEBOOK_SUFFIX, SourcePath, discover
from neuron_migrate.engine import ScanSettings, default_jobs, scan_files
from neuron_migrate.findings import FileError, FileResult, Finding
from neuron_migrate.matrix import load_matrix, resolve_version
from neuron_migrate.matrix.api_map import load_api_map
from neuron_migrate.source import DEFAULT_MAX_BYTES
from neuron_migrate.suppressions import (
    SuppressedFinding,
    Suppression,
    apply_suppressions,
)


@dataclass
class ScanReport:
    root: str
    target: str
    torch_version: str
    findings: list[Finding] = field(default_factory=list)  # reported: not suppressed
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
    # How much of torch's public API the API->aten map covers: (mapped, considered).
    api_map_coverage: tuple[int, int] = (0, 0)
    base: str = "."  # the folder report paths are relative to, as given
    suppressed: list[SuppressedFinding] = field(default_factory=list)
    unused_suppressions: list[Suppression] = field(default_factory=list)
    baseline: Baseline | None = None
    policy: Policy | None = None  # per-path fail-on overrides; None: `fail_on` everywhere
    shard: tuple[int, int] | None = None
    changed_since: str | None = None
    config_path: str | None = None

    _fail_on_by_path: dict[str, frozenset[str]] = field(
        default_factory=dict, repr=False, compare=False
    )

    def fail_on_for(self, path: str) -> frozenset[str]:
        if self.policy is None:
            return self.fail_on
        # Per-path overrides are globs: match each path once, not once per finding.
        cached = self._fail_on_by_path.get(path)
        if cached is None:
            cached = self._fail_on_by_path[path] = self.policy.fail_on_for(path)
        return cached

    def is_new(self, finding: Finding) -> bool:
        """True unless a baseline is in use and already holds this finding."""
        return self.baseline is None or finding.fingerprint not in self.baseline.fingerprints

    @property
    def new_findings(self) -> list[Finding]:
        return [f for f in self.findings if self.is_new(f)]

    def fails(self, finding: Finding) -> bool:
        return self.is_new(finding) and finding.status in self.fail_on_for(finding.path)

    @property
    def gate_failures(self) -> list[Finding]:
        return [f for f in self.findings if self.fails(f)]

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
    config: Config | None = None,
    select: tuple[str, ...] = (),
    ignore: tuple[str, ...] = (),
    baseline: Baseline | None = None,
    changed_since: str | None = None,
    shard: tuple[int, int] | None = None,
) -> ScanReport:
    """Scan a file or a tree. Never executes the scanned code.

    `config` defaults to the nearest pyproject.toml with a [tool.neuron-migrate] table (pass
    `Config()` for none); the other arguments, when given, override it. `exclude` globs are
    relative to `path`; the config's are relative to its own folder."""
    started = time.perf_counter()
    root = Path(path)
    if config is None:
        config = resolve_config(root)
    base = root if root.is_dir() else root.parent
    policy = make_policy(config, base, fail_on=fail_on, select=select, ignore=ignore)
    matrix = load_matrix(resolve_version(target or config.target))
    files = _select_files(root, exclude, policy, changed_since, shard)
    report = ScanReport(
        root=str(root),
        target=matrix.version,
        torch_version=matrix.torch_version,
        files_total=len(files),
        fail_on=policy.fail_on,
        base=str(base) if str(base) else ".",
        baseline=baseline,
        policy=policy,
        shard=shard,
        changed_since=changed_since,
        config_path=str(config.path) if config.path is not None else None,
        api_map_coverage=load_api_map(matrix.torch_version).coverage(),
    )
    sources = [f for f in files if not f.display.endswith(NOTEBOOK_SUFFIX)]
    notebooks = [f for f in files if f.display.endswith(NOTEBOOK_SUFFIX)]
    cache = ResultCache(cache_dir or default_cache_dir()) if use_cache else NoCache()

    def progress() -> None:
        if on_progress is not None:
            on_progress(report.files_done, report.files_total)

    try:
        results = scan_files(
            sources,
            ScanSettings(target=matrix.version, max_bytes=max_bytes),
            jobs=jobs or default_jobs(),
            cache=cache,
        )
        for result in results:
            _collect(report, result, list(result.extra.get("suppressions", ())))
            progress()
        if notebooks:
            from neuron_migrate.notebook_scan import scan_notebook

            for source in notebooks:
                result, suppressions = scan_notebook(source, matrix.version, max_bytes, cache)
                _collect(report, result, suppressions)
                progress()
    finally:
        cache.close()
    report.elapsed_s = time.perf_counter() - started
    return report


def _select_files(
    root: Path,
    exclude: tuple[str, ...],
    policy: Policy,
    changed_since: str | None,
    shard: tuple[int, int] | None,
) -> list[SourcePath]:
    files = [f for f in discover(root, exclude, notebooks=True) if not policy.excluded(f.display)]
    if changed_since is not None:
        from neuron_migrate.changed import changed_files

        changed = changed_files(root, changed_since)
        files = [f for f in files if Path(f.path).resolve() in changed]
    if shard is not None:
        from neuron_migrate.shard import in_shard

        files = [f for f in files if in_shard(f.display, shard)]
    return files


def _collect(report: ScanReport, result: FileResult, suppressions: list[Suppression]) -> None:
    report.files_done += 1
    if result.error is not None:
        report.errors.append(result.error)
        return
    applied = apply_suppressions(result.findings, suppressions)
    policy = report.policy
    report.unused_suppressions.extend(applied.unused)
    if result.skipped_by_prefilter:
        report.files_prefiltered += 1
        return
    skipped = result.extra.get("skipped")
    if skipped:
        report.skipped.append({"path": result.path, "reason": str(skipped)})
        return
    report.files_analyzed += 1
    report.files_cached += result.from_cache
    report.findings.extend(f for f in applied.kept if policy is None or policy.keeps(f))
    report.suppressed.extend(
        s for s in applied.suppressed if policy is None or policy.keeps(s.finding)
    )
    report.unmapped_apis.update(result.extra.get("unmapped_apis", {}))
