"""What a file-kind reader finds before any rule is consulted: a `Hit` per idiom occurrence.

Offsets are character offsets into the file's text. A hit says where it is (its span), where a
marker comment may go, and which bytes a safe fix would remove or rename -- the reader knows the
syntax, the rules know the meaning, so each side decides only what it can.
"""

import re
from typing import NamedTuple

# Versions a TorchNeuron wheel exists for (released docs, Neuron 2.33).
SUPPORTED_PYTHONS = ("3.12", "3.13", "3.14")


class ReaderError(Exception):
    """A file its reader cannot parse; the message is one line."""


class PartlyRead(ReaderError):
    """Some statements of a file do not parse (the message names where); `hits` are those of
    the others, and `unread` the text of each that does not, as it is in the file."""

    def __init__(self, message: str, hits: list["Hit"], unread: tuple[str, ...]) -> None:
        super().__init__(message)
        self.hits = hits
        self.unread = unread


class Hit(NamedTuple):
    idiom: str  # one of ruleset.model.FILE_IDIOMS
    detail: str  # the variable, command, module, package, instance type, image or venv
    start: int  # the span reported
    end: int
    marker_at: int | None  # a line start where a comment line may be inserted; None: nowhere
    indent: str = ""  # the marker line's indentation
    drop: tuple[int, int] | None = None  # the span whose removal drops this use, when certain
    name: tuple[int, int] | None = None  # the span a rename or version fix replaces
    note: str = ""  # shown after the message (a version specifier, --nproc_per_node=N)
    # Uses that share one statement (`export A=1 B=2`, `ENV A=1 B=2`, a mapping): dropping all
    # of them must drop the statement (`group`: its whole lines, or None: then no drop at all).
    group_key: int = -1
    group_size: int = 1
    group: tuple[int, int] | None = None
    bare_pin: bool = False  # a version written without `==` (Poetry's `2.1.2`, `2.1.*`)
    # An environment variable's value where the file writes it out (quotes removed; None: not
    # written or not known, `$OTHER`), and whether the use unsets it (`unset K`, `env -u K`).
    value: str | None = None
    unset: bool = False


class Edit(NamedTuple):
    start: int
    end: int
    text: str


def line_start(text: str, offset: int) -> int:
    return text.rfind("\n", 0, offset) + 1


def line_end(text: str, offset: int) -> int:
    """The offset just past the newline of the line holding `offset` (or the end of text)."""
    end = text.find("\n", offset)
    return len(text) if end < 0 else end + 1


def indent_at(text: str, start: int) -> str:
    """The whitespace that opens the line starting at `start`."""
    end = start
    while end < len(text) and text[end] in " \t":
        end += 1
    return text[start:end]


def whole_lines(text: str, start: int, end: int) -> tuple[int, int] | None:
    """The span of the lines `start:end` fills alone (blanks around it, or a `#` comment after
    it, which goes with it), or None when other code shares a line with it."""
    first = line_start(text, start)
    if text[first:start].strip():
        return None
    stop = line_end(text, end)
    rest = text[end:stop].strip()
    if rest and not (rest.startswith("#") and text[end : end + 1] in (" ", "\t")):
        return None
    return first, stop


class Positions:
    """Character offset -> (1-based line, 0-based column)."""

    def __init__(self, text: str) -> None:
        self.starts = [0]
        find = text.find
        at = find("\n")
        while at >= 0:
            self.starts.append(at + 1)
            at = find("\n", at + 1)

    def of(self, offset: int) -> tuple[int, int]:
        from bisect import bisect_right

        index = bisect_right(self.starts, offset) - 1
        return index + 1, offset - self.starts[index]


def canonical_name(name: str) -> str:
    """A project name as PEP 503 compares it (`Torch_XLA` -> `torch-xla`); `packaging.utils`
    does the same but imports the platform tags machinery with it."""
    return re.sub(r"[-_.]+", "-", name).lower()


def assignment_line_hit(
    text: str, start: int, end: int, key: tuple[int, int], *, read: bool, value: str | None = None
) -> Hit:
    """An environment variable set by the line(s) `start:end` (a .env line, a Makefile
    `export`), its name at `key`: dropped with its lines unless the file `read`s it again."""
    return Hit(
        "env-var",
        text[key[0] : key[1]],
        key[0],
        end,
        start,
        indent_at(text, start),
        drop=None if read else whole_lines(text, start, end),
        name=key,
        value=value,
    )


def unquoted(value: str) -> str | None:
    """A written-out value without its quotes (`"0"` -> `0`); None where it expands another
    variable (`$X`, `${X}`), whose value is not known here."""
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        value = value[1:-1]
    return None if "$" in value else value
