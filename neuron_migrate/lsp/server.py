"""The language server: the open buffers, their debounced analysis, and what it answers.

A buffer is analysed when it opens and again once its changes pause for `debounce_s`; the
findings are pushed (`textDocument/publishDiagnostics`) unless the client pulls them
(`textDocument/diagnostic`). Code actions and hovers read the analysis of the buffer as it is
now. The rules, matrix and API map load with the first buffer and stay loaded
(`analysis.context`). A request about a document that is not open gets an empty answer, and a
bad message is logged by pygls and skipped: neither ends the server.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls import uris
from pygls.lsp.server import LanguageServer

from neuron_migrate import __version__
from neuron_migrate.lsp import analysis, edits, protocol
from neuron_migrate.project.discover import SOURCE_SUFFIXES
from neuron_migrate.project_files.kinds import kind_of
from neuron_migrate.resources import rules_dir
from neuron_migrate.rewrite.rewriter import FileRewrite
from neuron_migrate.ruleset import load_ruleset

logger = logging.getLogger(__name__)

# Changes closer than this are analysed once: a burst of keystrokes, or the several changes an
# editor sends for one edit. Short beside the analysis (about 0.2 s of CPU for 3,000 lines).
DEBOUNCE_S = 0.05


class Document:
    """An open buffer, and what was learned from one version of it."""

    __slots__ = ("analysed", "lines_migrated", "path", "place", "rewrite", "uri")

    def __init__(self, uri: str, path: Path, place: analysis.Place) -> None:
        self.uri = uri
        self.path = path
        self.place = place
        # (version, text, analysis) of the last analysed text; a rewrite of the same text.
        self.analysed: tuple[int | None, str, analysis.Analysis] | None = None
        self.rewrite: tuple[str, FileRewrite] | None = None
        self.lines_migrated: dict[tuple[str, int], str | None] = {}  # one line's sites migrated


def is_scanned(path: Path, text: str) -> bool:
    """Whether a scan of the folder reads this file: Python, or a project file it knows."""
    if path.name.endswith(SOURCE_SUFFIXES):
        return True
    return kind_of(path.name, text[:200].encode("utf-8", "replace")) is not None


class MigrateServer(LanguageServer):
    def __init__(self, debounce_s: float = DEBOUNCE_S) -> None:
        super().__init__("neuron-migrate", __version__)
        self.debounce_s = debounce_s
        self.documents: dict[str, Document] = {}
        self.pending: dict[str, asyncio.Task[None]] = {}
        self.shut_down = False  # `shutdown` was asked: `exit` then ends with code 0

    # --- documents ---------------------------------------------------------------------------

    def roots(self) -> list[Path]:
        found = [uris.to_fs_path(f.uri) for f in self.workspace.folders.values()]
        found.append(self.workspace.root_path)
        return [Path(p).resolve() for p in found if p]

    def open(self, uri: str) -> Document | None:
        path = uris.to_fs_path(uri)
        if path is None:  # not a file: an untitled buffer, a remote one
            return None
        text = self.workspace.get_text_document(uri).source
        if not is_scanned(Path(path), text):
            return None
        resolved = Path(path).resolve()
        document = Document(uri, resolved, analysis.place(resolved, self.roots()))
        if document.place.config_error is not None:
            self.warn(document.place.config_error)
        self.documents[uri] = document
        return document

    def current(self, uri: str) -> tuple[Document, str, analysis.Analysis] | None:
        """The document's analysis for its text now (made now if the text moved on)."""
        document = self.documents.get(uri)
        if document is None:
            return None
        buffer = self.workspace.get_text_document(uri)
        text = buffer.source
        if document.analysed is None or document.analysed[1] != text:
            document.analysed = (buffer.version, text, analysis.analyse(text, document.place))
        return document, text, document.analysed[2]

    def migrated(self, document: Document, text: str) -> FileRewrite:
        if document.rewrite is None or document.rewrite[0] != text:
            document.rewrite = (text, analysis.migrated(text, document.place))
        return document.rewrite[1]

    def migrated_line(self, document: Document, text: str, line: int) -> str | None:
        key = (text, line)
        if key not in document.lines_migrated:
            if len(document.lines_migrated) > 64:
                document.lines_migrated.clear()
            document.lines_migrated[key] = analysis.migrated_line(text, document.place, line)
        return document.lines_migrated[key]

    def line_fix(
        self, document: Document, text: str, line: int, code: str, version: int
    ) -> types.WorkspaceEdit | None:
        """The rewrite of the sites on `line` (1-based) alone, as edits: the sites' own change
        with the imports and helpers they need, less the markers of other rules' sites."""
        new = self.migrated_line(document, text, line)
        if new is None or new == text:
            return None
        own = edits.without_markers(edits.hunks(text, new), code)
        if not own:
            return None
        return protocol.workspace_edit(
            document.uri, version, protocol.text_edits(own, self.lines(text))
        )

    def fix_all(self, document: Document, text: str, version: int) -> types.WorkspaceEdit | None:
        """The edit that makes the buffer what `rewrite` makes of the file."""
        rewrite = self.migrated(document, text)
        if rewrite.error is not None or not rewrite.changed or rewrite.old != text:
            return None
        changed = edits.hunks(text, rewrite.new)
        return protocol.workspace_edit(
            document.uri, version, protocol.text_edits(changed, self.lines(text))
        )

    def resolves(self) -> bool:
        """Whether the client fills in an action's edit when it is chosen (`codeAction/resolve`):
        then a code action costs nothing until then (an editor asks at every cursor move)."""
        text = self.client_capabilities.text_document
        asked = text.code_action if text is not None else None
        if asked is None or asked.resolve_support is None:
            return False
        return "edit" in asked.resolve_support.properties and bool(asked.data_support)

    def warn(self, message: str) -> None:
        self.window_show_message(
            types.ShowMessageParams(type=types.MessageType.Warning, message=message)
        )

    # --- diagnostics -------------------------------------------------------------------------

    def pulls(self) -> bool:
        """Whether the client asks for diagnostics itself (then none are pushed)."""
        text = self.client_capabilities.text_document
        return text is not None and text.diagnostic is not None

    def diagnostics(self, uri: str) -> list[types.Diagnostic]:
        found = self.current(uri)
        if found is None:
            return []
        _, text, result = found
        if result.error is not None:
            return [protocol.error_diagnostic(result.error)]
        lines = self.lines(text)
        return [protocol.diagnostic(f, lines, rule_path) for f in result.findings]

    def publish(self, uri: str) -> None:
        document = self.documents.get(uri)
        if document is None or self.pulls():
            return
        found = self.diagnostics(uri)
        version = document.analysed[0] if document.analysed else None
        self.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, version=version, diagnostics=found)
        )

    def schedule(self, uri: str) -> None:
        """Analyse and publish `uri` once its changes pause for `debounce_s`."""
        waiting = self.pending.pop(uri, None)
        if waiting is not None:
            waiting.cancel()
        self.pending[uri] = asyncio.get_running_loop().create_task(self._later(uri))

    async def _later(self, uri: str) -> None:
        await asyncio.sleep(self.debounce_s)
        self.pending.pop(uri, None)
        try:
            self.publish(uri)
        except Exception:  # a bug of ours in one buffer: logged, the server goes on
            logger.exception("analysing %s", uri)

    def lines(self, text: str) -> protocol.Lines:
        encoding = self.workspace.position_codec.encoding or types.PositionEncodingKind.Utf16
        return protocol.Lines(edits.split_lines(text), protocol.units_of(encoding))


def rule_path(code: str) -> Path | None:
    """The rule's YAML file, which says what it finds, why, and what the fix is."""
    try:
        return rules_dir().parent / load_ruleset().get(code).path
    except KeyError:
        return None


def _overlaps(finding_lines: tuple[int, int], wanted: types.Range) -> bool:
    first, last = finding_lines
    return first <= wanted.end.line and last >= wanted.start.line


def _wanted(kind: str, only: Sequence[str] | None) -> bool:
    return only is None or any(kind == o or kind.startswith(o + ".") for o in only)


def create(debounce_s: float = DEBOUNCE_S) -> MigrateServer:
    server = MigrateServer(debounce_s)

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: MigrateServer, params: types.DidOpenTextDocumentParams) -> None:
        uri = params.text_document.uri
        if ls.open(uri) is not None:
            ls.publish(uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: MigrateServer, params: types.DidChangeTextDocumentParams) -> None:
        if params.text_document.uri in ls.documents:
            ls.schedule(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: MigrateServer, params: types.DidSaveTextDocumentParams) -> None:
        # A saved pyproject.toml may change [tool.neuron-migrate]: every buffer is placed again.
        if params.text_document.uri.endswith("/pyproject.toml"):
            for uri in list(ls.documents):
                if ls.open(uri) is not None:
                    ls.publish(uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: MigrateServer, params: types.DidCloseTextDocumentParams) -> None:
        uri = params.text_document.uri
        waiting = ls.pending.pop(uri, None)
        if waiting is not None:
            waiting.cancel()
        if ls.documents.pop(uri, None) is not None and not ls.pulls():
            ls.text_document_publish_diagnostics(
                types.PublishDiagnosticsParams(uri=uri, diagnostics=[])
            )

    @server.feature(
        types.TEXT_DOCUMENT_DIAGNOSTIC,
        types.DiagnosticOptions(
            identifier=protocol.SOURCE, inter_file_dependencies=False, workspace_diagnostics=False
        ),
    )
    def pull(
        ls: MigrateServer, params: types.DocumentDiagnosticParams
    ) -> types.RelatedFullDocumentDiagnosticReport:
        return types.RelatedFullDocumentDiagnosticReport(
            items=ls.diagnostics(params.text_document.uri)
        )

    @server.feature(
        types.TEXT_DOCUMENT_CODE_ACTION,
        types.CodeActionOptions(
            code_action_kinds=[types.CodeActionKind.QuickFix, protocol.FIX_ALL],
            resolve_provider=True,
        ),
    )
    def code_actions(
        ls: MigrateServer, params: types.CodeActionParams
    ) -> list[types.CodeAction] | None:
        """A quick fix for each fixable finding in the range, and the fix-all. Their edits are
        made now, or when one is chosen if the client resolves actions."""
        uri = params.text_document.uri
        found = ls.current(uri)
        if found is None:
            return None
        document, text, result = found
        if result.error is not None or result.excluded:
            return None
        only = params.context.only
        version = ls.workspace.get_text_document(uri).version or 0
        lazy = ls.resolves()
        lines = ls.lines(text)
        actions: list[types.CodeAction] = []
        if _wanted(types.CodeActionKind.QuickFix.value, only) and document.path.suffix == ".py":
            for finding in result.findings:
                span = (finding.line - 1, finding.end_line - 1)
                if not finding.fixable or not _overlaps(span, params.range):
                    continue
                edit = (
                    None
                    if lazy
                    else ls.line_fix(document, text, finding.line, finding.code, version)
                )
                if edit is None and not lazy:
                    continue
                data = {"uri": uri, "version": version, "line": finding.line, "code": finding.code}
                actions.append(
                    types.CodeAction(
                        title=f"{finding.code}: migrate {finding.api} (line {finding.line})",
                        kind=types.CodeActionKind.QuickFix,
                        diagnostics=[protocol.diagnostic(finding, lines, rule_path)],
                        edit=edit,
                        data=data if lazy else None,
                    )
                )
        if _wanted(protocol.FIX_ALL, only) and result.findings:  # a rewrite, or markers
            edit = None if lazy else ls.fix_all(document, text, version)
            if edit is not None or lazy:
                actions.append(
                    types.CodeAction(
                        title="neuron-migrate: rewrite this file",
                        kind=protocol.FIX_ALL,
                        edit=edit,
                        data={"uri": uri, "version": version} if lazy else None,
                    )
                )
        return actions

    @server.feature(types.CODE_ACTION_RESOLVE)
    def resolve(ls: MigrateServer, action: types.CodeAction) -> types.CodeAction:
        """The action's edit, for the buffer it was offered for; none once the buffer changed."""
        data = action.data if isinstance(action.data, dict) else {}
        found = ls.current(str(data.get("uri", "")))
        if found is None:
            return action
        document, text, _ = found
        version = ls.workspace.get_text_document(document.uri).version or 0
        if data.get("version") != version:
            return action
        if "line" in data:
            action.edit = ls.line_fix(document, text, int(data["line"]), str(data["code"]), version)
        else:
            action.edit = ls.fix_all(document, text, version)
        return action

    @server.feature(types.TEXT_DOCUMENT_HOVER)
    def hover(ls: MigrateServer, params: types.HoverParams) -> types.Hover | None:
        """Every finding whose span holds the cursor (`x.abs().sum()`: two), innermost first."""
        found = ls.current(params.text_document.uri)
        if found is None:
            return None
        document, text, result = found
        lines = ls.lines(text)
        at = (params.position.line, params.position.character)
        under = []
        for finding in result.findings:
            start = lines.position(finding.line - 1, finding.col)
            end = lines.position(finding.end_line - 1, finding.end_col)
            if (start.line, start.character) <= at <= (end.line, end.character):
                under.append((finding, types.Range(start, end)))
        if not under:
            return None
        under.sort(key=lambda item: (-item[1].start.line, -item[1].start.character))
        target = document.place.target
        shown = [(f, protocol.matrix_show_text(f.api, target)) for f, _ in under]
        return protocol.hover(shown, under[0][1])

    @server.feature(types.SHUTDOWN)
    def shutdown(ls: MigrateServer, *args: Any) -> None:
        ls.shut_down = True
        for waiting in ls.pending.values():
            waiting.cancel()

    return server


def serve(debounce_s: float = DEBOUNCE_S) -> int:
    """Serve over stdin and stdout until `exit`: its exit code, 0 after `shutdown`."""
    server = create(debounce_s)
    server.start_io()
    return 0 if server.shut_down else 1
