"""Rewrite one module's source: sites -> rule pass -> import pass -> checked new source."""

from __future__ import annotations

import ast
from dataclasses import dataclass

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from neuron_migrate.codemod import transforms  # noqa: F401  (registers the transforms)
from neuron_migrate.codemod.context import FileContext, Outcome, module_bindings
from neuron_migrate.codemod.imports import add_imports_and_helpers, clean_imports
from neuron_migrate.codemod.sites_index import index_source
from neuron_migrate.codemod.transformer import RuleTransformer, span_of_range
from neuron_migrate.ruleset import RuleSet, load_ruleset


class RewriteFailed(Exception):
    """The rewritten source did not parse: a bug in a transform. The file is left alone."""


@dataclass(frozen=True)
class SourceRewrite:
    old: str
    new: str
    outcomes: tuple[Outcome, ...] = ()

    @property
    def changed(self) -> bool:
        return self.new != self.old

    def count(self, status: str) -> int:
        return sum(1 for o in self.outcomes if o.status == status)


def rewrite_source(
    source: str, ruleset: RuleSet | None = None, *, unsafe: bool = False
) -> SourceRewrite:
    """The migrated source. Raises SyntaxError for input that does not parse and RewriteFailed
    when the output would not parse; never returns broken code."""
    ruleset = ruleset or load_ruleset()
    index = index_source(source, ruleset)
    if not index:
        return SourceRewrite(source, source)
    wrapper = MetadataWrapper(cst.parse_module(source))
    positions = wrapper.resolve(PositionProvider)
    bindings, taken = module_bindings(wrapper.module)
    ctx = FileContext(
        rules_by_code=ruleset.get,
        unsafe=unsafe,
        bindings=bindings,
        taken=taken,
        call_qualnames=index.call_qualnames,
        reference_qualnames={span: r.site.qualname or "" for span, r in index.names.items()},
        position=lambda node: span_of_range(positions[node]),
    )
    module = wrapper.visit(RuleTransformer(index, ctx))
    module = clean_imports(module, ruleset)
    module = add_imports_and_helpers(module, ctx)
    new = module.code
    if new != source:
        _check_parses(new)
    return SourceRewrite(source, new, tuple(sorted(ctx.outcomes, key=lambda o: (o.line, o.code))))


def _check_parses(code: str) -> None:
    try:
        ast.parse(code)
        cst.parse_module(code)
    except (SyntaxError, cst.ParserSyntaxError) as exc:
        raise RewriteFailed(f"rewritten code does not parse: {' '.join(str(exc).split())}") from exc
