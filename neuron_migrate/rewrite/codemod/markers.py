"""Comment lines the codemod writes above a statement: TODO markers and NOTEs."""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeVar

import libcst as cst

from neuron_migrate.ruleset import Rule

if TYPE_CHECKING:
    from neuron_migrate.scan.analyzer.sites import Site

N = TypeVar("N", bound=cst.CSTNode)

TODO_PREFIX = "# TODO(neuron-migrate "
NOTE_PREFIX = "# NOTE(neuron-migrate "


def todo_text(rule: Rule, site: Site | None = None) -> str:
    """The TODO for a site of `rule`: what the rule says, or what it says of the value the
    site sets (`os.environ["XLA_USE_BF16"] = "0"`: drop it)."""
    case = rule.value_case(site.env_value, site.env_unset) if site and site.env_setting else None
    return f"{TODO_PREFIX}{rule.code}): {case.message}" if case else rule.marker()


def note_text(rule: Rule, text: str) -> str:
    return f"{NOTE_PREFIX}{rule.code}): {text}"


def with_comments(stmt: N, comments: list[str], already: frozenset[str] = frozenset()) -> N:
    """`stmt` with `comments` as lines right above it; a comment already there (or in
    `already`: the module header, for the first statement), or earlier in `comments`, is not
    repeated, which keeps a second run from stacking markers."""
    leading = getattr(stmt, "leading_lines", None)
    if leading is None:
        return stmt
    present = {line.comment.value for line in leading if line.comment is not None} | already
    new = []
    for text in comments:  # two sites of one rule on a line: one marker
        if text not in present:
            present.add(text)
            new.append(cst.EmptyLine(indent=True, comment=cst.Comment(text)))
    if not new:
        return stmt
    return stmt.with_changes(leading_lines=[*leading, *new])


class HeaderComments:
    """libcst keeps the comments above a module's first statement in the module header; this
    remembers them so a marker there is recognised on the next run."""

    first_statement: int | None = None
    header: frozenset[str] = frozenset()

    def remember_header(self, module: cst.Module) -> None:
        self.first_statement = id(module.body[0]) if module.body else None
        self.header = frozenset(line.comment.value for line in module.header if line.comment)

    def already_above(self, original: cst.CSTNode) -> frozenset[str]:
        return self.header if id(original) == self.first_statement else frozenset()
