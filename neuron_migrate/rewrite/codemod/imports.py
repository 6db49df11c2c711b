"""The import pass, run on the rewritten tree: drop torch_xla imports nothing uses any more, mark
the ones still needed, and add the imports and helpers the new code names.

An import inside `try: ... except ImportError:` is an availability guard: removing it would
change which branch runs, so it stays with a marker instead.
"""

from __future__ import annotations

import ast
import bisect
import functools
import re
import sys
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Literal

import libcst as cst

from neuron_migrate.rewrite.codemod.collapse import (
    catches_import_error,
    collapsed,
    collapsible,
    same_arms,
    try_side,
)
from neuron_migrate.rewrite.codemod.context import FileContext, module_bindings
from neuron_migrate.rewrite.codemod.helpers import HELPERS as ADDED_HELPERS
from neuron_migrate.rewrite.codemod.markers import (
    NOTE_PREFIX,
    TODO_PREFIX,
    HeaderComments,
    with_comments,
)
from neuron_migrate.rewrite.codemod.names import NameCount, dotted
from neuron_migrate.rewrite.codemod.outline import Imported
from neuron_migrate.rewrite.codemod.output import Printer
from neuron_migrate.rewrite.codemod.passes import EXPRESSIONS, INERT, PrunedTransformer
from neuron_migrate.rewrite.codemod.recording import Extent
from neuron_migrate.rewrite.codemod.results import Outcome
from neuron_migrate.rewrite.codemod.scopes import Region, Scopes
from neuron_migrate.rewrite.codemod.skeleton import (
    OpaqueCompound,
    OpaqueExpression,
    OpaqueStatement,
)
from neuron_migrate.rewrite.codemod.spansets import SourceText, SpanSet
from neuron_migrate.rewrite.codemod.stand_ins import (
    Bound,
    Todos,
    bound_names,
    defines,
    is_stand_in_try,
    stand_in_try,
    with_handler,
)
from neuron_migrate.rewrite.codemod.statements import (
    StatementCleanup,
    deleted,
    strip_leading_blanks,
)
from neuron_migrate.rewrite.codemod.transforms.launch import (
    DEVICE_LOADER,
    DEVICE_LOADER_SOURCE,
    DEVICE_LOADER_SPARE,
    device_loader_source,
)
from neuron_migrate.rewrite.leftovers import IMPORT_MARKERS
from neuron_migrate.ruleset import Rule, RuleSet
from neuron_migrate.scan.analyzer.availability import IMPORT_ERRORS, STAND_IN

GUARD_RULE = "NM198"
# Why a torch_xla import stays: its module is used, only tested by a guard, or nothing says.
Why = Literal["used", "tested"] | None

HELPERS = {
    DEVICE_LOADER: DEVICE_LOADER_SOURCE,
    DEVICE_LOADER_SPARE: device_loader_source(DEVICE_LOADER_SPARE),
    **{name: helper.source for name, helper in ADDED_HELPERS.items()},
}


def own_helpers(taken: set[str], source: str) -> frozenset[str]:
    """The helpers a file already holds (a second run), as against its own classes that have a
    helper's name: those hold the helper's source verbatim, but for its indentation (a file
    indented by two spaces gets its helpers so)."""
    names = [name for name in HELPERS if name in taken]
    if not names:
        return frozenset()
    lines = _unindented(source)
    return frozenset(name for name in names if _unindented(HELPERS[name].strip()) in lines)


def _unindented(text: str) -> str:
    return "\n".join(line.strip() for line in text.splitlines())


# The libraries whose imports this pass settles, and the rule of a plain import of each. A
# torch_xla import still used is marked (NM100); an NxD one is not (NM807): the NxD names still
# read carry their own markers, and the import goes with the last of them.
PLAIN_IMPORT_RULES = {"torch_xla": "NM100", "neuronx_distributed": "NM807"}
_MARKED_WHEN_USED = frozenset({"NM100"})


def _is_torch_xla(module: str) -> bool:
    """A module of a library this pass settles (torch_xla, NxD)."""
    return module.partition(".")[0] in PLAIN_IMPORT_RULES


class _Usage(NameCount):
    """The names the rewritten tree reads, and its dotted chains. Counted word by word, on
    demand: a count enters the nodes the codemod made and those that hold the word in the source
    (an opaque statement is parsed then). A node may be counted twice; a count only ever answers
    whether a name is used."""

    def __init__(
        self,
        module: cst.Module,
        extents: Mapping[cst.CSTNode, Extent],
        source: SourceText,
        printer: Printer,
        made_from: Mapping[object, Extent],
    ) -> None:
        super().__init__()
        self.module = module
        self.extents = extents
        self.made_from = made_from
        self.source = source
        # A top-level statement a pass made is entered only when what it prints has the word.
        self.printer = printer
        self.made = {stmt for stmt in module.body if stmt not in extents}
        self.covered: set[str] = set()  # words whose every mention is counted
        self.parsed: set[int] = set()  # opaque statements counted, by id
        self.mentions = SpanSet(())  # where the words of the count in progress are
        self.words: re.Pattern[str] | None = None  # and what they are
        self._annotated: frozenset[str] | None = None
        self._quoted: frozenset[str] | None = None  # the words of the source's quoted text
        self._scopes: Scopes | None = None  # read when a binding's region first matters
        self.region: Region | None = None  # the region of the count in progress, if not all
        self._scoped: dict[tuple[str, Region], tuple[int, int]] = {}

    def cover(self, words: Iterable[str]) -> None:
        """Count every mention of `words`, in one pass."""
        new = sorted(set(words) - self.covered)
        if not new:
            return
        self.covered.update(new)
        self.words = re.compile(r"\b(?:" + "|".join(map(re.escape, new)) + r")\b")
        self.mentions = self.source.occurrences(self.words.pattern)
        if self.mentions:
            self.count(self.module)

    def uses_name(self, name: str, line: int | None = None) -> bool:
        """Whether code reads `name`; bound at `line`, only where that binding can be read."""
        reads, _ = self._reads(name, line)
        return reads > 0 or self._in_annotation(name)

    def only_tests(self, name: str, line: int | None = None) -> bool:
        """Whether `name` is read, but only by availability tests (`xm is None`, `if xm:`)."""
        reads, tests = self._reads(name, line)
        return reads == 0 and tests > 0 and not self._in_annotation(name)

    def _reads(self, name: str, line: int | None) -> tuple[int, int]:
        """How often `name` is read, and only tested, in the file; bound at `line`, in the
        region its binding reaches (less than the file only where a function binds it)."""
        self.cover([name])
        if line is None or (self.names[name] == 0 and self.tests[name] == 0):
            return self.names[name], self.tests[name]
        if self._scopes is None:
            self._scopes = Scopes(self.source.source)
        region = self._scopes.region(name, line)
        if region.whole_module:
            return self.names[name], self.tests[name]
        key = (name, region)
        if key not in self._scoped:
            self._scoped[key] = self._count_in(name, region)
        return self._scoped[key]

    def _code_lines(self, extent: Extent) -> tuple[int, int]:
        """The first and last lines of an extent that hold its code: an extent takes in the
        blank and comment lines above a statement, and ends at the start of the next line."""
        lines = self.source.lines
        first, last = extent[0], extent[2] - (extent[3] == 0)
        while first < last and first <= len(lines) and lines[first - 1].strip()[:1] in ("", "#"):
            first += 1
        return first, max(first, last)

    def _count_in(self, name: str, region: Region) -> tuple[int, int]:
        """Count `name` over the mentions `region` holds, the file's counts kept aside."""
        saved = (self.names, self.tests, self.chains, self.parsed, self.mentions, self.words)
        self.names, self.tests, self.chains, self.parsed = Counter(), Counter(), set(), set()
        self.words = re.compile(rf"\b{re.escape(name)}\b")
        everywhere = self.source.occurrences(self.words.pattern)
        self.mentions = SpanSet(
            (start[0], start[1], end[0], end[1])
            for start, end in zip(everywhere.starts, everywhere.ends, strict=True)
            if region.holds(start[0])
        )
        self.region = region
        try:
            if self.mentions:
                self.count(self.module)
            return self.names[name], self.tests[name]
        finally:
            self.names, self.tests, self.chains, self.parsed, self.mentions, self.words = saved
            self.region = None

    def _in_annotation(self, name: str) -> bool:
        # A name no quoted text of the source holds is in no string annotation: the common
        # case, answered without parsing the source again.
        if self._quoted is None:
            quoted = " ".join(_QUOTED.findall(self.source.source))
            self._quoted = frozenset(re.findall(r"\w+", quoted))
        return name in self._quoted and name in self.annotated()

    def annotated(self) -> frozenset[str]:
        """The names string annotations read (`-> "XLAShardedTensor"`): an import they
        need stays. Read from the source on the first question (the rewrite changes no
        annotation)."""
        if self._annotated is None:
            self._annotated = string_annotation_names(self.source.source)
        return self._annotated

    def uses_chain(self, chain: str) -> bool:
        self.cover([chain.partition(".")[0]])
        return chain in self.chains

    def enter(self, node: cst.CSTNode) -> bool:
        kind = type(node)
        if kind in INERT or not self.mentions.within(self.extents.get(node)):
            return False
        if self.region is not None and node not in self.extents:
            # a node the rule pass made, counted in a region only where what it replaced was
            where = self.made_from.get(node)
            if where is not None and self.region.misses(*self._code_lines(where)):
                return False
        assert self.words is not None
        if node in self.made and not self.words.search(self.printer.text(node)):
            return False
        # An opaque node is parsed when its source holds a word (its comment lines above hold
        # no names; a piece of a statement has none).
        if kind is OpaqueStatement:
            cut = node.cut  # type: ignore[attr-defined]
            if cut.import_line:
                return False  # an import reads no name
            if id(node) not in self.parsed and self.words.search(cut.text):
                self.parsed.add(id(node))
                self.count(node.parse())  # type: ignore[attr-defined]
            return False
        if kind is OpaqueExpression:
            text = node.piece.text  # type: ignore[attr-defined]
            if id(node) not in self.parsed and self.words.search(text):
                self.parsed.add(id(node))
                self.count(node.parse())  # type: ignore[attr-defined]
            return False
        if kind is OpaqueCompound:
            headers = node.headers.texts  # type: ignore[attr-defined]
            if id(node) not in self.parsed and any(self.words.search(h) for h in headers):
                self.parsed.add(id(node))
                self.count(node.parse_headers())  # type: ignore[attr-defined]
        return True


# Text after a quote, up to the next quote or the end of the line: what a string on one line
# holds (and some text between strings, which only makes the test above less sharp).
_QUOTED = re.compile(r"[\"']([^\"'\n]*)")


def string_annotation_names(source: str) -> frozenset[str]:
    """The names read by the string annotations of `source` (`x: "Optional[T]"`, `-> "T"`)."""
    if '"' not in source and "'" not in source:
        return frozenset()
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        annotations: list[ast.expr | None] = []
        if isinstance(node, ast.arg):
            annotations.append(node.annotation)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            annotations.append(node.returns)
        elif isinstance(node, ast.AnnAssign):
            annotations.append(node.annotation)
        for annotation in annotations:
            for part in ast.walk(annotation) if annotation is not None else ():
                if isinstance(part, ast.Constant) and isinstance(part.value, str):
                    try:
                        inner = ast.parse(part.value.strip(), mode="eval")
                    except SyntaxError:
                        continue
                    found.update(n.id for n in ast.walk(inner) if isinstance(n, ast.Name))
    return frozenset(found)


def _catches_import_error(node: cst.Try) -> bool:
    return any(catches_import_error(handler, IMPORT_ERRORS) for handler in node.handlers)


class ImportCleanup(HeaderComments, StatementCleanup, PrunedTransformer):
    def __init__(
        self,
        ruleset: RuleSet,
        usage: _Usage,
        extents: Mapping[cst.CSTNode, Extent],
        made_from: Mapping[object, Extent],
        xla_mentions: SpanSet,
        plain_binders: frozenset[str] = frozenset(),
        left: frozenset[str] = frozenset(),
        import_lines: Sequence[int] = (),
        outcomes: list[Outcome] | None = None,
        unused_lines: frozenset[int] = frozenset(),
        stand_in: str | None = None,
        bound: frozenset[str] = frozenset(),
        new_stand_ins: bool = True,
    ) -> None:
        super().__init__()
        self.bound = bound  # what the torch_xla imports' names name (`torch_xla.runtime`)
        self.new_stand_ins = new_stand_ins  # else only those an earlier run wrote are settled
        self.unused_lines = unused_lines
        # The class a kept import's names are bound to where torch_xla is missing (None: the
        # file's own code takes its name, and kept imports stay as they are).
        self.stand_in = stand_in
        self.stood_in = False  # whether the module binds a name to it
        self.dropped_stand_in = False  # whether a stand-in `try` went with its imports
        self.stand_in_tries: list[tuple[int, int]] = []  # (try, its body) by id, entered
        # What the import lines in a stand-in `try` still bind, by the try's id.
        self.still_bound: dict[int, list[Bound]] = {}
        self.ruleset = ruleset
        # The lines torch_xla import statements start on, sorted: where a marker's site is.
        self.import_lines = import_lines
        self.outcomes = outcomes if outcomes is not None else []
        self.usage = usage
        self.plain_binders = plain_binders
        self.left = left
        self.extents = extents
        self.made_from = made_from
        self.xla_mentions = xla_mentions
        self.guarded_bodies: set[int] = set()
        self.collapsing: set[int] = set()  # the `try` statements that no longer decide, by id
        self.same_arms: set[int] = set()  # the version-compat ones whose sides became one
        self.blocks: list[int] = []
        self.line: int | None = None  # the line of the imports being settled

    def wanted(self, node: cst.CSTNode) -> bool:
        """Statements that may hold a torch_xla import, and the blocks around them. The rule
        pass makes no import, so a node it made holds one only where the node it replaced did."""
        kind = type(node)
        return (
            kind not in INERT
            and kind not in EXPRESSIONS
            and self.xla_mentions.within(self.extents.get(node) or self.made_from.get(node))
        )

    def visit_Module(self, node: cst.Module) -> None:
        self.remember_header(node)
        self._import_markers = frozenset(
            self.ruleset.get(code).marker() for code in ("NM100", GUARD_RULE)
        )
        self._drop_header_markers = False

    def leave_Module(self, original: cst.Module, updated: cst.Module) -> cst.Module:
        if self.dropped_stand_in and not self.stood_in:
            # the last stand-in went: so does the class an earlier run added for it
            assert self.stand_in is not None
            body = [stmt for stmt in updated.body if not defines(stmt, self.stand_in)]
            updated = updated.with_changes(body=body)
        module = super().leave_Module(original, updated)
        if not self._drop_header_markers:
            return module
        # The first statement was an import, deleted: the markers above it are in the header.
        header = [
            line
            for line in module.header
            if line.comment is None or line.comment.value not in self._import_markers
        ]
        return module.with_changes(header=header)

    def visit_Try(self, node: cst.Try) -> None:
        if self.stand_in and is_stand_in_try(node, self.stand_in):
            # its imports are settled as unguarded ones are; `leave_Try` writes it again
            self.stand_in_tries.append((id(node), id(node.body)))
            self.still_bound[id(node)] = []
            return
        if same_arms(node):
            self.same_arms.add(id(node))  # its imports settle as unguarded ones do
            return
        if not _catches_import_error(node):
            return
        if collapsible(node, IMPORT_ERRORS, _is_import_line, self._removed, self._read):
            self.collapsing.add(id(node))  # its imports go as unguarded ones do
        else:
            self.guarded_bodies.add(id(node.body))

    def leave_Try(
        self, original: cst.Try, updated: cst.Try
    ) -> cst.BaseStatement | cst.FlattenSentinel[cst.BaseStatement]:
        if self.stand_in_tries and self.stand_in_tries[-1][0] == id(original):
            self.stand_in_tries.pop()
            return self._stand_in_settled(original, updated, self.still_bound.pop(id(original)))
        if id(original) in self.collapsing:
            return cst.FlattenSentinel(collapsed(updated, self._read))
        if id(original) in self.same_arms:
            return cst.FlattenSentinel(try_side(updated))
        return updated

    def _read(self, name: str) -> bool:
        return self.usage.uses_name(name) or self.usage.tests[name] > 0

    def _removed(self, line: cst.BaseStatement) -> bool:
        """Whether every name a line of imports binds is a torch_xla name that goes, and none
        was unused in the source: the scan reports such an import (`import torch_xla  # noqa`,
        `xla_backend`) under its guard as left for a person, and cannot tell yet whether that
        guard collapses."""
        extent = self.extents.get(line) or self.made_from.get(line)
        if extent is None or any(extent[0] <= n <= extent[2] for n in self.unused_lines):
            return False
        if isinstance(line, OpaqueStatement):
            imported = line.cut.imports
            modules = [i.module for i in imported]
            gone = all(self._fate(i) == "removed" for i in imported)
        else:
            assert isinstance(line, cst.SimpleStatementLine)
            modules = [m for small in line.body for m in _imported_modules(small)]
            gone = all(self._small(small)[0] is None for small in line.body)
        return gone and all(map(_is_torch_xla, modules))

    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        self.blocks.append(id(node))

    def leave_IndentedBlock(
        self, original: cst.IndentedBlock, updated: cst.IndentedBlock
    ) -> cst.IndentedBlock:
        self.blocks.pop()
        return super().leave_IndentedBlock(original, updated)

    def _guarded(self) -> bool:
        return any(block in self.guarded_bodies for block in self.blocks)

    def _in_stand_in_try(self) -> int | None:
        """The id of the stand-in `try` whose block the current line is in, if any."""
        if self.stand_in_tries and self.blocks and self.blocks[-1] == self.stand_in_tries[-1][1]:
            return self.stand_in_tries[-1][0]
        return None

    def _todos(self, names: list[Bound]) -> Todos:
        """For each name, the rules and advice of the sites left for a person that read it
        ("NM116: call ..."), in the order of their lines: those of the name itself, then by the
        attribute read from it (`mark_step` of `xm`)."""
        left = sorted(
            (o for o in self.outcomes if o.status != "rewritten" and o.code not in IMPORT_MARKERS),
            key=lambda o: o.line,
        )

        def through(api: str) -> str:
            """The import name a site's API is read through: the longest that holds it."""
            holding = [q for q in self.bound if api == q or api.startswith(q + ".")]
            return max(holding, key=len, default="")

        out: Todos = []
        for local, qualname, imported in names:
            codes: dict[str | None, dict[str, None]] = {}
            for o in left:
                if through(o.api) not in (qualname, imported):
                    continue
                attribute = o.api[len(qualname) + 1 :].partition(".")[0] or None
                codes.setdefault(attribute, {})[o.code] = None
            if not codes:
                codes[None] = {"NM100": None}
            arguments = [
                (attribute, "; ".join(self._advice(code) for code in found))
                for attribute, found in sorted(codes.items(), key=lambda item: item[0] is not None)
            ]
            out.append((local, arguments))
        return out

    def _advice(self, code: str) -> str:
        return f"{code}: {self.ruleset.get(code).manual}"

    def _stands_in(self, line: cst.BaseStatement) -> list[Bound] | None:
        """The names of a kept line of imports that a stand-in can bind, or None: a line of
        torch_xla API modules only (not a side-effect import: what it registers is missing
        either way), outside any guard."""
        if self.stand_in is None or self._guarded():
            return None
        names = bound_names(line)
        if names is None:
            return None
        for bound in names:
            rule = self.ruleset.for_import(bound.imported)
            if rule is not None and rule.code != "NM100":
                return None
        return names

    def _stand_in_settled(
        self, original: cst.Try, updated: cst.Try, names: list[Bound]
    ) -> cst.BaseStatement:
        """A stand-in `try` after its imports were settled: gone with them, or its handler
        written for the names still kept."""
        assert self.stand_in is not None
        if not names:
            self.dropped_stand_in = True
            line = cst.SimpleStatementLine(body=[cst.Pass()], leading_lines=updated.leading_lines)
            self._drop_header_markers |= bool(self.already_above(original))
            return deleted(_without_import_markers(line))
        self.stood_in = True
        marker = self.ruleset.get("NM100").marker()
        # (one line's rewrite knows no other line's sites: the handler stays as it was)
        todos = self._todos(names) if self.new_stand_ins else None
        settled = with_handler(updated, self.stand_in, todos) if todos else updated
        return with_comments(settled, [marker], self.already_above(original))

    def _used(self, module: str, local: str) -> bool:
        rule = self.ruleset.for_import(module)
        if rule is None or rule.code in PLAIN_IMPORT_RULES.values():
            return self.usage.uses_name(local, self.line)
        if self._needed(rule):
            return True
        if local == module.partition(".")[0]:
            # Imported for a side effect; but it binds `torch_xla` too, which code still
            # reading that name needs when no plain torch_xla import binds it.
            if self.usage.uses_chain(module):
                return True
            return local not in self.plain_binders and self.usage.uses_name(local, self.line)
        return self.usage.uses_name(local, self.line)

    def _needed(self, rule: Rule) -> bool:
        """Whether a side-effect import is needed by a site left for a person: a process group
        still created with 'xla' fails once the import that registers 'xla' is gone."""
        needed_by = rule.rewrite.option("needed_by", "") if rule.rewrite else ""
        return any(code in self.left for code in (needed_by or "").split())

    def _keeps(self, module: str, local: str) -> Why:
        """Why a torch_xla name stays: its module is used, or only tested (a guard reads it)."""
        if self._used(module, local):
            return "used"
        return "tested" if self.usage.only_tests(local, self.line) else None

    def leave_SimpleStatementLine(
        self, original: cst.SimpleStatementLine, updated: cst.SimpleStatementLine
    ) -> cst.BaseStatement:
        self._at(original)
        kept, removed, used = self._kept(updated)
        return self._settle(
            original, updated, bool(kept), removed, used, lambda: _without(updated, kept)
        )

    def leave_OpaqueStatement(
        self, original: OpaqueStatement, updated: OpaqueStatement
    ) -> cst.BaseStatement:
        """A line of imports settled from what it imports: parsed only when some of its
        torch_xla names go and others stay."""
        if not updated.cut.import_line:
            return updated
        self._at(original)
        fates = [self._fate(imported) for imported in updated.cut.imports]
        kept = any(fate != "removed" for fate in fates)
        removed = "removed" in fates
        used: Why = "used" if "used" in fates else "tested" if "tested" in fates else None

        def rebuilt() -> cst.BaseStatement:
            line = updated.parse_line()
            return _without(line, self._kept(line)[0])

        return self._settle(original, updated, kept, removed, used, rebuilt)

    def _at(self, original: cst.BaseStatement) -> None:
        """Where the line of imports being settled is: the region its names reach follows."""
        extent = self.extents.get(original) or self.made_from.get(original)
        self.line = extent[0] if extent is not None else None

    def _settle(
        self,
        original: cst.BaseStatement,
        line: cst.BaseStatement,
        kept: bool,
        removed: bool,
        used: Why,
        rebuilt: Callable[[], cst.BaseStatement],
    ) -> cst.BaseStatement:
        """What becomes of a line of imports: as it is, `rebuilt` without the torch_xla names
        nothing uses, deleted, or marked. `kept`: whether any name stays; `removed`: whether a
        torch_xla name goes; `used`: why one stays ("used", or only "tested" by a guard)."""
        if not removed and not used:
            return line
        guarded = self._guarded()
        if not kept and not guarded:
            # A comment after the import spoke of the import itself: it goes with it, and so
            # does a marker an earlier run wrote above it.
            self._drop_header_markers |= bool(self.already_above(original))
            return deleted(_without_import_markers(_comment_dropped(line)))
        if not kept:  # an availability guard: keep the import as it was, and say why
            code = GUARD_RULE
        else:
            line = rebuilt() if removed and not guarded else line
            # read by availability tests only: no code is left to migrate, the guard is
            plain = PLAIN_IMPORT_RULES.get(_xla_module(line).partition(".")[0])
            if plain is None and used != "tested":
                return line  # a legacy torch_neuronx name still read: its uses are marked
            code = GUARD_RULE if used == "tested" or plain is None else plain
        if code in PLAIN_IMPORT_RULES.values() and (not used or code not in _MARKED_WHEN_USED):
            return line
        self._record(code, original, line)
        marker = self.ruleset.get(code).marker()
        if code == "NM100" and (names := self._stands_in(line)) is not None:
            inside = self._in_stand_in_try()
            if inside is not None:  # the `try` around it is written again when it is left
                self.still_bound[inside].extend(names)
                return line
            if not self.new_stand_ins:
                return with_comments(line, [marker], self.already_above(original))
            self.stood_in = True
            stood_in = stand_in_try(line, self.stand_in, self._todos(names))  # type: ignore[arg-type]
            return with_comments(stood_in, [marker], self.already_above(original))
        return with_comments(line, [marker], self.already_above(original))

    def _record(self, code: str, original: cst.BaseStatement, line: cst.BaseStatement) -> None:
        """A marked import is a site left for a person, counted as the rule pass counts its."""
        extent = self.extents.get(original) or self.made_from.get(original)
        if extent is None:
            return
        at = bisect.bisect_left(self.import_lines, extent[0])
        if at == len(self.import_lines) or self.import_lines[at] > extent[2]:
            return
        self.outcomes.append(Outcome(code, self.import_lines[at], _xla_module(line), "marked"))

    def _kept(
        self, line: cst.SimpleStatementLine
    ) -> tuple[list[cst.BaseSmallStatement], bool, Why]:
        """The line's statements without the torch_xla names nothing uses, whether one went,
        why one stays."""
        kept: list[cst.BaseSmallStatement] = []
        removed_any = False
        still_used: Why = None
        for small in line.body:
            new, removed, used = self._small(small)
            removed_any |= removed
            still_used = _stronger(still_used, used)
            if new is not None:
                kept.append(new)
        return kept, removed_any, still_used

    def _fate(self, imported: Imported) -> str:
        """What `_small` decides for the alias that binds `imported`: `other` (not torch_xla),
        `used`, `tested` or `removed`."""
        module = imported.module
        if imported.name is None:  # import module [as local]
            local = imported.local or module.partition(".")[0]
        else:
            local = imported.local or imported.name
            full = f"{module}.{imported.name}"
            if self._legacy_neuronx(full):
                return self._keeps(full, local) or "removed"
            module = full if _is_torch_xla(module) else module
        if not _is_torch_xla(module):
            return "other"
        return self._keeps(module, local) or "removed"

    def _legacy_neuronx(self, name: str) -> bool:
        """A name of the XLA-based torch-neuronx imported by itself (`from torch_neuronx import
        trace`): a rule matches it, and the native package may not have it, so the import goes
        once nothing reads it. The package's own import stays (it registers the device)."""
        return name.partition(".")[0] == "torch_neuronx" and (
            self.ruleset.for_qualname(name) is not None
        )

    def _small(
        self, small: cst.BaseSmallStatement
    ) -> tuple[cst.BaseSmallStatement | None, bool, Why]:
        """(what remains of the statement, whether a torch_xla name went, why one stays)."""
        if isinstance(small, cst.Import):
            aliases = list(small.names)
            keep = []
            removed = False
            used: Why = None
            for alias in aliases:
                module = dotted(alias.name)
                local = alias.asname.name.value if alias.asname else module.partition(".")[0]  # type: ignore[union-attr]
                why = self._keeps(module, local) if _is_torch_xla(module) else "other"
                if why is None:
                    removed = True
                    continue
                keep.append(alias)
                if why != "other":
                    used = _stronger(used, why)
            return rebuild_import(small, keep), removed, used
        if isinstance(small, cst.ImportFrom) and small.module is not None and not small.relative:
            module = dotted(small.module)
            legacy = module.partition(".")[0] == "torch_neuronx"
            if not _is_torch_xla(module) and not legacy:
                return small, False, None
            if isinstance(small.names, cst.ImportStar):
                return small, False, None  # the rule pass marked it (NM197)
            keep = []
            removed = False
            used = None
            for alias in small.names:
                name = dotted(alias.name)
                local = alias.asname.name.value if alias.asname else name  # type: ignore[union-attr]
                if legacy and not self._legacy_neuronx(f"{module}.{name}"):
                    keep.append(alias)  # a native torch_neuronx name
                    continue
                why = self._keeps(f"{module}.{name}", local)
                if why is None:
                    removed = True
                    continue
                keep.append(alias)
                used = _stronger(used, why)
            return rebuild_import(small, keep), removed, used
        return small, False, None


def _imported_modules(small: cst.BaseSmallStatement) -> list[str]:
    """The modules a statement imports from; `[""]` for anything else."""
    if isinstance(small, cst.Import):
        return [dotted(alias.name) for alias in small.names]
    if isinstance(small, cst.ImportFrom) and small.module is not None and not small.relative:
        return [dotted(small.module)]
    return [""]


def _xla_module(line: cst.BaseStatement) -> str:
    """The first torch_xla (NxD) module a line of imports names: the marked site's API;
    `torch_neuronx` for a line of legacy torch_neuronx names."""
    if isinstance(line, OpaqueStatement):
        for imported in line.cut.imports:
            if _is_torch_xla(imported.module):
                return imported.module
        if any(i.module.partition(".")[0] == "torch_neuronx" for i in line.cut.imports):
            return "torch_neuronx"
        return "torch_xla"
    for small in getattr(line, "body", ()):
        if isinstance(small, cst.Import):
            for alias in small.names:
                if _is_torch_xla(dotted(alias.name)):
                    return dotted(alias.name)
        elif (
            isinstance(small, cst.ImportFrom)
            and small.module is not None
            and _is_torch_xla(dotted(small.module))
        ):
            return dotted(small.module)
        elif (
            isinstance(small, cst.ImportFrom)
            and small.module is not None
            and dotted(small.module).partition(".")[0] == "torch_neuronx"
        ):
            return "torch_neuronx"
    return "torch_xla"


def _stronger(a: Why, b: Why) -> Why:
    """Of two reasons a torch_xla name stays, the one its line's marker gives."""
    return "used" if "used" in (a, b) else a or b


def _without(
    line: cst.SimpleStatementLine, kept: list[cst.BaseSmallStatement]
) -> cst.SimpleStatementLine:
    if kept[-1].semicolon is not cst.MaybeSentinel.DEFAULT:
        kept[-1] = kept[-1].with_changes(semicolon=cst.MaybeSentinel.DEFAULT)
    return line.with_changes(body=kept)


def _without_import_markers(line: cst.SimpleStatementLine) -> cst.SimpleStatementLine:
    """The line without the NM100 / NM198 markers above it: they spoke of this import."""
    kept = [
        empty
        for empty in line.leading_lines
        if empty.comment is None
        or not empty.comment.value.startswith((f"{TODO_PREFIX}NM100)", f"{TODO_PREFIX}NM198)"))
    ]
    return line.with_changes(leading_lines=kept)


def _comment_dropped(line: cst.BaseStatement) -> cst.SimpleStatementLine:
    """The line without its trailing comment, for `deleted` (an opaque one has no nodes)."""
    if isinstance(line, OpaqueStatement):
        return cst.SimpleStatementLine(body=[cst.Pass()], leading_lines=line.leading_lines)
    assert isinstance(line, cst.SimpleStatementLine)
    return line.with_changes(trailing_whitespace=cst.TrailingWhitespace())


def rebuild_import(
    small: cst.Import | cst.ImportFrom, aliases: Sequence[cst.ImportAlias]
) -> cst.BaseSmallStatement | None:
    if not aliases:
        return None
    aliases = list(aliases)
    last = aliases[-1]
    if isinstance(small, cst.ImportFrom) and small.rpar is not None and _line_break(last.comma):
        # In parentheses, a comma the line ends after stays: it holds the name's comment.
        return _closed(small, aliases)
    aliases[-1] = last.with_changes(comma=cst.MaybeSentinel.DEFAULT)
    return small.with_changes(names=aliases)


def _line_break(
    whitespace: cst.Comma | cst.MaybeSentinel | cst.BaseParenthesizableWhitespace,
) -> cst.ParenthesizedWhitespace | None:
    if isinstance(whitespace, cst.Comma):
        whitespace = whitespace.whitespace_after
    return whitespace if isinstance(whitespace, cst.ParenthesizedWhitespace) else None


def _closed(small: cst.ImportFrom, aliases: list[cst.ImportAlias]) -> cst.ImportFrom:
    """`small` with `aliases`, the last of which ends its line: the line after it is indented for
    `)` as the line after the statement's last name was. A removed last name's comment on its
    own line goes with it, with a comma after the name or without (as ruff's and libcst's
    removals of a name do); comment lines of their own between it and `)` stay."""
    assert small.rpar is not None and not isinstance(small.names, cst.ImportStar)
    rpar = small.rpar
    old_last = small.names[-1]
    layout = _line_break(old_last.comma)
    if layout is None and (layout := _line_break(rpar.whitespace_before)) is not None:
        rpar = rpar.with_changes(whitespace_before=cst.SimpleWhitespace(""))
    mine = _line_break(aliases[-1].comma)
    if layout is not None and mine is not None and aliases[-1] is not old_last:
        line = mine.with_changes(
            empty_lines=[*mine.empty_lines, *layout.empty_lines],
            indent=layout.indent,
            last_line=layout.last_line,
        )
        comma = aliases[-1].comma.with_changes(whitespace_after=line)  # type: ignore[union-attr]
        aliases[-1] = aliases[-1].with_changes(comma=comma)
    return small.with_changes(names=aliases, rpar=rpar)


def clean_imports(
    module: cst.Module,
    ruleset: RuleSet,
    extents: Mapping[cst.CSTNode, Extent],
    source: SourceText,
    xla_mentions: SpanSet,
    imported: Iterable[str],
    made_from: Mapping[object, Extent],
    printer: Printer,
    plain_binders: frozenset[str] = frozenset(),
    left: frozenset[str] = frozenset(),
    import_lines: Sequence[int] = (),
    outcomes: list[Outcome] | None = None,
    unused_lines: frozenset[int] = frozenset(),
    stand_in: str | None = None,
    bound: frozenset[str] = frozenset(),
    new_stand_ins: bool = True,
) -> tuple[cst.Module, bool]:
    """`module` (rewritten from `source`; its nodes from there have `extents`) with the
    torch_xla imports nothing uses any more removed, and those still needed marked.
    `xla_mentions`: where the source says torch_xla; `imported`: the names the imports bind,
    counted in one pass before the import pass asks about them; `made_from`: for each node the
    rule pass made, where what it stands in place of was in the source; `printer`: prints its
    top-level statements for the output; `plain_binders`: the names torch_xla imports other than
    the side-effect ones (`import torch_xla.distributed.xla_backend`) bind; `left`: the codes of
    the rules with a site the rule pass left as it was; `import_lines`: the sorted lines the
    torch_xla import statements start on; `outcomes`: where each marked import is recorded;
    `unused_lines`: the lines of torch_xla imports the source never read (the scan reports them);
    `stand_in`: the class a kept import's names are bound to where torch_xla is missing
    (`stand_ins`), None to keep such imports as they are; `bound`: what the names the torch_xla
    imports bind name (`torch_xla.core.xla_model` for `xm`), to tell which a site reads;
    `new_stand_ins`: False to settle only the stand-ins an earlier run wrote (a rewrite of one
    line's sites does not judge the file's). Also says whether the module binds a name to the
    stand-in (the helper class is then added)."""
    usage = _Usage(module, extents, source, printer, made_from)
    usage.cover(imported)
    cleanup = ImportCleanup(
        ruleset,
        usage,
        extents,
        made_from,
        xla_mentions,
        plain_binders,
        left,
        import_lines,
        outcomes,
        unused_lines,
        stand_in,
        bound,
        new_stand_ins,
    )
    return module.visit(cleanup), cleanup.stood_in


# -- additions --------------------------------------------------------------------------------


def _is_import_line(stmt: cst.BaseStatement) -> bool:
    if isinstance(stmt, OpaqueStatement):
        return stmt.cut.import_line
    return isinstance(stmt, cst.SimpleStatementLine) and all(
        isinstance(s, (cst.Import, cst.ImportFrom)) for s in stmt.body
    )


def _is_docstring(stmt: cst.BaseStatement) -> bool:
    return (
        isinstance(stmt, cst.SimpleStatementLine)
        and len(stmt.body) == 1
        and isinstance(stmt.body[0], cst.Expr)
        and isinstance(stmt.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
    )


def _insertion_point(body: Sequence[cst.BaseStatement]) -> tuple[int, bool]:
    """Where new imports go: after the file's leading import block (after the docstring when
    there is none). The flag says whether an import block was found."""
    index = 1 if body and _is_docstring(body[0]) else 0
    found = False
    while index < len(body) and _is_import_line(body[index]):
        index += 1
        found = True
    return index, found


def _top_module(statement: cst.BaseStatement) -> str | None:
    """`os` for `import os.path`, `torch` for `from torch import nn`; None for anything else."""
    if isinstance(statement, OpaqueStatement):
        return statement.cut.top_module
    if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
        return None
    node = statement.body[0]
    if isinstance(node, cst.Import):
        name: cst.BaseExpression = node.names[0].name
    elif isinstance(node, cst.ImportFrom) and node.module is not None and not node.relative:
        name = node.module
    else:
        return None
    full = cst.helpers.get_full_name_for_node(name)
    return full.partition(".")[0] if full else None


def _place_in_group(
    body: list[cst.BaseStatement], start: int, end: int, statement: cst.BaseStatement, root: str
) -> bool:
    """Put `import os` among the leading block's standard-library imports (in order) and
    `import torch...` after its last torch import, so the file keeps its import groups."""
    roots = [_top_module(body[i]) for i in range(start, end)]
    if root == "torch":
        spots = [start + i for i, r in enumerate(roots) if r == "torch"]
        if not spots:
            return False
        body.insert(spots[-1] + 1, statement.with_changes(leading_lines=[]))
        return True
    stdlib = [start + i for i, r in enumerate(roots) if r in sys.stdlib_module_names]
    if not stdlib:
        return False
    run = [stdlib[0]]
    while run[-1] + 1 in stdlib and not _starts_group(body[run[-1] + 1]):
        run.append(run[-1] + 1)
    later = [i for i in run if (_top_module(body[i]) or "") > root]
    if later and later[0] == run[0]:
        first = body[run[0]]
        leading, markers = _split_markers(getattr(first, "leading_lines", ()))
        body[run[0]] = first.with_changes(leading_lines=markers)
        body.insert(run[0], statement.with_changes(leading_lines=leading))
    else:
        position = later[0] if later else run[-1] + 1
        body.insert(position, statement.with_changes(leading_lines=[]))
    return True


def _split_markers(
    lines: Sequence[cst.EmptyLine],
) -> tuple[list[cst.EmptyLine], list[cst.EmptyLine]]:
    """A statement's leading lines as (those a line inserted above it takes: blank lines,
    group comments; the codemod's markers right above it, which stay with it)."""
    cut = len(lines)
    while cut and _is_marker(lines[cut - 1]):
        cut -= 1
    return list(lines[:cut]), list(lines[cut:])


def _is_marker(line: cst.EmptyLine) -> bool:
    return line.comment is not None and line.comment.value.startswith((TODO_PREFIX, NOTE_PREFIX))


def _starts_group(statement: cst.BaseStatement) -> bool:
    return any(line.comment is None for line in getattr(statement, "leading_lines", ()))


def _blank() -> cst.EmptyLine:
    return cst.EmptyLine(indent=True)


# The few import lines and helper classes the pass adds, parsed once (nodes are immutable).
@functools.lru_cache(maxsize=32)
def _parsed_statement(text: str) -> cst.BaseStatement:
    return cst.parse_statement(text)


@functools.lru_cache(maxsize=8)
def _parsed_module(text: str) -> cst.Module:
    return cst.parse_module(text)


def add_imports_and_helpers(module: cst.Module, ctx: FileContext) -> cst.Module:
    bindings, taken = module_bindings(module)
    ctx.bindings = {**bindings}
    lines = ctx.missing_imports()
    new: list[cst.BaseStatement] = [_parsed_statement(text) for text in lines]
    helpers = [HELPERS[name] for name in sorted(ctx.helpers) if name not in taken]
    if not new and not helpers:
        return strip_leading_blanks(module)
    body: list[cst.BaseStatement] = list(module.body)
    index, found = _insertion_point(body)
    if index > 0:
        module = strip_leading_blanks(module)
        body = list(module.body)
    if found:
        start = 1 if body and _is_docstring(body[0]) else 0
        remaining = []
        for text, statement in zip(lines, new, strict=True):
            root = (
                text.split()[1]
                if text in ("import os", "import time")
                else "torch"
                if text.startswith("import torch")
                else ""
            )
            if root and _place_in_group(body, start, index, statement, root):
                index += 1
            else:
                remaining.append((text, statement))
        lines = [text for text, _ in remaining]
        new = [statement for _, statement in remaining]
    if found and lines and lines[0] == "import os":  # the standard library goes first
        start = 1 if body and _is_docstring(body[0]) else 0
        leading, markers = _split_markers(getattr(body[start], "leading_lines", ()))
        os_line = new.pop(0).with_changes(leading_lines=leading)
        # stdlib, then the rest
        body[start] = body[start].with_changes(leading_lines=[_blank(), *markers])
        body.insert(start, os_line)
        index += 1
    if not found and new and index > 0:
        new[0] = new[0].with_changes(leading_lines=[_blank()])
    if index < len(body) and not _is_import_line(body[index]):
        body[index] = _blank_lines_above(body[index], 1)
    body[index:index] = new
    names = [name for name in sorted(ctx.helpers) if name not in taken]
    # The stand-in class goes right above the first kept torch_xla import that needs it (it is
    # called when that import fails), the others after all the imports at the top.
    groups = [[n for n in names if n != STAND_IN], [n for n in names if n == STAND_IN]]
    places = [(_after_top_imports(body, index + len(new), group), group) for group in groups]
    for at, group in sorted((place for place in places if place[1]), reverse=True):
        _insert_helpers(body, at, [HELPERS[name] for name in group])
    return module.with_changes(body=body)


def _insert_helpers(body: list[cst.BaseStatement], at: int, sources: list[str]) -> None:
    made: list[cst.BaseStatement] = []
    for source in sources:
        parsed = _parsed_module(source).body
        made.extend([parsed[0].with_changes(leading_lines=[_blank(), _blank()]), *parsed[1:]])
    if at < len(body):
        body[at] = _blank_lines_above(body[at], 2)
    if at == 0:  # nothing above the helpers: no blank lines to start the file
        made[0] = made[0].with_changes(leading_lines=[])
    body[at:at] = made


def _blank_lines_above(statement: cst.BaseStatement, blanks: int) -> cst.BaseStatement:
    """`statement` with at least `blanks` blank lines before its own comments."""
    leading = list(getattr(statement, "leading_lines", ()))
    have = 0
    while have < len(leading) and leading[have].comment is None:
        have += 1
    missing = max(0, blanks - have)
    return (
        statement.with_changes(leading_lines=[_blank()] * missing + leading)
        if missing
        else statement
    )


_IMPORT_LINE = re.compile(r"^[ \t]*(?:import|from)[ \t]", re.MULTILINE)
_DEFINITION = re.compile(r"^(?:@|def\s|async\s+def\s|class\s)")


def _after_top_imports(body: Sequence[cst.BaseStatement], start: int, names: list[str]) -> int:
    """Where a helper class goes: after the last import at the top of the module (a line of
    imports, or a `try`/`if` holding some, however late: `sys.path` set up first), before the
    first definition, and before the first statement that names the helper."""
    uses = re.compile(r"\b(?:" + "|".join(map(re.escape, names)) + r")\b")
    at = start
    for k in range(start, len(body)):
        statement = body[k]
        text = cst.Module(body=[statement.with_changes(leading_lines=[])]).code  # type: ignore[list-item]
        if _DEFINITION.match(text) or uses.search(text):
            break
        if _is_import_line(statement) or _IMPORT_LINE.search(text):
            at = k + 1
    return at
