"""The libcst pass that applies the rules at the analyzer's sites.

It walks the tree once, entering only the nodes that hold a site, finds each site's node by its
exact span (as printed: `positions.py`) and dispatches on the rule: a template, an expression,
statement or literal transform, or a TODO marker above the enclosing statement when no safe
rewrite applies. Statements a transform deletes leave their comments behind for the next
statement.
"""

from __future__ import annotations

import keyword
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence

import libcst as cst

from neuron_migrate.rewrite.codemod import targets
from neuron_migrate.rewrite.codemod.context import FileContext, Span
from neuron_migrate.rewrite.codemod.markers import (
    HeaderComments,
    note_text,
    todo_text,
    with_comments,
)
from neuron_migrate.rewrite.codemod.names import children
from neuron_migrate.rewrite.codemod.passes import (
    INERT,
    STATEMENTS,
    PrunedTransformer,
    Transformer,
    hook_of,
)
from neuron_migrate.rewrite.codemod.positions import Printed
from neuron_migrate.rewrite.codemod.recording import Extent
from neuron_migrate.rewrite.codemod.results import Outcome
from neuron_migrate.rewrite.codemod.sites_index import RuledSite, SiteIndex
from neuron_migrate.rewrite.codemod.spansets import SpanSet
from neuron_migrate.rewrite.codemod.statements import DeletedStatement, StatementCleanup, deleted
from neuron_migrate.rewrite.codemod.targets import CallTarget, LiteralTarget, StatementTarget
from neuron_migrate.rewrite.codemod.templates import apply_template, parenthesize
from neuron_migrate.rewrite.codemod.transforms.launch import annotation_class
from neuron_migrate.scan.analyzer.fixability import fix_blocker, takes_reference

# Replacements that need parentheses next to these parents (operators, `.`, `[`, calls).
_TIGHT_PARENTS = (
    cst.Attribute,
    cst.Subscript,
    cst.BinaryOperation,
    cst.UnaryOperation,
    cst.Comparison,
    cst.BooleanOperation,
    cst.Await,
)
_LOOSE_EXPRESSIONS = (
    cst.IfExp,
    cst.Lambda,
    cst.BooleanOperation,
    cst.Comparison,
    cst.UnaryOperation,
    cst.BinaryOperation,
)
_CONDITIONAL = (cst.IfExp, cst.Lambda)
PendingEnv = tuple[Span, RuledSite, cst.CSTNode]
_STATEMENT_HOSTS = (cst.Expr, cst.Assign, cst.Return)
_LAST_WORD = re.compile(r"\w+$")  # the word a site's opening parenthesis follows


class RuleTransformer(HeaderComments, StatementCleanup, PrunedTransformer):
    def __init__(self, index: SiteIndex, ctx: FileContext, where: Printed) -> None:
        super().__init__()
        self.index = index
        self.ctx = ctx
        self.spans = where.spans
        self.extents = where.extents
        self.lines = where.code.splitlines()
        # Where what each node this pass made stands in place of was in the source.
        self.made_from: dict[object, Extent] = {}
        self.sites = SpanSet(index.spans())
        self.nodes: list[cst.CSTNode] = []  # original ancestors of the node being visited
        self.statements: list[cst.CSTNode] = []  # original enclosing statements
        # id(statement) -> the TODO lines above it, each with the node of its site (when known)
        self.comments: dict[int, list[tuple[str, cst.CSTNode | None]]] = defaultdict(list)
        # Edits of an enclosing call, requested by a site inside it; the site's outcome is
        # recorded when the edit applies (None: the site was recorded already).
        self.call_edits: dict[int, list[tuple[targets.CallEdit, RuledSite | None]]] = defaultdict(
            list
        )
        self.pending_statement: dict[Span, RuledSite] = {}
        self.pending_with: dict[Span, RuledSite] = {}
        # Environment variables a statement names, with the key's node: its marker goes above
        # the statement that holds that node, wherever a transform of the line puts it.
        self.pending_env: dict[int, list[PendingEnv]] = defaultdict(list)
        self._as_default: set[Span] = set()  # env settings kept as defaults, not deleted
        self._notes: dict[int, list[str]] = defaultdict(list)  # NOTE lines, by statement
        # Sites whose outcome is their enclosing call's (xm.REDUCE_SUM in an xm.all_reduce that
        # converts it, or stays), by the span of that call.
        self.followers: dict[Span, list[RuledSite]] = defaultdict(list)
        self._marked_idioms: set[Span] = set()
        self._marked_spans: set[Span] = set()  # the marks of `index.marks` made

    def visit_Module(self, node: cst.Module) -> None:
        self.remember_header(node)

    # -- bookkeeping ----------------------------------------------------------------------------

    def span_of(self, node: cst.CSTNode) -> Span:
        return self.spans[node]  # every node this pass enters was printed from the source

    def on_visit(self, node: cst.CSTNode) -> bool:
        # `wanted`, and the hook lookup, inline: this runs for every child of every node entered.
        kind = type(node)
        if kind in INERT or not self.sites.within(self.extents.get(node)):
            self._skipped = node
            return False
        self.nodes.append(node)
        if kind in STATEMENTS:
            self.statements.append(node)
        hook = hook_of(type(self), "visit_", kind)
        return hook is None or hook(self, node) is not False

    def on_leave(self, original: cst.CSTNode, updated: cst.CSTNode):
        if original is self._skipped:
            return super().on_leave(original, updated)
        result = super().on_leave(original, updated)
        if self.index.marks:
            span = self.spans.get(original)
            mark = self.index.marks.get(span)  # type: ignore[arg-type]
            if mark is not None and span not in self._marked_spans:
                # once: a call's expression statement (and line) can share the call's span
                self._marked_spans.add(span)  # type: ignore[arg-type]
                self.mark(mark, node=result)
        if (
            self.index.literals
            and isinstance(original, cst.BaseExpression)
            and type(original) is not cst.SimpleString
        ):
            # An idiom on a value that is no string literal (`os.environ.update(XLA_FLAGS=f)`):
            # no literal transform applies, so a person decides.
            span = self.spans.get(original)
            ruled = self.index.literals.get(span) if span is not None else None
            if span is not None and ruled is not None and span not in self._marked_idioms:
                self._marked_idioms.add(span)
                self.mark(ruled, node=result)
        self.nodes.pop()
        if type(original) in STATEMENTS:
            self.statements.pop()
            for _, ruled, _ in self.pending_env.pop(id(original), []):
                # read in a compound statement's header (`if os.environ.get("PJRT_DEVICE")`):
                # no setter to delete, a person decides
                self.mark(ruled, statement=original)
            lines = self.comments.pop(id(original), None)
            if lines:
                result = _comment_first(result, lines, self.already_above(original))
        self.made_from[result] = self.extents[original]
        return result

    def parents(self) -> Sequence[cst.CSTNode]:
        return self.nodes[:-1]

    def record(self, ruled: RuledSite, status: str) -> None:
        site = ruled.site
        api = site.qualname or site.idiom or ""
        self.ctx.outcomes.append(Outcome(ruled.rule.code, site.line, api, status))
        if self.followers and site.kind == "call" and site.call_span is not None:
            for follower in self.followers.pop(site.call_span, []):
                self.record(follower, "rewritten" if status == "rewritten" else "marked")

    def mark(
        self,
        ruled: RuledSite,
        statement: cst.CSTNode | None = None,
        node: cst.CSTNode | None = None,
    ) -> None:
        """A TODO above the site's statement (`statement`, else the innermost one). `node`: the
        site's node, which finds its statement when a transform splits that one in several."""
        self.record(ruled, "ambiguous" if ruled.site.ambiguous else "marked")
        target = statement if statement is not None else self.statements[-1]
        self.comments[id(target)].append((todo_text(ruled.rule, ruled.site), node))

    def allowed(self, ruled: RuledSite) -> bool:
        return fix_blocker(ruled.rule, ruled.site, unsafe=self.ctx.unsafe) is None

    def defer(
        self, edits: list[tuple[cst.CSTNode, targets.CallEdit]], ruled: RuledSite | None = None
    ) -> None:
        for node, edit in edits:
            self.call_edits[id(node)].append((edit, ruled))

    def fit(self, new: cst.BaseExpression, original: cst.BaseExpression) -> cst.BaseExpression:
        """Parenthesize a loose replacement (`a if b else c`) where its parent binds tighter;
        inside an f-string, use the quote the f-string does not (needed before Python 3.12).
        The original's own parentheses stay: `if(xm.is_master_ordinal()):` needs them (or a
        space) after its keyword, and a parenthesized line break needs them to parse."""
        if original.lpar and not getattr(new, "lpar", True):
            new = new.with_changes(lpar=original.lpar, rpar=original.rpar)
            if isinstance(new, cst.IfExp) and self._after_keyword(original):
                # libcst takes `return(a if b else c)` for `returna`: it reads the
                # conditional's first operand, not its parentheses
                body = new.body
                if not body.lpar:
                    body = body.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
                new = new.with_changes(body=body)
        parents = self.parents()
        parent = parents[-1] if parents else None
        if isinstance(new, _LOOSE_EXPRESSIONS) and isinstance(parent, _TIGHT_PARENTS):
            new = parenthesize(new)
        elif isinstance(new, _CONDITIONAL) and (
            isinstance(parent, cst.CompIf)
            or (isinstance(parent, cst.IfExp) and parent.orelse is not original)
        ):
            # `a if b else c` as another conditional's body or test, or as a comprehension's
            # `if`, would take that one's `if` or `else` as its own
            new = parenthesize(new)
        for node in reversed(parents):
            if isinstance(node, cst.FormattedString):
                new = _requote(new, node.quote)
                break
        return new

    # -- calls and references -------------------------------------------------------------------

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        node: cst.BaseExpression = updated
        for edit, requester in self.call_edits.pop(id(original), []):
            result = edit(updated) if isinstance(node, cst.Call) else node
            if requester is not None and result is not node:
                self.record(requester, "rewritten")
            elif requester is not None:
                self.mark(requester)
            node = result
        ruled = self.index.calls.get(self.span_of(original))
        if ruled is None:
            return node
        return self.rewrite_reference(ruled, original, node)

    def leave_Attribute(
        self, original: cst.Attribute, updated: cst.Attribute
    ) -> cst.BaseExpression:
        return self._reference(original, updated)

    def leave_Name(self, original: cst.Name, updated: cst.Name) -> cst.BaseExpression:
        return self._reference(original, updated)

    def _reference(
        self, original: cst.BaseExpression, updated: cst.BaseExpression
    ) -> cst.BaseExpression:
        if not self.index.names:
            return updated
        ruled = self.index.names.get(self.span_of(original))
        if ruled is None:
            return updated
        return self.rewrite_reference(ruled, original, updated)

    def rewrite_reference(
        self, ruled: RuledSite, original: cst.BaseExpression, updated: cst.BaseExpression
    ) -> cst.BaseExpression:
        rule = ruled.rule
        if not self.allowed(ruled):
            self.mark(ruled, node=updated)
            return updated
        assert rule.rewrite is not None
        qualname = ruled.site.qualname or ""
        if rule.rewrite.template is not None:
            new = apply_template(rule.rewrite, qualname, updated, self.ctx)
            return self.finish(ruled, original, updated, new)
        helper = rule.rewrite.option("annotation")
        if helper and ruled.site.in_annotation and not isinstance(original, cst.Call):
            return self.finish(ruled, original, updated, annotation_class(self.ctx, helper))
        name = rule.rewrite.transform or ""
        parent = self.parents()[-1] if self.parents() else None
        if (
            name in targets.STATEMENT
            and isinstance(parent, _STATEMENT_HOSTS)
            and getattr(parent, "value", None) is original
        ):
            self.pending_statement[self.span_of(original)] = ruled
            return updated
        if name == "unwrap-step-context" and isinstance(parent, cst.WithItem):
            self.pending_with[self.span_of(original)] = ruled
            return updated
        transform = targets.EXPRESSION.get(name)
        is_call = isinstance(original, cst.Call)
        passed = not is_call and takes_reference(rule)  # a helper of the same signature
        if transform is None or (is_call == (name in targets.REFERENCE_TRANSFORMS) and not passed):
            self.mark(ruled, node=updated)  # e.g. a function object passed around, not called
            return updated
        target = CallTarget(self.ctx, rule, ruled.site, updated, original, self.parents())
        new = transform(target)
        if target.follows is not None:
            self.followers[self.span_of(target.follows)].append(ruled)
            return updated
        if new is updated and target.deferred:  # the work is done when the enclosing call is left
            self.defer(target.deferred, ruled)
            return updated
        self.defer(target.deferred)
        return self.finish(ruled, original, updated, new)

    def finish(
        self,
        ruled: RuledSite,
        original: cst.BaseExpression,
        updated: cst.BaseExpression,
        new: cst.BaseExpression | None,
    ) -> cst.BaseExpression:
        if new is None:
            self.mark(ruled, node=updated)
            return updated
        self.record(ruled, "rewritten")
        fitted = self.fit(new, original)
        self.keep_comments(original, [updated], [fitted])  # the parentheses kept keep theirs
        return fitted

    def _after_keyword(self, original: cst.BaseExpression) -> bool:
        """Whether the parentheses opening `original` touch a keyword before them (`if(`), not
        a call's name (`print(`)."""
        line, col = self.span_of(original)[:2]
        word = _LAST_WORD.search(self.lines[line - 1][:col].rstrip("( \t"))
        return word is not None and keyword.iskeyword(word.group())

    def keep_comments(
        self, source: cst.CSTNode, old: Sequence[cst.CSTNode], new: Sequence[cst.CSTNode | object]
    ) -> None:
        """Comments inside replaced code (`xm.xla_device(  # core`) that the replacement does
        not carry go above the statement, so none is lost. `source` is the original node `old`
        was made from: where its lines hold no `#` there is no comment to lose, and the walk of
        both trees, a tenth of a rewrite's time, is skipped."""
        extent = self.extents.get(source)
        if extent is not None and not any(
            "#" in line for line in self.lines[extent[0] - 1 : extent[2]]
        ):
            return
        lost = _comments(old) - _comments([n for n in new if isinstance(n, cst.CSTNode)])
        lines = self.comments[id(self.statements[-1])]
        lines.extend((text, None) for text in lost.elements())

    # -- string literals (idioms) ---------------------------------------------------------------

    def leave_SimpleString(
        self, original: cst.SimpleString, updated: cst.SimpleString
    ) -> cst.BaseExpression:
        if not self.index.literals:
            return updated
        span = self.span_of(original)
        ruled = self.index.literals.get(span)
        if ruled is None:
            return updated
        if not self.allowed(ruled):
            self.mark(ruled, node=updated)
            return updated
        assert ruled.rule.rewrite is not None
        transform = targets.LITERAL.get(ruled.rule.rewrite.transform or "")
        if transform is None:
            self.mark(ruled, node=updated)
            return updated
        target = LiteralTarget(self.ctx, ruled.rule, ruled.site, updated, self.parents())
        new = transform(target)
        if new is None:
            self.mark(ruled, node=updated)
            return updated
        if target.delete_statement:
            if target.keep_as_default:
                self._as_default.add(span)
            self.pending_env[id(self.statements[-1])].append((span, ruled, updated))
            return updated
        self.defer(target.deferred)
        self.record(ruled, "kept" if new is updated else "rewritten")
        return new

    def leave_ImportStar(self, original: cst.ImportStar, updated: cst.ImportStar) -> cst.ImportStar:
        """`from torch_xla... import *`: what it binds is unknown, so a person decides."""
        ruled = self.index.literals.get(self.span_of(original)) if self.index.literals else None
        if ruled is not None:
            self.mark(ruled, node=updated)
        return updated

    # -- statements -----------------------------------------------------------------------------

    def leave_SimpleStatementLine(
        self, original: cst.SimpleStatementLine, updated: cst.SimpleStatementLine
    ) -> cst.BaseStatement | cst.FlattenSentinel[cst.BaseStatement]:
        return self._statement_line(original, updated)

    def leave_SimpleStatementSuite(
        self, original: cst.SimpleStatementSuite, updated: cst.SimpleStatementSuite
    ) -> cst.SimpleStatementSuite | cst.IndentedBlock:
        new = self._small_statements(original, updated, alone=False)
        if new is None:
            return updated
        if all(isinstance(s, cst.BaseSmallStatement) for s in new):
            body = [s for s in new if isinstance(s, cst.BaseSmallStatement)]
            return updated.with_changes(body=body or [cst.Pass()])
        # `if c: xm.rendezvous("x")` (its one statement: `fix_blocker`) becomes statements: the
        # body gets an indented block, the line's comment staying on the header.
        lines = [
            s if isinstance(s, cst.BaseStatement) else cst.SimpleStatementLine([s]) for s in new
        ]
        return cst.IndentedBlock(body=lines, header=updated.trailing_whitespace)

    def _statement_line(self, original: cst.SimpleStatementLine, updated: cst.SimpleStatementLine):
        new = self._small_statements(original, updated, alone=len(original.body) == 1)
        if new is None:
            return updated
        if not new:
            return deleted(updated)
        notes = self._notes.pop(id(original), [])
        if all(isinstance(s, cst.BaseSmallStatement) for s in new) and (
            len(new) == 1 or len(original.body) > 1
        ):
            line = updated.with_changes(body=_strip_last_semicolon(new))
            return with_comments(line, notes)
        # Compound statements (an `if` around a print): the line is replaced by statements.
        lines = [
            s if isinstance(s, cst.BaseStatement) else cst.SimpleStatementLine([s]) for s in new
        ]
        lines[0] = with_comments(lines[0].with_changes(leading_lines=updated.leading_lines), notes)
        lines[-1] = _with_trailing(lines[-1], updated.trailing_whitespace)
        return cst.FlattenSentinel(lines)

    def _small_statements(
        self,
        original: cst.SimpleStatementLine | cst.SimpleStatementSuite,
        updated: cst.SimpleStatementLine | cst.SimpleStatementSuite,
        alone: bool,
    ) -> list[targets.NewStatement] | None:
        """The line's statements after statement transforms, or None when nothing changed."""
        env = self.pending_env.pop(id(self.statements[-1]), [])
        if not self.pending_statement and not env:
            return None
        changed = False
        out: list[targets.NewStatement] = []
        for old, new in zip(original.body, updated.body, strict=True):
            replacement = self._statement(old, new, alone)
            if replacement is None and env:
                replacement = self._env_statement(old, env)
            if replacement is None:
                out.append(new)
            else:
                changed = True
                out.extend(replacement)
        for _, ruled, node in env:  # a variable read, not set: a person decides
            self.mark(ruled, node=node)
        return out if changed else None

    def _statement(self, old: cst.BaseSmallStatement, new: cst.BaseSmallStatement, alone: bool):
        value = getattr(old, "value", None)
        if not isinstance(value, cst.Call):
            return None
        ruled = self.pending_statement.pop(self.span_of(value), None)
        new_value = getattr(new, "value", None)
        if ruled is None or not isinstance(new_value, cst.BaseExpression):
            return None
        assert ruled.rule.rewrite is not None
        transform = targets.STATEMENT[ruled.rule.rewrite.transform or ""]
        target = StatementTarget(
            self.ctx,
            ruled.rule,
            ruled.site,
            new_value,
            value,
            self.parents(),
            small=new,
            alone=alone,
        )
        result = transform(target)
        if result is None:
            self.mark(ruled)
            return None
        self.record(ruled, "rewritten")
        self.keep_comments(old, [new], result)
        statement = self.statements[-1]
        self._notes[id(statement)].extend(note_text(ruled.rule, n) for n in target.notes)
        return result

    def _env_statement(self, old: cst.BaseSmallStatement, env: list[PendingEnv]):
        """Delete `os.environ[K] = v`, `os.environ.setdefault(K, v)`, `os.putenv(K, v)`,
        `os.environ.pop(K)` and `del os.environ[K]` for a variable whose rule says it is dead."""
        key = _environ_key(old)
        if key is None:
            return None
        for i, (span, ruled, _) in enumerate(env):
            if self.span_of(key) == span:
                env.pop(i)
                self.record(ruled, "rewritten")
                return _as_default(old) if span in self._as_default else []
        return None

    def leave_With(self, original: cst.With, updated: cst.With):
        if not self.pending_with:
            return updated
        keep = []
        unwrapped: list[RuledSite] = []
        for old, new in zip(original.items, updated.items, strict=True):
            ruled = self.pending_with.pop(self.span_of(old.item), None)
            if ruled is None:
                keep.append(new)
            else:  # an item bound with `as` is declined (`declines`)
                unwrapped.append(ruled)
        for ruled in unwrapped:
            self.record(ruled, "rewritten")
        if not unwrapped:
            return updated
        if keep:
            keep[-1] = keep[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
            return updated.with_changes(items=keep)
        body = updated.body
        statements: list[cst.BaseStatement]
        header: list[cst.EmptyLine] = []
        if isinstance(body, cst.IndentedBlock):
            statements = list(body.body)
            if body.header.comment is not None:  # `with torch_xla.step():  # why`
                header.append(cst.EmptyLine(indent=True, comment=body.header.comment))
        else:
            assert isinstance(body, cst.SimpleStatementSuite)
            statements = [cst.SimpleStatementLine(body=body.body)]
        first = statements[0]
        own = getattr(first, "leading_lines", ())
        statements[0] = first.with_changes(leading_lines=[*updated.leading_lines, *header, *own])
        return cst.FlattenSentinel(statements)

    def leave_Module(self, original: cst.Module, updated: cst.Module) -> cst.Module:
        module = super().leave_Module(original, updated)
        # Every deferred site is settled when its statement is left; anything still pending
        # here would be a driver bug, so it is counted as left for a person, never as done.
        for ruled in [*self.pending_statement.values(), *self.pending_with.values()]:
            self.record(ruled, "marked")
        for followers in self.followers.values():  # an enclosing call no rule handles
            for ruled in followers:
                self.record(ruled, "marked")
        return module


class _Requote(Transformer):
    def __init__(self, avoid: str) -> None:
        self.avoid = avoid

    def leave_SimpleString(
        self, original: cst.SimpleString, updated: cst.SimpleString
    ) -> cst.SimpleString:
        if updated.quote != self.avoid or len(updated.quote) != 1:
            return updated
        other = "'" if self.avoid == '"' else '"'
        body = updated.value[len(updated.prefix) + 1 : -1]
        if other in body:
            return updated
        return updated.with_changes(value=f"{updated.prefix}{other}{body}{other}")


def _requote(expr: cst.BaseExpression, fstring_quote: str) -> cst.BaseExpression:
    new = expr.visit(_Requote(fstring_quote[0]))
    assert isinstance(new, cst.BaseExpression)
    return new


def _environ_key(small: cst.BaseSmallStatement) -> cst.BaseExpression | None:
    """The key literal of a statement that sets or deletes an environment variable."""
    if isinstance(small, cst.Assign) and len(small.targets) == 1:
        target = small.targets[0].target
        if isinstance(target, cst.Subscript) and _is_environ(target.value):
            return _subscript_key(target)
    if (
        isinstance(small, cst.Del)
        and isinstance(small.target, cst.Subscript)
        and _is_environ(small.target.value)
    ):
        return _subscript_key(small.target)
    if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call):
        func = small.value.func
        if (
            isinstance(func, cst.Attribute)
            and func.attr.value in ("setdefault", "pop")
            and _is_environ(func.value)
            and small.value.args
        ):
            return small.value.args[0].value
        if (
            isinstance(func, cst.Attribute)
            and func.attr.value == "putenv"
            and isinstance(func.value, cst.Name)
            and func.value.value == "os"
            and small.value.args
        ):
            return small.value.args[0].value
    return None


def _as_default(small: cst.BaseSmallStatement) -> list[cst.BaseSmallStatement]:
    """`os.environ[K] = v` as `os.environ.setdefault(K, v)`; a setdefault as it is; any other
    setting (putenv, which os.environ does not see; a deletion) goes."""
    if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call):
        func = small.value.func
        if isinstance(func, cst.Attribute) and func.attr.value == "setdefault":
            return [small]
        return []
    if not isinstance(small, cst.Assign):
        return []
    target = small.targets[0].target
    assert isinstance(target, cst.Subscript)
    key = _subscript_key(target)
    assert key is not None
    func = cst.Attribute(value=target.value, attr=cst.Name("setdefault"))
    comma = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
    args = [cst.Arg(key, comma=comma), cst.Arg(small.value)]
    return [cst.Expr(cst.Call(func=func, args=args), semicolon=small.semicolon)]


def _is_environ(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Attribute) and expr.attr.value == "environ"


def _subscript_key(node: cst.Subscript) -> cst.BaseExpression | None:
    if len(node.slice) == 1 and isinstance(node.slice[0].slice, cst.Index):
        return node.slice[0].slice.value
    return None


def _strip_last_semicolon(body: list[targets.NewStatement]) -> list[cst.BaseSmallStatement]:
    smalls = [s for s in body if isinstance(s, cst.BaseSmallStatement)]
    if smalls and not isinstance(smalls[-1].semicolon, cst.MaybeSentinel):
        smalls[-1] = smalls[-1].with_changes(semicolon=cst.MaybeSentinel.DEFAULT)
    return smalls


def _with_trailing(stmt: cst.BaseStatement, trailing: cst.TrailingWhitespace) -> cst.BaseStatement:
    """Move a line's trailing comment onto the last simple line of its replacement."""
    if trailing.comment is None:
        return stmt
    if isinstance(stmt, cst.SimpleStatementLine):
        return stmt.with_changes(trailing_whitespace=trailing)
    body = getattr(stmt, "body", None)
    if isinstance(body, cst.IndentedBlock) and body.body:
        inner = list(body.body)
        inner[-1] = _with_trailing(inner[-1], trailing)
        return stmt.with_changes(body=body.with_changes(body=inner))
    return stmt


def _comment_first(result, lines: list[tuple[str, cst.CSTNode | None]], already: frozenset[str]):
    """The TODO lines above the statement, or, where a transform made several of one, above the
    one that holds each site (the first when none does): where the next run finds the site."""
    if isinstance(result, cst.FlattenSentinel):
        nodes = list(result.nodes)
        if not nodes:
            return result
        above: dict[int, list[tuple[str, cst.CSTNode | None]]] = defaultdict(list)
        for text, site in lines:
            holder = next((i for i, n in enumerate(nodes) if site and _holds(n, site)), 0)
            above[holder].append((text, site))
        for i, entries in above.items():
            nodes[i] = _comment_innermost(nodes[i], entries, already if i == 0 else frozenset())
        return cst.FlattenSentinel(nodes)
    if isinstance(result, cst.CSTNode):
        return with_comments(result, [text for text, _ in lines], already)
    return result


def _comments(nodes: Iterable[cst.CSTNode]) -> Counter[str]:
    found: Counter[str] = Counter()
    todo = list(nodes)
    while todo:
        current = todo.pop()
        if isinstance(current, cst.Comment):
            found[current.value] += 1
        else:
            todo.extend(children(current))
    return found


def _comment_innermost(
    statement: cst.CSTNode, entries: list[tuple[str, cst.CSTNode | None]], already: frozenset[str]
) -> cst.CSTNode:
    """The TODO lines above the innermost statement of `statement` that holds each site (a
    made `if` around a print: above the print), where the next run looks for them."""
    body = getattr(statement, "body", None)
    if isinstance(body, cst.IndentedBlock):
        inner: list[cst.CSTNode] = list(body.body)
        here: list[str] = []
        below: dict[int, list[tuple[str, cst.CSTNode | None]]] = defaultdict(list)
        for text, site in entries:
            k = next((k for k, n in enumerate(inner) if site and _holds(n, site)), None)
            if k is None:
                here.append(text)
            else:
                below[k].append((text, site))
        if below:
            for k, nested in below.items():
                inner[k] = _comment_innermost(inner[k], nested, frozenset())
            statement = statement.with_changes(body=body.with_changes(body=inner))
        return with_comments(statement, here, already) if here else statement
    return with_comments(statement, [text for text, _ in entries], already)


def _holds(tree: cst.CSTNode, node: cst.CSTNode) -> bool:
    todo = [tree]
    while todo:
        current = todo.pop()
        if current is node:
            return True
        todo.extend(children(current))
    return False


__all__ = ["DeletedStatement", "RuleTransformer"]
