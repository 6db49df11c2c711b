"""One file as a scan reports it: what the engine yields, the cache stores and the report adds.

Everything here depends on the file alone (its bytes and its path), never on the run's
settings, so it is made once -- by the worker that analysed the file -- and reused by every
later scan that finds the same bytes. The settings (select/ignore, fail-on, a baseline) apply
when the report is assembled.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from neuron_migrate.file_findings import FileFindings
from neuron_migrate.findings import FileError, FileResult
from neuron_migrate.suppressions import SuppressedFinding, Suppression, apply_suppressions


@dataclass
class ScannedFile:
    path: str
    findings: FileFindings | None = None  # reported: not suppressed by the file's comments
    suppressed: tuple[SuppressedFinding, ...] = ()
    unused_suppressions: tuple[Suppression, ...] = ()
    unmapped_apis: dict[str, int] = field(default_factory=dict)
    error: FileError | None = None
    skipped: str | None = None  # why the file was not analysed (an empty file)
    prefiltered: bool = False  # holds none of the prefilter's words: never parsed
    from_cache: bool = False  # set on the copy a cache lookup returns


def scanned(result: FileResult, suppressions: Sequence[Suppression] = ()) -> ScannedFile:
    """The analysis of one file with the file's own suppression comments applied."""
    if result.error is not None:
        return ScannedFile(result.path, error=result.error)
    applied = apply_suppressions(result.findings, list(suppressions))
    return ScannedFile(
        result.path,
        findings=FileFindings.of(result.path, applied.kept),
        suppressed=tuple(applied.suppressed),
        unused_suppressions=tuple(applied.unused),
        unmapped_apis=result.unmapped_apis,
    )


def prefiltered(path: str, suppressions: Sequence[Suppression] = ()) -> ScannedFile:
    """A file the prefilter skipped; its suppression comments can only be unused."""
    unused = apply_suppressions((), list(suppressions)).unused
    return ScannedFile(path, unused_suppressions=tuple(unused), prefiltered=True)
