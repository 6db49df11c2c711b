"""The Python API that the CLI and the tests use."""

import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from copy import copy
from pathlib import Path
from typing import NamedTuple, Protocol

from neuron_migrate.errors import UsageError
from neuron_migrate.gc_tuning import FEW_CYCLES, collecting_less
from neuron_migrate.matrix.versions import resolve_version
from neuron_migrate.project.config import Config, Policy, make_policy, resolve_config
from neuron_migrate.project.discover import SourcePath, discover, sources_then_notebooks
from neuron_migrate.project.source import DEFAULT_MAX_BYTES
from neuron_migrate.scan.baseline import Baseline
from neuron_migrate.scan.engine import (
    ScanSettings,
    default_jobs,
    scan_files,
    with_regions_compiled_elsewhere,
)
from neuron_migrate.scan.file_findings import FileFindings, Kind, counted_with_status
from neuron_migrate.scan.findings import FileError, Finding
from neuron_migrate.scan.gate import ERROR_STATUS, HIDING_ERRORS, gate_status
from neuron_migrate.scan.scan_data import header_for
from neuron_migrate.scan.scanned import ScannedFile
from neuron_migrate.scan.store import NoCache, ResultStore, SignatureSource
from neuron_migrate.scan.suppressions import SuppressedFinding, Suppression


class Tally:
    """Counts of reported findings in files whose tables a report does not hold: the unchanged
    files of a re-scan spliced into the last report (`incremental.report_snapshot`)."""

    __slots__ = ("failing", "files", "kinds")

    def __init__(self) -> None:
        self.kinds: dict[Kind, int] = {}
        self.failing = 0  # of them, how many fail the gate
        self.files = 0  # files with findings

    def add(self, kinds: Iterable[tuple[Kind, int]], failing: int, sign: int = 1) -> None:
        """Count one file's findings in (`sign` 1) or out (-1)."""
        for kind, count in kinds:
            left = self.kinds.get(kind, 0) + sign * count
            if left:
                self.kinds[kind] = left
            else:
                del self.kinds[kind]  # as a full count, which never holds a kind it did not see
        self.failing += sign * failing
        self.files += sign

    def copy(self) -> "Tally":
        copied = Tally()
        copied.kinds = dict(self.kinds)
        copied.failing, copied.files = self.failing, self.files
        return copied


class ScanReport:
    """What a scan found, and what the report and the gate need to say about it. (A plain
    class: see `neuron_migrate.scan.records` for why not a dataclass.)"""

    __slots__ = (
        "_decoded",
        "_fail_on_by_path",
        "_totals",
        "api_map_coverage",
        "base",
        "baseline",
        "cache_dir",
        "changed_since",
        "compiling_files",
        "config_path",
        "elapsed_s",
        "elsewhere",
        "errors",
        "fail_on",
        "files",
        "files_analyzed",
        "files_cached",
        "files_done",
        "files_prefiltered",
        "files_total",
        "jobs",
        "matrix_target",
        "policy",
        "root",
        "shard",
        "skipped",
        "suppressed",
        "target",
        "torch_version",
        "unmapped_apis",
        "unused_suppressions",
    )

    def __init__(
        self,
        root: str,
        target: str,
        torch_version: str,
        files: list[FileFindings] | None = None,
        errors: list[FileError] | None = None,
        skipped: list[dict[str, str]] | None = None,
        unmapped_apis: Counter[str] | None = None,
        files_total: int = 0,
        files_analyzed: int = 0,
        files_prefiltered: int = 0,
        files_cached: int = 0,
        elapsed_s: float = 0.0,
        fail_on: frozenset[str] = frozenset(),
        files_done: int = 0,
        api_map_coverage: tuple[int, int] = (0, 0),
        base: str = ".",
        suppressed: list[SuppressedFinding] | None = None,
        unused_suppressions: list[Suppression] | None = None,
        baseline: Baseline | None = None,
        policy: Policy | None = None,
        shard: tuple[int, int] | None = None,
        changed_since: str | None = None,
        config_path: str | None = None,
        cache_dir: str | None = None,
        jobs: int = 1,
        matrix_target: str | None = None,
    ) -> None:
        self.root = root
        # What the scan was told to read: a bundled version, or a matrix file's path.
        self.matrix_target = matrix_target
        self.target = target
        self.torch_version = torch_version
        # The reported findings (not suppressed), file by file; `findings` decodes them.
        self.files: list[FileFindings] = [] if files is None else files
        self.errors: list[FileError] = [] if errors is None else errors
        self.skipped: list[dict[str, str]] = [] if skipped is None else skipped
        self.unmapped_apis: Counter[str] = Counter() if unmapped_apis is None else unmapped_apis
        self.files_total = files_total
        self.files_analyzed = files_analyzed
        self.files_prefiltered = files_prefiltered
        self.files_cached = files_cached
        self.elapsed_s = elapsed_s
        self.fail_on = fail_on
        self.files_done = files_done
        # How much of torch's public API the API->aten map covers: (mapped, considered).
        self.api_map_coverage = api_map_coverage
        self.base = base  # the folder report paths are relative to, as given
        self.suppressed: list[SuppressedFinding] = [] if suppressed is None else suppressed
        self.unused_suppressions: list[Suppression] = (
            [] if unused_suppressions is None else unused_suppressions
        )
        self.baseline = baseline
        self.policy = policy  # per-path fail-on overrides; None: `fail_on` everywhere
        self.shard = shard
        self.changed_since = changed_since
        self.config_path = config_path
        self.cache_dir = cache_dir  # the scan's cache folder; None: it used none
        self.jobs = jobs  # the worker processes the scan could use (a report's may too)
        # Findings counted but not held in `files` (a spliced re-scan); None: all are held.
        # Only the JSON report's snapshot writes such a report: `findings` lists held ones.
        self.elsewhere: Tally | None = None
        # Files whose compiles reach other modules: their findings may depend on these files
        # (`scan.cross_file`), so the JSON report's snapshot splices no re-scan of the tree.
        self.compiling_files = 0
        self._fail_on_by_path: dict[str, frozenset[str]] = {}
        self._decoded: tuple[int, list[Finding]] | None = None
        self._totals: tuple[int, dict[Kind, int]] | None = None

    @property
    def findings(self) -> list[Finding]:
        """Every reported finding as a `Finding`, in path order, decoded on first use (the JSON
        report and the summary never need them). `files` only grows, so its length tells
        whether a decoded list is current."""
        if self._decoded is None or self._decoded[0] != len(self.files):
            decoded = [f for table in sorted(self.files, key=_path) for f in table.decode()]
            self._decoded = (len(self.files), decoded)
        return self._decoded[1]

    def kind_totals(self) -> dict[Kind, int]:
        """How many reported findings have each kind, over all files: what the summary and the
        gate count. Kept as `findings` is, while `files` does not grow."""
        if self._totals is None or self._totals[0] != len(self.files):
            totals: dict[Kind, int] = {}
            for table in self.files:
                for kind, count in zip(table.kinds, table.kind_counts, strict=True):
                    totals[kind] = totals.get(kind, 0) + count
            if self.elsewhere is not None:
                for kind, count in self.elsewhere.kinds.items():
                    totals[kind] = totals.get(kind, 0) + count
            self._totals = (len(self.files), totals)
        return self._totals[1]

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
        return self.is_new_fingerprint(finding.fingerprint)

    def is_new_fingerprint(self, fingerprint: str) -> bool:
        return self.baseline is None or fingerprint not in self.baseline.fingerprints

    def fails(self, finding: Finding) -> bool:
        return self.is_new(finding) and gate_status(finding) in self.fail_on_for(finding.path)

    def failing_positions(self, table: FileFindings) -> list[int]:
        """The positions of `table`'s findings that fail the gate."""
        failing = table.positions_with_status(self.fail_on_for(table.path))
        if self.baseline is None or not failing:
            return failing
        known, fingerprints = self.baseline.fingerprints, table.fingerprints
        return [position for position in failing if fingerprints[position] not in known]

    def counted_elsewhere(self) -> "ScanReport":
        """A copy of the report with its tables counted in `elsewhere` rather than held: the
        lists and totals a spliced re-scan starts from (`incremental.report_snapshot`)."""
        kept = copy(self)
        tally = self.elsewhere.copy() if self.elsewhere is not None else Tally()
        for table in self.files:
            tally.add(zip(table.kinds, table.kind_counts, strict=True), self.failing_in(table))
        kept.files = []
        kept.elsewhere = tally
        kept._fail_on_by_path = {}
        kept._decoded = kept._totals = None
        return kept

    @property
    def files_with_findings(self) -> int:
        held = len({table.path for table in self.files if table})
        return held + (self.elsewhere.files if self.elsewhere is not None else 0)

    @property
    def new_count(self) -> int:
        if self.baseline is None:
            return sum(self.kind_totals().values())
        known = self.baseline.fingerprints
        return sum(fp not in known for table in self.files for fp in table.fingerprints)

    def failing_in(self, table: FileFindings) -> int:
        """How many of `table`'s findings fail the gate."""
        if self.baseline is None:  # counted by kind, no finding looked at
            return table.count_with_status(self.fail_on_for(table.path))
        return len(self.failing_positions(table))

    @property
    def failing_count(self) -> int:
        if self.baseline is None and not (self.policy is not None and self.policy.varies_fail_on):
            # Every file has the same fail-on: count the totals (those counted elsewhere too).
            fail_on = self.policy.fail_on if self.policy is not None else self.fail_on
            return counted_with_status(self.kind_totals().items(), fail_on)
        held = sum(map(self.failing_in, self.files))
        return held + (self.elsewhere.failing if self.elsewhere is not None else 0)

    @property
    def gate_failures(self) -> list[Finding]:
        return [f for f in self.findings if self.fails(f)]

    @property
    def failing_errors(self) -> list[FileError]:
        """The files that could not be scanned and may hide findings, where the gate fails on
        them (`gate.ERROR_STATUS`)."""
        return [
            error
            for error in self.errors
            if error.kind in HIDING_ERRORS and ERROR_STATUS in self.fail_on_for(error.path)
        ]

    @property
    def passed(self) -> bool:
        return self.failing_count == 0 and not self.failing_errors


def _path(table: FileFindings) -> str:
    return table.path


class ScanPlan(NamedTuple):
    """What a scan of a tree reads and how it judges it, before any file is read."""

    root: Path
    base: Path  # the folder report paths are relative to
    config: Config
    policy: Policy
    target: str  # the matrix version, resolved
    exclude: tuple[str, ...]
    max_bytes: int


def plan_scan(
    path: str | Path,
    *,
    target: str | None = None,
    fail_on: tuple[str, ...] = (),
    exclude: tuple[str, ...] = (),
    max_bytes: int = DEFAULT_MAX_BYTES,
    config: Config | None = None,
    select: tuple[str, ...] = (),
    ignore: tuple[str, ...] = (),
) -> ScanPlan:
    """`scan`'s arguments resolved: the config found, merged with the flags."""
    root = Path(path)
    if target is not None and not target.strip():
        raise UsageError("--target: empty value; give a torch-neuronx version such as 2.14")
    if max_bytes <= 0:
        raise UsageError("--max-file-size must be more than 0 MB")
    if config is None:
        config = resolve_config(root)
    base = root if root.is_dir() else root.parent
    policy = make_policy(config, base, fail_on=fail_on, select=select, ignore=ignore)
    version = resolve_version(target if target is not None else config.chosen_target)
    return ScanPlan(root, base, config, policy, version, exclude, max_bytes)


class Listing(NamedTuple):
    """The files a scan reads, the folders listed to find them, and the stat signatures taken
    of them so far (none read yet)."""

    files: list[SourcePath]
    folders: list[str]
    taken: SignatureSource | None  # None: no signatures are taken (no stat index reads them)


class ScanObserver(Protocol):
    """Told of a scan's listing before any file is read (the signatures it takes go to
    `listing.taken`, which the scan's stat index then uses), and of each file's result as it is
    counted (with its reported table: the findings the policy keeps)."""

    def signatures(self) -> SignatureSource:
        """Where the listing's signatures are to be taken (the stat index reads them too)."""
        ...

    def started(self, listing: Listing) -> None: ...

    def collected(self, result: ScannedFile, table: FileFindings | None) -> None: ...


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
    plan = plan_scan(
        path,
        target=target,
        fail_on=fail_on,
        exclude=exclude,
        max_bytes=max_bytes,
        config=config,
        select=select,
        ignore=ignore,
    )
    return scan_planned(
        plan,
        jobs=jobs,
        use_cache=use_cache,
        cache_dir=cache_dir,
        on_progress=on_progress,
        baseline=baseline,
        changed_since=changed_since,
        shard=shard,
    )


def scan_planned(
    plan: ScanPlan,
    *,
    jobs: int | None = None,
    use_cache: bool = True,
    cache_dir: Path | None = None,
    on_progress: Callable[[int, int], None] | None = None,
    baseline: Baseline | None = None,
    changed_since: str | None = None,
    shard: tuple[int, int] | None = None,
    observer: ScanObserver | None = None,
    listing: Listing | None = None,
) -> ScanReport:
    """`scan`, its arguments resolved (`plan_scan`). `listing`: the files as `select_files`
    lists them for `plan`, `changed_since` and `shard`, when the caller has listed them."""
    started = time.perf_counter()
    if listing is None:
        folders: list[str] = []
        files = select_files(plan, changed_since, shard, folders)
        # Signatures are taken ahead only where an observer takes them too.
        listing = Listing(files, folders, observer.signatures() if observer else None)
    files = listing.files
    if observer is not None:
        observer.started(listing)
    cache = open_store(cache_dir) if use_cache else NoCache()
    settings = ScanSettings(plan.target, plan.max_bytes, cache.directory)
    header = header_for(plan.target, cache.directory)
    report = ScanReport(
        root=str(plan.root),
        target=header.version,
        matrix_target=plan.target,
        torch_version=header.torch_version,
        files_total=len(files),
        fail_on=plan.policy.fail_on,
        api_map_coverage=header.api_map_coverage,
        base=str(plan.base) if str(plan.base) else ".",
        baseline=baseline,
        policy=plan.policy,
        shard=shard,
        changed_since=changed_since,
        config_path=str(plan.config.path) if plan.config.path is not None else None,
        cache_dir=None if cache.directory is None else str(cache.directory),
        jobs=jobs or default_jobs(),
    )

    def collect(result: ScannedFile) -> None:
        table = collect_result(report, result)
        if observer is not None:
            observer.collected(result, table)
        if on_progress is not None:
            on_progress(report.files_done, report.files_total)

    try:
        with collecting_less(FEW_CYCLES):  # thousands of results held, next to no cycles
            found = scanned(files, settings, jobs=report.jobs, cache=cache, taken=listing.taken)
            for result in found:
                collect(result)
    finally:
        cache.close()
    report.files.sort(key=_path)
    report.elapsed_s = time.perf_counter() - started
    return report


def scanned(
    files: list[SourcePath],
    settings: ScanSettings,
    *,
    jobs: int,
    cache: ResultStore,
    use_stat_index: bool = True,
    taken: SignatureSource | None = None,
) -> Iterator[ScannedFile]:
    """Each of `files` scanned, in `sources_then_notebooks` order: Python sources through
    `scan_files` (its workers, `use_stat_index`, `taken`), notebooks cell by cell in this
    process."""
    sources, notebooks = sources_then_notebooks(files)
    found = scan_files(
        sources, settings, jobs=jobs, cache=cache, use_stat_index=use_stat_index, taken=taken
    )
    # A file's findings depend on what other files compile of it: all are scanned before any
    # is yielded, and the files others compile are analysed again with those regions.
    results = with_regions_compiled_elsewhere(list(found), sources, settings, cache)
    yield from results
    if notebooks:
        from neuron_migrate.scan.notebook_scan import scan_notebook

        for source in notebooks:
            yield scan_notebook(source, settings, cache)


def open_store(cache_dir: Path | None) -> ResultStore:
    """The result cache in `cache_dir` (default: the user's): the speed machinery loads here,
    and only for a scan that uses a cache."""
    from neuron_migrate.incremental.cache import ResultCache, default_cache_dir

    return ResultCache(cache_dir or default_cache_dir())


def select_files(
    plan: ScanPlan,
    changed_since: str | None = None,
    shard: tuple[int, int] | None = None,
    folders: list[str] | None = None,
) -> list[SourcePath]:
    """The files a scan by `plan` reads; each folder listed to find them is added to
    `folders`, if given."""
    root, policy = plan.root, plan.policy
    found = discover(
        root, plan.exclude, notebooks=True, project_files=True, folders=folders, folder_links=True
    )
    files = [f for f in found if not policy.excluded(f.display)]
    if changed_since is not None:
        from neuron_migrate.project.changed import changed_files

        changed = changed_files(root, changed_since)
        files = [f for f in files if Path(f.path).resolve() in changed]
    if shard is not None:
        from neuron_migrate.scan.shard import in_shard

        files = [f for f in files if in_shard(f.display, shard)]
    return files


def collect_result(report: ScanReport, result: ScannedFile) -> FileFindings | None:
    """Count one file's result into `report`; the file's reported table (the findings the
    policy keeps), None when it has none."""
    report.files_done += 1
    if result.error is not None:
        report.errors.append(result.error)
        if not result.error.partial:  # else the rest of the file was read: count it too
            return None
    report.unused_suppressions.extend(result.unused_suppressions)
    if result.prefiltered:
        report.files_prefiltered += 1
        return None
    if result.skipped:
        report.skipped.append({"path": result.path, "reason": result.skipped})
        return None
    report.files_analyzed += 1
    report.files_cached += result.from_cache
    report.compiling_files += bool(result.compiles)
    table, suppressed = result.findings, result.suppressed
    if report.policy is not None and report.policy.filters_codes:
        kept = report.policy.codes_kept(
            result.path, {*(table.codes if table else ()), *(s.finding.code for s in suppressed)}
        )
        if table is not None:
            table = table.where([kept[code] for code in table.codes])
        suppressed = tuple(s for s in suppressed if kept[s.finding.code])
    if table:
        report.files.append(table)
    report.suppressed.extend(suppressed)
    report.unmapped_apis.update(result.unmapped_apis)
    return table if table else None
