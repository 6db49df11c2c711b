"""What the transforms of one file share: the rules, the file's module bindings, the imports and
helpers the new code needs, and a record of every site's outcome."""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

import libcst as cst

from neuron_migrate.rewrite.codemod.names import dotted
from neuron_migrate.rewrite.codemod.outline import Imported
from neuron_migrate.rewrite.codemod.passes import Visitor
from neuron_migrate.rewrite.codemod.results import Outcome
from neuron_migrate.rewrite.codemod.skeleton import OpaqueCompound, OpaqueStatement
from neuron_migrate.ruleset import Rule

Span = tuple[int, int, int, int]

# The modules templates may name, and the import statement each needs.
MODULE_IMPORTS: dict[str, str] = {
    "copy": "import copy",
    "logging": "import logging",
    "os": "import os",
    "sys": "import sys",
    "time": "import time",
    "torch": "import torch",
    "dist": "import torch.distributed as {alias}",
    "torch_neuronx": "import torch_neuronx",
}
_IMPORT_ORDER = ("copy", "logging", "os", "sys", "time", "torch", "dist", "torch_neuronx")

# Names under which a wrapped model shows that DDP/FSDP2 reduces the gradients.
MODEL_WRAPPERS = frozenset(
    {
        "torch.nn.parallel.DistributedDataParallel",
        "torch.nn.parallel.distributed.DistributedDataParallel",
        "torch.distributed.fsdp.fully_shard",
        "torch.distributed.fsdp.FullyShardedDataParallel",
        "torch.distributed._composable.fsdp.fully_shard",
    }
)


_OPTIMIZER_STEP = "torch_xla.core.xla_model.optimizer_step"


def beside_plain_steps(tree: ast.Module, call_qualnames: dict[Span, str]) -> frozenset[int]:
    """Lines of the xm.optimizer_step calls in one branch of an `if` whose other branch steps the
    same optimizer itself (`if ddp: opt.step() else: xm.optimizer_step(opt)`): that branch is
    the one whose model is not wrapped, so its all-reduce is all the reduction there is."""
    lines = {span[0] for span, qualname in call_qualnames.items() if qualname == _OPTIMIZER_STEP}
    if not lines:
        return frozenset()
    found: set[int] = set()
    for node in _branchings_around(tree.body, lines):
        for mine, other in ((node.body, node.orelse), (node.orelse, node.body)):
            steps = [call for call in _calls(mine) if call.lineno in lines and call.args]
            if not steps:
                continue
            stepped = {
                ast.unparse(call.func.value)
                for call in _calls(other)
                if isinstance(call.func, ast.Attribute) and call.func.attr == "step"
            }
            found.update(call.lineno for call in steps if ast.unparse(call.args[0]) in stepped)
    return frozenset(found)


def _branchings_around(statements: list[ast.stmt], lines: set[int]) -> Iterator[ast.If]:
    """The `if` statements with an `else` (or `elif`), among `statements` and in the blocks
    nested in them, that span one of `lines`. Only the statements around those lines are
    entered: walking every node of a module, for every file with an optimizer step, took 7% of
    the rewrite."""
    for statement in statements:
        decorators = getattr(statement, "decorator_list", ())
        first = min((d.lineno for d in decorators), default=statement.lineno)
        last = statement.end_lineno or statement.lineno
        if not any(first <= line <= last for line in lines):
            continue
        if isinstance(statement, ast.If) and statement.orelse:
            yield statement
        for block in _blocks(statement):
            yield from _branchings_around(block, lines)


def _blocks(statement: ast.stmt) -> Iterator[list[ast.stmt]]:
    """The statement lists a compound statement holds."""
    for name in ("body", "orelse", "finalbody"):
        block = getattr(statement, name, None)
        if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
            yield block
    for handler in getattr(statement, "handlers", ()):
        yield handler.body
    for case in getattr(statement, "cases", ()):
        yield case.body


def _calls(statements: list[ast.stmt]) -> Iterable[ast.Call]:
    for statement in statements:
        for node in ast.walk(statement):
            if isinstance(node, ast.Call):
                yield node


def module_bindings(module: cst.Module) -> tuple[dict[str, str], set[str]]:
    """Which local names the module's top-level imports give `os`, `torch`, `torch.distributed`
    and `torch_neuronx`, and every other name bound at the top level."""
    found: dict[str, str] = {}
    taken: set[str] = set()
    for stmt in module.body:
        if isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                if isinstance(small, cst.Import | cst.ImportFrom):
                    for imported in imported_names(small):
                        _bind(imported, found, taken)
                elif isinstance(small, cst.Assign):
                    for target in small.targets:
                        if isinstance(target.target, cst.Name):
                            taken.add(target.target.value)
        elif isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
            taken.add(stmt.name.value)
        elif isinstance(stmt, OpaqueStatement):
            for imported in stmt.cut.imports:
                _bind(imported, found, taken)
            taken.update(stmt.cut.binds)
        elif isinstance(stmt, OpaqueCompound):
            taken.update(stmt.headers.binds)
    return found, taken


def _name(alias: cst.ImportAlias) -> str | None:
    asname = alias.asname
    return asname.name.value if asname and isinstance(asname.name, cst.Name) else None


def imported_names(node: cst.Import | cst.ImportFrom) -> list[Imported]:
    """The names an import binds (none for `from m import *` and relative imports)."""
    if isinstance(node, cst.Import):
        return [Imported(dotted(alias.name), None, _name(alias)) for alias in node.names]
    if node.relative or isinstance(node.names, cst.ImportStar):
        return []
    module = dotted(node.module) if node.module else ""
    out = []
    for alias in node.names:
        name = alias.name.value if isinstance(alias.name, cst.Name) else ""
        out.append(Imported(module, name, _name(alias) or name))
    return out


# `import <module> as <local>` gives these modules the local name.
_MODULE_KEYS = {
    "copy": "copy",
    "logging": "logging",
    "os": "os",
    "sys": "sys",
    "time": "time",
    "torch": "torch",
    "torch.distributed": "dist",
    "torch_neuronx": "torch_neuronx",
}


def _bind(imported: Imported, found: dict[str, str], taken: set[str]) -> None:
    module, local = imported.module, imported.local
    if imported.name is not None:  # from module import name [as local]
        assert local is not None
        taken.add(local)
        if module == "torch" and imported.name == "distributed":
            found.setdefault("dist", local)
        return
    if local is None:
        root = module.partition(".")[0]
        taken.add(root)
        if root in ("copy", "logging", "os", "sys", "time", "torch", "torch_neuronx"):
            found.setdefault(root, root)
        return
    taken.add(local)
    if module in _MODULE_KEYS:
        found.setdefault(_MODULE_KEYS[module], local)


@dataclass
class FileContext:
    rules_by_code: Callable[[str], Rule]
    unsafe: bool
    bindings: dict[str, str]  # "dist" -> "dist" (or the user's alias)
    taken: set[str]
    call_qualnames: dict[Span, str]  # by the span of the call
    reference_qualnames: dict[Span, str]  # uncalled references, by their span
    position: Callable[[cst.CSTNode], Span]
    needs: set[str] = field(default_factory=set)  # modules the new code names
    helpers: set[str] = field(default_factory=set)  # helper classes to add to the file
    own_helpers: frozenset[str] = frozenset()  # helper classes the file holds already
    outcomes: list[Outcome] = field(default_factory=list)
    unwrapped_steps: frozenset[int] = frozenset()  # see beside_plain_steps
    # A spawn of the file is left for a person: the script is not yet launched by torchrun.
    spawn_kept: bool = False
    # A converted spawn creates the process group: the file's own init_process_group calls
    # become idempotent (`own_inits.py`).
    makes_process_group: bool = False
    # A DDP / FSDP2 wrap of the file runs on some paths only (`wrapped.py`).
    wraps_conditionally: bool = False

    def alias(self, module: str) -> str:
        """The local name for `module` ("os", "torch", "dist", "torch_neuronx")."""
        if module in self.bindings:
            return self.bindings[module]
        if module == "dist" and "dist" in self.taken:
            return "torch_dist"
        return module

    def use_modules(self, node: cst.CSTNode) -> dict[str, str]:
        """Record the modules a template names; return the renames this file needs."""
        return self.use_names(root_names(node))

    def use_names(self, names: Iterable[str]) -> dict[str, str]:
        """`use_modules` for a template's root names, found once."""
        renames: dict[str, str] = {}
        for name in names:
            if name in MODULE_IMPORTS:
                self.needs.add(name)
                if self.alias(name) != name:
                    renames[name] = self.alias(name)
        return renames

    def wraps_model(self) -> bool:
        """Whether DDP / FSDP2 reduces the gradients on every path the file's wraps are on."""
        return not self.wraps_conditionally and any(
            q in MODEL_WRAPPERS for q in self.call_qualnames.values()
        )

    def qualname_of_call(self, call: cst.Call) -> str | None:
        try:
            return self.call_qualnames.get(self.position(call))
        except KeyError:
            return None  # a node the codemod built: no position

    def qualname_of_reference(self, node: cst.CSTNode) -> str | None:
        try:
            return self.reference_qualnames.get(self.position(node))
        except KeyError:
            return None

    def missing_imports(self) -> list[str]:
        lines = []
        for module in _IMPORT_ORDER:
            if module in self.needs and module not in self.bindings:
                lines.append(MODULE_IMPORTS[module].format(alias=self.alias(module)))
        return lines


def root_names(node: cst.CSTNode) -> frozenset[str]:
    """Names that start an expression (not attribute names after a dot)."""
    roots: set[str] = set()

    class _Visitor(Visitor):
        def visit_Attribute(self, node: cst.Attribute) -> bool:
            node.value.visit(self)
            return False

        def visit_Name(self, node: cst.Name) -> None:
            roots.add(node.value)

    node.visit(_Visitor())
    return frozenset(roots)
