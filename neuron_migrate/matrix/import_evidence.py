"""`neuron-migrate matrix import FILE`: a new matrix version from the official per-API table or
from a `matrix probe` file, laid over a base matrix.

What the file says wins for the entries it speaks about, with its own evidence key (kind
``official-table`` or ``device-probe``); every other entry keeps the base matrix's status and
evidence. The result is written the way the bundled matrices are (`writer`), so it diffs line by
line against them and loads with `load_matrix`. No torch here.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from neuron_migrate import resources
from neuron_migrate.errors import DataFileError
from neuron_migrate.matrix.names import normalize_op
from neuron_migrate.matrix.table import ApiTable, read_table
from neuron_migrate.matrix.versions import VERSION_RE, paired_torch
from neuron_migrate.matrix.writer import Group, dump_yaml, render_ops
from neuron_migrate.yaml_data import load_yaml

PROBE_FORMAT = "neuron-migrate-matrix-probe"
_VALUE_STATUS = {"Y": "native", "CPU_FALLBACK": "cpu_fallback", "N": "unsupported"}
# Top-level keys written before the op groups, in this order.
_HEAD_KEYS = (
    "schema_version",
    "torch_neuronx",
    "torch",
    "neuron_sdk",
    "summary",
    "imported_from",
    "base_matrix",
    "op_universe",
)
_RULE_KEYS = (
    "evidence",
    "default",
    "dtype_aliases",
    "dtypes",
    "namespaces",
    "memory_formats",
    "compile",
    "unknowns",
    "apis",
)


class Decision:
    """What the imported file says about one op."""

    __slots__ = ("note", "status")

    def __init__(self, status: str, note: str) -> None:
        self.status, self.note = status, note


def import_file(
    path: Path,
    *,
    base: Path,
    version: str | None = None,
    torch: str | None = None,
    api_map: Any = None,
) -> tuple[str, str]:
    """(version, matrix text) for the table or probe file at `path` over the matrix at `base`."""
    shown = str(path)
    head = _head(path, shown)
    base_doc = _base_doc(base)
    if head.lstrip().startswith("{"):
        probe = _read_probe(path, shown)
        version = version or probe["versions"].get("torch_neuronx") or ""
        # The simulated device runs on the host's torch, which is no pairing of the version.
        recorded = "" if probe.get("simulated") else probe["versions"].get("torch")
        torch = torch or recorded or paired_torch(version) or ""
        return _finish(version, torch, base_doc, *_from_probe(probe, path, shown, version))
    table = read_table(path, shown)
    version = version or table.version
    torch = torch or table.torch
    if api_map is None:
        api_map = _api_map_for(torch or str(base_doc.get("torch", "")))
    return _finish(version, torch, base_doc, *_from_table(table, version, api_map))


def default_output(version: str) -> Path:
    return resources.matrix_dir() / f"{version}.yaml"


# --- the official table ---------------------------------------------------------------------


def _from_table(
    table: ApiTable, version: str, api_map: Any
) -> tuple[str, dict[str, Any], dict[str, Decision], dict[str, Any], str]:
    key = f"official-table-{version}"
    evidence = {
        "title": f"Official per-API compatibility table of torch-neuronx {version}",
        "reference": f"{Path(table.path).name} (sha256 {table.sha256}), imported by "
        "neuron-migrate matrix import",
        "kind": "official-table",
        "note": "A CPU_FALLBACK row's ATen ops fall back; one that names dtypes (coverage that "
        "differs by dtype) falls back for those only and runs natively for the others, which "
        "its API row keeps (apis.<api>.dtypes). A Y row's ops, as the API map traces them, run "
        "natively, and a Y row lifts the namespace rule over its API. N rows are API rules.",
    }
    decided: dict[str, Decision] = {}
    for row in table.rows:  # the specific CPU_FALLBACK naming wins over any Y row
        for op in row.ops:
            if row.dtypes:
                dtypes = ", ".join(row.dtypes)
                note = f"{row.api}: CPU_FALLBACK for {dtypes} only; native for other dtypes"
                decided.setdefault(op, Decision("native", note))
            else:
                decided.setdefault(op, Decision("cpu_fallback", f"{row.api}: CPU_FALLBACK"))
    for row in table.rows:
        if row.value == "Y" and row.kind in ("native", "needs_process_group"):
            for op in (api_map.aten_for(row.api) if api_map is not None else None) or ():
                decided.setdefault(op, Decision("native", f"{row.api}: Y ({row.kind})"))
    apis = {}
    for row in sorted(table.rows, key=lambda r: r.api):
        entry: dict[str, Any] = {"status": _VALUE_STATUS[row.value], "source": key}
        if row.kind:
            entry["kind"] = row.kind
        if row.ops:
            entry["ops"] = list(row.ops)
        if row.dtypes:
            entry["dtypes"] = list(row.dtypes)
        if row.limitations:
            entry["note"] = row.limitations
        apis[row.api] = entry
    summary = (
        f"official per-API table ({len(table.rows)} rows) where it speaks; the base matrix "
        "elsewhere"
    )
    return key, evidence, decided, apis, summary


def _api_map_for(torch: str) -> Any:
    from neuron_migrate.matrix.api_map import available_api_maps, load_api_map

    minors = available_api_maps()
    minor = ".".join(torch.split(".")[:2])
    if minor in minors:
        return load_api_map(minor)
    return load_api_map(minors[-1]) if minors else None


# --- a probe file ---------------------------------------------------------------------------


def _read_probe(path: Path, shown: str) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DataFileError(shown, "<file>", f"not a probe file: {exc}") from None
    if not isinstance(data, dict) or data.get("format") != PROBE_FORMAT:
        raise DataFileError(shown, "format", f"expected {PROBE_FORMAT!r}")
    for field in ("versions", "registered", "fallback_ops"):
        if field not in data:
            raise DataFileError(shown, field, "missing")
    if not isinstance(data["versions"], dict):
        raise DataFileError(shown, "versions", "expected a mapping")
    return data


def _op_list(value: Any, shown: str, field: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise DataFileError(shown, field, "expected a list of op names")
    ops = []
    for name in value:
        op = normalize_op(name if "::" in name or name.startswith("aten.") else f"aten::{name}")
        if op.startswith("aten::"):  # torch registers the c10d ops for every backend itself
            ops.append(op)
    return ops


def _from_probe(
    probe: dict[str, Any], path: Path, shown: str, version: str
) -> tuple[str, dict[str, Any], dict[str, Decision], dict[str, Any], str]:
    key = f"device-probe-{version}"
    registered = probe["registered"]
    if not isinstance(registered, dict) or "ops" not in registered:
        raise DataFileError(shown, "registered", "expected {source, ops}")
    native = _op_list(registered["ops"], shown, "registered.ops")
    ran = _op_list(probe.get("executed_ops") or [], shown, "executed_ops")
    fallback = _op_list(probe["fallback_ops"], shown, "fallback_ops")
    where = "the simulated device" if probe.get("simulated") else "a Neuron device"
    command = " ".join(probe.get("command") or []) or "no command"
    evidence: dict[str, Any] = {
        "title": f"Recorded on {where} by neuron-migrate matrix probe (torch-neuronx {version})",
        "reference": f"{path.name} (sha256 {_sha256(path)}): {registered.get('source', '?')}; "
        f"torch_neuronx.get_fallback_ops() after `{command}`",
        "kind": "device-probe",
        "note": "Registered and executed ATen ops run natively; ops the command fell back on "
        "run on the host. Ops the command did not reach keep the base matrix's status.",
    }
    if probe.get("simulated"):
        # It ran the matrix it was given: the path is tested, TorchNeuron is not.
        evidence["confidence"] = "unknown"
        evidence["note"] += (
            " Recorded on neuron-migrate's simulated device, which runs the matrix it was "
            "given: this confirms nothing about TorchNeuron."
        )
    decided = {
        op: Decision("cpu_fallback", "fell back during the probed command") for op in fallback
    }
    for op in native:
        decided.setdefault(op, Decision("native", "registered for PrivateUse1"))
    for op in ran:
        decided.setdefault(op, Decision("native", "ran on the device during the probed command"))
    summary = f"probe of {where} ({len(native)} registered ops, {len(fallback)} fallbacks seen)"
    return key, evidence, decided, {}, summary


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# --- laying it over the base ----------------------------------------------------------------


def _head(path: Path, shown: str) -> str:
    try:
        with path.open("rb") as f:
            return f.read(4096).decode("utf-8", "replace")
    except OSError as exc:
        raise DataFileError(shown, "<file>", f"cannot read: {exc.strerror or exc}") from None


def _base_doc(base: Path) -> dict[str, Any]:
    data = load_yaml(base.read_text(encoding="utf-8"))
    if not isinstance(data, dict) or "ops" not in data:
        raise DataFileError(str(base), "<top>", "not a matrix file")
    return data


def _finish(
    version: str,
    torch: str,
    base: dict[str, Any],
    key: str,
    evidence: dict[str, Any],
    decided: Mapping[str, Decision],
    apis: dict[str, Any],
    summary: str,
) -> tuple[str, str]:
    if not version or not VERSION_RE.match(version):
        raise DataFileError(
            "matrix import", "version", f"{version or 'none'!r}: pass --version like 2.15.3.0"
        )
    doc = {k: v for k, v in base.items() if k not in ("ops", "evidence_shared_with")}
    doc["torch_neuronx"] = version
    doc["torch"] = torch or base.get("torch", "")
    doc["summary"] = summary
    doc["imported_from"] = key
    doc["base_matrix"] = str(base.get("torch_neuronx", ""))
    doc["evidence"] = {**base["evidence"], key: evidence}
    if apis:
        doc["apis"] = apis
    groups = _regroup(base["ops"], decided, key)
    return version, _render(doc, groups, key)


def _regroup(base_groups: list[Any], decided: Mapping[str, Decision], key: str) -> list[Group]:
    groups = []
    for spec in base_groups:
        group = Group(spec["group"], spec["status"], spec["source"], spec.get("note", ""))
        for item in spec["ops"]:
            op, note = (item, "") if isinstance(item, str) else (item["op"], item.get("note", ""))
            if op not in decided:
                group.ops[op] = note
        if group.ops:
            groups.append(group)
    for status in ("native", "cpu_fallback", "unsupported"):
        ops = {op: d.note for op, d in sorted(decided.items()) if d.status == status}
        if ops:
            groups.append(Group(f"{key}: {status}", status, key, ""))
            groups[-1].ops.update(ops)
    return groups


def _render(doc: dict[str, Any], groups: list[Group], key: str) -> str:
    header = [
        f"# TorchNeuron compatibility matrix for torch-neuronx {doc['torch_neuronx']} "
        f"(pairs with torch {doc['torch']}).",
        f"# IMPORTED by `neuron-migrate matrix import` ({key}) over the matrix of "
        f"torch-neuronx {doc['base_matrix']}; every entry names its evidence.",
        "# Schema: compat_matrix/README.md.",
    ]
    parts = ["\n".join(header), dump_yaml({k: doc[k] for k in _HEAD_KEYS if k in doc})]
    parts += [dump_yaml({k: doc[k]}) for k in _RULE_KEYS if k in doc]
    parts.append(render_ops(groups))
    return "\n\n".join(p.rstrip() for p in parts) + "\n"
