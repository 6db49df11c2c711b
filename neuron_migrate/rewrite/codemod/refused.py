"""Torch ops and namespaces the neuron device refuses: the scan's classification against the
target's matrix (default: the newest) says which; the rewrite changes none of them (the fix is a
person's choice) but puts its rule's advice above the statement, as a TODO marker."""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING

from neuron_migrate.ruleset import RuleSet
from neuron_migrate.scan.analyzer.sites import Site

if TYPE_CHECKING:
    from neuron_migrate.rewrite.codemod.sites_index import SiteIndex
    from neuron_migrate.scan.scan_data import Context


@lru_cache(maxsize=2)
def target_context(version: str | None) -> Context:
    """The scan data of matrix `version` (None: the newest), loaded once a process."""
    from neuron_migrate.matrix import resolve_version
    from neuron_migrate.scan import scan_data

    return scan_data.context_for(resolve_version(version))


def mark_refused_ops(
    index: SiteIndex, source: str, sites: list[Site], ruleset: RuleSet, target: str | None = None
) -> None:
    """Add to `index` a marker for each site the matrix calls unsupported whose rule gives
    advice (`manual`): the rule data says what to do, the code is left as it is."""
    # Only what may run a torch op: torch APIs and methods (the torch_xla sites are the rules').
    torch_sites = [
        s
        for s in sites
        if s.kind == "method" or (s.qualname is not None and s.qualname.startswith("torch."))
    ]
    if not any(s.kind != "method" for s in torch_sites):
        return
    from neuron_migrate.scan.analyzer.classify import classify_sites

    findings = classify_sites(target_context(target), "", source, torch_sites).findings
    refused = {
        (f.line, f.col, f.end_line, f.end_col): f
        for f in findings
        if f.status == "unsupported"
        and (rule := ruleset.get(f.code)).manual
        and rule.match.analyzer is not None
    }
    if not refused:
        return
    for site in sites:
        finding = refused.get(site.span)
        if finding is not None:  # named by the API the scan reports (`Tensor.to_sparse`)
            index.add_mark(site._replace(qualname=finding.api), ruleset.get(finding.code))
