"""The modules that own NxD's tensor-parallel layers end their `__init__` with
`neuron_replicate_unsharded(self)`.

NxD kept every parameter a plain tensor; native tensor parallelism makes the sharded ones
DTensors, and optimizers (foreach) and clip_grad_norm_ refuse a mix of the two. So a module whose
`__init__` built a parallel layer the rewrite converted (NM838, NM839, NM863), or built such a
module defined in the same file, replicates what is left whole (a LayerNorm, a plain head) over the
mesh once it has all its submodules: at the end of that `__init__`. An `__init__` with a `return`
of its own is left as it is (its end is not its only way out).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping, MutableMapping, Sequence

import libcst as cst

from neuron_migrate.rewrite.codemod.context import FileContext
from neuron_migrate.rewrite.codemod.helpers import use_helper
from neuron_migrate.rewrite.codemod.recording import Extent, Span
from neuron_migrate.rewrite.codemod.results import Outcome

HELPER = "neuron_replicate_unsharded"
LAYER_RULES = ("NM838", "NM839", "NM863")  # the parallel linear layers, the embedding, GQA QKV


def replicate_unsharded(
    module: cst.Module,
    tree: ast.Module,
    outcomes: Sequence[Outcome],
    extents: Mapping[cst.CSTNode, Extent],
    made_from: MutableMapping[object, Extent],
    ctx: FileContext,
) -> cst.Module:
    """`module` with the call appended to each owning `__init__` (none when the rewrite
    converted no parallel layer)."""
    lines = {o.line for o in outcomes if o.code in LAYER_RULES and o.status == "rewritten"}
    owners = _owner_inits(tree, lines) if lines else {}
    blocks = _Blocks(owners, extents, made_from)
    module.visit(blocks)
    chosen = {id(node): owners[span] for span, (_, node) in blocks.best.items()}
    if not chosen or not use_helper(ctx, HELPER):
        return module
    result = module.visit(_Append(chosen, extents, made_from))
    assert isinstance(result, cst.Module)
    return result


def owner_lines(
    tree: ast.Module, call_qualnames: Mapping[Span, str], layers: Iterable[str]
) -> set[int]:
    """The last statement of each `__init__` that may own a converted layer (one whose calls
    match `layers`): for the codemod to see, as it sees the lines that hold a site."""
    names = frozenset(layers)
    lines = {span[0] for span, qualname in call_qualnames.items() if qualname in names}
    return {init.body[-1].lineno for init in _owning(tree, lines).values()} if lines else set()


def _owner_inits(tree: ast.Module, lines: set[int]) -> dict[tuple[int, int], str]:
    """(first line, last line) of each owning `__init__`, with the name of its `self`."""
    found = {}
    for init in _owning(tree, lines).values():
        if any(isinstance(n, ast.Return) for n in ast.walk(init)) or _builds(init, {HELPER}):
            continue
        found[(init.lineno, init.end_lineno or init.lineno)] = init.args.args[0].arg
    return found


def _owning(tree: ast.Module, lines: set[int]) -> dict[str, ast.FunctionDef]:
    """The `__init__` of each class that builds a layer on one of `lines`, or builds such a
    class, by class name."""
    inits: dict[str, ast.FunctionDef] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == "__init__" and item.args.args:
                    inits[node.name] = item
    owning = {
        name
        for name, init in inits.items()
        if any(init.lineno <= line <= (init.end_lineno or init.lineno) for line in lines)
    }
    while True:  # a module built of owning modules owns them too
        more = {
            name for name, init in inits.items() if name not in owning and _builds(init, owning)
        }
        if not more:
            break
        owning |= more
    return {name: inits[name] for name in owning}


def _builds(init: ast.FunctionDef, names: set[str]) -> bool:
    return any(
        isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in names
        for n in ast.walk(init)
    )


def _where(
    node: cst.CSTNode, extents: Mapping[cst.CSTNode, Extent], made_from: Mapping[object, Extent]
) -> Extent | None:
    return made_from.get(node) or extents.get(node)


class _Blocks(cst.CSTVisitor):
    """For each `__init__` span, its body: the block inside the span that starts first."""

    def __init__(self, owners, extents, made_from) -> None:
        super().__init__()
        self.owners = owners
        self.extents = extents
        self.made_from = made_from
        self.best: dict[tuple[int, int], tuple[Extent, cst.IndentedBlock]] = {}

    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        extent = _where(node, self.extents, self.made_from)
        if extent is None:
            return
        for span in self.owners:
            first, last = span
            if first <= extent[0] and extent[2] <= last + 1:
                held = self.best.get(span)
                if held is None or (extent[0], -extent[2]) < (held[0][0], -held[0][2]):
                    self.best[span] = (extent, node)


class _Append(cst.CSTTransformer):
    def __init__(self, chosen: dict[int, str], extents, made_from) -> None:
        super().__init__()
        self.chosen = chosen
        self.extents = extents
        self.made_from = made_from

    def leave_IndentedBlock(
        self, original: cst.IndentedBlock, updated: cst.IndentedBlock
    ) -> cst.IndentedBlock:
        owner = self.chosen.get(id(original))
        if owner is None:
            return updated
        call = cst.Call(func=cst.Name(HELPER), args=[cst.Arg(cst.Name(owner))])
        new = updated.with_changes(body=[*updated.body, cst.SimpleStatementLine([cst.Expr(call)])])
        extent = _where(original, self.extents, self.made_from)
        if extent is not None:
            self.made_from[new] = extent
        return new
