"""The TODO markers an earlier run left whose site no run finds any more, counted as sites left
for a person.

A marker stands for a site left for a person, and a later run finds most of them again: the
torch_xla call is still there, marked again (in place). Some sites exist only beside code the
first run converted: a conditional MASTER_ADDR setting (NM411) is a site only while the script
starts its workers with xmp.spawn, which that run turned into a torchrun launch. On a later run
the marker is all that says a person still has work there, so the marker itself is counted.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable

from neuron_migrate.rewrite.codemod.results import Outcome
from neuron_migrate.ruleset import RuleSet

_MARKER = re.compile(r"^[ \t]*# TODO\(neuron-migrate (NM\d{3})\)")


def _marker_lines(source: str) -> list[tuple[str, int]]:
    """(code, line of the statement below) for each TODO marker of `source`."""
    found: list[tuple[str, int]] = []
    pending: list[str] = []
    for number, line in enumerate(source.splitlines(), start=1):
        match = _MARKER.match(line)
        if match is not None:
            pending.append(match.group(1))
        elif pending and line.strip() and not line.lstrip().startswith("#"):
            found.extend((code, number) for code in pending)
            pending = []
    return found


def marker_codes(source: str) -> frozenset[str]:
    """The codes of the TODO markers `source` holds."""
    if "# TODO(neuron-migrate " not in source:
        return frozenset()
    return frozenset(code for code, _ in _marker_lines(source))


def left_markers(new: str, outcomes: Iterable[Outcome], ruleset: RuleSet) -> list[Outcome]:
    """Outcomes for the markers of `new` (of the rules of `ruleset`) that no outcome of this
    run accounts for: each is a site left for a person, at its statement's line."""
    if "# TODO(neuron-migrate " not in new:
        return []
    codes = frozenset(rule.code for rule in ruleset.rules)
    left = [o for o in outcomes if o.status in ("marked", "ambiguous")]
    counted = Counter(o.code for o in left)
    lines = {(o.code, o.line) for o in left}
    markers = [(code, line) for code, line in _marker_lines(new) if code in codes]
    excess = Counter(code for code, _ in markers)
    excess.subtract(counted)
    out: list[Outcome] = []
    for code, line in markers:
        if excess[code] > 0 and (code, line) not in lines:
            excess[code] -= 1
            out.append(Outcome(code, line, "", "marked"))
    return out
