"""tox.ini: the `deps`, `setenv`, `commands` and `basepython` of each `[testenv]` section.

The file is checked with the standard library's INI parser (a file it refuses is an error of
one line); the values are then read line by line, so each hit sits where its text is: a `deps`
line is a requirement (after a `py310:`-style factor prefix), a `setenv` line a variable, a
`commands` line shell (tox splits it as a shell would), `basepython` the Python the
environment runs. A `setenv` entry on a line of its own can be dropped, unless the file reads
the variable (`{env:NAME}`) or the entry shares the key's line.
"""

import re
from collections.abc import Iterator

from neuron_migrate.project_files.hits import (
    Hit,
    ReaderError,
    indent_at,
    line_end,
    unquoted,
    whole_lines,
)

_SECTION = re.compile(r"^\[(?P<name>[^\]]+)\][ \t]*$")
_KEY = re.compile(r"^(?P<key>[A-Za-z_][\w.-]*)[ \t]*[=:][ \t]*")
_FACTOR = re.compile(r"^[\w!,.-]+:[ \t]+(?=\S)")
_SETENV = re.compile(r"^(?P<key>[A-Za-z_]\w*)[ \t]*=")
_BASEPYTHON = re.compile(r"^python(?P<version>3\.\d+)$")


class ToxError(ReaderError):
    """A tox.ini the INI parser refuses; the message is one line."""


def tox_hits(text: str) -> Iterator[Hit]:
    import configparser

    try:
        configparser.ConfigParser(interpolation=None, strict=False).read_string(text)
    except configparser.Error as exc:
        raise ToxError(f"invalid tox.ini: {str(exc).splitlines()[0]}") from exc
    for key, items in _values(text):
        for start, end, on_key_line in items:
            yield from _item_hits(text, key, start, end, on_key_line)


def _values(text: str) -> Iterator[tuple[str, list[tuple[int, int, bool]]]]:
    """Each key of a testenv section with its value's non-empty lines: (start, end, whether
    the line is the key's own)."""
    section = ""
    key = ""
    items: list[tuple[int, int, bool]] = []
    start = 0
    while start < len(text):
        end = line_end(text, start)
        line = text[start:end].rstrip("\r\n")
        stripped = line.strip()
        content_end = start + len(line)
        if line[:1] in (" ", "\t") and key:
            if stripped and not stripped.startswith(("#", ";")):
                items.append((start + len(line) - len(line.lstrip()), content_end, False))
        elif stripped and not stripped.startswith(("#", ";")):
            if key:
                yield key, items
            key, items = "", []
            header = _SECTION.match(line)
            if header is not None:
                section = header["name"].strip()
            elif section == "testenv" or section.startswith("testenv:"):
                found = _KEY.match(line)
                if found is not None:
                    key = found["key"]
                    if found.end() < len(line):
                        items.append((start + found.end(), content_end, True))
        start = end
    if key:
        yield key, items


def _item_hits(text: str, key: str, start: int, end: int, on_key_line: bool) -> Iterator[Hit]:
    value = text[start:end]
    factor = _FACTOR.match(value)
    if factor is not None:
        start += factor.end()
        value = value[factor.end() :]
    value = re.split(r"\s+#", value, maxsplit=1)[0].rstrip()
    if not value:
        return
    marker_at = text.rfind("\n", 0, start) + 1
    if key == "deps":
        if value.startswith("-") or "://" in value or value.startswith((".", "/")):
            return
        from neuron_migrate.project_files.specifiers import requirement_hits

        yield from requirement_hits(value, start, text, marker_at, indent_at(text, marker_at))
    elif key == "setenv":
        found = _SETENV.match(value)
        if found is None:
            return
        name = found["key"]
        read = re.search(rf"\{{env:{re.escape(name)}\b", text) is not None
        drop = None if read or on_key_line else whole_lines(text, start, start + len(value))
        yield Hit(
            "env-var",
            name,
            start,
            start + len(value),
            marker_at,
            indent_at(text, marker_at),
            drop=drop,
            name=(start, start + len(name)),
            value=unquoted(value[found.end() :].split(" #", 1)[0]),
        )
    elif key == "commands":
        from neuron_migrate.project_files.shell import Fragment, shell_hits

        fragment = Fragment(value, lambda o: start + o, True)
        yield from shell_hits(fragment, text, edit_only_if_clean=True)
    elif key == "basepython":
        found = _BASEPYTHON.match(value)
        if found is not None:
            from neuron_migrate.project_files.specifiers import python_hit

            hit = python_hit(f"=={found['version']}.*", start, start + len(value), text)
            if hit is not None:
                yield hit._replace(note=f"basepython = {value}")
