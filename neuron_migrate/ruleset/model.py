"""The rule records: what a rule matches, how it rewrites, and the examples that test it.

Rules are named tuples holding only tuples and strings, so they hash, pickle across the process
pool and compare by value (see `neuron_migrate.scan.records` for why not frozen dataclasses).
"""

from typing import Literal, NamedTuple

Safety = Literal["safe", "unsafe"]
Severity = Literal["error", "warning", "info"]

SAFETIES: tuple[str, ...] = ("safe", "unsafe")
SEVERITIES: tuple[str, ...] = ("error", "warning", "info")

# Hundreds digit of a code -> the family directory under rules/.
FAMILIES: dict[str, str] = {
    "1": "device",
    "2": "ranks",
    "3": "collectives",
    "4": "launch",
    "5": "utils",
    "6": "sharding",
    "7": "env",
    "8": "legacy",
    "9": "torch-ops",
}


class Match(NamedTuple):
    """What a rule applies to. A rule may list several kinds of match."""

    qualnames: tuple[str, ...] = ()  # exact names; an entry ending in ".*" covers a module
    idiom: str | None = None  # an idiom kind the analyzer emits, e.g. "xla-device-string"
    details: tuple[str, ...] = ()  # idiom details this rule takes (fnmatch patterns); () = all
    analyzer: str | None = None  # a torch-op finding kind, e.g. "op-cpu-fallback"


class Rewrite(NamedTuple):
    """A template (an expression with `{param}` holes) or the name of a Python transform."""

    template: str | None = None
    transform: str | None = None
    # The torch_xla signature, so positional and keyword arguments bind to the same holes.
    params: tuple[str, ...] = ()
    # Source text used for a parameter the call leaves out.
    defaults: tuple[tuple[str, str], ...] = ()
    # Free-form settings for a named transform (e.g. the new name of an environment variable).
    options: tuple[tuple[str, str], ...] = ()

    def default(self, param: str) -> str | None:
        return dict(self.defaults).get(param)

    def option(self, name: str, fallback: str | None = None) -> str | None:
        return dict(self.options).get(name, fallback)


class Example(NamedTuple):
    before: str
    after: str
    # "unsafe": the example shows the output under --unsafe-fixes.
    fixes: Safety = "safe"


class Rule(NamedTuple):
    code: str
    name: str
    family: str
    summary: str
    why: str
    match: Match
    rewrite: Rewrite | None
    safety: Safety
    safety_note: str
    replacement: str | None
    manual: str | None
    severity: Severity
    path: str
    examples: tuple[Example, ...] = ()
    unchanged: tuple[str, ...] = ()

    @property
    def has_rewrite(self) -> bool:
        return self.rewrite is not None

    @property
    def fix_safety(self) -> str:
        """How `rewrite` treats this rule, in the words `rules list` prints."""
        if self.match.analyzer is not None:
            return "report only"
        if self.rewrite is None:
            return "manual"
        return self.safety

    def marker(self) -> str:
        """The comment `rewrite` leaves where a person must act."""
        return f"# TODO(neuron-migrate {self.code}): {self.manual or self.summary}"
