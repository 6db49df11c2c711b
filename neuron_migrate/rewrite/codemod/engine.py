"""Rewrite one module's source: sites -> rule pass -> import pass -> checked new source."""

from __future__ import annotations

import ast
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import libcst as cst

from neuron_migrate.rewrite.codemod import transforms  # noqa: F401  (registers the transforms)
from neuron_migrate.rewrite.codemod.context import FileContext, beside_plain_steps, module_bindings
from neuron_migrate.rewrite.codemod.guards import rebound, resolve_guards
from neuron_migrate.rewrite.codemod.helpers import use_helper
from neuron_migrate.rewrite.codemod.imports import (
    add_imports_and_helpers,
    clean_imports,
    own_helpers,
)
from neuron_migrate.rewrite.codemod.left_markers import left_markers, marker_codes
from neuron_migrate.rewrite.codemod.long_lines import long_line_proxy
from neuron_migrate.rewrite.codemod.outline import OutlineError, outline
from neuron_migrate.rewrite.codemod.output import Printer, printed_checked
from neuron_migrate.rewrite.codemod.own_inits import guard_own_inits, init_lines
from neuron_migrate.rewrite.codemod.refused import mark_refused_ops
from neuron_migrate.rewrite.codemod.results import Outcome, RewriteFailed, StatementTooLarge
from neuron_migrate.rewrite.codemod.sites_index import RuledSite, SiteIndex, Suppressed
from neuron_migrate.rewrite.codemod.skeleton import parse_printed
from neuron_migrate.rewrite.codemod.spansets import SourceText
from neuron_migrate.rewrite.codemod.tp_owners import LAYER_RULES, owner_lines, replicate_unsharded
from neuron_migrate.rewrite.codemod.transformer import RuleTransformer
from neuron_migrate.rewrite.codemod.trim import largest_parsed
from neuron_migrate.rewrite.codemod.wrapped import wraps_on_some_paths_only
from neuron_migrate.ruleset import RuleSet, load_ruleset
from neuron_migrate.scan.analyzer.availability import (
    STAND_IN,
    availability_flags,
    availability_predicates,
)
from neuron_migrate.scan.analyzer.meanings import settle_meanings
from neuron_migrate.scan.analyzer.sites import Site, find_sites

__all__ = ["RewriteFailed", "SourceRewrite", "rewrite_source"]

_XLA_MENTIONS = "torch_xla|neuronx_distributed|torch_neuronx"
# A transform's bug: an output that does not parse, or a node libcst refuses to build (its
# CSTValidationError is a SyntaxError, which is not the file's).
_TRANSFORM_BUGS = (RewriteFailed, cst.CSTValidationError)


@dataclass(frozen=True)
class SourceRewrite:
    old: str
    new: str
    outcomes: tuple[Outcome, ...] = ()
    # Sites whose rewrite made code that does not parse (a bug of a transform): left as they
    # were, with their rule's marker (also in `outcomes`, as marked).
    refused: tuple[Outcome, ...] = ()

    @property
    def changed(self) -> bool:
        return self.new != self.old

    def count(self, status: str) -> int:
        return sum(1 for o in self.outcomes if o.status == status)


def _launches(index: SiteIndex, ruleset: RuleSet) -> bool:
    """Whether the file calls xmp.spawn / torch_xla.launch (NM401's names)."""
    launchers = frozenset(ruleset.get("NM401").match.qualnames)
    return not launchers.isdisjoint(index.call_qualnames.values())


def _spawn_kept(outcomes: list[Outcome]) -> bool:
    codes = {(o.code, o.status == "rewritten") for o in outcomes}
    return ("NM411", True) in codes and ("NM401", False) in codes


def rewrite_source(
    source: str,
    ruleset: RuleSet | None = None,
    *,
    unsafe: bool = False,
    target: str | None = None,
    line: int | None = None,
) -> SourceRewrite:
    """The migrated source. Raises SyntaxError for input that does not parse and RewriteFailed
    when no output that parses is found; never returns broken code. `target`: the matrix
    version whose unsupported ops get markers (default: the newest). `line`: migrate only the
    sites on that line, with the imports and helpers they need (an editor's quick fix).

    Every output is parsed whole before it is returned. When it does not parse (a bug of a
    transform), the sites whose rewrite broke it are found by rewriting again with some sites
    left as they were; the output then leaves those as they were, with their rule's marker,
    and names them in `refused`."""
    if _crlf_only(source):
        # The outline reads "\n" lines (a layout it does not model is parsed whole: 0.85 KB a
        # character). Python reads "\r\n" as "\n", so the rewrite of the "\n" text, put back
        # to "\r\n", is the file's, and what it adds ends its lines as the file does.
        done = rewrite_source(
            source.replace("\r\n", "\n"), ruleset, unsafe=unsafe, target=target, line=line
        )
        return replace(done, old=source, new=done.new.replace("\n", "\r\n"))
    ruleset = ruleset or load_ruleset()
    _refuse_from_proxy(source, ruleset, target, line)
    tree = ast.parse(source)
    sites = settle_meanings(find_sites(source, tree), ruleset)
    if line is not None:
        sites = [site for site in sites if site.kind == "import" or site.line == line]

    def attempt(left: Sequence[RuledSite]) -> SourceRewrite | None:
        try:
            return _rewrite(source, tree, sites, ruleset, unsafe, target, left, line is None)
        except _TRANSFORM_BUGS:
            return None

    try:
        return _rewrite(source, tree, sites, ruleset, unsafe, target, (), line is None)
    except _TRANSFORM_BUGS:
        culprits = _culprits(
            SiteIndex(sites, ruleset, Suppressed.of(source)).ruled(),
            lambda left: attempt(left) is not None,
        )
        result = attempt(culprits) if culprits else None
        if result is None:
            raise
        refused = tuple(
            Outcome(r.rule.code, r.site.line, r.site.qualname or r.site.idiom or "", "marked")
            for r in sorted(culprits, key=lambda r: r.site.span)
        )
        return replace(result, refused=refused)


def _refuse_from_proxy(source: str, ruleset: RuleSet, target: str | None, line: int | None) -> None:
    """Raise the StatementTooLarge the rewrite of `source` would, when its long-line proxy
    (`long_lines.py`) shows it without the module's whole tree: a statement refused for a
    line with blanks. Returns in every other case, for the module to be analysed whole."""
    proxy = long_line_proxy(source, largest_parsed())
    if proxy is None:
        return
    try:
        tree = ast.parse(proxy.text)
    except SyntaxError:
        return
    if not proxy.readable(tree):
        return
    sites = settle_meanings(find_sites(proxy.text, tree), ruleset)
    if line is not None:
        sites = [site for site in sites if site.kind == "import" or site.line == line]
    index = SiteIndex(sites, ruleset, Suppressed.of(proxy.text))
    if not index:
        return
    mark_refused_ops(index, proxy.text, sites, ruleset, target)
    mentions = SourceText(proxy.text).occurrences(_XLA_MENTIONS).lines()
    try:
        outline(proxy.text, tree, _site_lines(tree, index, ruleset), mentions)
    except OutlineError:
        return
    except StatementTooLarge as exc:
        if proxy.holds(exc.first, exc.last) and proxy.blanked_parse():
            raise


def _crlf_only(source: str) -> bool:
    """Whether every line of `source` ends with "\r\n" (and it has no other "\r")."""
    return "\r" in source and source.count("\r\n") == source.count("\n") == source.count("\r")


def _check_parses(new: str) -> None:
    try:
        ast.parse(new)
    except SyntaxError as exc:
        reason = " ".join(f"{exc.msg} (line {exc.lineno} of the output)".split())
        raise RewriteFailed(f"rewritten code does not parse: {reason}") from exc


def _culprits(
    candidates: list[RuledSite], parses: Callable[[Sequence[RuledSite]], bool]
) -> list[RuledSite]:
    """The sites whose rewrite made an output that does not parse: those that, left as they
    were, give one that parses. Found by bisection over the sites in source order (one rewrite
    per step); none when leaving every site alone does not help (the failure is no site's)."""
    if not parses(candidates):
        return []
    culprits: list[RuledSite] = []
    while not parses(culprits):
        # the shortest prefix of the candidates that, left alone, makes the output parse:
        # its last site is one of those that broke it
        low, high = 0, len(candidates)
        while high - low > 1:
            middle = (low + high) // 2
            if parses([*culprits, *candidates[:middle]]):
                high = middle
            else:
                low = middle
        culprits.append(candidates[high - 1])
        candidates = candidates[: high - 1]
    return culprits


def _site_lines(tree: ast.Module, index: SiteIndex, ruleset: RuleSet) -> set[int]:
    """The lines whose statements the passes must see for what they do there."""
    site_lines = index.lines()
    if _launches(index, ruleset):  # its own init_process_group calls may be guarded
        site_lines |= init_lines(index.call_qualnames)
    # where a module that owns a parallel layer ends its __init__, a call is added
    layers = [name for code in LAYER_RULES for name in ruleset.get(code).match.qualnames]
    site_lines |= owner_lines(tree, index.call_qualnames, layers)
    return site_lines


def _rewrite(
    source: str,
    tree: ast.Module,
    sites: list[Site],
    ruleset: RuleSet,
    unsafe: bool,
    target: str | None,
    left_alone: Sequence[RuledSite],
    whole_file: bool = True,
) -> SourceRewrite:
    """One rewrite of `source`, each of `left_alone` left as it was with its rule's marker;
    `whole_file`: False when `sites` are one line's (no new stand-in is judged from them)."""
    index = SiteIndex(sites, ruleset, Suppressed.of(source))
    for ruled in left_alone:
        index.leave_alone(ruled)
    if not index:
        return SourceRewrite(source, source, tuple(left_markers(source, (), ruleset)))
    mark_refused_ops(index, source, sites, ruleset, target)
    text = SourceText(source)
    xla_mentions = text.occurrences(_XLA_MENTIONS)
    # Statements without a site are opaque to libcst: parsed as a placeholder, printed as they
    # were, never entered by the passes below.
    site_lines = _site_lines(tree, index, ruleset)
    module, where = parse_printed(source, tree, site_lines, xla_mentions.lines())
    top_level = frozenset(module.body)
    bindings, taken = module_bindings(module)
    ctx = FileContext(
        rules_by_code=ruleset.get,
        unsafe=unsafe,
        bindings=bindings,
        taken=taken,
        own_helpers=own_helpers(taken, source),
        call_qualnames=index.call_qualnames,
        reference_qualnames={span: r.site.qualname or "" for span, r in index.names.items()},
        position=where.spans.__getitem__,
        unwrapped_steps=beside_plain_steps(tree, index.call_qualnames),
        wraps_conditionally=wraps_on_some_paths_only(tree, index.call_qualnames),
    )
    rules = RuleTransformer(index, ctx, where)
    rewritten = module.visit(rules)
    if _spawn_kept(ctx.outcomes):
        # A spawn left for a person: its script is not launched by torchrun yet, so the
        # rendezvous address it sets stays (NM411). Rare: the pass runs again knowing it.
        ctx = replace(
            ctx,
            outcomes=[],
            needs=set(),
            helpers=set(),
            spawn_kept=True,
            makes_process_group=False,
        )
        rules = RuleTransformer(index, ctx, where)
        rewritten = module.visit(rules)
    rewritten = replicate_unsharded(
        rewritten, tree, ctx.outcomes, where.extents, rules.made_from, ctx
    )
    if ctx.makes_process_group:
        rewritten = guard_own_inits(
            rewritten, index.call_qualnames, where.extents, rules.made_from, ctx
        )
    module = rewritten
    imported = {site.detail for site in index.imports if site.detail}
    plain_binders = frozenset(
        site.detail
        for site in index.imports
        if site.detail
        and site.qualname
        and (rule := ruleset.for_import(site.qualname)) is not None
        and rule.code == "NM100"
    )
    # The rules with a site the rule pass left as it was: a side-effect import they need stays.
    # So do those with a marker an earlier run wrote, whose site this run may no longer see
    # (the literal it read became "neuron"): the import it kept stays while the marker does.
    left = frozenset(o.code for o in ctx.outcomes if o.status != "rewritten")
    left |= marker_codes(source)
    predicates = availability_predicates(tree, ruleset.get("NM198").match.predicates)
    flags = availability_flags(tree, predicates)
    guard_names = frozenset(imported) | flags
    guard_names -= rebound(tree, guard_names)
    module = resolve_guards(
        module, guard_names, where.extents, rules.made_from, text, predicates, flags
    )
    printer = Printer(module)
    # A kept torch_xla import's names, where torch_xla is missing: a stand-in that raises
    # (unless the file's own code takes the class's name).
    stand_in = STAND_IN if STAND_IN not in ctx.taken or STAND_IN in ctx.own_helpers else None
    module, stood_in = clean_imports(
        module,
        ruleset,
        where.extents,
        text,
        xla_mentions,
        imported,
        rules.made_from,
        printer,
        plain_binders,
        left,
        sorted({site.call_span[0] for site in index.imports if site.call_span}),
        ctx.outcomes,
        frozenset(site.line for site in index.imports if not site.used),
        stand_in,
        frozenset(site.qualname for site in index.imports if site.qualname),
        new_stand_ins=whole_file,  # one line's sites say nothing of the others'
    )
    if stood_in:
        use_helper(ctx, STAND_IN)
    module = add_imports_and_helpers(module, ctx)
    new = printed_checked(module, text, where.extents, top_level, printer)
    if new != source:
        _check_parses(new)
    outcomes = [
        *ctx.outcomes,
        *left_markers(new, ctx.outcomes, ruleset),
    ]
    return SourceRewrite(source, new, tuple(sorted(outcomes, key=lambda o: (o.line, o.code))))
