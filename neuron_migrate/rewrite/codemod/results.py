"""What the codemod says of a file, in names that do not load libcst: a rewrite whose files the
cache answers never imports it."""

from typing import NamedTuple


class Outcome(NamedTuple):
    code: str
    line: int
    api: str
    status: str  # "rewritten" | "kept" | "marked" | "ambiguous"


class RewriteFailed(Exception):
    """The rewritten source did not parse: a bug in a transform. The file is left alone."""
