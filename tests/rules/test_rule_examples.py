"""Every example of every rule is a test: `before` rewrites to `after`; `unchanged` stays put.

Rules the analyzer reports (torch ops) are never rewritten: their `before` comes back as is, and
their `after` shows what a person writes. The one analyzer rule with a manual hint (an ambiguous
name) gets its marker.
"""

from __future__ import annotations

import pytest

from neuron_migrate.rewrite.codemod.engine import rewrite_source
from neuron_migrate.ruleset import load_ruleset

RULES = load_ruleset().rules
# Rules carried out by the import pass rather than at a site.
IMPORT_PASS = {"NM100", "NM198", "NM404", "NM807"}

PAIRS = [
    pytest.param(rule, example, id=f"{rule.code}-{i}")
    for rule in RULES
    for i, example in enumerate(rule.examples)
]
ALL_PAIRS = [
    pytest.param(rule, example, id=f"{rule.code}-{i}")
    for rule in RULES
    for i, example in enumerate(rule.examples)
]
UNCHANGED = [
    pytest.param(rule, code, id=f"{rule.code}-unchanged-{i}")
    for rule in RULES
    for i, code in enumerate(rule.unchanged)
]


@pytest.mark.parametrize(("rule", "example"), PAIRS)
def test_example_rewrites_to_after(rule, example):
    result = rewrite_source(example.before, unsafe=example.fixes == "unsafe")
    report_only = rule.match.analyzer is not None and rule.manual is None
    expected = example.before if report_only else example.after
    assert result.new == expected


@pytest.mark.parametrize(("rule", "example"), ALL_PAIRS)
def test_example_after_is_stable(rule, example):
    """Running again on the output changes nothing."""
    unsafe = example.fixes == "unsafe"
    once = rewrite_source(example.before, unsafe=unsafe).new
    assert rewrite_source(once, unsafe=unsafe).new == once


@pytest.mark.parametrize(("rule", "example"), PAIRS)
def test_example_exercises_its_rule(rule, example):
    """Each example shows its own rule at work (rewritten or marked), not only others."""
    if (rule.match.analyzer and not rule.manual) or rule.code in IMPORT_PASS:
        pytest.skip("reported by scan / produced by the import pass")
    result = rewrite_source(example.before, unsafe=example.fixes == "unsafe")
    codes = {o.code for o in result.outcomes}
    assert rule.code in codes or rule.marker() in result.new


@pytest.mark.parametrize(("rule", "code"), UNCHANGED)
def test_unchanged_examples_stay(rule, code):
    assert rewrite_source(code).new == code
