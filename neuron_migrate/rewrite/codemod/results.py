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


class StatementTooLarge(Exception):
    """A statement that holds a site is longer, with its site-less parts cut out, than the
    rewrite hands libcst at once (`codemod.trim`): the file is left as it was."""

    def __init__(self, line: int, size: int, limit: int, last: int | None = None) -> None:
        self.first = line
        self.last = line if last is None else last  # the statement's last line
        super().__init__(
            f"not rewritten: the statement at line {line} holds torch_xla uses in {size:,} "
            f"characters of code, its parts without any left out, over the {limit:,} the "
            "rewrite parses at once (libcst takes about 0.85 KB a character; "
            "NEURON_MIGRATE_MAX_STATEMENT changes the limit, 0 for none)"
        )
