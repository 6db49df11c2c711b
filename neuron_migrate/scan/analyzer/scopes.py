"""The name model: which imported qualified name (if any) each name in a module refers to.

One walk over a stdlib ``ast`` tree builds Python's scopes (module, class, function, lambda,
comprehension) with every binding in each, and records every loaded name with the scope it is
read in. Resolution then follows Python's rules (LEGB, class scopes invisible to nested
functions, ``global``/``nonlocal``). It is flow-insensitive like Python's own compiler: a name
bound anywhere in a function is local to all of it, and an import under ``if``/``try`` binds in
the enclosing scope.

Each name resolves to a set of meanings. One imported qualified name is a clean resolution;
several (``from a import f`` in one branch, ``def f`` in another) make the name *ambiguous*: it
is reported, never rewritten. ``x = None`` -- the usual placeholder in
``try: import torch_xla ... except ImportError: xm = None`` -- adds no meaning, nor does the
rewrite's own ``xm = NotMigrated(...)`` there.

The scan and the codemod share this model; nothing else resolves names.
"""

import ast
import re
from collections.abc import Callable
from typing import Any, NamedTuple

from neuron_migrate.scan.analyzer.availability import STAND_IN
from neuron_migrate.scan.analyzer.memo import Memo

# How a report names the meaning of a binding that is not an import (a def, a class, a
# parameter, an assigned value) among an ambiguous name's meanings.
LOCAL = "<local>"

_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_TRY = tuple(t for t in (ast.Try, getattr(ast, "TryStar", None)) if t is not None)
# Kinds the walk handles before (or instead of) descending into their children.
_SPECIAL = frozenset(
    {
        ast.Import,
        ast.ImportFrom,
        ast.Lambda,
        ast.Global,
        ast.Nonlocal,
        ast.If,
        ast.ExceptHandler,
        ast.MatchAs,
        ast.MatchStar,
        ast.MatchMapping,
        *_DEFINITIONS,
        *_COMPREHENSIONS,
        *_TRY,
    }
)
# Kinds the site finder inspects for XLA idioms (besides calls and `arguments`).
_IDIOM_KINDS = frozenset({ast.Compare, ast.Subscript, ast.Assign, ast.AnnAssign, ast.Dict})
_IMPORT_ERRORS = {"ImportError", "ModuleNotFoundError", "Exception", "BaseException"}


# Each node's parent, keyed by the node itself (AST nodes hash by identity); looking up None, as
# for a node with no parent, finds nothing.
Parents = dict[ast.AST | None, ast.AST]


class Binding:
    """One place where a name is bound in a scope. (Plain classes, compared by identity: see
    `neuron_migrate.scan.records` for why not dataclasses.)"""

    __slots__ = ("alias_of", "guarded", "kind", "node", "qualname", "used")

    def __init__(
        self,
        kind: str,
        *,
        qualname: str | None = None,
        alias_of: ast.expr | None = None,
        node: ast.AST | None = None,
        guarded: bool = False,
    ) -> None:
        self.kind = kind  # "import" | "alias" | "local" | "none"
        self.qualname = qualname  # for imports: the module or object imported
        self.alias_of = alias_of  # for `f = xm.mark_step`: the expression aliased
        self.node = node  # the statement or alias node that binds
        self.guarded = guarded
        self.used = False


class Scope:
    __slots__ = ("bindings", "global_names", "kind", "nonlocal_names", "parent")

    def __init__(self, kind: str, parent: "Scope | None") -> None:
        self.kind = kind  # "module" | "class" | "function" | "comprehension"
        self.parent = parent
        self.bindings: dict[str, list[Binding]] = {}
        self.global_names: set[str] = set()
        self.nonlocal_names: set[str] = set()

    def bind(self, name: str, binding: Binding) -> None:
        self.bindings.setdefault(name, []).append(binding)


class ImportRecord(NamedTuple):
    """One imported name: `import a.b as m` or `from a import b as m`."""

    alias: ast.alias
    statement: ast.Import | ast.ImportFrom
    scope: Scope
    binding: Binding
    module: str | None  # what is imported, in full; None for relative imports


class Resolution(NamedTuple):
    """What a name (or an attribute chain rooted at a name) means."""

    qualnames: tuple[str, ...]  # distinct imported meanings, sorted
    local: bool  # also (or only) bound to something that is not an import

    @property
    def qualname(self) -> str | None:
        """The single imported meaning, or None when there is none or the name is ambiguous."""
        if len(self.qualnames) == 1 and not self.local:
            return self.qualnames[0]
        return None

    @property
    def ambiguous(self) -> bool:
        return len(self.qualnames) > 1 or (bool(self.qualnames) and self.local)


# Fields that never lead to a node worth visiting: expression contexts and operators (shared
# singleton nodes, one per kind) and identifier fields. Skipping them is most of what makes the
# walk cheaper than `ast.iter_child_nodes`; `Import`, `Global` and `Nonlocal` (whose `names`
# these are) are handled before the generic descent.
_NOT_CHILD_FIELDS = frozenset(
    {
        "ctx",
        "op",
        "ops",
        "id",
        "attr",
        "name",
        "names",
        "asname",
        "module",
        "level",
        "arg",
        "kind",
        "conversion",
        "is_async",
        "simple",
        "rest",
        "kwd_attrs",
        "type_comment",
        "tag",
        "type_ignores",
    }
)
_CHILD_FIELDS: dict[type, tuple[str, ...]] = {ast.Constant: ()}


_REVERSED_CHILD_FIELDS: dict[type, tuple[str, ...]] = {}


def _child_fields(kind: type[ast.AST]) -> tuple[str, ...]:
    fields = _CHILD_FIELDS.get(kind)
    if fields is None:
        fields = _CHILD_FIELDS[kind] = tuple(f for f in kind._fields if f not in _NOT_CHILD_FIELDS)
    return fields


def child_nodes(node: ast.AST) -> list[ast.AST]:
    """The node's children in source order, as `ast.iter_child_nodes` gives them, less
    expression contexts, operators and identifiers."""
    children: list[ast.AST] = []
    for name in _child_fields(type(node)):
        value = getattr(node, name, None)
        if value is None:
            continue
        if value.__class__ is list:
            for item in value:
                if isinstance(item, ast.AST):
                    children.append(item)
        elif isinstance(value, ast.AST):
            children.append(value)
    return children


def _is_availability_test(test: ast.expr) -> bool:
    """`if is_torch_xla_available():`, `if XLA_AVAILABLE:`, `if has_xla_support:` and the like."""
    stack: list[ast.AST] = [test]
    while stack:
        node = stack.pop()
        kind = type(node)
        if kind is ast.Name:
            name = node.id  # type: ignore[attr-defined]
        elif kind is ast.Attribute:
            name = node.attr  # type: ignore[attr-defined]
            stack.append(node.value)  # type: ignore[attr-defined]
        else:
            stack.extend(child_nodes(node))
            continue
        if _ACCELERATOR_WORDS.intersection(_words(name)):
            return True
    return False


# Words of a name that make a test about the XLA device's availability: `use_tpu`,
# `XLA_AVAILABLE`, `isNeuronxAvailable`; whole words, so `output` or `num_neurons` is none.
_ACCELERATOR_WORDS = frozenset(["xla", "tpu", "tpus", "neuron", "neuronx", "pjrt"])
_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+")


def _words(name: str) -> list[str]:
    """`is_torch_xla_available` -> is, torch, xla, available; `useTPU` -> use, tpu."""
    return [word.lower() for word in _WORD.findall(name)]


def _stands_in(value: ast.expr) -> bool:
    return (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Name)
        and value.func.id == STAND_IN
    )


def _catches_import_error(handler: ast.ExceptHandler) -> bool:
    if handler.type is None:
        return True
    names = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    return any(isinstance(n, ast.Name) and n.id in _IMPORT_ERRORS for n in names)


class NameModel:
    """Scopes, bindings and loaded names of one module, plus a parent map of its nodes."""

    def __init__(
        self, tree: ast.Module, string_test: Callable[[str], object] | None = None
    ) -> None:
        self.module_scope = Scope("module", None)
        self.parents: Parents = {}
        # Every loaded Name, in the walk's order, with the scope it is read in and whether it
        # sits under a guard (by the node: what `binding_of` asks).
        self.loads: dict[ast.Name, tuple[Scope, bool]] = {}
        self.imports: list[ImportRecord] = []
        # The names some scope binds by an import or an alias: only these can mean an import.
        self.importing_names: set[str] = set()
        # `from module import *` (absolute), with its guard: it binds names no one can list.
        self.star_imports: list[tuple[ast.alias, str, bool]] = []
        # By-products of the same walk for the site finder, so it needs no walk of its own:
        # every Call, and every Compare, Subscript, Assign and `arguments` node, with its guard.
        self.calls: list[tuple[ast.Call, bool]] = []
        self.idiom_nodes: list[tuple[ast.AST, bool]] = []
        self._loads_by_name: dict[str, list[tuple[ast.Name, Scope]]] | None = None  # on demand
        # By (name, id of the scope binding it); `a = b; b = a` reads as local (None).
        self._meanings: Memo[Resolution | None] = Memo(cut=None)
        # Whether a string constant of the module passes `string_test` (the site finder's
        # test for the text of an idiom); False when no test is given.
        self.marked_strings = False
        _Builder(self).build(tree, string_test)

    # -- resolution ---------------------------------------------------------------------------

    def binding_of(self, name: ast.Name) -> tuple[Scope, list[Binding]] | None:
        """The scope a loaded name is bound in, and its bindings there (None: a builtin or an
        unknown name). For the few idioms that follow a variable to its value."""
        read = self.loads.get(name)
        owner = self.scope_binding(name.id, read[0]) if read is not None else None
        return (owner, owner.bindings[name.id]) if owner is not None else None

    def loads_of(self, name: str, owner: Scope) -> list[ast.Name]:
        """Every read of `name` that sees its binding in `owner`."""
        if self._loads_by_name is None:
            self._loads_by_name = {}
            for n, (scope, _) in self.loads.items():
                self._loads_by_name.setdefault(n.id, []).append((n, scope))
        return [
            n
            for n, scope in self._loads_by_name.get(name, ())
            if self.scope_binding(name, scope) is owner
        ]

    def scope_binding(self, name: str, scope: Scope) -> Scope | None:
        """The scope whose binding of `name` a load in `scope` sees, or None (builtin/unknown)."""
        if name in scope.global_names:
            return self.module_scope if name in self.module_scope.bindings else None
        if name in scope.bindings:
            return scope
        current = scope.parent
        while current is not None:
            if current.kind != "class" and name in current.bindings:
                return current
            current = current.parent
        return None

    def resolve_name(self, name: str, scope: Scope, mark_used: bool = True) -> Resolution | None:
        owner = self.scope_binding(name, scope)
        if owner is None:
            return None
        bindings = owner.bindings[name]
        if mark_used:
            for binding in bindings:
                binding.used = True
        # A name's meaning in the scope that binds it is fixed once the model is built: it is
        # computed once, however many aliases lead to it (`memo.Memo`).
        return self._meanings.get((name, id(owner)), self._meaning, (bindings, owner))

    def _meaning(self, bound: tuple[list[Binding], Scope]) -> Resolution | None:
        bindings, owner = bound
        qualnames: set[str] = set()
        local = False
        for binding in bindings:
            if binding.kind == "import" and binding.qualname:
                qualnames.add(binding.qualname)
            elif binding.kind == "alias" and binding.alias_of is not None:
                aliased = self.resolve_chain(binding.alias_of, owner, mark_used=False)
                if aliased is None or aliased.local:
                    local = True
                qualnames.update(aliased.qualnames if aliased else ())
            elif binding.kind == "local":
                local = True
        if not qualnames and not local:
            return None  # only `x = None` placeholders
        return Resolution(tuple(sorted(qualnames)), local)

    def resolve_chain(
        self, expr: ast.expr, scope: Scope, mark_used: bool = True
    ) -> Resolution | None:
        """Resolve `a.b.c` where `a` is a name: the meanings of `a`, each extended by `.b.c`."""
        attrs: list[str] = []
        node = expr
        while isinstance(node, ast.Attribute):
            attrs.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name):
            return None
        base = self.resolve_name(node.id, scope, mark_used)
        if base is None:
            return None
        suffix = "".join("." + a for a in reversed(attrs))
        return Resolution(tuple(q + suffix for q in base.qualnames), base.local)


class _Within:
    """A mark on the walk's stack: what follows it (until the next mark) is in this scope,
    under this guard. The walk keeps the scope and guard it is in, and pushes a mark only
    where they change (a body, a guarded `if`), not a (node, scope, guard) tuple per node."""

    __slots__ = ("guarded", "scope")

    def __init__(self, scope: Scope, guarded: bool) -> None:
        self.scope = scope
        self.guarded = guarded


# The walk's stack: nodes and `_Within` marks (told apart by their class, in the loop).
_Stack = list[Any]


class _Builder:
    """One iterative walk that fills a NameModel."""

    def __init__(self, model: NameModel) -> None:
        self.model = model

    def build(self, tree: ast.Module, string_test: Callable[[str], object] | None) -> None:
        model = self.model
        parents = model.parents
        loads = model.loads
        calls = model.calls
        idiom_nodes = model.idiom_nodes
        Name, Attribute, Constant, Call = ast.Name, ast.Attribute, ast.Constant, ast.Call
        Load, AST, Within = ast.Load, ast.AST, _Within
        reversed_fields = _REVERSED_CHILD_FIELDS
        scope, guarded = model.module_scope, False
        # Nodes and `_Within` marks. Children are pushed in reverse for source order.
        stack: _Stack = [tree]
        push = stack.append
        pop = stack.pop
        while stack:
            node = pop()
            kind = node.__class__

            # The commonest kinds first, with their children inline.
            if kind is Name:
                if node.ctx.__class__ is Load:
                    loads[node] = (scope, guarded)
                else:
                    self._bind_target_name(node, scope, parents.get(node), guarded)
                continue
            if kind is Constant:
                value = node.value
                if string_test is not None and value.__class__ is str and string_test(value):
                    model.marked_strings = True
                    string_test = None  # one is enough
                continue
            if kind is Attribute:
                value = node.value
                parents[value] = node
                push(value)
                continue
            if kind is Within:
                scope, guarded = node.scope, node.guarded
                continue
            within = None
            if kind is Call:
                calls.append((node, guarded))
            elif kind in _SPECIAL:
                if self._special(node, kind, scope, guarded, stack):
                    continue
                if (kind is ast.If or kind in _TRY) and not guarded and self._guards(node, kind):
                    push(Within(scope, guarded))  # back to unguarded after its children
                    within = Within(scope, True)
            elif kind in _IDIOM_KINDS:
                idiom_nodes.append((node, guarded))

            # Push the children last-first (so they pop in source order), inline: this loop
            # runs for most nodes, and a call per node costs more than the loop itself.
            fields = reversed_fields.get(kind)
            if fields is None:
                fields = reversed_fields[kind] = _child_fields(kind)[::-1]
            for field_name in fields:
                value = getattr(node, field_name, None)
                if value is None:
                    continue
                if value.__class__ is list:
                    for item in reversed(value):
                        if isinstance(item, AST):
                            parents[item] = node
                            push(item)
                elif isinstance(value, AST):
                    parents[value] = node
                    push(value)
            if within is not None:
                push(within)

    def _guards(self, node: ast.AST, kind: type) -> bool:
        """Whether an `if`/`try` makes its children guarded."""
        if kind is ast.If:
            return _is_availability_test(node.test)  # type: ignore[attr-defined]
        return any(_catches_import_error(h) for h in node.handlers)  # type: ignore[attr-defined]

    def _special(
        self,
        node: ast.AST,
        kind: type,
        scope: Scope,
        guarded: bool,
        stack: _Stack,
    ) -> bool:
        """Bind what `node` binds. True when its children are pushed (or need no visit)."""
        if kind is ast.Import or kind is ast.ImportFrom:
            self._bind_import(node, scope, guarded)  # type: ignore[arg-type]
            return True
        if kind in _DEFINITIONS:
            self._push_definition(node, scope, guarded, stack)  # type: ignore[arg-type]
            return True
        if kind is ast.Lambda:
            assert isinstance(node, ast.Lambda)
            inner = Scope("function", scope)
            self._bind_arguments(node.args, inner, guarded, stack, node)
            # Its body first, in its own scope; then the defaults, in this one.
            stack.append(_Within(scope, guarded))
            self._push(node.body, node, stack)
            stack.append(_Within(inner, guarded))
            return True
        if kind in _COMPREHENSIONS:
            self._push_comprehension(node, scope, guarded, stack)
            return True
        if kind is ast.Global:
            scope.global_names.update(node.names)  # type: ignore[attr-defined]
            return True
        if kind is ast.Nonlocal:
            scope.nonlocal_names.update(node.names)  # type: ignore[attr-defined]
            return True
        name: str | None
        if kind is ast.ExceptHandler:
            name = node.name  # type: ignore[attr-defined]
        elif kind is ast.MatchMapping:
            name = getattr(node, "rest", None)
        else:  # If, Try, TryStar, MatchAs, MatchStar
            name = getattr(node, "name", None)
        if name:
            scope.bind(name, Binding("local", node=node, guarded=guarded))
        return False

    # -- helpers ------------------------------------------------------------------------------

    def _push(self, child: ast.AST, parent: ast.AST, stack: _Stack) -> None:
        self.model.parents[child] = parent
        stack.append(child)

    def _target_scope(self, name: str, scope: Scope) -> Scope:
        if name in scope.global_names:
            return self.model.module_scope
        if name in scope.nonlocal_names:
            current = scope.parent
            while current is not None:
                if current.kind == "function" and name in current.bindings:
                    return current
                current = current.parent
        return scope

    def _bind_target_name(
        self, node: ast.Name, scope: Scope, parent: ast.AST | None, guarded: bool
    ) -> None:
        binding = Binding("local", node=node, guarded=guarded)
        if (
            isinstance(parent, ast.Assign)
            and len(parent.targets) == 1
            and parent.targets[0] is node
        ):
            value = parent.value
            if isinstance(value, ast.Constant) and value.value is None:
                binding.kind = "none"
            elif _stands_in(value):
                binding.kind = "none"  # the rewrite's `except ImportError: xm = NotMigrated(...)`
            elif isinstance(value, (ast.Name, ast.Attribute)):
                binding.kind = "alias"
                binding.alias_of = value
                self.model.importing_names.add(node.id)
        if isinstance(node.ctx, ast.Del):
            return
        target = self._target_scope(node.id, scope)
        target.bind(node.id, binding)

    def _bind_import(self, node: ast.Import | ast.ImportFrom, scope: Scope, guarded: bool) -> None:
        for alias in node.names:
            qualname: str | None
            if isinstance(node, ast.Import):
                if alias.asname:
                    local, qualname = alias.asname, alias.name
                else:
                    local = alias.name.partition(".")[0]
                    qualname = local
            else:
                if alias.name == "*":
                    if node.module and not node.level:
                        self.model.star_imports.append((alias, node.module, guarded))
                    continue
                local = alias.asname or alias.name
                # A relative import names the project's own code: no qualified name.
                relative = node.level or not node.module
                qualname = None if relative else f"{node.module}.{alias.name}"
            kind = "import" if qualname else "local"
            if qualname:
                self.model.importing_names.add(local)
            binding = Binding(kind, qualname=qualname, node=alias, guarded=guarded)
            self._target_scope(local, scope).bind(local, binding)
            self.model.parents[alias] = node
            # `import a.b.c` binds `a`, but the report names the module `a.b.c`.
            module = alias.name if isinstance(node, ast.Import) else qualname
            self.model.imports.append(ImportRecord(alias, node, scope, binding, module))

    def _push_definition(
        self,
        node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef,
        scope: Scope,
        guarded: bool,
        stack: _Stack,
    ) -> None:
        self._target_scope(node.name, scope).bind(
            node.name, Binding("local", node=node, guarded=guarded)
        )
        # The body runs in a new scope, after decorators, bases, defaults and annotations,
        # which do not.
        inner = Scope("class" if isinstance(node, ast.ClassDef) else "function", scope)
        stack.append(_Within(scope, guarded))
        for stmt in reversed(node.body):
            self._push(stmt, node, stack)
        stack.append(_Within(inner, guarded))
        if isinstance(node, ast.ClassDef):
            for expr in [*node.bases, *(k.value for k in node.keywords)]:
                self._push(expr, node, stack)
        else:
            self._bind_arguments(node.args, inner, guarded, stack, node)
            if node.returns is not None:
                self._push(node.returns, node, stack)
        for decorator in node.decorator_list:
            self._push(decorator, node, stack)

    def _bind_arguments(
        self,
        args: ast.arguments,
        inner: Scope,
        guarded: bool,
        stack: _Stack,
        owner: ast.AST,
    ) -> None:
        """Bind the parameters in `inner`; push their annotations and defaults, which are
        evaluated in the scope the walk is in."""
        all_args = [*args.posonlyargs, *args.args, *args.kwonlyargs]
        if args.vararg:
            all_args.append(args.vararg)
        if args.kwarg:
            all_args.append(args.kwarg)
        parents = self.model.parents
        for arg in all_args:
            inner.bind(arg.arg, Binding("local", node=arg, guarded=guarded))
            parents[arg] = args  # where a variable followed to its value finds the default
            if arg.annotation is not None:
                self._push(arg.annotation, owner, stack)
        for default in [*args.defaults, *(d for d in args.kw_defaults if d is not None)]:
            self._push(default, args, stack)
        self.model.parents[args] = owner
        self.model.idiom_nodes.append((args, guarded))

    def _push_comprehension(
        self, node: ast.AST, scope: Scope, guarded: bool, stack: _Stack
    ) -> None:
        inner = Scope("comprehension", scope)
        generators: list[ast.comprehension] = node.generators  # type: ignore[attr-defined]
        # The first iterable is evaluated in the enclosing scope, first; everything else inside.
        elements = (
            [node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt]  # type: ignore[attr-defined]
        )
        stack.append(_Within(scope, guarded))
        for element in reversed(elements):
            self._push(element, node, stack)
        for index, gen in reversed(list(enumerate(generators))):
            self.model.parents[gen] = node
            for cond in reversed(gen.ifs):
                self._push(cond, gen, stack)
            self._push(gen.target, gen, stack)
            if index == 0:
                stack.append(_Within(inner, guarded))
            self._push(gen.iter, gen, stack)
