"""Find, load and validate the versioned matrices in ``compat_matrix/<version>.yaml``.

A bad file is reported as one `DataFileError` naming the file and the field path
(``compat_matrix/2.13.3.0.yaml: ops[2].status: ...``); nothing half-loaded escapes.
"""

from __future__ import annotations

import re
import threading
from pathlib import Path
from typing import Any

from neuron_migrate import resources
from neuron_migrate.errors import DataFileError
from neuron_migrate.matrix.model import (
    CONFIDENCES,
    EVIDENCE_KINDS,
    KIND_CONFIDENCE,
    NAMESPACE_STATUSES,
    OP_STATUSES,
    ApiEntry,
    CompileRules,
    DtypeRule,
    Evidence,
    Matrix,
    MemoryFormatRule,
    NamespaceRule,
    OpEntry,
    OpVerdict,
    Unknown,
)
from neuron_migrate.matrix.names import normalize_op
from neuron_migrate.matrix.versions import VERSION_RE as _VERSION_RE
from neuron_migrate.matrix.versions import is_matrix_file, resolve_version
from neuron_migrate.yaml_data import InvalidYaml, load_yaml

SCHEMA_VERSION = 1
# The sub-kinds of a `Y` row in the official table; "" for CPU_FALLBACK and N rows.
API_KINDS = ("", "native", "host_only", "needs_process_group")
_OP_RE = re.compile(r"^[A-Za-z_][\w]*::[A-Za-z_][\w]*(\.[\w]+)?$")

_cache: dict[str, Matrix] = {}
_lock = threading.Lock()


def load_matrix(version: str | None = None, *, path: Path | None = None) -> Matrix:
    """Load one matrix: a bundled ``version`` (default: the newest) or an explicit file ``path``.

    Results are cached per file, so repeated calls are cheap.
    """
    if path is None:
        version = resolve_version(version)
        if is_matrix_file(version):
            path, version = Path(version), None
        else:
            path = resources.matrix_dir() / f"{version}.yaml"
    key = str(Path(path).resolve())
    with _lock:
        cached = _cache.get(key)
        if cached is None:
            cached = _load_file(Path(path), expected_version=version)
            _cache[key] = cached
    return cached


def load_named(name: str, given_as: str = "--target") -> Matrix:
    """A bundled version (``2.14``, ``2.14.3.0``) or, when `name` is a matrix file that exists
    (what `matrix import -o FILE` wrote), that file."""
    path = Path(name)
    if name.endswith((".yaml", ".yml")) and path.is_file():
        return load_matrix(path=path)
    return load_matrix(resolve_version(name, given_as=given_as))


def matrix_file_target(file: str | Path, given_as: str = "--matrix") -> str:
    """The target a matrix file stands for (its absolute path), once it has loaded: a missing
    or broken file is one error naming it (and the field), before anything else runs."""
    path = Path(file)
    if not path.is_file():
        raise DataFileError(str(file), "<file>", f"{given_as}: no such matrix file")
    if not path.name.endswith((".yaml", ".yml")):
        raise DataFileError(str(file), "<file>", f"{given_as}: a matrix file ends in .yaml")
    load_matrix(path=path)
    return str(path.resolve())


def clear_cache() -> None:
    with _lock:
        _cache.clear()


# --- parsing and validation ------------------------------------------------------------------


def _display(path: Path) -> str:
    """The file as users should see it: relative to the data root's parent when inside it."""
    try:
        root = resources.matrix_dir().resolve().parent
        return str(path.resolve().relative_to(root))
    except ValueError:
        return str(path)


def _load_file(path: Path, expected_version: str | None) -> Matrix:
    shown = _display(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise DataFileError(shown, "<file>", f"cannot read: {exc.strerror or exc}") from None
    try:
        data = load_yaml(text)
    except InvalidYaml as exc:
        where = f"line {exc.line}" if exc.line is not None else "<yaml>"
        problem = exc.problem or "invalid YAML"
        raise DataFileError(shown, where, f"invalid YAML: {problem}") from None
    return _Parser(shown).matrix(data, expected_version)


class _Parser:
    """Turns the parsed YAML into a `Matrix`, raising on the first problem with its field path."""

    def __init__(self, shown: str) -> None:
        self.shown = shown
        self.evidence_keys: set[str] = set()

    def fail(self, field: str, problem: str) -> DataFileError:
        return DataFileError(self.shown, field, problem)

    # primitive getters -------------------------------------------------------------------

    def mapping(self, value: Any, field: str) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise self.fail(field, f"expected a mapping, got {_kind(value)}")
        return value

    def seq(self, value: Any, field: str) -> list[Any]:
        if not isinstance(value, list):
            raise self.fail(field, f"expected a list, got {_kind(value)}")
        return value

    def text(self, obj: dict[str, Any], key: str, field: str, *, required: bool = True) -> str:
        value = obj.get(key)
        if value is None:
            if required:
                raise self.fail(_f(field, key), "missing")
            return ""
        if not isinstance(value, str) or (required and not value.strip()):
            raise self.fail(_f(field, key), f"expected a non-empty string, got {_kind(value)}")
        return value.strip()

    def flag(self, obj: dict[str, Any], key: str, field: str) -> bool:
        value = obj.get(key)
        if not isinstance(value, bool):
            raise self.fail(_f(field, key), f"expected true or false, got {_kind(value)}")
        return value

    def choice(self, obj: dict[str, Any], key: str, field: str, allowed: tuple[str, ...]) -> str:
        value = self.text(obj, key, field)
        if value not in allowed:
            raise self.fail(_f(field, key), f"{value!r} is not one of {', '.join(allowed)}")
        return value

    def source(self, obj: dict[str, Any], field: str) -> str:
        key = self.text(obj, "source", field)
        if key not in self.evidence_keys:
            raise self.fail(_f(field, "source"), f"{key!r} is not a key under evidence")
        return key

    def names(self, obj: dict[str, Any], key: str, field: str) -> tuple[str, ...]:
        value = obj.get(key, [])
        items = self.seq(value, _f(field, key))
        for i, item in enumerate(items):
            if not isinstance(item, str) or not item.strip():
                raise self.fail(f"{_f(field, key)}[{i}]", "expected a non-empty string")
        return tuple(item.strip() for item in items)

    def statuses(self, obj: dict[str, Any], key: str, field: str) -> tuple[str, ...]:
        values = self.names(obj, key, field)
        for i, value in enumerate(values):
            if value not in OP_STATUSES:
                raise self.fail(
                    f"{_f(field, key)}[{i}]", f"{value!r} is not one of {', '.join(OP_STATUSES)}"
                )
        return values

    # sections ----------------------------------------------------------------------------

    def matrix(self, data: Any, expected_version: str | None) -> Matrix:
        top = self.mapping(data, "<top>")
        schema = top.get("schema_version")
        if schema != SCHEMA_VERSION:
            raise self.fail("schema_version", f"expected {SCHEMA_VERSION}, got {schema!r}")
        version = self.text(top, "torch_neuronx", "")
        if not _VERSION_RE.match(version):
            raise self.fail("torch_neuronx", f"{version!r} is not a version like 2.14.3.0")
        if expected_version is not None and version != expected_version:
            raise self.fail("torch_neuronx", f"{version!r} does not match the file name")
        torch_version = self.text(top, "torch", "")
        evidence = self.evidence(top.get("evidence"))
        default = self.default(top.get("default"))
        ops = self.ops(top.get("ops"))
        by_base: dict[str, list[str]] = {}
        for name in sorted(ops):
            by_base.setdefault(name.partition(".")[0], []).append(name)
        dtypes, aliases = self.dtypes(top.get("dtypes"), top.get("dtype_aliases", {}))
        return Matrix(
            version=version,
            torch_version=torch_version,
            path=self.shown,
            evidence=evidence,
            ops=ops,
            default=default,
            dtypes=dtypes,
            dtype_aliases=aliases,
            namespaces=self.namespaces(top.get("namespaces")),
            memory_formats=self.memory_formats(top.get("memory_formats")),
            compile=self.compile(top.get("compile")),
            summary=self.text(top, "summary", "", required=False),
            by_base={k: tuple(v) for k, v in by_base.items()},
            apis=self.apis(top.get("apis", {})),
            unknowns=self.unknowns(top.get("unknowns", [])),
        )

    def evidence(self, value: Any) -> dict[str, Evidence]:
        items = self.mapping(value, "evidence")
        if not items:
            raise self.fail("evidence", "no evidence listed")
        result: dict[str, Evidence] = {}
        for key, body in items.items():
            field = f"evidence.{key}"
            body = self.mapping(body, field)
            kind = body.get("kind", "unclassified")
            if kind not in EVIDENCE_KINDS:
                raise self.fail(
                    f"{field}.kind", f"{kind!r} is not one of {', '.join(EVIDENCE_KINDS)}"
                )
            result[str(key)] = Evidence(
                key=str(key),
                title=self.text(body, "title", field),
                reference=self.text(body, "reference", field),
                note=self.text(body, "note", field, required=False),
                kind=kind,
                confidence=self.confidence(body, field, kind),
            )
        self.evidence_keys = set(result)
        return result

    def confidence(self, body: dict[str, Any], field: str, kind: str) -> str:
        """The evidence's own `confidence`, which may say less than its kind, never more."""
        ceiling = KIND_CONFIDENCE[kind]
        if "confidence" not in body:
            return ceiling
        value = self.choice(body, "confidence", field, tuple(CONFIDENCES))
        order = list(CONFIDENCES)
        if order.index(value) < order.index(ceiling):
            raise self.fail(
                f"{field}.confidence", f"{value!r} is surer than its kind {kind!r} allows"
            )
        return value

    def default(self, value: Any) -> OpVerdict:
        body = self.mapping(value, "default")
        return OpVerdict(
            op="<unlisted>",
            status=self.choice(body, "status", "default", OP_STATUSES),
            source=self.source(body, "default"),
            note=self.text(body, "note", "default", required=False),
        )

    def ops(self, value: Any) -> dict[str, OpEntry]:
        result: dict[str, OpEntry] = {}
        where: dict[str, str] = {}
        for g, group in enumerate(self.seq(value, "ops")):
            field = f"ops[{g}]"
            group = self.mapping(group, field)
            name = self.text(group, "group", field)
            status = self.choice(group, "status", field, OP_STATUSES)
            source = self.source(group, field)
            for i, item in enumerate(self.seq(group.get("ops"), _f(field, "ops"))):
                item_field = f"{field}.ops[{i}]"
                op, note = self.op_item(item, item_field)
                if op in result:
                    raise self.fail(item_field, f"{op} is already listed in {where[op]}")
                result[op] = OpEntry(status=status, source=source, group=name, note=note)
                where[op] = item_field
        return result

    def op_item(self, item: Any, field: str) -> tuple[str, str]:
        if isinstance(item, str):
            op, note = item, ""
        elif isinstance(item, dict):
            op = self.text(item, "op", field)
            note = self.text(item, "note", field, required=False)
        else:
            raise self.fail(field, f"expected an op name or {{op, note}}, got {_kind(item)}")
        op = op.strip()
        if not _OP_RE.match(op):
            raise self.fail(field, f"{op!r} is not an op name like aten::add.Tensor")
        if normalize_op(op) != op:
            raise self.fail(field, f"{op!r} should be written {normalize_op(op)!r}")
        return op, note

    def dtypes(self, value: Any, aliases: Any) -> tuple[tuple[DtypeRule, ...], dict[str, str]]:
        rules = []
        for i, item in enumerate(self.seq(value, "dtypes")):
            field = f"dtypes[{i}]"
            body = self.mapping(item, field)
            runs_as = body.get("runs_as")
            if runs_as is not None and not isinstance(runs_as, str):
                raise self.fail(
                    _f(field, "runs_as"), f"expected a dtype name, got {_kind(runs_as)}"
                )
            rules.append(
                DtypeRule(
                    dtype=self.text(body, "dtype", field),
                    runs_as=runs_as,
                    warn=self.flag(body, "warn", field),
                    source=self.source(body, field),
                    note=self.text(body, "note", field, required=False),
                )
            )
        alias_map = self.mapping(aliases, "dtype_aliases")
        for key, target in alias_map.items():
            if not isinstance(target, str):
                raise self.fail(f"dtype_aliases.{key}", "expected a dtype name")
        return tuple(rules), {str(k): str(v) for k, v in alias_map.items()}

    def namespaces(self, value: Any) -> tuple[NamespaceRule, ...]:
        rules = []
        for i, item in enumerate(self.seq(value, "namespaces")):
            field = f"namespaces[{i}]"
            body = self.mapping(item, field)
            status = self.choice(body, "status", field, NAMESPACE_STATUSES)
            supported = self.names(body, "supported", field)
            unsupported = self.names(body, "unsupported", field)
            if status == "partial" and not (supported or unsupported):
                raise self.fail(field, "a partial namespace must list supported/unsupported")
            unlisted = body.get("unlisted_status", "unsupported")
            if unlisted not in OP_STATUSES:
                raise self.fail(_f(field, "unlisted_status"), f"{unlisted!r} is not a status")
            rules.append(
                NamespaceRule(
                    namespace=self.text(body, "namespace", field),
                    status=status,
                    source=self.source(body, field),
                    note=self.text(body, "note", field, required=False),
                    aliases=self.names(body, "aliases", field),
                    supported=supported,
                    unsupported=unsupported,
                    unlisted_status=unlisted,
                )
            )
        return tuple(rules)

    def memory_formats(self, value: Any) -> tuple[MemoryFormatRule, ...]:
        rules = []
        for i, item in enumerate(self.seq(value, "memory_formats")):
            field = f"memory_formats[{i}]"
            body = self.mapping(item, field)
            rules.append(
                MemoryFormatRule(
                    name=self.text(body, "name", field),
                    status=self.choice(body, "status", field, OP_STATUSES),
                    source=self.source(body, field),
                    message=self.text(body, "message", field, required=False),
                )
            )
        return tuple(rules)

    def compile(self, value: Any) -> CompileRules:
        body = self.mapping(value, "compile")
        return CompileRules(
            backend=self.text(body, "backend", "compile"),
            dynamic_true_status=self.choice(body, "dynamic_true", "compile", OP_STATUSES),
            requires_dynamic_false=self.flag(body, "requires_dynamic_false", "compile"),
            modes_with_effect=self.names(body, "modes_with_effect", "compile"),
            source=self.source(body, "compile"),
            note=self.text(body, "note", "compile", required=False),
            other_modes=self.choice(body, "other_modes", "compile", ("warn", "refused"))
            if "other_modes" in body
            else "warn",
            failure_raises=self.flag(body, "failure_raises", "compile")
            if "failure_raises" in body
            else True,
            fallback_env=self.text(body, "fallback_env", "compile", required=False),
            fallback_option=self.text(body, "fallback_option", "compile", required=False),
            graph_refuses=self.statuses(body, "graph_refuses", "compile")
            if "graph_refuses" in body
            else ("unsupported",),
        )

    def apis(self, value: Any) -> dict[str, ApiEntry]:
        result: dict[str, ApiEntry] = {}
        for name, body in self.mapping(value, "apis").items():
            field = f"apis.{name}"
            body = self.mapping(body, field)
            kind = body.get("kind", "")
            if kind not in API_KINDS:
                raise self.fail(f"{field}.kind", f"{kind!r} is not one of {', '.join(API_KINDS)}")
            ops = self.names(body, "ops", field)
            for i, op in enumerate(ops):
                if not _OP_RE.match(op):
                    raise self.fail(f"{field}.ops[{i}]", f"{op!r} is not an op name")
            result[str(name)] = ApiEntry(
                status=self.choice(body, "status", field, OP_STATUSES),
                source=self.source(body, field),
                kind=kind,
                ops=ops,
                dtypes=self.names(body, "dtypes", field),
                note=self.text(body, "note", field, required=False),
            )
        return result

    def unknowns(self, value: Any) -> tuple[Unknown, ...]:
        result = []
        for i, item in enumerate(self.seq(value, "unknowns")):
            field = f"unknowns[{i}]"
            body = self.mapping(item, field)
            result.append(Unknown(self.text(body, "topic", field), self.text(body, "note", field)))
        return tuple(result)


def _f(field: str, key: str) -> str:
    return f"{field}.{key}" if field else key


def _kind(value: Any) -> str:
    if value is None:
        return "nothing"
    return type(value).__name__
