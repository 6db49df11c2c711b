"""Read and validate `rules/<family>/<CODE>-<name>.yaml`.

Every problem is a `DataFileError` naming the file and the field, so a bad rule file costs the
user one line, not a traceback.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from neuron_migrate.errors import DataFileError
from neuron_migrate.ruleset.model import (
    FAMILIES,
    FILE_FIXES,
    FILE_IDIOMS,
    FILE_KINDS,
    SAFETIES,
    SEVERITIES,
    VALUE_CLASSES,
    Example,
    FileExample,
    FileRule,
    Match,
    Rewrite,
    Rule,
    ValueCase,
)
from neuron_migrate.yaml_data import InvalidYaml, load_yaml

_CODE = re.compile(r"^NM[1-9]\d\d$")
_NAME = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
_QUALNAME = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*(\.\*)?$")

_TOP_KEYS = {
    "code",
    "name",
    "summary",
    "why",
    "match",
    "rewrite",
    "safety",
    "safety_note",
    "replacement",
    "manual",
    "severity",
    "examples",
    "files",
    "values",
}
_FILES_KEYS = {"kinds", "idiom", "details", "fix", "status", "rename_to", "message", "examples"}
_FILE_EXAMPLE_KEYS = {"kind", "before", "after", "unchanged", "fixes"}
_FILE_STATUSES = ("xla", "unsupported", "advice")
_MATCH_KEYS = {"qualnames", "idiom", "details", "analyzer", "predicates"}
_REWRITE_KEYS = {"template", "transform", "params", "defaults", "options"}
_EXAMPLE_KEYS = {"before", "after", "fixes"}


class _Fields:
    """Typed access to one YAML mapping; every failure names the field."""

    def __init__(self, path: str, data: Any, where: str = "") -> None:
        self.path = path
        self.where = where
        if not isinstance(data, Mapping):
            raise DataFileError(path, where or "(file)", "expected a mapping")
        self.data = data

    def _field(self, key: str) -> str:
        return f"{self.where}.{key}" if self.where else key

    def fail(self, key: str, problem: str) -> DataFileError:
        return DataFileError(self.path, self._field(key), problem)

    def only(self, allowed: set[str]) -> None:
        for key in self.data:
            if key not in allowed:
                raise self.fail(str(key), f"unknown field (allowed: {', '.join(sorted(allowed))})")

    def text(self, key: str, *, required: bool = True) -> str | None:
        value = self.data.get(key)
        if value is None:
            if required:
                raise self.fail(key, "missing")
            return None
        if not isinstance(value, str) or not value.strip():
            raise self.fail(key, "must be a non-empty string")
        return value.strip()

    def strings(self, key: str) -> tuple[str, ...]:
        value = self.data.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            raise self.fail(key, "must be a list of non-empty strings")
        return tuple(value)

    def pairs(self, key: str) -> tuple[tuple[str, str], ...]:
        value = self.data.get(key, {})
        if not isinstance(value, Mapping) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in value.items()
        ):
            raise self.fail(key, "must be a mapping of strings to strings")
        return tuple(value.items())

    def choice(self, key: str, choices: Iterable[str], default: str) -> str:
        value = self.data.get(key, default)
        if value not in choices:
            raise self.fail(key, f"must be one of {', '.join(choices)}, not {value!r}")
        return str(value)

    def sub(self, key: str) -> _Fields:
        return _Fields(self.path, self.data.get(key), self._field(key))


def _match(fields: _Fields) -> Match:
    fields.only(_MATCH_KEYS)
    qualnames = fields.strings("qualnames")
    for i, name in enumerate(qualnames):
        if not _QUALNAME.match(name):
            raise fields.fail(f"qualnames[{i}]", f"not a dotted name: {name!r}")
    predicates = fields.strings("predicates")
    for i, name in enumerate(predicates):
        if not _QUALNAME.match(name):
            raise fields.fail(f"predicates[{i}]", f"not a dotted name: {name!r}")
    match = Match(
        qualnames=qualnames,
        idiom=fields.text("idiom", required=False),
        details=fields.strings("details"),
        analyzer=fields.text("analyzer", required=False),
        predicates=predicates,
    )
    if not (match.qualnames or match.idiom or match.analyzer):
        raise fields.fail("qualnames", "a rule must match qualnames, an idiom or an analyzer")
    if match.details and not match.idiom:
        raise fields.fail("details", "details need an idiom")
    return match


def _rewrite(fields: _Fields) -> Rewrite:
    fields.only(_REWRITE_KEYS)
    rewrite = Rewrite(
        template=fields.text("template", required=False),
        transform=fields.text("transform", required=False),
        params=fields.strings("params"),
        defaults=fields.pairs("defaults"),
        options=fields.pairs("options"),
    )
    if (rewrite.template is None) == (rewrite.transform is None):
        raise fields.fail("template", "give exactly one of template and transform")
    if rewrite.transform is not None and not _NAME.match(rewrite.transform):
        raise fields.fail("transform", f"not a kebab-case transform name: {rewrite.transform!r}")
    return rewrite


def _examples(fields: _Fields) -> tuple[tuple[Example, ...], tuple[str, ...]]:
    fields.only({"pairs", "unchanged"})
    pairs = fields.data.get("pairs", [])
    if not isinstance(pairs, list):
        raise fields.fail("pairs", "must be a list")
    examples = []
    for i, raw in enumerate(pairs):
        pair = _Fields(fields.path, raw, f"{fields.where}.pairs[{i}]")
        pair.only(_EXAMPLE_KEYS)
        examples.append(
            Example(
                before=_code(pair, "before"),
                after=_code(pair, "after"),
                fixes=pair.choice("fixes", SAFETIES, "safe"),  # type: ignore[arg-type]
            )
        )
    return tuple(examples), fields.strings("unchanged")


def _code(fields: _Fields, key: str) -> str:
    value = fields.data.get(key)
    if not isinstance(value, str) or not value.strip():
        raise fields.fail(key, "must be a non-empty block of code")
    return value if value.endswith("\n") else value + "\n"


def _files(fields: _Fields) -> FileRule:
    fields.only(_FILES_KEYS)
    kinds = fields.strings("kinds")
    if not kinds:
        raise fields.fail("kinds", "name at least one file kind")
    for kind in kinds:
        if kind not in FILE_KINDS:
            known = ", ".join(FILE_KINDS)
            raise fields.fail("kinds", f"unknown file kind {kind!r} (known: {known})")
    idiom = fields.choice("idiom", FILE_IDIOMS, "")
    fix = fields.choice("fix", FILE_FIXES, "marker")
    rename_to = fields.text("rename_to", required=False)
    if (fix == "rename") != (rename_to is not None):
        raise fields.fail("rename_to", "give rename_to exactly when fix is rename")
    message = fields.text("message", required=False)
    if message is not None and "\n" in message:
        raise fields.fail("message", "must be one line (it becomes a comment)")
    raw = fields.data.get("examples", [])
    if not isinstance(raw, list):
        raise fields.fail("examples", "must be a list")
    examples = []
    for i, item in enumerate(raw):
        example = _Fields(fields.path, item, f"{fields.where}.examples[{i}]")
        example.only(_FILE_EXAMPLE_KEYS)
        kind = example.choice("kind", kinds, "")
        if "unchanged" in example.data:
            if "before" in example.data or "after" in example.data:
                raise example.fail("unchanged", "an unchanged example has no before/after")
            text = _code(example, "unchanged")
            examples.append(FileExample(kind, text, text))
        else:
            examples.append(
                FileExample(
                    kind,
                    _code(example, "before"),
                    _code(example, "after"),
                    example.choice("fixes", SAFETIES, "safe"),  # type: ignore[arg-type]
                )
            )
    missing = [kind for kind in kinds if not any(e.kind == kind for e in examples)]
    if missing:
        raise fields.fail("examples", f"give an example for every kind (none for {missing[0]})")
    return FileRule(
        kinds=kinds,
        idiom=idiom,
        details=fields.strings("details"),
        fix=fix,
        status=fields.choice("status", _FILE_STATUSES, "xla"),
        rename_to=rename_to,
        message=message,
        examples=tuple(examples),
    )


_VALUE_KEYS = {"when", "fix", "message"}


def _values(fields: _Fields) -> tuple[ValueCase, ...]:
    raw = fields.data.get("values", [])
    if not isinstance(raw, list):
        raise fields.fail("values", "must be a list")
    cases = []
    for i, item in enumerate(raw):
        case = _Fields(fields.path, item, f"values[{i}]")
        case.only(_VALUE_KEYS)
        message = case.text("message") or ""
        if "\n" in message:
            raise case.fail("message", "must be one line (it becomes a comment)")
        cases.append(
            ValueCase(
                when=case.choice("when", VALUE_CLASSES, ""),
                fix=case.choice("fix", ("drop", "marker"), "marker"),
                message=message,
            )
        )
    return tuple(cases)


def parse_rule(path: Path, data: Any, display: str) -> Rule:
    """Validate one parsed YAML document as a rule."""
    fields = _Fields(display, data)
    fields.only(_TOP_KEYS)
    code = fields.text("code") or ""
    if not _CODE.match(code):
        raise fields.fail("code", f"must be NM followed by three digits, not {code!r}")
    name = fields.text("name") or ""
    if not _NAME.match(name):
        raise fields.fail("name", f"must be kebab-case, not {name!r}")
    if path.stem != f"{code}-{name}":
        raise fields.fail("name", f"file must be named {code}-{name}.yaml")
    family = FAMILIES[code[2]]
    if path.parent.name != family:
        raise fields.fail("code", f"{code} belongs in rules/{family}/")

    # A rule for project files only (a launcher, a dependency pin) matches no Python.
    if fields.data.get("match") is None and fields.data.get("files") is not None:
        match = Match()
    else:
        match = _match(fields.sub("match"))
    rewrite = _rewrite(fields.sub("rewrite")) if fields.data.get("rewrite") is not None else None
    manual = fields.text("manual", required=False)
    if rewrite is None and manual is None and match.analyzer is None:
        raise fields.fail("manual", "a rule without a rewrite needs the manual hint")
    if manual is not None and "\n" in manual:
        raise fields.fail("manual", "must be one line (it becomes a comment)")
    if match.analyzer is not None and rewrite is not None:
        raise fields.fail("rewrite", "analyzer rules report only; they take no rewrite")

    examples: tuple[Example, ...] = ()
    unchanged: tuple[str, ...] = ()
    if fields.data.get("examples") is not None:
        examples, unchanged = _examples(fields.sub("examples"))

    return Rule(
        code=code,
        name=name,
        family=family,
        summary=fields.text("summary") or "",
        why=fields.text("why") or "",
        match=match,
        rewrite=rewrite,
        safety=fields.choice("safety", SAFETIES, "safe"),  # type: ignore[arg-type]
        safety_note=fields.text("safety_note", required=False) or "",
        replacement=fields.text("replacement", required=False),
        manual=manual,
        severity=fields.choice("severity", SEVERITIES, "warning"),  # type: ignore[arg-type]
        path=display,
        examples=examples,
        unchanged=tuple(u if u.endswith("\n") else u + "\n" for u in unchanged),
        files=_files(fields.sub("files")) if fields.data.get("files") is not None else None,
        values=_values(fields),
    )


def load_rule_file(path: Path, root: Path) -> Rule:
    display = path.relative_to(root.parent).as_posix() if root.parent in path.parents else str(path)
    try:
        data = load_yaml(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise DataFileError(display, "(file)", f"cannot read: {exc}") from exc
    except InvalidYaml as exc:
        problem = " ".join(str(exc).split())
        raise DataFileError(display, "(file)", f"invalid YAML: {problem}") from exc
    return parse_rule(path, data, display)


def load_rules(root: Path) -> tuple[Rule, ...]:
    """Every rule under `root`, sorted by code; duplicate codes or names are an error."""
    if not root.is_dir():
        raise DataFileError(str(root), "(directory)", "rules directory not found")
    rules: list[Rule] = []
    seen_codes: dict[str, str] = {}
    seen_names: dict[str, str] = {}
    for path in sorted(root.glob("*/*.yaml")):
        rule = load_rule_file(path, root)
        if rule.code in seen_codes:
            raise DataFileError(
                rule.path, "code", f"{rule.code} is also used by {seen_codes[rule.code]}"
            )
        if rule.name in seen_names:
            raise DataFileError(
                rule.path, "name", f"{rule.name} is also used by {seen_names[rule.name]}"
            )
        seen_codes[rule.code] = seen_names[rule.name] = rule.path
        rules.append(rule)
    stray = [p for p in root.glob("*.yaml")] + [p for p in root.glob("*/*.yml")]
    if stray:
        raise DataFileError(str(stray[0]), "(file)", "rule files live in rules/<family>/*.yaml")
    return tuple(sorted(rules, key=lambda r: r.code))
