"""A buffer's findings and its migrated text, as `scan` and `rewrite` of the workspace give them.

A document is placed the way `scan ROOT` places a file: ROOT is the workspace folder that holds
it (else its own folder), its report path is relative to ROOT, and the configuration is the
`[tool.neuron-migrate]` table `scan ROOT` finds. The unsaved text then goes through the scan's
own per-file pipeline (`scan.engine.scan_data`: prefilter, analysis, suppression comments) and
the scan's own report assembly (`api.collect_result`: select and ignore, per-path overrides),
and through the rewrite's own per-file function (`rewrite.rewriter.rewrite_data`).
"""

from pathlib import Path
from typing import NamedTuple

from neuron_migrate.api import ScanReport, collect_result
from neuron_migrate.errors import NeuronMigrateError
from neuron_migrate.gc_tuning import FEW_CYCLES, collecting_less
from neuron_migrate.matrix.versions import resolve_version
from neuron_migrate.project.config import Config, Policy, make_policy, resolve_config
from neuron_migrate.project.source import DEFAULT_MAX_BYTES
from neuron_migrate.rewrite.rewriter import FileRewrite, rewrite_data
from neuron_migrate.scan.engine import scan_data
from neuron_migrate.scan.findings import FileError, Finding
from neuron_migrate.scan.scan_data import Context, context_for


class Place(NamedTuple):
    """Where a document sits for the scan: its report path, and how its tree is judged."""

    path: Path
    display: str  # relative to the scanned root, forward slashes
    policy: Policy
    target: str  # the matrix version, resolved
    config_error: str | None = None  # a broken [tool.neuron-migrate]: defaults are used


def place(path: Path, roots: list[Path]) -> Place:
    """`path` as `scan ROOT` of the deepest workspace folder holding it sees it."""
    holders = [root for root in roots if path.is_relative_to(root)]
    root = max(holders, key=lambda r: len(r.parts)) if holders else path.parent
    display = path.relative_to(root).as_posix()
    error = None
    try:
        config = resolve_config(root)
        target = resolve_version(config.target)
    except NeuronMigrateError as exc:  # the editor shows it; the buffer is judged by defaults
        error = str(exc)
        config, target = Config(), resolve_version(None)
    return Place(path, display, make_policy(config, root), target, error)


class Analysis(NamedTuple):
    findings: tuple[Finding, ...] = ()  # reported: not suppressed, not filtered out
    error: FileError | None = None  # the file could not be analysed (a syntax error, ...)
    excluded: bool = False  # the configuration excludes it: a scan does not read it


def context(target: str) -> Context:
    """The rules, matrix and API map for `target`: loaded once per process (`context_for`)."""
    return context_for(target)


def analyse(text: str, where: Place) -> Analysis:
    """The findings `scan` reports for `where` if the file held `text`."""
    if where.policy.excluded(where.display):
        return Analysis(excluded=True)
    data = text.encode("utf-8")
    if len(data) > DEFAULT_MAX_BYTES:
        reason = f"too large to scan ({len(data) / 1e6:.1f} MB)"
        return Analysis(error=FileError(where.display, reason, "too_large"))
    loaded = context(where.target)
    with collecting_less(FEW_CYCLES):  # a parse's many objects, next to no cycles
        result = scan_data(data, where.display, loaded)
    report = ScanReport(str(where.path.parent), where.target, "", policy=where.policy)
    table = collect_result(report, result)
    if result.error is not None:
        return Analysis(error=result.error)
    return Analysis(tuple(table.decode()) if table is not None else ())


def migrated(text: str, where: Place) -> FileRewrite:
    """What `rewrite` makes of the file if it held `text` (without --unsafe-fixes)."""
    rules = context(where.target).rules
    data = text.encode("utf-8")
    with collecting_less(FEW_CYCLES):
        return rewrite_data(
            str(where.path), where.display, data, rules, unsafe=False, target=where.target
        )


def migrated_line(text: str, where: Place, line: int) -> str | None:
    """The text with only the sites on `line` (1-based) migrated, and the imports and helpers
    they need, as `rewrite` migrates them; None when the rewrite cannot (the text does not
    parse, the output would not, or a statement holding a site is too large)."""
    from neuron_migrate.rewrite.codemod.engine import RewriteFailed, rewrite_source
    from neuron_migrate.rewrite.codemod.results import StatementTooLarge

    rules = context(where.target).rules
    try:
        with collecting_less(FEW_CYCLES):
            return rewrite_source(text, rules, unsafe=False, target=where.target, line=line).new
    except (SyntaxError, RewriteFailed, StatementTooLarge):
        return None
