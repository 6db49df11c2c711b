"""`neuron-migrate rules list` and `rules explain CODE`: the rule catalogue, read from rules/."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated

from neuron_migrate.cli.app import new_group
from neuron_migrate.cli.options import argument, checked_choice, data_console, option
from neuron_migrate.errors import UsageError

if TYPE_CHECKING:  # the rules and rich load when a rules command runs
    import typer

    from neuron_migrate.ruleset import Rule

group = new_group("rules")


def register(app: typer.Typer) -> None:
    app.add_typer(group)


def _rule_json(rule: Rule) -> dict[str, object]:
    return {
        "code": rule.code,
        "name": rule.name,
        "family": rule.family,
        "summary": rule.summary,
        "fix": rule.fix_safety,
        "severity": rule.severity,
        "replacement": rule.replacement,
        "path": rule.path,
    }


@group.command("list")
def list_rules(
    output_format: Annotated[
        str, option("-f", "--format", metavar="{table,json}", help="table (default) or json")
    ] = "table",
) -> int:
    """List every rule: code, name, fix safety and summary."""
    from rich.table import Table

    from neuron_migrate.ruleset import load_ruleset

    checked_choice(output_format, ("table", "json"))
    rules = load_ruleset().rules
    if output_format == "json":
        print(json.dumps([_rule_json(rule) for rule in rules], indent=2))
        return 0
    table = Table(show_lines=False, pad_edge=False)
    table.add_column("code", no_wrap=True)
    table.add_column("name", no_wrap=True)
    table.add_column("fix", no_wrap=True)
    table.add_column("summary")
    for rule in rules:
        table.add_row(rule.code, rule.name, rule.fix_safety, rule.summary)
    data_console().print(table)
    return 0


def _explain_markdown(rule: Rule) -> str:
    lines = [f"# {rule.code} {rule.name}", "", rule.summary, "", "## Why", "", rule.why, ""]
    if rule.replacement:
        lines += ["## Use instead", "", f"`{rule.replacement}`", ""]
    lines += ["## Fix", ""]
    if rule.match.analyzer is not None:
        lines.append("Reported by `scan`; `rewrite` does not change this code.")
    elif rule.rewrite is None:
        lines.append(f"No automatic rewrite. `rewrite` leaves a marker:\n\n    {rule.marker()}")
    else:
        how = "applied by `rewrite`" if rule.safety == "safe" else "applied with `--unsafe-fixes`"
        lines.append(f"Fix safety: **{rule.safety}** ({how}).")
        if rule.safety_note:
            lines += ["", rule.safety_note]
        lines += ["", f"Where it cannot apply, a marker:\n\n    {rule.marker()}"]
    lines += _values_markdown(rule)
    for example in rule.examples[:2]:
        flag = " (with --unsafe-fixes)" if example.fixes == "unsafe" else ""
        lines += ["", f"## Example{flag}", "", "Before:", "", "```python", example.before.rstrip()]
        lines += ["```", "", "After:", "", "```python", example.after.rstrip(), "```"]
    if rule.files is not None:
        lines += _files_markdown(rule)
    return "\n".join(lines) + "\n"


_VALUE_WORDS = {
    "disabled": "set to 0, false, no, off or empty, or unset",
    "url": "set to a URL (`s3://...`)",
}


def _values_markdown(rule: Rule) -> list[str]:
    """What the rule says instead where the variable's value is of one class (`values:`)."""
    lines = []
    for case in rule.values:
        fix = "dropped in project files" if case.fix == "drop" else "marked, not rewritten"
        lines += ["", f"Where the variable is {_VALUE_WORDS[case.when]} ({fix}):"]
        lines += ["", f"    {case.message}"]
    return lines


def _files_markdown(rule: Rule) -> list[str]:
    """What the rule does in launch scripts, dependency files, Dockerfiles and job configs."""
    files = rule.files
    assert files is not None
    fixes = {
        "drop": "the setting is removed where that is certain, else a marker",
        "rename": f"renamed to `{files.rename_to}` where that is certain, else a marker",
        "pin": "with --unsafe-fixes the version is set to the target's pair, else a marker",
        "keep": "kept: no finding",
        "marker": "a `# TODO` comment line above it",
        "report": "reported only",
    }
    lines = ["", "## In project files", "", f"Kinds: {', '.join(files.kinds)}.", ""]
    lines += [f"Fix: {fixes[files.fix]}.", ""]
    shown: set[str] = set()
    for example in files.examples:
        if example.kind in shown or example.before == example.after:
            continue
        shown.add(example.kind)
        lines += [f"{example.kind}, before:", "", "```", example.before.rstrip(), "```", ""]
        lines += ["After:", "", "```", example.after.rstrip(), "```", ""]
    return lines


@group.command("explain")
def explain(
    code: Annotated[
        str, argument("RULE", "a rule code such as NM104, or its name such as xla-mark-step")
    ],
) -> int:
    """Explain one rule: what it matches, why, an example, what to use instead, fix safety."""
    from rich.console import Console
    from rich.markdown import Markdown

    from neuron_migrate.ruleset import load_ruleset

    try:
        rule = load_ruleset().find(code)
    except KeyError:
        raise UsageError(
            f"no rule with the code or name {code!r}; see `neuron-migrate rules list`"
        ) from None
    Console().print(Markdown(_explain_markdown(rule)))
    return 0
