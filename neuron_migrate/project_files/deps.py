"""Dependency declarations: requirements / constraints files, `pyproject.toml`, `setup.cfg`,
`setup.py` literals and conda `environment.yml`.

Each requirement string is parsed with `packaging` and located in the file's text, so a finding
points at the requirement and a fix replaces only its version specifier. TOML is read with the
standard library's parser (tomli before 3.11) and never re-serialised: an edit replaces the
bytes of one value, so the rest of the file -- formatting, comments, key order -- stays byte for
byte what it was.
"""

import ast
import re
from collections.abc import Iterator

from neuron_migrate.project_files.hits import Hit, canonical_name, indent_at, line_start
from neuron_migrate.project_files.specifiers import (
    DependencyError,
    load_toml,
    python_hit,
    requirement_hits,
)
from neuron_migrate.project_files.toml_deps import poetry_hits

# -- requirements.txt / constraints.txt --------------------------------------------------------

_OPTION = re.compile(r"\s--?[A-Za-z][\w-]*(=\S*|\s+\S+)?")


def requirements_hits(text: str) -> Iterator[Hit]:
    offset = 0
    lines = text.splitlines(keepends=True)
    i = 0
    while i < len(lines):
        start = offset
        logical = lines[i]
        offset += len(lines[i])
        i += 1
        # A line ending in a backslash continues (hashes often sit on the next lines).
        while logical.rstrip("\r\n").endswith("\\") and i < len(lines):
            logical += lines[i]
            offset += len(lines[i])
            i += 1
        body = re.split(r"(^|\s)#", logical, maxsplit=1)[0]
        stripped = body.strip()
        if not stripped or stripped.startswith("-") or "://" in stripped.split(";")[0]:
            continue  # an option (-r, -c, -e, --index-url), or a URL / path requirement
        # Drop per-requirement options (--hash=..., --config-settings ...) and line breaks.
        value = re.split(r"\s--?[A-Za-z]", " " + body.replace("\\\n", " "), maxsplit=1)[0].strip()
        lead = len(logical) - len(logical.lstrip())
        for hit in requirement_hits(value, start + lead, text):
            # A hash-checked requirement keeps its version: a new one would fail its hashes.
            yield hit._replace(name=None) if "--hash" in logical else hit


# -- pyproject.toml -----------------------------------------------------------------------------


def pyproject_hits(text: str) -> Iterator[Hit]:
    data = load_toml(text)
    yield from poetry_hits(text, data)
    project = data.get("project")
    if not isinstance(project, dict):
        return
    values: list[str] = []
    deps = project.get("dependencies", [])
    if isinstance(deps, list):
        values.extend(d for d in deps if isinstance(d, str))
    optional = project.get("optional-dependencies", {})
    if isinstance(optional, dict):
        for group in optional.values():
            if isinstance(group, list):
                values.extend(d for d in group if isinstance(d, str))
    used: set[int] = set()
    for value in values:
        start = _find_string(text, value, used)
        if start is not None:
            yield from requirement_hits(value, start, text)
    python = project.get("requires-python")
    if isinstance(python, str):
        found = re.search(
            r"^[ \t]*requires-python[ \t]*=[ \t]*([\"'])(?P<value>.*?)\1", text, re.MULTILINE
        )
        if found is not None:
            hit = python_hit(python, found.start("value"), found.end("value"), text)
            if hit is not None:
                yield hit


def _find_string(text: str, value: str, used: set[int]) -> int | None:
    """The offset of `value` inside its first unused quoted occurrence."""
    for quote in ('"', "'"):
        needle = quote + value + quote
        at = text.find(needle)
        while at >= 0:
            if at + 1 not in used:
                used.add(at + 1)
                return at + 1
            at = text.find(needle, at + 1)
    return None


# -- setup.cfg ---------------------------------------------------------------------------------


def setup_cfg_hits(text: str) -> Iterator[Hit]:
    import configparser

    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read_string(text)
    except configparser.Error as exc:
        raise DependencyError(f"invalid setup.cfg: {str(exc).splitlines()[0]}") from exc
    values: list[str] = []
    if parser.has_option("options", "install_requires"):
        values.extend(parser.get("options", "install_requires").splitlines())
    if parser.has_section("options.extras_require"):
        for _, group in parser.items("options.extras_require"):
            values.extend(group.splitlines())
    cursor = 0
    for raw in values:
        value = raw.split("#", 1)[0].strip()
        if not value:
            continue
        start = text.find(value, cursor)
        if start < 0:
            continue
        cursor = start + len(value)
        yield from requirement_hits(value, start, text)
    if parser.has_option("options", "python_requires"):
        spec = parser.get("options", "python_requires").strip()
        found = re.search(r"^[ \t]*python_requires[ \t]*=[ \t]*(?P<value>.*?)[ \t]*$", text, re.M)
        if found is not None:
            hit = python_hit(spec, found.start("value"), found.end("value"), text)
            if hit is not None:
                yield hit


# -- setup.py -----------------------------------------------------------------------------------


def setup_py_hits(text: str) -> Iterator[Hit]:
    """The literal `install_requires` / `extras_require` / `python_requires` of a setup() call."""
    try:
        tree = ast.parse(text)
    except SyntaxError as exc:
        raise DependencyError(f"syntax error at line {exc.lineno}: {exc.msg}") from exc
    lines = text.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))

    def offset(node: ast.expr) -> int:
        line = lines[node.lineno - 1]
        col = len(line.encode("utf-8")[: node.col_offset].decode("utf-8", "replace"))
        return starts[node.lineno - 1] + col

    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and _callee(node.func) == "setup"):
            continue
        for keyword in node.keywords:
            strings: list[ast.Constant] = []
            if keyword.arg == "install_requires" and isinstance(
                keyword.value, (ast.List, ast.Tuple)
            ):
                strings = [e for e in keyword.value.elts if _is_str(e)]  # type: ignore[misc]
            elif keyword.arg == "extras_require" and isinstance(keyword.value, ast.Dict):
                for group in keyword.value.values:
                    if isinstance(group, (ast.List, ast.Tuple)):
                        strings.extend(e for e in group.elts if _is_str(e))  # type: ignore[misc]
            elif keyword.arg == "python_requires" and _is_str(keyword.value):
                value = keyword.value
                assert isinstance(value, ast.Constant)
                start = offset(value) + 1
                hit = python_hit(str(value.value), start, start + len(str(value.value)), text)
                if hit is not None:
                    yield hit
            for string in strings:
                start = offset(string) + 1  # past the opening quote
                yield from requirement_hits(str(string.value), start, text)


def _callee(func: ast.expr) -> str:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return ""


def _is_str(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str)


# -- conda environment.yml ---------------------------------------------------------------------

_CONDA_SPEC = re.compile(r"^(?P<name>[A-Za-z0-9_.\-]+)\s*(?P<spec>[=<>!~].*)?$")


def conda_dependency_hits(value: str, start: int, text: str, pip: bool) -> Iterator[Hit]:
    """One entry of `dependencies:` (conda spec) or of its `pip:` list (a requirement)."""
    if pip:
        if value.startswith("-") or "://" in value:
            return
        yield from requirement_hits(value, start, text)
        return
    found = _CONDA_SPEC.match(value.split("::")[-1].strip())
    if found is None:
        return
    name = canonical_name(found["name"])
    spec = (found["spec"] or "").strip()
    marker_at = line_start(text, start)
    if name == "python" and spec:
        pep440 = _conda_to_pep440(spec)
        if pep440:
            hit = python_hit(pep440, start, start + len(value), text, marker_at)
            if hit is not None:
                yield hit
        return
    yield Hit(
        "package", name, start, start + len(value), marker_at, indent_at(text, marker_at), note=spec
    )


def _conda_to_pep440(spec: str) -> str:
    """`=3.10` (conda: 3.10.*) -> `==3.10.*`; other operators pass through."""
    if spec.startswith("=") and not spec.startswith("=="):
        version = spec[1:].rstrip("*").rstrip(".")
        return f"=={version}.*"
    return spec
