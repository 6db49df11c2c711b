"""Makefiles (`Makefile`, `makefile`, `GNUmakefile`, `*.mk`): the shell of each recipe line, and
the variables `export NAME = value` puts in the recipes' environment.

A recipe line (a line that starts with a tab, with its backslash continuations) is shell once
make's `@`, `-` and `+` prefixes are taken off: it is read by the shell reader, in place, so its
spans are the file's. A recipe line the shell grammar cannot read whole (make syntax it does not
know) never fails the file: what the grammar recovers is reported, and marked, never edited.
A marker goes above the recipe line with no indentation: there it is a make comment, which make
neither runs nor echoes. A variable the Makefile reads anywhere (`$(NAME)`, `${NAME}`,
`$$NAME`) is never dropped.
"""

import operator
import re
from collections.abc import Iterator
from functools import partial

from neuron_migrate.project_files.hits import Hit, assignment_line_hit, line_end, unquoted

_EXPORT = re.compile(
    r"^export[ \t]+(?P<key>[A-Za-z_][A-Za-z0-9_]*)[ \t]*(?:::=|:=|\?=|\+=|!=|=)[ \t]*(?P<value>.*)$"
)


def makefile_hits(text: str) -> Iterator[Hit]:
    from neuron_migrate.project_files.shell import Fragment, shell_hits

    for start, end in _logical_lines(text):
        line = text[start:end]
        if line.startswith("\t"):
            body = start + 1
            while body < end and text[body] in "@-+ \t":
                body += 1
            fragment = Fragment(text[body:end], partial(operator.add, body), True, start, "")
            for hit in shell_hits(fragment, text, edit_only_if_clean=True):
                yield _widened(hit, text, start, body, end)
            continue
        found = _EXPORT.match(line)
        if found is not None:
            key = (start + found.start("key"), start + found.end("key"))
            value = unquoted(found["value"].split("#", 1)[0])  # make: `#` starts a comment
            yield assignment_line_hit(
                text, start, end, key, read=_read(text, found["key"]), value=value
            )


def _logical_lines(text: str) -> Iterator[tuple[int, int]]:
    """(start, end) of each line with its backslash continuations, without the final newline."""
    start = 0
    while start < len(text):
        end = line_end(text, start)
        while text[start:end].rstrip("\r\n").endswith("\\") and end < len(text):
            end = line_end(text, end)
        yield start, len(text[:end].rstrip("\r\n"))
        start = end


def _widened(hit: Hit, text: str, start: int, body: int, end: int) -> Hit:
    """A drop of the whole recipe line takes its tab and prefixes (and its newline) too; a
    variable the Makefile reads elsewhere is kept."""
    if hit.idiom == "env-var" and _read(text, hit.detail):
        return hit._replace(drop=None, group=None)
    whole = (start, line_end(text, end))

    def widened(span: tuple[int, int] | None) -> tuple[int, int] | None:
        return whole if span is not None and span[0] == body and span[1] >= end else span

    return hit._replace(drop=widened(hit.drop), group=widened(hit.group))


def _read(text: str, key: str) -> bool:
    name = re.escape(key)
    return re.search(rf"\$\$?(?:[({{]{name}\b|{name}\b)", text) is not None
