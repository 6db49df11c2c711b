"""A name with several meanings that all migrate alike is not ambiguous for the rewrite.

`try: _world = xr.world_size except (ImportError, AttributeError): _world = xm.xrt_world_size`
gives `_world` two torch_xla meanings, but both fall under one rule whose rewrite is one
template: whichever meaning runs, `_world()` migrates to the same code. Such a site is read as
its rule's site (scan and rewrite alike); a meaning that is not an import (a parameter, a
local function), two rules, or a rule whose transform may act by the qualified name keeps the
name ambiguous (NM950).
"""

from __future__ import annotations

from neuron_migrate.ruleset import RuleSet
from neuron_migrate.scan.analyzer.scopes import LOCAL
from neuron_migrate.scan.analyzer.sites import Site


def migrate_alike(site: Site, ruleset: RuleSet) -> bool:
    """Whether every meaning of the ambiguous `site` is one rule's, rewritten by one template."""
    if not site.ambiguous or LOCAL in site.ambiguous:
        return False
    rules = {ruleset.for_reference(meaning) for meaning in site.ambiguous}
    if len(rules) != 1:
        return False
    (rule,) = rules
    return (
        rule is not None
        and rule.match.analyzer is None
        and rule.rewrite is not None
        and rule.rewrite.template is not None
        and rule.rewrite.transform is None
    )


def settle_meanings(sites: list[Site], ruleset: RuleSet) -> list[Site]:
    """`sites`, each ambiguous one whose meanings migrate alike read as unambiguous."""
    return [site._replace(ambiguous=()) if migrate_alike(site, ruleset) else site for site in sites]
