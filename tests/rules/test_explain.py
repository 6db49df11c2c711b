"""`rules explain` finds a rule by its code or by the name `rules list` shows."""

from __future__ import annotations

import pytest

from tests.cli import invoke


@pytest.mark.parametrize("word", ["NM104", "nm104", "xla-mark-step", "XLA-Mark-Step"])
def test_explain_takes_a_code_or_a_name(word: str) -> None:
    result = invoke(["rules", "explain", word])
    assert result.exit_code == 0, result.stderr
    assert "NM104 xla-mark-step" in result.stdout


def test_an_unknown_rule_is_one_line_naming_both_ways_to_ask() -> None:
    result = invoke(["rules", "explain", "no-such-rule"])
    assert result.exit_code == 2
    assert result.stderr.strip() == (
        "error: no rule with the code or name 'no-such-rule'; see `neuron-migrate rules list`"
    )
