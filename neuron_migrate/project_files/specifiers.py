"""Requirement strings, requires-python specifiers and TOML documents, read for the dependency
files (`deps.py`) and Poetry's and Pipfile's tables (`toml_deps.py`) alike: the piece both
readers share, so that neither imports the other's module."""

import re
import sys
from collections.abc import Iterator
from typing import Any

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet

from neuron_migrate.project_files.hits import (
    SUPPORTED_PYTHONS,
    Hit,
    ReaderError,
    canonical_name,
    indent_at,
    line_start,
)

_OLDER_PYTHONS = ("3.8", "3.9", "3.10", "3.11")


class DependencyError(ReaderError):
    """A dependency file this reader cannot parse; the message is one line."""


def requirement_hits(
    value: str, start: int, text: str, marker_at: int | None = None, indent: str | None = None
) -> Iterator[Hit]:
    """Hits for one requirement string that sits at `start` in `text`."""
    try:
        requirement = Requirement(value)
    except InvalidRequirement as exc:
        raise DependencyError(f"invalid requirement {value!r}: {str(exc).splitlines()[0]}") from exc
    if marker_at is None:
        marker_at = line_start(text, start)
    if indent is None:
        indent = indent_at(text, marker_at)
    name = canonical_name(requirement.name)
    spec = str(requirement.specifier)
    spec_span = _spec_span(value, requirement)
    version = (start + spec_span[0], start + spec_span[1]) if spec_span else None
    yield Hit(
        "package",
        name,
        start,
        start + len(value.rstrip()),
        marker_at,
        indent,
        name=version,
        note=spec,
    )


def _spec_span(value: str, requirement: Requirement) -> tuple[int, int] | None:
    """Where the version specifier sits in the requirement string (for a version fix)."""
    if not requirement.specifier:
        return None
    body = value.split(";", 1)[0]
    found = re.search(r"(\(?(~=|==|!=|<=|>=|<|>|===)[^;]*)", body)
    if found is None:
        return None
    return found.start(1), found.start(1) + len(found.group(1).rstrip())


def python_hit(
    spec: str, start: int, end: int, text: str, marker_at: int | None = None
) -> Hit | None:
    """A hit when a requires-python specifier admits a Python older than 3.12 or none of the
    supported ones."""
    try:
        specifiers = SpecifierSet(spec)
    except InvalidSpecifier as exc:
        raise DependencyError(f"invalid requires-python {spec!r}") from exc
    supported = [v for v in SUPPORTED_PYTHONS if specifiers.contains(v, prereleases=True)]
    older = [v for v in _OLDER_PYTHONS if specifiers.contains(v, prereleases=True)]
    if supported and not older:
        return None
    note = (
        f"{spec!r} admits none of Python {', '.join(SUPPORTED_PYTHONS)}"
        if not supported
        else f"{spec!r} admits Python {older[0]}"
    )
    if marker_at is None:
        marker_at = line_start(text, start)
    return Hit(
        "requires-python", spec, start, end, marker_at, indent_at(text, marker_at), note=note
    )


def toml_module() -> Any:
    if sys.version_info >= (3, 11):
        import tomllib

        return tomllib
    import tomli

    return tomli


def load_toml(text: str) -> dict[str, Any]:
    """The parsed document; raises `DependencyError` (one line) for invalid TOML."""
    toml = toml_module()
    try:
        data: dict[str, Any] = toml.loads(text)
    except toml.TOMLDecodeError as exc:
        raise DependencyError(f"invalid TOML: {exc}") from exc
    return data
