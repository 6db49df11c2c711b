"""The script's own `init_process_group` calls, where the converted launch makes the group.

xmp.spawn's workers had XLA's process group whatever the script did: `xm.optimizer_step`,
`xm.mesh_reduce` and the rest reduced over every process even when the script's own
`dist.init_process_group('xla')` sat under a flag that was off. The converted launch (the spawn
transform) therefore creates the group before the worker runs, and the script's own calls, on
whatever path they are, become `if not dist.is_initialized(): dist.init_process_group(...)`: they
join the group that exists instead of failing to make a second one.

A call that shares its line with other statements (`a = 1; dist.init_process_group(...)`) or is
not a statement (`ok = dist.init_process_group(...) or True`) is left as it is: it raises at run
time that the group exists, loudly, never silently.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, MutableMapping, Sequence

import libcst as cst

from neuron_migrate.rewrite.codemod.context import FileContext
from neuron_migrate.rewrite.codemod.recording import Extent, Span
from neuron_migrate.rewrite.codemod.templates import render

INIT = "torch.distributed.init_process_group"


def init_lines(call_qualnames: Mapping[Span, str]) -> set[int]:
    """The lines where the file calls init_process_group (for the codemod to see)."""
    return {span[0] for span, qualname in call_qualnames.items() if qualname == INIT}


def guard_own_inits(
    module: cst.Module,
    call_qualnames: Mapping[Span, str],
    extents: Mapping[cst.CSTNode, Extent],
    made_from: MutableMapping[object, Extent],
    ctx: FileContext,
) -> cst.Module:
    """`module` with each init_process_group statement under `if not dist.is_initialized():`."""
    starts = {span[:2] for span, qualname in call_qualnames.items() if qualname == INIT}
    if not starts:
        return module
    guarded = module.visit(_Guard(starts, extents, made_from, ctx))
    assert isinstance(guarded, cst.Module)
    return guarded


class _Guard(cst.CSTTransformer):
    def __init__(
        self,
        starts: Iterable[tuple[int, int]],
        extents: Mapping[cst.CSTNode, Extent],
        made_from: MutableMapping[object, Extent],
        ctx: FileContext,
    ) -> None:
        super().__init__()
        self.starts = frozenset(starts)
        self.extents = extents
        self.made_from = made_from
        self.ctx = ctx

    def on_leave(self, original: cst.CSTNode, updated: cst.CSTNode):
        result = super().on_leave(original, updated)
        if result is not original and isinstance(result, cst.CSTNode):
            # The later passes (the import pass) find where what they see stood in the source,
            # the ancestors rebuilt around a guard included.
            extent = self.made_from.get(original) or self.extents.get(original)
            if extent is not None:
                self.made_from.setdefault(result, extent)
        return result

    def _where(self, node: cst.CSTNode) -> tuple[int, int] | None:
        """Where the source `node` stands for began (a node the rule pass rebuilt included)."""
        extent = self.made_from.get(node) or self.extents.get(node)
        return None if extent is None else (extent[0], extent[1])

    def _is_init(self, original: Sequence[cst.BaseSmallStatement]) -> bool:
        return (
            len(original) == 1
            and isinstance(original[0], cst.Expr)
            and isinstance(original[0].value, cst.Call)
            and self._where(original[0]) in self.starts
        )

    def _guarded(self, line: cst.SimpleStatementLine) -> cst.If:
        # The comments right above the call (a marker among them) stay right above it, where a
        # second run looks for its marker; blank lines and what precedes them stay above the `if`.
        lines = list(line.leading_lines)
        cut = max((i + 1 for i, e in enumerate(lines) if e.comment is None), default=0)
        return cst.If(
            test=render("not dist.is_initialized()", self.ctx),
            body=cst.IndentedBlock(body=[line.with_changes(leading_lines=lines[cut:])]),
            leading_lines=lines[:cut],
        )

    def leave_SimpleStatementLine(
        self, original: cst.SimpleStatementLine, updated: cst.SimpleStatementLine
    ) -> cst.BaseStatement:
        if not self._is_init(original.body):
            return updated
        guarded = self._guarded(updated)
        # The later passes (the import pass) find where what they see stood in the source.
        extent = self.made_from.get(original) or self.extents.get(original)
        if extent is not None:
            self.made_from[guarded] = extent
            self.made_from[guarded.body.body[0]] = extent
        return guarded

    def leave_SimpleStatementSuite(
        self, original: cst.SimpleStatementSuite, updated: cst.SimpleStatementSuite
    ) -> cst.BaseSuite:
        """`if flag: dist.init_process_group(...)` gets a block of its own, holding the guard."""
        if not self._is_init(original.body):
            return updated
        line = cst.SimpleStatementLine(
            body=[updated.body[0].with_changes(semicolon=cst.MaybeSentinel.DEFAULT)]
        )
        return cst.IndentedBlock(body=[self._guarded(line)], header=updated.trailing_whitespace)
