"""The analyzer's sites, keyed by the spans the codemod meets while walking the libcst tree.

Sites come from `scan.analyzer.sites.find_sites`, the one name resolution the scan also
uses; each carries the span of its node, so the codemod never resolves a name itself.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from neuron_migrate.ruleset import Rule, RuleSet
from neuron_migrate.scan.analyzer.sites import Site
from neuron_migrate.scan.suppressions import MARKER, Suppression, parse_suppressions

Span = tuple[int, int, int, int]


class Suppressed:
    """The inline suppressions of a module (`scan.suppressions`): a site one covers, as the
    scan's finding of it would be covered, is left as it is."""

    def __init__(self, suppressions: Iterable[Suppression]) -> None:
        self.by_line: dict[int, set[str]] = {}
        for suppression in suppressions:
            self.by_line.setdefault(suppression.target_line, set()).update(suppression.codes)

    @classmethod
    def of(cls, source: str) -> Suppressed:
        if MARKER.decode() not in source:
            return cls(())
        return cls(parse_suppressions(source, ""))

    def covers(self, site: Site, code: str) -> bool:
        if not self.by_line:
            return False
        lines = range(site.line, max(site.line, site.end_line) + 1)
        return any(code in self.by_line.get(line, ()) for line in lines)


@dataclass(frozen=True)
class RuledSite:
    site: Site
    rule: Rule


class SiteIndex:
    def __init__(
        self, sites: list[Site], ruleset: RuleSet, suppressed: Suppressed | None = None
    ) -> None:
        self.ruleset = ruleset
        self.suppressed = suppressed or Suppressed(())
        self.calls: dict[Span, RuledSite] = {}  # by the span of the whole call
        self.names: dict[Span, RuledSite] = {}  # a reference that is not called
        self.literals: dict[Span, RuledSite] = {}  # idioms: the string literal
        self.call_qualnames: dict[Span, str] = {}  # any resolved call, torch.* included
        self.imports: list[Site] = []
        self.ambiguous: list[Site] = []
        # Torch ops the device refuses (the scan's classification): a marker, no change.
        self.marks: dict[Span, RuledSite] = {}
        for site in sites:
            self._add(site)

    def _add(self, site: Site) -> None:
        if site.kind == "import":
            self.imports.append(site)
            return
        if site.kind == "call" and site.call_span is not None and site.qualname:
            self.call_qualnames[site.call_span] = site.qualname
        rule = self._rule(site)
        if rule is None:
            return
        if site.ambiguous:  # reported and left alone, with a marker for a person
            rule = self.ruleset.for_analyzer("ambiguous-name")
        if self.suppressed.covers(site, rule.code):
            return  # the scan does not report it, and the rewrite leaves it as it is
        if site.ambiguous:
            self.ambiguous.append(site)
        ruled = RuledSite(site, rule)
        if site.kind == "call" and site.call_span is not None:
            self.calls[site.call_span] = ruled
        elif site.kind == "idiom" and site.call_span is not None:
            self.calls[site.call_span] = ruled  # an idiom a call transform rewrites
        elif site.kind == "name":
            self.names[site.span] = ruled
        elif site.kind == "idiom":
            self.literals[site.span] = ruled

    def _rule(self, site: Site) -> Rule | None:
        if site.idiom == "neuron-device-type-compare" and site.detail == "neuron":
            return None  # `device.type == "neuron"` is already native code, not an XLA kind test
        if site.kind == "idiom" and site.idiom:
            return self.ruleset.for_idiom(site.idiom, site.detail)
        if site.kind in ("call", "name") and site.qualname:
            rule = self.ruleset.for_reference(site.qualname)
            if rule is None or rule.match.analyzer is not None:
                return None
            return rule
        return None

    def add_mark(self, site: Site, rule: Rule) -> None:
        """A site left as it is with its rule's marker: keyed as its node is met."""
        span = site.call_span if site.kind == "call" and site.call_span else site.span
        if self.suppressed.covers(site, rule.code):
            return
        if span not in self.calls and span not in self.names and span not in self.marks:
            self.marks[span] = RuledSite(site, rule)

    def ruled(self) -> list[RuledSite]:
        """The sites a rule acts on, in source order."""
        found = [*self.calls.values(), *self.names.values(), *self.literals.values()]
        return sorted(found, key=lambda r: r.site.span)

    def leave_alone(self, ruled: RuledSite) -> None:
        """`ruled` left as it is, with its rule's marker (its rewrite made code that does not
        parse)."""
        for table in (self.calls, self.names, self.literals):
            for span, other in list(table.items()):
                if other == ruled:
                    del table[span]
                    self.marks[span] = ruled

    def lines(self) -> set[int]:
        """The lines where a rule acts: the statements holding them are the codemod's to see."""
        return {span[0] for span in self.spans()}

    def spans(self) -> list[Span]:
        """The spans of the nodes rules act on."""
        return [*self.calls, *self.names, *self.literals, *self.marks]

    def __bool__(self) -> bool:
        return bool(self.calls or self.names or self.literals or self.imports)
