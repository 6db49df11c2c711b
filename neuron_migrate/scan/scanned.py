"""One file as a scan reports it: what the engine yields, the cache stores and the report adds.

Everything here depends on the file alone (its bytes and its path), never on the run's
settings, so it is made once -- by the worker that analysed the file -- and reused by every
later scan that finds the same bytes. The settings (select/ignore, fail-on, a baseline) apply
when the report is assembled.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from neuron_migrate.scan.file_findings import FileFindings
from neuron_migrate.scan.findings import FileError, FileResult
from neuron_migrate.scan.records import Record
from neuron_migrate.scan.suppressions import SuppressedFinding, Suppression, apply_suppressions


class ScannedFile(Record):
    _fields = (
        "path",
        "findings",
        "suppressed",
        "unused_suppressions",
        "unmapped_apis",
        "error",
        "skipped",
        "prefiltered",
        "compiles",
        "from_cache",
    )
    __slots__ = _fields

    def __init__(
        self,
        path: str,
        findings: FileFindings | None = None,
        suppressed: tuple[SuppressedFinding, ...] = (),
        unused_suppressions: tuple[Suppression, ...] = (),
        unmapped_apis: Mapping[str, int] | None = None,
        error: FileError | None = None,
        skipped: str | None = None,
        prefiltered: bool = False,
        compiles: tuple[tuple[str, int], ...] = (),
        from_cache: bool = False,
    ) -> None:
        self.path = path
        self.findings = findings  # reported: not suppressed by the file's comments
        self.suppressed = suppressed
        self.unused_suppressions = unused_suppressions
        self.unmapped_apis: Mapping[str, int] = {} if unmapped_apis is None else unmapped_apis
        self.error = error
        self.skipped = skipped  # why the file was not analysed (an empty file)
        self.prefiltered = prefiltered  # holds none of the prefilter's words: never parsed
        # What its compiles reach in other modules: (imported qualified name, line)
        self.compiles = compiles
        self.from_cache = from_cache  # set on the copy a cache lookup returns


def scanned(result: FileResult, suppressions: Sequence[Suppression] = ()) -> ScannedFile:
    """The analysis of one file with the file's own suppression comments applied; an error of
    part of it (`FileError.partial`) is kept beside the findings of the rest."""
    error = result.error
    if error is not None and not error.partial:
        return ScannedFile(result.path, error=error)
    applied = apply_suppressions(result.findings, list(suppressions))
    return ScannedFile(
        result.path,
        findings=FileFindings.of(result.path, applied.kept),
        suppressed=tuple(applied.suppressed),
        unused_suppressions=tuple(applied.unused),
        unmapped_apis=result.unmapped_apis,
        error=error,
        compiles=result.compiles,
    )


def empty(path: str) -> ScannedFile:
    """An empty (or whitespace-only) file: nothing to analyse, reported as skipped."""
    return ScannedFile(path, skipped="empty file")


def prefiltered(path: str, suppressions: Sequence[Suppression] = ()) -> ScannedFile:
    """A file the prefilter skipped; its suppression comments can only be unused."""
    unused = apply_suppressions((), list(suppressions)).unused
    return ScannedFile(path, unused_suppressions=tuple(unused), prefiltered=True)
