"""Scanning one notebook: its code cells become one module (`neuron_migrate.project.notebook`), the
engine analyses it like any source file, and every finding is moved back to its cell and line."""

from __future__ import annotations

import re

from neuron_migrate.project.discover import (
    OUTSIDE_LINK,
    OutsideLink,
    SourcePath,
    may_hold_findings,
)
from neuron_migrate.project.notebook import (
    NotebookError,
    SplitNotebook,
    Unread,
    cells_error,
    split_notebook,
    written_files,
)
from neuron_migrate.project.source import NOT_REGULAR, read_bytes
from neuron_migrate.scan.analysis import analyze_source
from neuron_migrate.scan.engine import ScanSettings
from neuron_migrate.scan.findings import FileError, FileResult, Finding
from neuron_migrate.scan.scan_data import config_digest
from neuron_migrate.scan.scanned import ScannedFile, empty, prefiltered, scanned
from neuron_migrate.scan.store import ResultStore, file_key
from neuron_migrate.scan.suppressions import Suppression, parse_suppressions

_AT_LINE = re.compile(r"\bat line (\d+)")


def scan_notebook(source: SourcePath, settings: ScanSettings, cache: ResultStore) -> ScannedFile:
    """One .ipynb file: its findings located by cell, its suppression comments applied."""
    display = source.display
    if isinstance(source, OutsideLink):
        return ScannedFile(display, skipped=OUTSIDE_LINK)
    data = read_bytes(source.path, display, settings.max_bytes)
    if isinstance(data, FileError) and data.kind == NOT_REGULAR:  # a FIFO: never opened
        return ScannedFile(display, skipped=data.reason)
    if isinstance(data, FileError):
        return ScannedFile(display, error=data)
    if not data.strip():
        return empty(display)
    key = file_key(config_digest(settings.target), display, data)
    cached = cache.get(key)
    if cached is not None:
        cached.from_cache = True
        return cached
    result = _scan_cells(data, display, settings)
    # An analysed notebook (the others are cheap to redo), unless a cell ran out of time (a
    # slower moment's verdict).
    if result.findings is not None and (result.error is None or result.error.kind != "timeout"):
        cache.put(key, result)
    return result


def _scan_cells(data: bytes, display: str, settings: ScanSettings) -> ScannedFile:
    try:
        text = data.decode("utf-8-sig")
        split = split_notebook(text)
    except UnicodeDecodeError as exc:
        return ScannedFile(
            display, error=FileError(display, f"not valid utf-8 at byte {exc.start}", "encoding")
        )
    except NotebookError as exc:
        return ScannedFile(display, error=FileError(display, str(exc), "syntax"))
    if split.language != "python":
        return ScannedFile(display, skipped=f"not a Python notebook ({split.language})")
    suppressions = _located_suppressions(split, display)
    written = [f for f in written_files(text) if may_hold_findings(f.source.encode("utf-8"))]
    if not may_hold_findings(split.source.encode("utf-8")) and not written:
        return prefiltered(display, suppressions)
    result = _located(analyze_source(split.source, display, settings.context()), split)
    if result.error is not None:
        return scanned(result)
    unread = [Unread(cell, f"line {line}: {why}") for cell, line, why in split.unparsed]
    read = len(split.unparsed) < len(split.cells)
    for file in written:  # each %%writefile NAME.py cell, read as the file it writes
        inner = analyze_source(file.source, display, settings.context())
        if inner.error is None:
            moved = [f._replace(cell=file.cell, line=f.line + 1, end_line=f.end_line + 1)
                     for f in inner.findings]  # fmt: skip
            result = result._replace(findings=(*result.findings, *moved))
            read = True
        else:  # its lines are the cell's after the %%writefile line
            why = _AT_LINE.sub(lambda m: f"line {int(m.group(1)) + 1}", inner.error.reason)
            unread.append(Unread(file.cell, why.removeprefix("syntax error "), inner.error.kind))
    if not unread:
        return scanned(result, suppressions)
    return scanned(result._replace(error=cells_error(display, unread, partial=read)), suppressions)


def _located(result: FileResult, split: SplitNotebook) -> FileResult:
    if result.error is not None:
        reason = _AT_LINE.sub(lambda m: _where(split, int(m.group(1))), result.error.reason)
        return result._replace(error=result.error._replace(reason=reason))
    findings = [_move(f, split) for f in result.findings]
    return result._replace(findings=tuple(f for f in findings if f is not None))


def _where(split: SplitNotebook, line: int) -> str:
    place = split.locate(line)
    return f"in cell {place[0]}, line {place[1]}" if place else f"at line {line}"


def _move(finding: Finding, split: SplitNotebook) -> Finding | None:
    start = split.locate(finding.line)
    if start is None:
        return None  # on a sentinel line: not the user's code
    end = split.locate(finding.end_line)
    end_line = end[1] if end is not None and end[0] == start[0] else start[1]
    return finding._replace(cell=start[0], line=start[1], end_line=end_line)


def _located_suppressions(split: SplitNotebook, display: str) -> list[Suppression]:
    if "neuron-migrate:" not in split.source:
        return []
    out = []
    for s in parse_suppressions(split.source, display):
        here, target = split.locate(s.line), split.locate(s.target_line)
        if here is None:
            continue
        target_line = target[1] if target is not None and target[0] == here[0] else -1
        out.append(s._replace(line=here[1], target_line=target_line, cell=here[0]))
    return out
