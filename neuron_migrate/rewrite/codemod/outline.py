"""The outline of a module: the statements the codemod must see, with the others cut out.

Parsing a module with libcst, walking it and printing it costs an order of magnitude more than
`ast.parse`, and most statements of a file hold no site. The outline keeps, as source, every
statement that holds a site or mentions torch_xla, the top-level imports and the first top-level
statement (where new imports go depends on them). Every other statement -- its nested blocks and
the trailing comments those blocks own included -- is cut out and replaced by a one-line
placeholder. A compound statement kept for what its blocks hold keeps its headers only when a
site is in them: otherwise each header (`def f(...) -> T:`, `for x in y:`, `else:`) is replaced
by a one-line placeholder header too. A large kept line of simple statements has its site-less
parts cut out the same way, one level down (`trim.py`). `skeleton.py` parses the result and puts,
in place of each placeholder, a node that prints the original source.

Statements and their lines come from the `ast` tree the site finder parsed. Which lines after a
compound statement belong to it follows libcst's rule (`IndentedBlock.footer`): a closing block
owns the comment and blank lines after it up to the last one indented at least as deep as the
block. A layout this module does not model (tabs or form feeds in indentation, `\\r` newlines, a
backslash ending a statement or a header, a `match` statement that would be cut in the middle)
raises `OutlineError`: the caller then parses the module whole.
"""

from __future__ import annotations

import ast
import bisect
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from neuron_migrate.rewrite.codemod.trim import Piece, trimmed

PLACEHOLDER = "__neuron_migrate_cut_{}__"

_COMPOUND: tuple[type[ast.stmt], ...] = (
    ast.If,
    ast.For,
    ast.AsyncFor,
    ast.While,
    ast.With,
    ast.AsyncWith,
    ast.Try,
    ast.FunctionDef,
    ast.AsyncFunctionDef,
    ast.ClassDef,
    ast.Match,
    *((ast.TryStar,) if hasattr(ast, "TryStar") else ()),
)
_TRY = (ast.Try, *((ast.TryStar,) if hasattr(ast, "TryStar") else ()))
_DECORATED = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_ONE_BLOCK = (*_DECORATED, ast.With, ast.AsyncWith)
_EMPTY_LINE = re.compile(r"[ ]*(?:#[^\n]*)?\n?")  # blank, or only a comment (full match)
_TAB_INDENT = re.compile(r"^[ ]*\t", re.MULTILINE)
# The one-line header that stands for a clause's header in the outline, by clause.
_HEADER_PLACEHOLDERS = {
    "if": "if {}:",
    "elif": "elif {}:",
    "else": "else:",
    "for": "for {0} in {0}:",
    "while": "while {}:",
    "with": "with {}:",
    "def": "def {}():",
    "class": "class {}:",
}


class OutlineError(Exception):
    """The module's layout is one the outline does not model."""


@dataclass(frozen=True)
class Imported:
    """A name an import binds: `import module [as local]` (`name` None), or `from module import
    name [as local]` (`local` is the name bound)."""

    module: str
    name: str | None
    local: str | None


@dataclass(frozen=True)
class Cut:
    """Statements cut out of the outline: one, or several in a row in a block."""

    text: str  # from its first token to the end of its last line, block footers included
    indent: str  # the indentation of its first line
    # A line of imports is cut alone, with what it imports: at the top level for
    # `module_bindings` and the placing of new imports, anywhere when it imports torch_xla, for
    # the import pass. At the top level, the names statements bind other than by importing.
    binds: frozenset[str] = frozenset()
    imports: tuple[Imported, ...] = ()
    import_line: bool = False  # a line of imports only
    top_module: str | None = None  # `os` for `import os.path`, a line with one import


@dataclass(frozen=True)
class Headers:
    """The headers of a compound statement whose blocks are outlined."""

    texts: tuple[str, ...]  # each clause's, from its first token to its colon line's newline
    indent: str
    binds: frozenset[str] = frozenset()  # top level: the name a `def` or `class` binds


@dataclass(frozen=True)
class Outline:
    text: str  # the source with each cut statement, header and piece replaced by its placeholder
    cuts: dict[str, Cut | Headers | Piece]  # by placeholder name
    default_indent: str  # the module's indentation unit, as libcst infers it from the source


@dataclass(slots=True)
class _Unit:
    """One statement as libcst sees it: a compound statement, or a line of simple ones."""

    stmts: list[ast.stmt]
    first: int  # line of the first token (a decorator's `@`)
    last: int  # line of the last token
    indent: str


@dataclass(frozen=True)
class _Clause:
    kind: str  # "if", "elif", "else", "except", ... (see _HEADER_PLACEHOLDERS)
    first: int | None  # the line of its keyword, where ast knows it
    block: list[ast.stmt]


@dataclass
class _Builder:
    lines: list[str]
    keep: list[int]  # sorted lines that make their statement stay: sites, torch_xla mentions
    sites: list[int]  # sorted lines of the sites
    mentions: list[int]  # sorted lines that mention torch_xla
    # (first line, last line, placeholder line) in source order, and what each one stands for
    replaced: list[tuple[int, int, str]] = field(default_factory=list)
    cuts: dict[str, Cut | Headers | Piece] = field(default_factory=dict)
    pieces: int = 0  # pieces cut out of kept statements (`trim.py`), for their names

    def block(self, units: list[_Unit], top: bool) -> None:
        run: list[_Unit] = []  # consecutive statements to cut out, as one
        for i, unit in enumerate(units):
            following = units[i + 1] if i + 1 < len(units) else None
            alone = self.settled_import(unit, top)
            seen = not alone and self.must_see(unit, first_of_module=top and i == 0)
            if not seen and not alone:
                run.append(unit)
                continue
            if run:
                self.cut(run, unit, top)
                run = []
            if alone:  # each import line has its place among the others
                self.cut([unit], following, top)
            elif isinstance(unit.stmts[0], _COMPOUND):
                self.open(unit, unit.stmts[0], top)
            else:
                self.trim(unit)
        if run:
            self.cut(run, None, top)

    def settled_import(self, unit: _Unit, top: bool) -> bool:
        """A line of imports the passes read from its facts (`Cut.imports`): at the top level,
        or anywhere when it imports torch_xla (unless with `*`: that one is marked as it is)."""
        if not isinstance(unit.stmts[0], ast.Import | ast.ImportFrom):
            return False
        if not all(isinstance(s, ast.Import | ast.ImportFrom) for s in unit.stmts):
            return False
        if _between(self.sites, unit.first, unit.last):
            return False
        if not _between(self.mentions, unit.first, unit.last):
            return top
        return all(not isinstance(s, ast.ImportFrom) or s.names[0].name != "*" for s in unit.stmts)

    def trim(self, unit: _Unit) -> None:
        """A large kept line of simple statements with its site-less parts cut out."""
        found = trimmed(
            self.lines, unit.first, unit.last, unit.stmts, self.keep, self.sites, self.pieces
        )
        if found is not None:
            text, pieces = found
            self.replaced.append((unit.first, unit.last, text))
            self.cuts.update(pieces)
            self.pieces += len(pieces)

    def must_see(self, unit: _Unit, first_of_module: bool) -> bool:
        if _between(self.keep, unit.first, unit.last):
            return True
        stmt = unit.stmts[0]
        if isinstance(stmt, ast.Match):
            return True  # never cut: its footers follow rules of their own
        # The first statement may be the docstring new imports go after.
        return first_of_module and not isinstance(stmt, _COMPOUND)

    def open(self, unit: _Unit, stmt: ast.stmt, top: bool) -> None:
        """Outline the blocks of a compound statement that is kept. Its headers are replaced by
        placeholders when no site is in them; they stay when one is, and so does the whole
        statement when it is a `with` (unwrapping it moves its body), a `match`, or one with a
        block on its header's line."""
        clauses = self.clauses(stmt, unit)
        if clauses is None:
            return
        blocks = [self.units(clause.block) for clause in clauses]
        if self.site_in_headers(unit, blocks):
            if isinstance(stmt, ast.With | ast.AsyncWith):
                return
            for units in blocks:
                self.block(units, top=False)
            return
        if isinstance(stmt, _TRY):  # short headers, and the import pass reads the handlers
            for units in blocks:
                self.block(units, top=False)
            return
        name = self.new_name()
        texts = []
        for clause, units in zip(clauses, blocks, strict=True):
            first, last = self.header_lines(clause, units[0], unit.indent)
            line = self.lines[first - 1]
            text = line[len(unit.indent) :] + "".join(self.lines[first:last])
            texts.append(text[:-1])  # the block prints the newline
            placeholder = _HEADER_PLACEHOLDERS[clause.kind].format(name)
            self.replaced.append((first, last, f"{unit.indent}{placeholder}\n"))
            self.block(units, top=False)
        binds = frozenset({stmt.name}) if top and isinstance(stmt, _DECORATED) else frozenset()
        self.cuts[name] = Headers(tuple(texts), unit.indent, binds)

    def site_in_headers(self, unit: _Unit, blocks: list[list[_Unit]]) -> bool:
        spans = sorted((u.first, u.last) for units in blocks for u in units)
        starts = [first for first, _ in spans]
        for line in _between(self.sites, unit.first, unit.last):
            at = bisect.bisect_right(starts, line) - 1
            if at < 0 or spans[at][1] < line:
                return True
        return False

    def header_lines(self, clause: _Clause, head: _Unit, indent: str) -> tuple[int, int]:
        """The lines of a clause's header: up to the last line above its block's leading
        comment and blank lines (the line of the colon)."""
        last = head.first - 1
        while last > (clause.first or 0) and _EMPTY_LINE.fullmatch(self.lines[last - 1]):
            last -= 1
        first = clause.first or last
        if last < first or not self.lines[first - 1].startswith(indent):
            raise OutlineError(f"line {first}: a header not where its statement is")
        if clause.kind in ("else", "elif") and not self.lines[first - 1].startswith(
            clause.kind, len(indent)
        ):
            raise OutlineError(f"line {first}: no `{clause.kind}` where its block begins")
        if self.lines[last - 1].rstrip("\n").endswith("\\"):
            raise OutlineError(f"line {last}: a backslash after a header")
        return first, last

    def clauses(self, stmt: ast.stmt, unit: _Unit) -> list[_Clause] | None:
        """The clauses of a compound statement, or None when a block is on its header's line or
        the statement is a `match`."""
        if isinstance(stmt, ast.Match):
            return None
        clauses = self.all_clauses(stmt, unit.first)
        return clauses if all(self.indented(c.block) for c in clauses) else None

    def all_clauses(self, stmt: ast.stmt, first: int, kind: str = "if") -> list[_Clause]:
        """The clauses of a compound statement other than `match`, in source order (an `elif`
        chain's included)."""
        if isinstance(stmt, ast.If):
            head = _Clause(kind, first, stmt.body)
            if self.is_elif(stmt):
                elif_ = stmt.orelse[0]
                return [head, *self.all_clauses(elif_, elif_.lineno, "elif")]
            return [head, *([_Clause("else", None, stmt.orelse)] if stmt.orelse else [])]
        if isinstance(stmt, ast.For | ast.AsyncFor | ast.While):
            kind = "while" if isinstance(stmt, ast.While) else "for"
            head = _Clause(kind, first, stmt.body)
            return [head, *([_Clause("else", None, stmt.orelse)] if stmt.orelse else [])]
        if isinstance(stmt, ast.With | ast.AsyncWith):
            return [_Clause("with", first, stmt.body)]
        if isinstance(stmt, ast.ClassDef):
            return [_Clause("class", first, stmt.body)]
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
            return [_Clause("def", first, stmt.body)]
        handlers = [_Clause("except", h.lineno, h.body) for h in stmt.handlers]  # type: ignore[attr-defined]
        orelse = stmt.orelse  # type: ignore[attr-defined]
        finalbody = stmt.finalbody  # type: ignore[attr-defined]
        return [
            _Clause("try", first, stmt.body),  # type: ignore[attr-defined]
            *handlers,
            *([_Clause("else", None, orelse)] if orelse else []),
            *([_Clause("finally", None, finalbody)] if finalbody else []),
        ]

    def is_elif(self, stmt: ast.If) -> bool:
        if len(stmt.orelse) != 1 or not isinstance(stmt.orelse[0], ast.If):
            return False
        inner = stmt.orelse[0]
        return self.lines[inner.lineno - 1].startswith("elif", inner.col_offset)

    def indented(self, block: list[ast.stmt]) -> bool:
        """Whether a block is an indented block (its first statement starts a line)."""
        head = block[0]
        first = _first_line(head)
        line = self.lines[first - 1]
        start = len(line) - len(line.lstrip(" "))
        if first != head.lineno:
            return line.startswith("@", start)
        return head.col_offset == start

    def units(self, stmts: list[ast.stmt]) -> list[_Unit]:
        units: list[_Unit] = []
        lines = self.lines
        previous: _Unit | None = None
        for stmt in stmts:
            last = stmt.end_lineno or stmt.lineno
            compound = isinstance(stmt, _COMPOUND)
            if (
                previous is not None
                and not compound
                and stmt.lineno == previous.last
                and not isinstance(previous.stmts[-1], _COMPOUND)
            ):
                previous.stmts.append(stmt)  # `a = 1; b = 2`: one line of statements
                previous.last = last
                continue
            first = _first_line(stmt) if compound else stmt.lineno
            line = lines[first - 1]
            indent = line[: len(line) - len(line.lstrip(" "))]
            starts_line = (
                line.startswith("@", len(indent))
                if first != stmt.lineno
                else stmt.col_offset == len(indent)
            )
            if not starts_line:
                raise OutlineError(f"line {first}: a statement that does not start its line")
            previous = _Unit([stmt], first, last, indent)
            units.append(previous)
        for unit in units:
            end = lines[unit.last - 1]
            if end.endswith("\\\n") or end.endswith("\\"):
                raise OutlineError(f"line {unit.last}: a backslash after the last token")
        return units

    def cut(self, run: list[_Unit], following: _Unit | None, top: bool) -> None:
        """Cut out consecutive statements of a block, with the lines between them and the
        block footers the last one owns."""
        ends = [self.end_of(unit) for unit in run]
        for end, after in zip(ends, [*run[1:], following], strict=True):
            if after is None:
                continue
            for number in range(end + 1, after.first):
                if not _EMPTY_LINE.fullmatch(self.lines[number - 1]):
                    raise OutlineError(f"line {number}: not a statement, comment or blank line")
        first, end, indent = run[0].first, ends[-1], run[0].indent
        text = self.lines[first - 1][len(indent) :] + "".join(self.lines[first:end])
        name = self.new_name()
        newline = "\n" if text.endswith("\n") else ""
        self.replaced.append((first, end, f"{indent}{name}{newline}"))
        stmts = [stmt for unit in run for stmt in unit.stmts]
        self.cuts[name] = _cut(text, indent, stmts, top)

    def end_of(self, unit: _Unit) -> int:
        """The last line of a statement: its last token's, or its block footers' last."""
        stmt = unit.stmts[-1]
        if not isinstance(stmt, _COMPOUND):
            return unit.last
        return self.footer_end(unit.last, self.closing(stmt))

    def new_name(self) -> str:
        return PLACEHOLDER.format(len(self.replaced))

    def closing(self, stmt: ast.stmt) -> list[str]:
        """The indentation of the blocks that close where `stmt` ends, outermost first."""
        if isinstance(stmt, ast.Match):
            raise OutlineError(f"line {stmt.lineno}: a match statement closing a cut block")
        if isinstance(stmt, ast.If) and self.is_elif(stmt):
            return self.closing(stmt.orelse[0])
        block = _last_block(stmt)
        if not self.indented(block):
            return []  # `else: x` on the header's line: no block, no footer
        line = self.lines[_first_line(block[0]) - 1]
        indent = line[: len(line) - len(line.lstrip(" "))]
        tail = block[-1]
        return [indent, *(self.closing(tail) if isinstance(tail, _COMPOUND) else [])]

    def footer_end(self, last: int, closing: list[str]) -> int:
        """The last line a compound statement owns: each closing block, innermost first, takes
        the comment and blank lines after it up to the last one indented at its level."""
        run_end = last
        while run_end < len(self.lines) and _EMPTY_LINE.fullmatch(self.lines[run_end]):
            run_end += 1
        end = last
        for indent in reversed(closing):
            for number in range(run_end, end, -1):
                if self.lines[number - 1].startswith(indent):
                    end = number
                    break
        return end


def _between(lines: list[int], first: int, last: int) -> list[int]:
    return lines[bisect.bisect_left(lines, first) : bisect.bisect_right(lines, last)]


def _first_line(stmt: ast.stmt) -> int:
    decorators = getattr(stmt, "decorator_list", None)
    return min(d.lineno for d in decorators) if decorators else stmt.lineno


def _last_block(stmt: ast.stmt) -> list[ast.stmt]:
    if isinstance(stmt, ast.If | ast.For | ast.AsyncFor | ast.While):
        return stmt.orelse or stmt.body
    if isinstance(stmt, _ONE_BLOCK):
        return stmt.body
    # try / try*
    handlers = stmt.handlers  # type: ignore[attr-defined]
    return (
        stmt.finalbody  # type: ignore[attr-defined]
        or stmt.orelse  # type: ignore[attr-defined]
        or (handlers[-1].body if handlers else stmt.body)  # type: ignore[attr-defined]
    )


def _cut(text: str, indent: str, stmts: list[ast.stmt], top: bool) -> Cut:
    """Statements cut out, with what the passes read from them (see `Cut`)."""
    import_line = all(isinstance(stmt, ast.Import | ast.ImportFrom) for stmt in stmts)
    if not top and not import_line:
        return Cut(text, indent)
    binds: set[str] = set()
    imports: list[Imported] = []
    for stmt in stmts:
        if isinstance(stmt, ast.Assign) and top:
            binds.update(t.id for t in stmt.targets if isinstance(t, ast.Name))
        elif isinstance(stmt, _DECORATED) and top:
            binds.add(stmt.name)
        elif isinstance(stmt, ast.Import):
            imports.extend(Imported(a.name, None, a.asname) for a in stmt.names)
        elif isinstance(stmt, ast.ImportFrom) and not stmt.level and stmt.names[0].name != "*":
            module = stmt.module or ""
            imports.extend(Imported(module, a.name, a.asname or a.name) for a in stmt.names)
    top_module = None
    if len(stmts) == 1 and isinstance(stmts[0], ast.Import):
        top_module = stmts[0].names[0].name.partition(".")[0]
    elif len(stmts) == 1 and isinstance(stmts[0], ast.ImportFrom) and not stmts[0].level:
        top_module = (stmts[0].module or "").partition(".")[0] or None
    return Cut(text, indent, frozenset(binds), tuple(imports), import_line, top_module)


def _physical_lines(source: str) -> list[str]:
    lines = [line + "\n" for line in source.split("\n")]
    lines[-1] = lines[-1][:-1]
    if not lines[-1]:
        lines.pop()
    return lines


def _first_indent(builder: _Builder, tree: ast.Module) -> str:
    """The relative indentation of the module's first indented block: libcst's default indent."""
    for stmt in tree.body:
        if isinstance(stmt, ast.Match):
            line = builder.lines[stmt.cases[0].pattern.lineno - 1]
            return line[: len(line) - len(line.lstrip(" "))]
        if not isinstance(stmt, _COMPOUND):
            continue
        for clause in builder.all_clauses(stmt, _first_line(stmt)):
            if builder.indented(clause.block):
                line = builder.lines[_first_line(clause.block[0]) - 1]
                return line[: len(line) - len(line.lstrip(" "))]
    return " " * 4


def outline(
    source: str, tree: ast.Module, site_lines: Iterable[int], xla_lines: Iterable[int]
) -> Outline:
    """The outline of `source` (parsed as `tree`) that keeps every statement holding a site or
    mentioning torch_xla. Raises OutlineError for a layout it does not model."""
    if "\r" in source or "\f" in source or ("\t" in source and _TAB_INDENT.search(source)):
        raise OutlineError("tabs, form feeds or carriage returns in the layout")
    lines = _physical_lines(source)
    sites = sorted(set(site_lines))
    mentions = sorted(set(xla_lines))
    builder = _Builder(lines, sorted({*sites, *mentions}), sites, mentions)
    default_indent = _first_indent(builder, tree)
    builder.block(builder.units(tree.body), top=True)
    pieces: list[str] = []
    at = 0  # lines before this index are placed
    for first, last, placeholder in builder.replaced:
        pieces.extend(lines[at : first - 1])
        pieces.append(placeholder)
        at = last
    pieces.extend(lines[at:])
    return Outline("".join(pieces), builder.cuts, default_indent)
