"""The generated API->aten map (``compat_matrix/api_map/torch-<minor>.yaml``). No torch import.

amap = load_api_map("2.13")
amap.aten_for("torch.sort")                    # ("aten::sort",)
amap.aten_for("torch.nn.Linear")               # forward then backward ops
amap.aten_for_tensor_method("sort")            # ("aten::sort",)
"""

import re
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

from neuron_migrate import resources
from neuron_migrate.errors import DataFileError, UsageError
from neuron_migrate.yaml_data import InvalidYaml, load_yaml

_FILE_RE = re.compile(r"^torch-(\d+\.\d+)\.yaml$")
_cache: "dict[str, ApiMap]" = {}
_lock = threading.Lock()


class CallPattern(NamedTuple):
    """One traced call shape of an API and the ops it reached: positional argument kinds
    (`tensor:2`, `int`, `bool`, ...; a Tensor method's receiver first) and keywords."""

    args: tuple[str, ...]
    kwargs: tuple[tuple[str, str], ...]
    ops: tuple[str, ...]


class ApiMap(NamedTuple):
    torch_minor: str
    torch_version: str
    path: str
    apis: Mapping[str, tuple[str, ...]]  # functions: forward ops
    modules: Mapping[str, tuple[tuple[str, ...], tuple[str, ...]]]  # (forward, backward)
    tensor_methods: Mapping[str, tuple[str, ...]]
    tensor_method_names: frozenset[str]
    failed: Mapping[str, str]
    mapped: int
    considered: int
    # APIs whose traced call shapes reach different ops (`torch.max(x)` / `(x, 1)` / `(x, y)`)
    patterns: Mapping[str, tuple[CallPattern, ...]] = {}
    # Each optimizer's step as torch.compile graphs it (`compiled-steps-torch-<minor>.yaml`,
    # from `compiled_steps_builder`): functional `_foreach_*` ops, not the eager step's.
    compiled_steps: Mapping[str, tuple[str, ...]] = {}

    def aten_for(self, qualname: str) -> tuple[str, ...] | None:
        """Ops an API reaches; None when the map does not know the API.

        Functions give their forward ops; nn modules give forward then backward ops (deduplicated).
        ``Tensor.sort`` / ``torch.Tensor.sort`` are read as the Tensor method ``sort``.
        """
        ops = self.apis.get(qualname)
        if ops is not None:
            return ops
        module = self.modules.get(qualname)
        if module is not None:
            forward, backward = module
            return forward + tuple(op for op in backward if op not in forward)
        for prefix in ("torch.Tensor.", "Tensor."):
            if qualname.startswith(prefix):
                return self.aten_for_tensor_method(qualname[len(prefix) :])
        return None

    def aten_for_module(self, qualname: str) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
        """(forward ops, backward ops) of an nn module, or None."""
        return self.modules.get(qualname)

    def aten_for_tensor_method(self, name: str) -> tuple[str, ...] | None:
        return self.tensor_methods.get(name)

    def is_tensor_method(self, name: str) -> bool:
        return name in self.tensor_method_names or name in self.tensor_methods

    def patterns_for(self, api: str) -> tuple[CallPattern, ...]:
        """The traced call shapes of a function (`torch.max`) or Tensor method (`Tensor.max`);
        empty when every call of it reaches the same ops."""
        return self.patterns.get(api, ())

    def coverage(self) -> tuple[int, int]:
        """(mapped APIs, public APIs considered), as recorded by the builder."""
        return self.mapped, self.considered


def available_api_maps() -> list[str]:
    """Torch minors with a bundled map, oldest first: ``["2.13", "2.14"]``."""
    found = [m.group(1) for p in _dir().glob("torch-*.yaml") if (m := _FILE_RE.match(p.name))]
    return sorted(found, key=lambda v: tuple(int(x) for x in v.split(".")))


def load_api_map(torch_minor: str | None = None, *, path: Path | None = None) -> ApiMap:
    """Load the map for a torch minor (``"2.13"``; ``"2.13.0"`` also accepted; default: newest)."""
    if path is None:
        minors = available_api_maps()
        if torch_minor is None:
            if not minors:
                raise DataFileError(str(_dir()), "<dir>", "no API map files found")
            torch_minor = minors[-1]
        torch_minor = ".".join(torch_minor.split(".")[:2])
        if torch_minor not in minors:
            raise UsageError(
                f"no API map for torch {torch_minor}: available {', '.join(minors) or 'none'}"
            )
        path = _dir() / f"torch-{torch_minor}.yaml"
    key = str(Path(path).resolve())
    with _lock:
        cached = _cache.get(key)
        if cached is None:
            cached = _parse(Path(path))
            steps = Path(path).with_name(f"compiled-steps-torch-{cached.torch_minor}.yaml")
            if steps.is_file():
                cached = cached._replace(compiled_steps=_compiled_steps(steps))
            _cache[key] = cached
    return cached


def _compiled_steps(path: Path) -> dict[str, tuple[str, ...]]:
    shown = _shown(path)

    def fail(field: str, problem: str) -> DataFileError:
        return DataFileError(shown, field, problem)

    try:
        data = load_yaml(path.read_text(encoding="utf-8"))
    except (OSError, InvalidYaml) as exc:
        raise fail("<file>", f"cannot read: {exc}") from None
    table = data.get("compiled_steps") if isinstance(data, dict) else None
    if not isinstance(table, dict):
        raise fail("compiled_steps", "expected a mapping of optimizer to ops")
    return {str(name): _ops(ops, f"compiled_steps.{name}", fail) for name, ops in table.items()}


def _dir() -> Path:
    return resources.matrix_dir() / "api_map"


def _parse(path: Path) -> ApiMap:
    shown = _shown(path)

    def fail(field: str, problem: str) -> DataFileError:
        return DataFileError(shown, field, problem)

    try:
        text = path.read_text(encoding="utf-8")
        data = load_yaml(text)
    except (OSError, InvalidYaml) as exc:
        raise fail("<file>", f"cannot read: {exc}") from None
    if not isinstance(data, dict):
        raise fail("<top>", "expected a mapping")
    if data.get("schema_version") != 1:
        raise fail("schema_version", f"expected 1, got {data.get('schema_version')!r}")
    torch_version = str(data.get("torch", ""))
    coverage = data.get("coverage") or {}
    if not isinstance(coverage, dict):
        raise fail("coverage", "expected a mapping")

    def op_table(key: str) -> dict[str, tuple[str, ...]]:
        table = data.get(key) or {}
        if not isinstance(table, dict):
            raise fail(key, "expected a mapping")
        out = {}
        for name, ops in table.items():
            out[str(name)] = _ops(ops, f"{key}.{name}", fail)
        return out

    modules = {}
    raw_modules = data.get("modules") or {}
    if not isinstance(raw_modules, dict):
        raise fail("modules", "expected a mapping")
    for name, entry in raw_modules.items():
        if not isinstance(entry, dict):
            raise fail(f"modules.{name}", "expected {forward, backward}")
        modules[str(name)] = (
            _ops(entry.get("forward"), f"modules.{name}.forward", fail),
            _ops(entry.get("backward") or [], f"modules.{name}.backward", fail),
        )
    names = data.get("tensor_method_names") or []
    if not isinstance(names, list):
        raise fail("tensor_method_names", "expected a list")
    applies_to = str(data.get("applies_to") or ".".join(torch_version.split(".")[:2]))
    raw_patterns = data.get("patterns") or {}
    if not isinstance(raw_patterns, dict):
        raise fail("patterns", "expected a mapping")
    patterns = {
        str(name): tuple(_pattern(entry, f"patterns.{name}", fail) for entry in entries or [])
        for name, entries in raw_patterns.items()
    }
    return ApiMap(
        torch_minor=applies_to,
        torch_version=torch_version,
        path=shown,
        apis=op_table("apis"),
        modules=modules,
        tensor_methods=op_table("tensor_methods"),
        tensor_method_names=frozenset(str(n) for n in names),
        failed={str(k): str(v) for k, v in (data.get("failed") or {}).items()},
        mapped=int(coverage.get("mapped", 0)),
        considered=int(coverage.get("considered", 0)),
        patterns=patterns,
    )


def _pattern(entry: Any, field: str, fail: Any) -> CallPattern:
    if not isinstance(entry, dict) or not isinstance(entry.get("kwargs") or {}, dict):
        raise fail(field, "expected {args, kwargs, ops}")
    args = entry.get("args") or []
    if not isinstance(args, list):
        raise fail(f"{field}.args", "expected a list of argument kinds")
    kwargs = tuple(sorted((str(k), str(v)) for k, v in (entry.get("kwargs") or {}).items()))
    return CallPattern(tuple(str(a) for a in args), kwargs, _ops(entry.get("ops"), field, fail))


def _ops(value: Any, field: str, fail: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise fail(field, "expected a list of op names")
    return tuple(value)


def _shown(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(resources.matrix_dir().resolve().parent))
    except ValueError:
        return str(path)
