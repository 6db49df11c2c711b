"""The rules: data files under rules/, loaded, validated and indexed for lookup."""

from neuron_migrate.ruleset.loader import load_rule_file, load_rules
from neuron_migrate.ruleset.model import Example, Match, Rewrite, Rule
from neuron_migrate.ruleset.ruleset import RuleSet, load_ruleset

__all__ = [
    "Example",
    "Match",
    "Rewrite",
    "Rule",
    "RuleSet",
    "load_rule_file",
    "load_rules",
    "load_ruleset",
]
