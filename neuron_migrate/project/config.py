"""`[tool.neuron-migrate]` in pyproject.toml, found upward from the scanned path.

    [tool.neuron-migrate]
    target = "2.14"                      # torch-neuronx version (a prefix: its newest, 2.14.3.1)
    matrix = "neuron-matrix.yaml"        # or a matrix file (`matrix import -o`), not both
    fail-on = ["unsupported", "fallback"]
    select = ["NM1", "NM902"]            # codes or code prefixes to report (default: all)
    ignore = ["NM941"]                   # codes or prefixes never reported
    exclude = ["build/*", "*_pb2.py"]    # globs, relative to this pyproject.toml
    baseline = "neuron-migrate-baseline.json"

    [[tool.neuron-migrate.overrides]]    # later entries win
    paths = ["tests/*"]
    ignore = ["NM9"]
    fail-on = "none"

Globs are fnmatch patterns on `/`-separated paths (`*` also crosses `/`). Command-line flags
override these values (`--exclude` adds to `exclude`). Every problem is one line naming the
file and the key, exit 2.
"""

import fnmatch
import os
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, NamedTuple

from neuron_migrate.errors import DataFileError, NeuronMigrateError
from neuron_migrate.scan.findings import Finding
from neuron_migrate.scan.gate import parse_fail_on

TABLE = "tool.neuron-migrate"
_TOP_KEYS = (
    "target",
    "matrix",
    "fail-on",
    "select",
    "ignore",
    "exclude",
    "baseline",
    "overrides",
)
_OVERRIDE_KEYS = ("paths", "select", "ignore", "fail-on")


class Override(NamedTuple):
    paths: tuple[str, ...]
    select: tuple[str, ...] | None = None
    ignore: tuple[str, ...] = ()
    fail_on: tuple[str, ...] | None = None


class Config(NamedTuple):
    path: Path | None = None  # the pyproject.toml it came from; None: defaults only
    target: str | None = None
    fail_on: tuple[str, ...] | None = None
    select: tuple[str, ...] | None = None
    ignore: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    baseline: str | None = None  # resolved against the config file's folder
    overrides: tuple[Override, ...] = ()
    matrix: str | None = None  # a matrix file's absolute path (resolved against the folder)

    @property
    def chosen_target(self) -> str | None:
        """What the project targets: its matrix file, else its version (None: the newest)."""
        return self.matrix if self.matrix is not None else self.target

    @property
    def folder(self) -> Path | None:
        return self.path.parent if self.path is not None else None


def find_config(start: Path) -> Path | None:
    """The nearest pyproject.toml at or above `start` that has a [tool.neuron-migrate] table."""
    here = start.resolve()
    folder = here if here.is_dir() else here.parent
    for candidate in (folder, *folder.parents):
        path = candidate / "pyproject.toml"
        if path.is_file() and _has_table(path):
            return path
    return None


def _has_table(path: Path) -> bool:
    try:
        data = path.read_bytes()
    except OSError:
        return False
    if b"neuron-migrate" not in data:
        return False
    # One that names the table but is not UTF-8 (which TOML requires) is an error, never a
    # config passed over in silence: its fail-on would have set the gate.
    return _table(_parse(path, _decoded(path, data))) is not None


def _decoded(path: Path, data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DataFileError(
            str(path), "(file)", f"not valid UTF-8 at byte {exc.start} (TOML is UTF-8)"
        ) from None


def _parse(path: Path, text: str) -> dict[str, Any]:
    # Imported here: most scans find no pyproject.toml with our table, and start faster.
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - exercised on 3.10 only
        import tomli as tomllib

    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise DataFileError(str(path), "(file)", f"invalid TOML: {exc}") from None


def _table(data: Mapping[str, Any]) -> Any:
    return (data.get("tool") or {}).get("neuron-migrate")


def load_config(path: Path) -> Config:
    """Read and validate [tool.neuron-migrate] of `path`."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise DataFileError(str(path), "(file)", f"cannot read: {exc}") from None
    table = _table(_parse(path, _decoded(path, data)))
    if table is None:
        return Config(path=path)
    return parse_table(table, path)


def parse_table(table: Any, path: Path) -> Config:
    fields = _Fields(str(path), table, TABLE)
    fields.only(_TOP_KEYS)
    target = fields.text("target")
    if target is not None:
        _check_target(fields, target)
    matrix = fields.text("matrix")
    if matrix is not None:
        if target is not None:
            raise fields.fail("matrix", "give target or matrix, not both")
        matrix = _check_matrix(fields, path.parent / matrix)
    overrides = []
    raw = table.get("overrides", [])
    if not isinstance(raw, list):
        raise fields.fail(
            "overrides", "must be an array of tables ([[tool.neuron-migrate.overrides]])"
        )
    for i, item in enumerate(raw):
        sub = _Fields(str(path), item, f"{TABLE}.overrides[{i}]")
        sub.only(_OVERRIDE_KEYS)
        paths = sub.strings("paths")
        if not paths:
            raise sub.fail("paths", "missing: give the globs this override applies to")
        overrides.append(
            Override(paths, sub.codes("select"), sub.codes("ignore") or (), sub.fail_on())
        )
    return Config(
        path=path,
        target=target,
        fail_on=fields.fail_on(),
        select=fields.codes("select"),
        ignore=fields.codes("ignore") or (),
        exclude=fields.strings("exclude") or (),
        baseline=fields.text("baseline"),
        overrides=tuple(overrides),
        matrix=matrix,
    )


def _check_matrix(fields: "_Fields", file: Path) -> str:
    """The matrix file's target, loaded now: a broken one is one line naming this key."""
    from neuron_migrate.matrix.loader import matrix_file_target

    try:
        return matrix_file_target(file, given_as="matrix")
    except NeuronMigrateError as exc:
        raise fields.fail("matrix", str(exc)) from None


def _check_target(fields: "_Fields", target: str) -> None:
    from neuron_migrate.matrix import resolve_version

    try:
        resolve_version(target, given_as="version")
    except NeuronMigrateError as exc:
        raise fields.fail("target", str(exc)) from None


class _Fields:
    """Typed access to one TOML table; every failure names the file and the key."""

    def __init__(self, path: str, data: Any, where: str) -> None:
        self.path = path
        self.where = where
        if not isinstance(data, Mapping):
            raise DataFileError(path, where, "must be a table")
        self.data = data

    def fail(self, key: str, problem: str) -> DataFileError:
        return DataFileError(self.path, f"{self.where}.{key}", problem)

    def only(self, allowed: tuple[str, ...]) -> None:
        for key in self.data:
            if key not in allowed:
                raise self.fail(str(key), f"unknown key (allowed: {', '.join(allowed)})")

    def text(self, key: str) -> str | None:
        value = self.data.get(key)
        if value is None:
            return None
        if not isinstance(value, str) or not value.strip():
            raise self.fail(key, f"must be a non-empty string, not {value!r}")
        return value.strip()

    def strings(self, key: str) -> tuple[str, ...] | None:
        value = self.data.get(key)
        if value is None:
            return None
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
            raise self.fail(key, f"must be a list of non-empty strings, not {value!r}")
        return tuple(v.strip() for v in value)

    def codes(self, key: str) -> tuple[str, ...] | None:
        values = self.strings(key)
        if values is None:
            return None
        for value in values:
            if not is_code_prefix(value):
                raise self.fail(key, f"{value!r} is not a rule code or prefix like NM104 or NM1")
        return tuple(v.upper() for v in values)

    def fail_on(self) -> tuple[str, ...] | None:
        values = self.strings("fail-on")
        if values is None:
            return None
        try:
            parse_fail_on(values)
        except NeuronMigrateError as exc:
            raise self.fail("fail-on", str(exc).removeprefix("--fail-on: ")) from None
        return values


def is_code_prefix(value: str) -> bool:
    upper = value.upper()
    return upper.startswith("NM") and len(upper) <= 5 and upper[2:].isdigit()


def matches_code(code: str, prefixes: tuple[str, ...]) -> bool:
    return any(code.startswith(prefix) for prefix in prefixes)


class PathRule(NamedTuple):
    """A per-path override, resolved: which paths, and what it changes."""

    paths: tuple[str, ...]
    select: tuple[str, ...] | None = None
    ignore: tuple[str, ...] = ()
    fail_on: frozenset[str] | None = None


class Policy(NamedTuple):
    """What the scan keeps and what fails the gate, after config and flags are merged.

    `prefix` turns a report path (relative to the scanned folder) into a path relative to the
    config file's folder, the form the config's globs are written in."""

    select: tuple[str, ...] | None = None
    ignore: tuple[str, ...] = ()
    fail_on: frozenset[str] = frozenset({"unsupported"})
    rules: tuple[PathRule, ...] = ()
    prefix: str = ""
    exclude: tuple[str, ...] = ()  # config globs, config-relative

    def config_path(self, path: str) -> str:
        return self.prefix + path

    def _rules_for(self, path: str) -> list[PathRule]:
        where = self.config_path(path)
        return [r for r in self.rules if any(fnmatch.fnmatch(where, g) for g in r.paths)]

    @property
    def filters_codes(self) -> bool:
        """Whether any code is ever left out (select/ignore, here or in an override)."""
        return (
            self.select is not None
            or bool(self.ignore)
            or any(r.select is not None or r.ignore for r in self.rules)
        )

    @property
    def varies_fail_on(self) -> bool:
        """Whether some paths fail the gate on other statuses (an override sets fail-on)."""
        return any(r.fail_on is not None for r in self.rules)

    def keeps(self, finding: Finding) -> bool:
        return self.codes_kept(finding.path, (finding.code,))[finding.code]

    def codes_kept(self, path: str, codes: Iterable[str]) -> dict[str, bool]:
        """Which of `codes` the scan reports for `path` (the override globs matched once)."""
        select, ignore = self.select, self.ignore
        for rule in self._rules_for(path):
            select = rule.select if rule.select is not None else select
            ignore = ignore + rule.ignore
        return {
            code: (select is None or matches_code(code, select)) and not matches_code(code, ignore)
            for code in codes
        }

    def fail_on_for(self, path: str) -> frozenset[str]:
        statuses = self.fail_on
        for rule in self._rules_for(path):
            statuses = rule.fail_on if rule.fail_on is not None else statuses
        return statuses

    def excluded(self, path: str) -> bool:
        where = self.config_path(path)
        return any(fnmatch.fnmatch(where, g) or fnmatch.fnmatch(path, g) for g in self.exclude)


def make_policy(
    config: Config,
    scan_base: Path,
    *,
    fail_on: tuple[str, ...] = (),
    select: tuple[str, ...] = (),
    ignore: tuple[str, ...] = (),
) -> Policy:
    """Merge the config with command-line values; a flag given replaces the config's value (and
    a `--fail-on` flag also replaces the per-path fail-on overrides)."""
    for flag, values in (("--select", select), ("--ignore", ignore)):
        for value in values:
            if not is_code_prefix(value):
                raise NeuronMigrateError(
                    f"{flag}: {value!r} is not a rule code or prefix like NM104 or NM1"
                )
    rules = tuple(
        PathRule(
            o.paths,
            o.select,
            o.ignore,
            None if fail_on or o.fail_on is None else parse_fail_on(o.fail_on),
        )
        for o in config.overrides
    )
    prefix = ""
    if config.folder is not None:
        rel = os.path.relpath(scan_base.resolve(), config.folder.resolve()).replace(os.sep, "/")
        prefix = "" if rel == "." else rel + "/"
        if prefix.startswith("../"):
            prefix = ""  # scanning outside the config's tree: match globs on report paths
    return Policy(
        select=tuple(s.upper() for s in select) or config.select,
        ignore=tuple(i.upper() for i in ignore) or config.ignore,
        fail_on=parse_fail_on(fail_on or config.fail_on or ()),
        rules=rules,
        prefix=prefix,
        exclude=config.exclude,
    )


def resolve_config(
    scan_path: Path, explicit: Path | None = None, *, isolated: bool = False
) -> Config:
    """The config for a scan: `explicit` (--config), else the nearest pyproject.toml with a
    [tool.neuron-migrate] table, else defaults. `isolated` (--no-config) ignores every file."""
    if isolated:
        return Config()
    if explicit is not None:
        if not explicit.is_file():
            raise NeuronMigrateError(f"--config: no such file: {explicit}")
        return load_config(explicit)
    found = find_config(scan_path)
    return load_config(found) if found is not None else Config()


def with_baseline_path(config: Config) -> Config:
    """`baseline` made absolute against the config file's folder."""
    if config.baseline is None or config.folder is None:
        return config
    return config._replace(baseline=str(config.folder / config.baseline))
