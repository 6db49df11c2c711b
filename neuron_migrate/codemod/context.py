"""What the transforms of one file share: the rules, the file's module bindings, the imports and
helpers the new code needs, and a record of every site's outcome."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import libcst as cst

from neuron_migrate.ruleset import Rule

Span = tuple[int, int, int, int]

# The modules templates may name, and the import statement each needs.
MODULE_IMPORTS: dict[str, str] = {
    "os": "import os",
    "torch": "import torch",
    "dist": "import torch.distributed as {alias}",
    "torch_neuronx": "import torch_neuronx",
}
_IMPORT_ORDER = ("os", "torch", "dist", "torch_neuronx")

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


@dataclass(frozen=True)
class Outcome:
    code: str
    line: int
    api: str
    status: str  # "rewritten" | "kept" | "marked" | "ambiguous"


def module_bindings(module: cst.Module) -> tuple[dict[str, str], set[str]]:
    """Which local names the module's top-level imports give `os`, `torch`, `torch.distributed`
    and `torch_neuronx`, and every other name bound at the top level."""
    found: dict[str, str] = {}
    taken: set[str] = set()
    for stmt in module.body:
        if isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                if isinstance(small, cst.Import):
                    for alias in small.names:
                        _bind_import(alias, found, taken)
                elif isinstance(small, cst.ImportFrom) and not small.relative:
                    _bind_from(small, found, taken)
                elif isinstance(small, cst.Assign):
                    for target in small.targets:
                        if isinstance(target.target, cst.Name):
                            taken.add(target.target.value)
        elif isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
            taken.add(stmt.name.value)
    return found, taken


def _dotted(node: cst.BaseExpression) -> str:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return f"{_dotted(node.value)}.{node.attr.value}"
    return ""


def _bind_import(alias: cst.ImportAlias, found: dict[str, str], taken: set[str]) -> None:
    module = _dotted(alias.name)
    local = (
        alias.asname.name.value
        if alias.asname and isinstance(alias.asname.name, cst.Name)
        else None
    )
    if local is None:
        root = module.partition(".")[0]
        taken.add(root)
        if root in ("os", "torch", "torch_neuronx"):
            found.setdefault(root, root)
        return
    taken.add(local)
    key = {
        "os": "os",
        "torch": "torch",
        "torch.distributed": "dist",
        "torch_neuronx": "torch_neuronx",
    }
    if module in key:
        found.setdefault(key[module], local)


def _bind_from(node: cst.ImportFrom, found: dict[str, str], taken: set[str]) -> None:
    module = _dotted(node.module) if node.module else ""
    if isinstance(node.names, cst.ImportStar):
        return
    for alias in node.names:
        name = alias.name.value if isinstance(alias.name, cst.Name) else ""
        local = (
            alias.asname.name.value
            if alias.asname and isinstance(alias.asname.name, cst.Name)
            else name
        )
        taken.add(local)
        if module == "torch" and name == "distributed":
            found.setdefault("dist", local)


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
    outcomes: list[Outcome] = field(default_factory=list)

    def alias(self, module: str) -> str:
        """The local name for `module` ("os", "torch", "dist", "torch_neuronx")."""
        if module in self.bindings:
            return self.bindings[module]
        if module == "dist" and "dist" in self.taken:
            return "torch_dist"
        return module

    def use_modules(self, node: cst.CSTNode) -> dict[str, str]:
        """Record the modules a template names; return the renames this file needs."""
        renames: dict[str, str] = {}
        for name in _root_names(node):
            if name in MODULE_IMPORTS:
                self.needs.add(name)
                if self.alias(name) != name:
                    renames[name] = self.alias(name)
        return renames

    def wraps_model(self) -> bool:
        return any(q in MODEL_WRAPPERS for q in self.call_qualnames.values())

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


def _root_names(node: cst.CSTNode) -> set[str]:
    """Names that start an expression (not attribute names after a dot)."""
    roots: set[str] = set()

    class _Visitor(cst.CSTVisitor):
        def visit_Attribute(self, node: cst.Attribute) -> bool:
            node.value.visit(self)
            return False

        def visit_Name(self, node: cst.Name) -> None:
            roots.add(node.value)

    node.visit(_Visitor())
    return roots
