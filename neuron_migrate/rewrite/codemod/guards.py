"""The guard pass, run on the rewritten tree before the import pass: an `if` that only asks
whether torch_xla is there (`if xm is not None:`, `if xm:`, `if HAS_XLA:` where a torch_xla
import's `try` sets HAS_XLA, and their negations) takes its torch_xla branch, once that branch
reads no torch_xla name any more.

On the device the migrated branch is the one to run, and the test would send the run down the
other one (torch_xla is absent there). So the branch's statements take the `if`'s place and the
other branch goes. A guard whose torch_xla branch still reads a torch_xla name (a site left for a
person) stays as it was, and so does any other test of the name (`if xr and not xm:`): the
import it reads keeps its NM198 / NM100 marker.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import libcst as cst

from neuron_migrate.rewrite.codemod.collapse import flag_set, real_statements
from neuron_migrate.rewrite.codemod.imports import rebuild_import
from neuron_migrate.rewrite.codemod.markers import TODO_PREFIX
from neuron_migrate.rewrite.codemod.passes import EXPRESSIONS, INERT, PrunedTransformer
from neuron_migrate.rewrite.codemod.recording import Extent
from neuron_migrate.rewrite.codemod.skeleton import OpaqueCompound, OpaqueStatement
from neuron_migrate.rewrite.codemod.spansets import SourceText
from neuron_migrate.rewrite.codemod.statements import StatementCleanup, deleted, drop_deleted
from neuron_migrate.scan.analyzer.availability import (
    is_torch_xla_import,
)


def rebound(tree: ast.AST, names: frozenset[str]) -> frozenset[str]:
    """Those of `names` something binds other than a torch_xla import or a statement right in
    a `try` around one (`except ImportError: xm = None`): a parameter, a loop variable, another
    assignment. A test of such a name may ask about something else."""
    allowed: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Try, ast.If)) and any(map(is_torch_xla_import, node.body)):
            clauses = [node.body, node.orelse, *(h.body for h in getattr(node, "handlers", ()))]
            allowed.update(id(stmt) for clause in clauses for stmt in clause)
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.arg) and node.arg in names:
            found.add(node.arg)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)) and not is_torch_xla_import(node):
            found.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)) and id(node) in allowed:
            continue
        elif isinstance(node, ast.stmt):
            for part in ast.walk(node) if not isinstance(node, _COMPOUND) else _targets(node):
                if isinstance(part, ast.Name) and isinstance(part.ctx, ast.Store):
                    found.add(part.id)
    return frozenset(found & names)


_COMPOUND = (
    ast.FunctionDef,
    ast.AsyncFunctionDef,
    ast.ClassDef,
    ast.If,
    ast.Try,
    ast.While,
    ast.For,
    ast.AsyncFor,
    ast.With,
    ast.AsyncWith,
    ast.Match,
)


def _targets(node: ast.stmt) -> Iterable[ast.AST]:
    """What a compound statement binds itself (its blocks are walked as statements)."""
    if isinstance(node, (ast.For, ast.AsyncFor)):
        yield from ast.walk(node.target)
    elif isinstance(node, (ast.With, ast.AsyncWith)):
        for item in node.items:
            if item.optional_vars is not None:
                yield from ast.walk(item.optional_vars)
    elif isinstance(node, (ast.If, ast.While)):
        yield from ast.walk(node.test)  # a walrus


def _guard(
    test: cst.BaseExpression, names: frozenset[str], predicates: frozenset[str] = frozenset()
) -> bool | None:
    """True for a test that asks whether torch_xla is there (`xm`, `xm is not None`, `HAS_XLA`,
    `is_torch_xla_available()`), False for its negation (`not xm`, `xm is None`), None for any
    other test."""
    if isinstance(test, cst.Name):
        return True if test.value in names else None
    if (
        isinstance(test, cst.Call)
        and isinstance(test.func, cst.Name)
        and test.func.value in predicates
        and all(arg.keyword is not None for arg in test.args)
    ):
        return True
    if _feature_test(test, names):
        return True
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        inner = _guard(test.expression, names, predicates)
        return None if inner is None else not inner
    if (
        isinstance(test, cst.Comparison)
        and isinstance(test.left, cst.Name)
        and test.left.value in names
        and len(test.comparisons) == 1
    ):
        target = test.comparisons[0]
        if isinstance(target.comparator, cst.Name) and target.comparator.value == "None":
            if isinstance(target.operator, cst.IsNot):
                return True
            if isinstance(target.operator, cst.Is):
                return False
    return None


def _feature_test(test: cst.BaseExpression, names: frozenset[str]) -> bool:
    """`hasattr(torch_xla, "launch")`: a test of the torch_xla version. Its first arm is the
    newer API's, and on the device the migrated newer arm is the one to run."""
    if not (
        isinstance(test, cst.Call)
        and isinstance(test.func, cst.Name)
        and test.func.value == "hasattr"
        and len(test.args) == 2
        and all(arg.keyword is None and arg.star == "" for arg in test.args)
    ):
        return False
    module, attribute = test.args[0].value, test.args[1].value
    return (
        isinstance(module, cst.Name)
        and module.value in names
        and isinstance(attribute, cst.SimpleString)
    )


class _FeatureArms(cst.CSTTransformer):
    """`A if hasattr(torch_xla, "device") else B` in one statement, as A once A reads none of
    the torch_xla names."""

    def __init__(self, names: frozenset[str], words: re.Pattern[str]) -> None:
        super().__init__()
        self.names = names
        self.words = words

    def leave_IfExp(self, original: cst.IfExp, updated: cst.IfExp) -> cst.BaseExpression:
        if not _feature_test(updated.test, self.names):
            return updated
        if self.words.search(cst.Module(body=[]).code_for_node(updated.body)):
            return updated
        return updated.body.with_changes(
            lpar=[*updated.lpar, *updated.body.lpar], rpar=[*updated.body.rpar, *updated.rpar]
        )


class GuardResolution(StatementCleanup, PrunedTransformer):
    def __init__(
        self,
        names: frozenset[str],
        extents: Mapping[cst.CSTNode, Extent],
        made_from: dict[object, Extent],
        source: SourceText,
        predicates: frozenset[str] = frozenset(),
        flags: frozenset[str] = frozenset(),
    ) -> None:
        super().__init__()
        self.names = names | predicates
        # `HAS_XLA = True` binds a flag, reads nothing: a branch may hold it and still be taken
        self.settings = (
            re.compile(
                r"^[ \t]*(?:" + "|".join(map(re.escape, sorted(flags))) + r")[ \t]*=[ \t]*"
                r"(?:True|False|None)[ \t]*$",
                re.MULTILINE,
            )
            if flags
            else None
        )
        self.predicates = predicates
        self.extents = extents
        self.made_from = made_from
        words = sorted(self.names)
        self.words = re.compile(r"\b(?:" + "|".join(map(re.escape, words)) + r")\b")
        self.mentions = source.occurrences(self.words.pattern)
        self.elifs: set[int] = set()  # the `if` nodes that are an `elif` clause, by id
        self.blocks: list[cst.IndentedBlock] = []  # the blocks around the node, as entered
        # The last statement of each taken branch that ends its block (a `return`), by id:
        # the statements after it in that block can no longer run.
        self.ends: set[int] = set()
        self._standing: cst.CSTNode | None = None  # the opaque `if` being resolved

    def wanted(self, node: cst.CSTNode) -> bool:
        kind = type(node)
        return (
            kind not in INERT
            and kind not in EXPRESSIONS
            and self.mentions.within(self.extents.get(node) or self.made_from.get(node))
        )

    def leave_SimpleStatementLine(
        self, original: cst.SimpleStatementLine, updated: cst.SimpleStatementLine
    ) -> cst.SimpleStatementLine:
        if "hasattr" not in cst.Module(body=[]).code_for_node(updated):
            return updated
        resolved = updated.visit(_FeatureArms(self.names, self.words))
        assert isinstance(resolved, cst.SimpleStatementLine)
        return resolved

    def visit_If(self, node: cst.If) -> None:
        if isinstance(node.orelse, cst.If):
            self.elifs.add(id(node.orelse))

    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        self.blocks.append(node)

    def leave_IndentedBlock(
        self, original: cst.IndentedBlock, updated: cst.IndentedBlock
    ) -> cst.IndentedBlock:
        self.blocks.pop()
        end = next((k for k, stmt in enumerate(updated.body) if id(stmt) in self.ends), None)
        if end is not None and end + 1 < len(updated.body):
            updated = updated.with_changes(body=updated.body[: end + 1])
        return super().leave_IndentedBlock(original, updated)

    def on_leave(self, original: cst.CSTNode, updated: cst.CSTNode) -> Any:
        skipped = original is self._skipped
        result = super().on_leave(original, updated)
        if not skipped and isinstance(result, cst.CSTNode) and result is not original:
            # A node rebuilt here stands where `original` was: the import pass asks where.
            extent = self.extents.get(original) or self.made_from.get(original)
            if extent is not None:
                self.made_from[result] = extent
        return result

    def _reads_none(self, statements: Iterable[cst.BaseStatement]) -> bool:
        """Whether the statements read none of the names (a torch_xla import binds one: the
        import pass settles it wherever it stands)."""
        code = cst.Module(body=list(statements)).code  # type: ignore[arg-type]
        code = _TORCH_XLA_IMPORT.sub("", _without_comments(code))
        if self.settings is not None:
            code = self.settings.sub("", code)
        return not self.words.search(code)

    def _taken(
        self, node: cst.CSTNode, kept: Sequence[cst.BaseStatement] | None
    ) -> cst.BaseStatement | cst.FlattenSentinel[cst.BaseStatement]:
        """What stands in place of the `if`: the statements of the branch it takes (comments
        above the `if` go above them; a `pass` among others goes), or nothing."""
        leading = list(getattr(node, "leading_lines", ()))
        if not kept:
            return deleted(cst.SimpleStatementLine(body=[cst.Pass()], leading_lines=leading))
        out: list[cst.BaseStatement] = []
        for k, stmt in enumerate(s for old in kept for s in _lifted(old)):
            if k == 0:
                own = list(getattr(stmt, "leading_lines", ()))
                stmt = stmt.with_changes(leading_lines=[*leading, *own])
            if _is_pass(stmt):
                stmt = deleted(stmt)  # type: ignore[arg-type]
            out.append(stmt)
        return cst.FlattenSentinel(out)

    def leave_If(
        self, original: cst.If, updated: cst.If
    ) -> cst.BaseStatement | cst.FlattenSentinel[cst.BaseStatement]:
        standing, self._standing = self._standing or original, None
        if id(original) in self.elifs:
            return updated  # a later question of a chain: the chain's head decides
        if isinstance(updated.orelse, cst.If):
            # `if is_torch_xla_available(): A elif ...: B`: a head that asks whether torch_xla
            # is there takes A, the chain's other questions go; any other head stays
            if _guard(updated.test, self.names, self.predicates) is not True:
                return updated
            if _header_comment(updated.body) or _chain_comment(updated.orelse):
                return updated
            body = _statements(updated.body)
            return self._resolved(standing, updated, updated.test, body, None)
        if _header_comment(updated.body) or (
            updated.orelse is not None and _header_comment(updated.orelse.body)
        ):
            return updated  # a comment on a header line would be lost
        orelse = _statements(updated.orelse.body) if updated.orelse is not None else None
        return self._resolved(standing, updated, updated.test, _statements(updated.body), orelse)

    def leave_OpaqueStatement(
        self, original: OpaqueStatement, updated: OpaqueStatement
    ) -> cst.BaseStatement | cst.FlattenSentinel[cst.BaseStatement]:
        """A whole `if` without a site (`if not HAS_XLA: return 0`): parsed when it is a guard."""
        if not updated.cut.text.startswith("if") or not self.words.search(updated.cut.text):
            return updated
        parsed: cst.BaseStatement = updated.parse().body[0]
        if updated.cut.indent:
            assert isinstance(parsed, cst.If) and isinstance(parsed.body, cst.IndentedBlock)
            parsed = parsed.body.body[0]
        if not isinstance(parsed, cst.If):
            return updated
        self._standing = original
        resolved = self.leave_If(parsed, parsed.with_changes(leading_lines=updated.leading_lines))
        return updated if resolved is not None and _unchanged(resolved, parsed) else resolved

    def leave_OpaqueCompound(
        self, original: OpaqueCompound, updated: OpaqueCompound
    ) -> cst.BaseStatement | cst.FlattenSentinel[cst.BaseStatement]:
        texts = updated.headers.texts
        if not texts[0].startswith("if"):
            return updated
        chain = len(texts) > 2 or (
            len(texts) == 2 and not re.fullmatch(r"else\s*:\s*\n?", texts[1])
        )
        if chain and any("#" in text for text in texts[1:]):
            return updated  # a comment on a header line of the chain would be lost
        try:
            parsed: cst.BaseStatement = updated.parse_headers().body[0]
        except cst.ParserSyntaxError:
            return updated
        if updated.headers.indent:
            assert isinstance(parsed, cst.If) and isinstance(parsed.body, cst.IndentedBlock)
            parsed = parsed.body.body[0]
        if not isinstance(parsed, cst.If) or "#" in texts[0]:
            return updated  # a comment on the header line would be lost
        if chain:  # as in `leave_If`: only a head that asks whether torch_xla is there
            if _guard(parsed.test, self.names, self.predicates) is not True:
                return updated
            return self._resolved(original, updated, parsed.test, updated.bodies[0].body, None)
        orelse = updated.bodies[1].body if len(texts) == 2 else None
        return self._resolved(original, updated, parsed.test, updated.bodies[0].body, orelse)

    def _resolved(
        self,
        original: cst.CSTNode,
        node: cst.BaseStatement,
        test: cst.BaseExpression,
        body: Sequence[cst.BaseStatement],
        orelse: Sequence[cst.BaseStatement] | None,
    ) -> cst.BaseStatement | cst.FlattenSentinel[cst.BaseStatement]:
        """`node` (standing where `original` was in its block) as the branch it takes."""
        present = _guard(test, self.names, self.predicates)
        if present is None:
            return node
        taken = body if present else orelse
        if not self._reads_none(taken or ()):
            return node
        ends = bool(taken) and _ends_block(taken[-1])  # type: ignore[index]
        if ends and not self._tail_droppable(original):
            return node
        resolved = self._taken(node, taken)
        if ends and isinstance(resolved, cst.FlattenSentinel):
            self.ends.add(id(resolved.nodes[-1]))
        return resolved

    def _tail_droppable(self, original: cst.CSTNode) -> bool:
        """Whether the statements after `original` in its block, which a taken branch that
        returns leaves unreachable, may go: not when they hold a marker (a site left for a
        person would silently vanish from the file while the summary counts it)."""
        if not self.blocks:
            return False  # a module's statements: a `raise` there is left as it is
        body = list(self.blocks[-1].body)
        at = next((k for k, stmt in enumerate(body) if stmt is original), None)
        if at is None:
            return False
        tail = cst.Module(body=body[at + 1 :]).code  # type: ignore[arg-type]
        return TODO_PREFIX not in tail


_TORCH_XLA_IMPORT = re.compile(
    r"^[ \t]*(?:import[ \t]+torch_xla[\w.]*(?:[ \t]+as[ \t]+\w+)?"
    r"|from[ \t]+torch_xla[\w.]*[ \t]+import[ \t]+\w+(?:[ \t]+as[ \t]+\w+)?)[ \t]*(?:#.*)?$",
    re.MULTILINE,
)


def _without_comments(code: str) -> str:
    """`code` without its comments: a note the rewrite wrote ("... without xmp.spawn ...")
    reads no name."""
    if "#" not in code:
        return code
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(code).readline))
    except (tokenize.TokenError, SyntaxError):
        return code
    lines = code.splitlines(keepends=True)
    for token in reversed(tokens):
        if token.type == tokenize.COMMENT:
            (row, col), (_, end) = token.start, token.end
            lines[row - 1] = lines[row - 1][:col] + lines[row - 1][end:]
    return "".join(lines)


def _lifted(stmt: cst.BaseStatement) -> list[cst.BaseStatement]:
    """`stmt` as it may stand one block further out. An opaque run prints its source, whose
    lines after the first keep the indentation they had (a nested block's would no longer
    line up): one that spans several lines is parsed, so that its blocks take the new one."""
    if isinstance(stmt, OpaqueStatement) and stmt.cut.text.count("\n") > 1:
        return real_statements(stmt)
    return [stmt]


def _ends_block(stmt: cst.BaseStatement) -> bool:
    """Whether nothing after `stmt` in its block runs: it returns, raises, breaks, continues."""
    if isinstance(stmt, OpaqueStatement) and not stmt.cut.import_line:
        stmt = real_statements(stmt)[-1]
    return isinstance(stmt, cst.SimpleStatementLine) and isinstance(
        stmt.body[-1], (cst.Return, cst.Raise, cst.Continue, cst.Break)
    )


def _unchanged(resolved: object, parsed: cst.If) -> bool:
    return isinstance(resolved, cst.If) and resolved.deep_equals(
        parsed.with_changes(leading_lines=resolved.leading_lines)
    )


def _chain_comment(clause: cst.If | cst.Else) -> bool:
    """Whether a header of the `elif` / `else` clauses of a chain holds a comment."""
    if _header_comment(clause.body):
        return True
    return (
        isinstance(clause, cst.If) and clause.orelse is not None and _chain_comment(clause.orelse)
    )


def _header_comment(body: cst.BaseSuite) -> bool:
    if isinstance(body, cst.IndentedBlock):
        return body.header.comment is not None
    assert isinstance(body, cst.SimpleStatementSuite)
    return body.trailing_whitespace.comment is not None


def _statements(body: cst.BaseSuite) -> Sequence[cst.BaseStatement]:
    if isinstance(body, cst.IndentedBlock):
        return body.body
    assert isinstance(body, cst.SimpleStatementSuite)
    return [cst.SimpleStatementLine(body=body.body)]


def _is_pass(stmt: cst.BaseStatement) -> bool:
    return (
        isinstance(stmt, cst.SimpleStatementLine)
        and len(stmt.body) == 1
        and isinstance(stmt.body[0], cst.Pass)
        and stmt.trailing_whitespace.comment is None
        and not any(line.comment for line in stmt.leading_lines)
    )


def resolve_guards(
    module: cst.Module,
    names: frozenset[str],
    extents: Mapping[cst.CSTNode, Extent],
    made_from: dict[object, Extent],
    source: SourceText,
    predicates: frozenset[str] = frozenset(),
    flags: frozenset[str] = frozenset(),
) -> cst.Module:
    """`module` with each availability guard of `names` (the names torch_xla imports bind, and
    the `flags` their `try` or `if` sets) or of `predicates` (the functions that ask) that reads
    no torch_xla name in its torch_xla branch replaced by that branch. Each node rebuilt is
    entered in `made_from` with its original's extent."""
    if not names and not predicates:
        return module
    resolution = GuardResolution(names, extents, made_from, source, predicates, flags & names)
    module = module.visit(resolution)
    if not predicates:
        return module
    return drop_unused(module, predicates, flags & names)


def _defines(stmt: cst.BaseStatement, name: str) -> bool:
    """Whether a top-level statement is `def name(...)`."""
    if isinstance(stmt, cst.FunctionDef):
        return stmt.name.value == name
    if isinstance(stmt, OpaqueCompound):
        return re.match(rf"def\s+{re.escape(name)}\s*\(", stmt.headers.texts[0]) is not None
    return False


def _without_alias(stmt: cst.BaseStatement, name: str) -> cst.BaseStatement | None:
    """A top-level `from m import name, other` without `name` (a deleted placeholder when
    nothing is left); None when the statement imports no `name`."""
    line = stmt.parse_line() if isinstance(stmt, OpaqueStatement) and stmt.cut.import_line else stmt
    if not isinstance(line, cst.SimpleStatementLine) or len(line.body) != 1:
        return None
    small = line.body[0]
    if not isinstance(small, cst.ImportFrom) or isinstance(small.names, cst.ImportStar):
        return None
    keep = [a for a in small.names if (a.evaluated_alias or a.evaluated_name) != name]
    if len(keep) == len(small.names):
        return None
    if not keep:
        return deleted(line.with_changes(trailing_whitespace=cst.TrailingWhitespace()))
    rebuilt = rebuild_import(small, keep)
    assert rebuilt is not None
    return line.with_changes(body=[rebuilt])


def _sets_flag(stmt: cst.BaseStatement, name: str) -> cst.BaseStatement | None:
    """A deleted placeholder for a top-level `name = True` (False, None), keeping its
    comments; None for any other statement."""
    if isinstance(stmt, OpaqueStatement) and not stmt.cut.import_line:
        parsed = real_statements(stmt)
        stmt = parsed[0] if len(parsed) == 1 else stmt
    if flag_set(stmt) != name:
        return None
    assert isinstance(stmt, cst.SimpleStatementLine)
    return deleted(stmt)


def drop_unused(
    module: cst.Module, predicates: frozenset[str], flags: frozenset[str]
) -> cst.Module:
    """`module` without the availability functions its resolved guards no longer call (a
    function of its own that tried the import goes, an imported one leaves its import), and
    without a top-level flag setting (`XLA_AVAILABLE = True`, from a resolved `if
    is_torch_xla_available():`) nothing reads."""
    body = list(module.body)
    changed = False
    for name in [*sorted(predicates), *sorted(flags)]:
        word = re.compile(rf"\b{re.escape(name)}\b")
        code = module.with_changes(body=body).code
        for k, stmt in enumerate(body):
            replacement: cst.BaseStatement | None
            if name in flags:
                replacement = _sets_flag(stmt, name)
            elif _defines(stmt, name):
                replacement = deleted(cst.SimpleStatementLine(body=[cst.Pass()]))
            else:
                replacement = _without_alias(stmt, name)
            if replacement is None:
                continue
            own = len(word.findall(cst.Module(body=[stmt]).code))
            if len(word.findall(code)) == own:
                body[k] = replacement  # type: ignore[call-overload]
                changed = True
            break
    if not changed:
        return module
    kept, leftover = drop_deleted(body, module=True)
    return module.with_changes(body=kept, footer=[*leftover, *module.footer])
