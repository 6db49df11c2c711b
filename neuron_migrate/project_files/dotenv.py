""".env files (`.env`, `.env.*`, `*.env`): `KEY=value` lines, optionally after `export`, as
docker compose, python-dotenv and `set -a; . ./.env` read them.

A line format, read line by line: a value in double or single quotes may span lines. A line
that is no assignment (a stray word) is passed over, as those readers do, rather than failing
the file. An assignment alone on its lines can be dropped, unless the file reads the variable
again (`${KEY}` / `$KEY` interpolation).
"""

import re
from collections.abc import Iterator

from neuron_migrate.project_files.hits import Hit, assignment_line_hit, unquoted

_ASSIGNMENT = re.compile(
    r"^[ \t]*(?:export[ \t]+)?(?P<key>[A-Za-z_][A-Za-z0-9_.]*)[ \t]*=[ \t]*(?P<value>.*)$"
)


def dotenv_hits(text: str) -> Iterator[Hit]:
    lines = text.splitlines(keepends=True)
    offset = 0
    i = 0
    while i < len(lines):
        start = offset
        line = lines[i]
        offset += len(line)
        i += 1
        found = _ASSIGNMENT.match(line.rstrip("\r\n"))
        if found is None:
            continue
        value = found["value"]
        quote = value[:1]
        if quote in ('"', "'") and not _closed(value[1:], quote):
            while i < len(lines) and not _closed(lines[i], quote):  # a multi-line value
                offset += len(lines[i])
                i += 1
            if i < len(lines):
                offset += len(lines[i])
                i += 1
        end = len(text[:offset].rstrip("\r\n"))
        key = (start + found.start("key"), start + found.end("key"))
        written = value if quote in ('"', "'") else value.split(" #", 1)[0]
        yield assignment_line_hit(
            text, start, end, key, read=_read(text, found["key"]), value=unquoted(written)
        )


def _closed(rest: str, quote: str) -> bool:
    """Whether `rest` holds the quote that closes a value (an escaped `\\"` does not)."""
    escaped = False
    for char in rest:
        if escaped:
            escaped = False
        elif char == "\\" and quote == '"':
            escaped = True
        elif char == quote:
            return True
    return False


def _read(text: str, key: str) -> bool:
    return re.search(rf"\$(?:\{{{re.escape(key)}\b|{re.escape(key)}\b)", text) is not None
