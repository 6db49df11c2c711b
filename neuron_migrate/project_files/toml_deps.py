"""Dependency tables of TOML files that are not PEP 621: Poetry's `[tool.poetry.dependencies]`
(and its groups and `dev-dependencies`) in `pyproject.toml`, and a `Pipfile`'s `[packages]` /
`[dev-packages]` / `[requires]`.

The file is read with the standard library's TOML parser (what the values are); each value is
then found in the text by its table header and key (where it is), so a finding points at the
entry and a fix replaces only the bytes of its version string.
"""

import re
from collections.abc import Iterator
from typing import Any

from packaging.specifiers import InvalidSpecifier, SpecifierSet

from neuron_migrate.project_files.hits import Hit, canonical_name, indent_at, line_end, line_start
from neuron_migrate.project_files.specifiers import load_toml, python_hit

# -- where a value sits ------------------------------------------------------------------------


def _header(name: tuple[str, ...]) -> re.Pattern[str]:
    parts = r"\s*\.\s*".join(
        rf"(?:{re.escape(p)}|\"{re.escape(p)}\"|'{re.escape(p)}')" for p in name
    )
    return re.compile(rf"^[ \t]*\[[ \t]*{parts}[ \t]*\][ \t]*(?:#.*)?$", re.MULTILINE)


_ANY_HEADER = re.compile(r"^[ \t]*\[", re.MULTILINE)


def table_body(text: str, name: tuple[str, ...]) -> tuple[int, int] | None:
    """The span of table `name`'s lines, after its `[a.b]` header up to the next header."""
    found = _header(name).search(text)
    if found is None:
        return None
    start = line_end(text, found.end())
    after = _ANY_HEADER.search(text, start)
    return start, after.start() if after is not None else len(text)


def key_at(text: str, body: tuple[int, int], key: str) -> re.Match[str] | None:
    """The `key = ` of a table's body (bare or quoted key); its value starts at the match's end."""
    quoted = rf"(?:{re.escape(key)}|\"{re.escape(key)}\"|'{re.escape(key)}')"
    pattern = re.compile(rf"^[ \t]*(?P<key>{quoted})[ \t]*=[ \t]*", re.MULTILINE)
    return pattern.search(text, body[0], body[1])


_STRING = re.compile(r"\"(?P<d>[^\"\\\n]*)\"|'(?P<s>[^'\n]*)'")


def string_at(text: str, at: int) -> tuple[int, int] | None:
    """The content span of the basic or literal string that starts at `at`."""
    found = _STRING.match(text, at)
    if found is None:
        return None
    group = "d" if found.group("d") is not None else "s"
    return found.start(group), found.end(group)


def inline_version(text: str, at: int) -> tuple[int, int] | None:
    """The content span of `version = "..."` in the inline table that starts at `at`."""
    stop = line_end(text, at)
    found = re.compile(r"[{,][ \t]*version[ \t]*=[ \t]*").search(text, at, stop)
    return string_at(text, found.end()) if found is not None else None


# -- Poetry's version constraints --------------------------------------------------------------

_CONSTRAINT = re.compile(
    r"^(?P<op>\^|~(?!=)|~=|==|!=|<=|>=|<|>|=)?\s*(?P<version>[0-9][\w.*+!-]*)$"
)


def poetry_to_pep440(constraint: str) -> str | None:
    """A Poetry constraint (`^2.1`, `~2.1.2`, `2.1.*`, `2.1.2`, `>=2.1,<3`) as a PEP 440
    specifier; "" for any version; None for what has no single PEP 440 form (`||`, a typo)."""
    constraint = constraint.strip()
    if constraint in ("", "*"):
        return ""
    if "||" in constraint:
        return None
    clauses = []
    for part in re.split(r"\s*,\s*|\s+(?=[<>=!~^])", constraint):
        found = _CONSTRAINT.match(part.strip())
        if found is None:
            return None
        op, version = found["op"] or "", found["version"]
        if op == "^":
            clauses += [f">={version}", f"<{_bump(version, caret=True)}"]
        elif op == "~":
            clauses += [f">={version}", f"<{_bump(version, caret=False)}"]
        elif op in ("", "="):
            clauses.append(f"=={version}")
        else:
            clauses.append(f"{op}{version}")
    spec = ",".join(clauses)
    try:
        SpecifierSet(spec)
    except InvalidSpecifier:
        return None
    return spec


def _bump(version: str, *, caret: bool) -> str:
    """The exclusive upper bound of `^version` (left-most non-zero part) or `~version`."""
    parts = [int(p) for p in re.findall(r"\d+", version.split("+")[0])[:3]] or [0]
    if caret:
        index = next((i for i, p in enumerate(parts) if p != 0), len(parts) - 1)
    else:
        index = 0 if len(parts) == 1 else 1
    bumped = parts[: index + 1]
    bumped[index] += 1
    return ".".join(str(p) for p in bumped)


# -- entries -----------------------------------------------------------------------------------


def dependency_table_hits(
    text: str, table: dict[str, Any], name: tuple[str, ...], *, poetry: bool
) -> Iterator[Hit]:
    """A hit per entry of dependency table `name` (its parsed value `table`): a package (its
    version specifier in `note`, its version string in `name` for a pin), or for Poetry's
    `python` entry the Python versions the project declares."""
    body = table_body(text, name)
    for key, value in table.items():
        where = key_at(text, body, key) if body is not None else None
        version_span: tuple[int, int] | None = None
        if where is not None:
            value_at = where.end()
            if isinstance(value, str):
                version_span = string_at(text, value_at)
            elif isinstance(value, dict) and text.startswith("{", value_at):
                version_span = inline_version(text, value_at)
            start = where.start("key")
        else:  # `[tool.poetry.dependencies.torch]`: a table of its own
            sub = table_body(text, (*name, key))
            found = key_at(text, sub, "version") if sub is not None else None
            if found is None:
                continue
            start = found.start("key")
            version_span = string_at(text, found.end())
        raw = (
            value
            if isinstance(value, str)
            else value.get("version")
            if isinstance(value, dict)
            else None
        )
        if not isinstance(raw, str):
            raw = ""
        spec = poetry_to_pep440(raw) if poetry else ("" if raw.strip() == "*" else raw.strip())
        if spec is None:
            spec = ""
            version_span = None
        marker_at = line_start(text, start)
        end = version_span[1] + 1 if version_span is not None else line_end(text, start) - 1
        if poetry and key == "python":
            if spec:
                hit = python_hit(spec, start, end, text, marker_at)
                if hit is not None:
                    yield hit._replace(note=hit.note.replace(repr(spec), repr(raw)))
            continue
        yield Hit(
            "package",
            canonical_name(key),
            start,
            end,
            marker_at,
            indent_at(text, marker_at),
            name=version_span if spec else None,
            note=spec,
            bare_pin=poetry,
        )


def poetry_hits(text: str, data: dict[str, Any]) -> Iterator[Hit]:
    poetry = data.get("tool", {}).get("poetry") if isinstance(data.get("tool"), dict) else None
    if not isinstance(poetry, dict):
        return
    tables: list[tuple[tuple[str, ...], Any]] = [
        (("tool", "poetry", "dependencies"), poetry.get("dependencies")),
        (("tool", "poetry", "dev-dependencies"), poetry.get("dev-dependencies")),
    ]
    groups = poetry.get("group")
    if isinstance(groups, dict):
        for group, content in groups.items():
            if isinstance(content, dict):
                tables.append(
                    (
                        ("tool", "poetry", "group", group, "dependencies"),
                        content.get("dependencies"),
                    )
                )
    for name, table in tables:
        if isinstance(table, dict):
            yield from dependency_table_hits(text, table, name, poetry=True)


def pipfile_hits(text: str) -> Iterator[Hit]:
    data = load_toml(text)
    for section in ("packages", "dev-packages"):
        table = data.get(section)
        if isinstance(table, dict):
            yield from dependency_table_hits(text, table, (section,), poetry=False)
    requires = data.get("requires")
    body = table_body(text, ("requires",))
    if not isinstance(requires, dict) or body is None:
        return
    for key, exact in (("python_full_version", True), ("python_version", False)):
        value = requires.get(key)
        found = key_at(text, body, key)
        span = string_at(text, found.end()) if found is not None else None
        if not isinstance(value, str) or span is None:
            continue
        spec = f"=={value}" if exact else f"=={value}.*"
        hit = python_hit(spec, span[0], span[1], text)
        if hit is not None:
            yield hit._replace(note=hit.note.replace(repr(spec), repr(f"{key} = {value}")))
        return
