"""Whether `rewrite` changes a site: the one answer the scan's `fixable` and the codemod share.

The codemod asks `fix_blocker` before it transforms a site and marks the site for a person when
it answers a reason; the scan reports `fixable` only when it answers None. What decides rests on
the site's shape as the analyzer saw it (`Site`, its `blocked` reason included), never on a
second reading of the code; what a transform declines for the call's arguments or statement is
in `declines`, one function per transform, which the transform leaves to this answer. One
decline is not foreseen yet: a helper whose name the file's own code takes at the top level
(`use_helper`); `tests/rewrite/test_fixable_agreement.py` names it.
"""

from __future__ import annotations

from neuron_migrate.ruleset import Rule
from neuron_migrate.scan.analyzer.declines import DECLINES, template
from neuron_migrate.scan.analyzer.sites import Site

# Statement transforms that replace a call only when it is a statement of its own line, or the
# one statement of a one-line body (`if c: call()`, given an indented block): what they write
# is one or more whole statements (an `if` around a barrier or a save), which cannot stand
# beside another statement.
OWN_LINE_TRANSFORMS = frozenset({"rendezvous", "master-print", "save-on-master"})


# Transforms that act on a bare reference (`xm.REDUCE_SUM`); the others take calls, and a
# reference to their function that is not called (passed around) is left for a person.
REFERENCE_TRANSFORMS = frozenset({"reduce-op"})


def takes_reference(rule: Rule) -> bool:
    """Whether a reference to `rule`'s function that is not called (passed around:
    `xm.add_step_closure(test_utils.print_test_update, args=...)`) becomes the name of the
    helper the call becomes: its rule says the helper has the function's very signature."""
    rewrite = rule.rewrite
    return (
        rewrite is not None
        and rewrite.transform in ("helper-call", "nxd-trainer")
        and rewrite.option("references") == "helper"
    )


# Literal transforms that delete the statement setting an environment variable (`env-var`
# without `rename_to`; `spawn-rendezvous-env` keeps it as a default): a key read elsewhere stays.
DELETING_TRANSFORMS = frozenset({"env-var", "spawn-rendezvous-env"})


def fix_blocker(rule: Rule, site: Site, *, unsafe: bool = False) -> str | None:
    """Why `rewrite` (with `--unsafe-fixes` when `unsafe`) leaves `site` for a person, or None
    when its rule's transform is applied."""
    rewrite = rule.rewrite
    if rewrite is None:
        return "no rewrite for this rule"
    if site.ambiguous:
        return "the name has several possible meanings"
    if rule.safety != "safe" and not unsafe:
        return "rewritten only with --unsafe-fixes"
    if site.blocked:
        return site.blocked
    case = rule.value_case(site.env_value, site.env_unset) if site.env_setting else None
    if case is not None and case.fix == "marker":  # a URL is no directory (NM706)
        return case.message
    if site.kind == "import" and site.guarded:
        return "an import under an availability guard stays, with a marker"
    transform = rewrite.transform or ""
    referenced = site.kind == "name"
    if referenced and site.in_annotation and rewrite.option("annotation"):
        pass  # a class named by an annotation becomes the helper class that stands in for it
    elif site.kind in ("name", "call") and rewrite.template is None:
        if referenced != (transform in REFERENCE_TRANSFORMS) and not (
            referenced and takes_reference(rule)
        ):
            return "a function passed around, not called" if referenced else "called"
    elif referenced and not rewrite.template_replaces_reference():
        return "a function passed around, not called"
    if transform in OWN_LINE_TRANSFORMS and not (
        site.discarded and (site.own_line or site.own_suite)
    ):
        return "rewritten only as a call statement on a line of its own"
    if site.kind == "idiom" and site.call_span is None and not site.literal:
        return "the value is not written here as a string literal"
    deletes = transform in DELETING_TRANSFORMS and not rewrite.option("rename_to")
    if deletes and not site.env_setting:
        return "the variable is read here, not set: a person decides"
    if site.kind != "call":
        return None
    decline = template if rewrite.template is not None else DECLINES.get(transform)
    return (decline(rule, site) or None) if decline is not None else None


# Transforms whose reference, given to a torch_xla call, is converted by that call's transform
# or left with it (`xm.REDUCE_SUM` in `xm.reduce_scatter(...)`): its fate is the call's.
FOLLOWS_ENCLOSING_CALL = frozenset({"reduce-op"})


def follower_blocker(
    rule: Rule, call_rule: Rule | None, call: Site, *, unsafe: bool = False
) -> str | None:
    """For a site of `rule` passed to the torch_xla call `call` (of `call_rule`, None when no
    rule rewrites it): why it is left for a person, or None when it is rewritten."""
    if rule.rewrite is None or rule.rewrite.transform not in FOLLOWS_ENCLOSING_CALL:
        return None
    if call_rule is None:
        return "given to a torch_xla call no rule rewrites"
    blocker = fix_blocker(call_rule, call, unsafe=unsafe)
    return None if blocker is None else f"given to a call left for a person ({blocker})"


def needed_by(rule: Rule) -> frozenset[str]:
    """The codes whose sites, left for a person, keep this rule's side-effect import."""
    codes = rule.rewrite.option("needed_by", "") if rule.rewrite else ""
    return frozenset((codes or "").split())
