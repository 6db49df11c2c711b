"""Reading the bundled YAML data: with libyaml's safe loader where PyYAML has it (about ten times
faster than the pure-Python one, which costs a tenth of a second on the rules alone)."""

from __future__ import annotations

from typing import Any


class InvalidYaml(ValueError):
    """YAML that does not parse. Its text is the parser's message; `problem` and `line`
    (1-based) are what the parser said, and where, when it said."""

    def __init__(self, message: str, problem: str | None, line: int | None) -> None:
        super().__init__(message)
        self.problem = problem
        self.line = line


def load_yaml(text: str) -> Any:
    """Parse YAML text with a safe loader (plain data only); raises `InvalidYaml`."""
    # Imported here: a scan that finds its rules and matrix in the cache reads no YAML.
    import yaml

    try:
        return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        raise InvalidYaml(str(exc), getattr(exc, "problem", None), line) from exc
