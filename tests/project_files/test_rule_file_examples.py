"""Every project-file example of every rule, in its file kind: the `before` text has a finding
of the rule, `rewrite` turns it into `after`, and a second rewrite changes nothing; an unchanged
example has no finding of the rule and is left as it is."""

from __future__ import annotations

import pytest

from neuron_migrate.ruleset import load_ruleset
from tests.project_files.helpers import findings, rewritten

CASES = [
    pytest.param(rule, example, id=f"{rule.code}-{example.kind}-{i}")
    for rule in load_ruleset().rules
    if rule.files is not None
    for i, example in enumerate(rule.files.examples)
]


def test_rules_with_file_blocks_exist() -> None:
    assert len(CASES) >= 40


@pytest.mark.parametrize(("rule", "example"), CASES)
def test_file_example(rule, example) -> None:  # type: ignore[no-untyped-def]
    unsafe = example.fixes == "unsafe"
    codes = [f.code for f in findings(example.before, example.kind)]
    is_unchanged = example.before == example.after and (
        rule.files.fix == "keep" or rule.code not in codes
    )
    if is_unchanged:
        assert rule.code not in codes
    else:
        assert rule.code in codes, codes
    assert rewritten(example.before, example.kind, unsafe=unsafe) == example.after
    assert rewritten(example.after, example.kind, unsafe=unsafe) == example.after
