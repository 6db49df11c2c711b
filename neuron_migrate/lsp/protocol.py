"""Findings, rewrites and matrix entries in LSP terms (lsprotocol types).

Columns: a finding's are counted in characters (code points); the client counts in the
position encoding agreed at initialisation (UTF-16 unless it offers another), which `units`
gives for a piece of a line.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterable
from functools import lru_cache
from pathlib import Path

from lsprotocol import types

from neuron_migrate.lsp.edits import Hunk
from neuron_migrate.scan.findings import FileError, Finding

SOURCE = "neuron-migrate"
FIX_ALL = f"{types.CodeActionKind.SourceFixAll.value}.{SOURCE}"

# The scan's severities (themselves from the status: unsupported is an error, a fallback, a
# float64, a torch_xla use or advice a warning, a native op information).
_SEVERITY = {
    "error": types.DiagnosticSeverity.Error,
    "warning": types.DiagnosticSeverity.Warning,
    "info": types.DiagnosticSeverity.Information,
}

Units = Callable[[str], int]  # the length of a piece of a line in the client's code units


class Lines:
    """A buffer's lines, for turning (line, character) positions into the client's."""

    def __init__(self, lines: list[str], units: Units) -> None:
        self.lines = lines
        self.units = units

    def position(self, line: int, col: int) -> types.Position:
        """0-based `line`, `col` in characters; a line past the end is the buffer's end."""
        if line >= len(self.lines):
            return self.end()
        text = self.lines[line].rstrip("\r\n")
        return types.Position(line, self.units(text[: max(col, 0)]))

    def line_start(self, line: int) -> types.Position:
        if line < len(self.lines) or not self.lines or self.lines[-1].endswith(("\n", "\r")):
            return types.Position(line, 0)
        return self.end()  # after a last line with no line break

    def end(self) -> types.Position:
        if not self.lines:
            return types.Position(0, 0)
        last = self.lines[-1]
        if last.endswith(("\n", "\r")):
            return types.Position(len(self.lines), 0)
        return types.Position(len(self.lines) - 1, self.units(last))


def units_of(encoding: str) -> Units:
    """How the client counts a piece of a line: in UTF-16 code units (the default), UTF-8
    bytes or code points, as agreed at initialisation."""
    if encoding == types.PositionEncodingKind.Utf32:
        return len
    codec, width = ("utf-8", 1) if encoding == types.PositionEncodingKind.Utf8 else ("utf-16-le", 2)

    def units(piece: str) -> int:
        return len(piece) if piece.isascii() else len(piece.encode(codec)) // width

    return units


@lru_cache(maxsize=1024)
def rule_uri(code: str, rule_path: Callable[[str], Path | None]) -> types.CodeDescription | None:
    path = rule_path(code)
    return None if path is None else types.CodeDescription(href=path.resolve().as_uri())


def diagnostic(
    finding: Finding, lines: Lines, rule_path: Callable[[str], Path | None]
) -> types.Diagnostic:
    """The finding over its span: lines 1-based in the finding, 0-based here."""
    start = lines.position(finding.line - 1, finding.col)
    end = lines.position(finding.end_line - 1, finding.end_col)
    return types.Diagnostic(
        range=types.Range(start, end),
        message=finding.message,
        severity=_SEVERITY.get(finding.severity, types.DiagnosticSeverity.Warning),
        code=finding.code,
        code_description=rule_uri(finding.code, rule_path),
        source=SOURCE,
    )


def error_diagnostic(error: FileError) -> types.Diagnostic:
    """A file the scan could not analyse (a syntax error while typing, ...): one note at the
    top, as the scan reports it, with no findings."""
    return types.Diagnostic(
        range=types.Range(types.Position(0, 0), types.Position(0, 0)),
        message=f"not analysed: {error.reason}",
        severity=types.DiagnosticSeverity.Information,
        code=error.kind,
        source=SOURCE,
    )


def text_edits(hunks: Iterable[Hunk], lines: Lines) -> list[types.TextEdit]:
    return [
        types.TextEdit(types.Range(lines.line_start(h.start), lines.line_start(h.end)), h.new)
        for h in hunks
    ]


def workspace_edit(uri: str, version: int, edits: list[types.TextEdit]) -> types.WorkspaceEdit:
    """Edits of one version of the document: a client refuses them once the buffer moved on."""
    document = types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=version)
    return types.WorkspaceEdit(
        document_changes=[types.TextDocumentEdit(text_document=document, edits=list(edits))]
    )


@lru_cache(maxsize=256)
def matrix_show_text(name: str, target: str) -> str | None:
    """What `neuron-migrate matrix show NAME --target TARGET` prints, without colour, drawn by
    the same function from the server's loaded matrix and API map; None for a name neither
    knows."""
    from rich.console import Console

    from neuron_migrate.cli.matrix import _print_report
    from neuron_migrate.lsp.analysis import context
    from neuron_migrate.matrix.query import describe_name

    loaded = context(target)
    report = describe_name(name, loaded.matrix, loaded.api_map)
    if report.kind == "unknown":
        return None
    out = io.StringIO()
    console = Console(file=out, no_color=True, highlight=False, soft_wrap=True, width=100)
    _print_report(console, report)
    return out.getvalue().rstrip() + "\n"


def hover(found: list[tuple[Finding, str | None]], span: types.Range) -> types.Hover:
    """The findings under the cursor, innermost first, each with its matrix entry if any."""
    parts = []
    for finding, shown in found:
        part = f"**{finding.code}** `{finding.api}`: {finding.status}\n\n{finding.message}"
        parts.append(part + (f"\n\n```text\n{shown}```" if shown else ""))
    return types.Hover(
        contents=types.MarkupContent(
            kind=types.MarkupKind.Markdown, value="\n\n---\n\n".join(parts)
        ),
        range=span,
    )
