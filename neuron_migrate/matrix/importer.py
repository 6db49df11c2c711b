"""Maintainer tool: generate ``compat_matrix/<version>.yaml`` from the evidence. Needs torch.

    python -m neuron_migrate.matrix.importer            # rewrites both bundled matrices

Inputs (all in the repository):
- ``compat_matrix/sources/dev-snapshot-2026-04-registered-ops.json``: the ATen overloads the
  pre-release TorchNeuron snapshot registers for PrivateUse1 (a derived list, see the README);
- ``compat_matrix/sources/curated.yaml``: evidence, the hand-written rules (dtypes, namespaces,
  memory formats, torch.compile), the distributed op lists and the fft lists;
- the installed torch's dispatcher, for the op universe and for ops that only have
  device-agnostic kernels (views, metadata);
- ``compat_matrix/api_map/torch-<minor>.yaml`` (``composite_calls``): which ops torch's
  device-agnostic (CompositeExplicitAutograd) kernels were seen to call, so an op like
  ``aten::sort``, whose generic kernel calls ``aten::sort.stable``, gets the status of what it
  really runs.

Both versions are written from the same evidence; only the version and the torch pairing differ.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from neuron_migrate import resources
from neuron_migrate.matrix.names import normalize_op

SNAPSHOT_FILE = "sources/dev-snapshot-2026-04-registered-ops.json"
CURATED_FILE = "sources/curated.yaml"
COMMAND = "python -m neuron_migrate.matrix.importer"
_RANK = {"native": 0, "cpu_fallback": 1, "unsupported": 2}


@dataclass
class Group:
    name: str
    status: str
    source: str
    note: str
    ops: dict[str, str] = field(default_factory=dict)  # op -> per-op note


@dataclass
class TorchOps:
    """What the installed torch's dispatcher says about every aten/c10d op overload."""

    names: set[str]
    kernels: dict[str, set[str]]
    views: set[str]

    def has(self, op: str, key: str) -> bool:
        return key in self.kernels.get(op, set())


_KEYS = (
    "CPU",
    "CompositeExplicitAutograd",
    "CompositeExplicitAutogradNonFunctional",
    "CompositeImplicitAutograd",
    "SparseCPU",
    "SparseCsrCPU",
    "NestedTensorCPU",
)


def read_torch_ops() -> tuple[str, TorchOps]:
    import torch
    import torch.distributed

    c = torch._C
    names = {n for n in c._dispatch_get_all_op_names() if n.split("::")[0] in ("aten", "c10d")}
    names |= {n for n in c._dispatch_get_all_op_names() if n.startswith("_c10d_functional::")}
    kernels = {
        n: {k for k in _KEYS if c._dispatch_has_kernel_for_dispatch_key(n, k)} for n in names
    }
    views = set()
    for n in names:
        base, _, overload = n.partition(".")
        try:
            schema = c._get_schema(base, overload)
        except RuntimeError:
            continue
        aliased = any(
            r.alias_info is not None and not r.alias_info.is_write for r in schema.returns
        )
        if aliased and not schema.is_mutable:
            views.add(n)
    return torch.__version__.split("+")[0], TorchOps(names, kernels, views)


# --- classification ---------------------------------------------------------------------------


class Classifier:
    def __init__(self, snapshot: dict[str, Any], curated: dict[str, Any], ops: TorchOps) -> None:
        self.snapshot = snapshot
        self.curated = curated
        self.t = ops
        self.primary: dict[str, tuple[str, str]] = {}  # op -> (status, group name)
        self.groups: list[Group] = []

    def add(self, group: Group) -> None:
        for op in group.ops:
            if op in self.primary:
                raise SystemExit(f"{op} classified twice ({self.primary[op][1]}, {group.name})")
            self.primary[op] = (group.status, group.name)
        if group.ops:
            self.groups.append(group)

    def lookup(self, op: str) -> str:
        """Status by the loader's rule (exact, base name, default) over the groups so far."""
        if op in self.primary:
            return self.primary[op][0]
        base = op.partition(".")[0]
        if base in self.primary:
            return self.primary[base][0]
        return "cpu_fallback"

    def run(self, composite_calls: dict[str, list[str]]) -> list[Group]:
        self.registered()
        self.explicit_fallbacks()
        self.distributed()
        self.unsupported_families()
        self.device_agnostic_views()
        self.composite_reach(composite_calls)
        self.unregistered_overloads()
        return self.groups

    def registered(self) -> None:
        reg = sorted(self.snapshot["registered_overloads"])
        exact = Group(
            "dev-snapshot registered kernels",
            "native",
            "dev-snapshot-registered",
            "Overloads with a PrivateUse1 kernel in the dev snapshot.",
        )
        by_base = Group(
            "dev-snapshot registered by base name",
            "native",
            "dev-snapshot-registered",
            "Registered under a bare name that is not an overload in this torch (for example "
            "aten::eq, which only has eq.Scalar/eq.Tensor); read as covering every overload of "
            "the name, which is what the loader's base-name lookup does.",
        )
        for op in reg:
            if op in self.t.names:
                exact.ops[op] = ""
            elif "." not in op:
                by_base.ops[op] = ""
            else:
                exact.ops[op] = "no such overload in the torch used to generate this file"
        extra = self.curated["dev_snapshot_unscanned"]
        unscanned = Group(
            "dev-snapshot registered through paths the extraction missed",
            "native",
            extra["source"],
            extra["note"],
            {op: "" for op in extra["ops"] if op not in reg},
        )
        self.add(exact)
        self.add(by_base)
        self.add(unscanned)

    def explicit_fallbacks(self) -> None:
        self.add(
            Group(
                "explicit CPU-fallback registrations (linalg)",
                "cpu_fallback",
                "dev-snapshot-cpu-fallback",
                "Always run on the host CPU, even when a device kernel could exist.",
                {op: "" for op in sorted(self.snapshot["explicit_cpu_fallback_registrations"])},
            )
        )

    def distributed(self) -> None:
        for spec in self.curated["distributed"]:
            ops = dict(self._expand(spec["ops"]))
            self.add(Group(spec["group"], spec["status"], spec["source"], spec["note"], ops))

    def _expand(self, items: Iterable[Any]) -> Iterable[tuple[str, str]]:
        for item in items:
            if isinstance(item, dict):
                yield item["op"], item.get("note", "")
            elif item.endswith("*"):
                prefix = item[:-1]
                for name in sorted(n for n in self.t.names if n.startswith(prefix)):
                    yield name, ""
            else:
                yield item, ""

    def unsupported_families(self) -> None:
        fft = self.curated["fft_aten"]
        self.add(
            Group(
                "fft kernels and transforms",
                "unsupported",
                fft["source"],
                fft["note"],
                {op: "" for op in self._fft_ops(fft) if op not in self.primary},
            )
        )
        for family, words, keys, names in (
            ("sparse", SPARSE_WORDS, SPARSE, SPARSE_NAMES),
            ("nested", ("nested",), ("NestedTensorCPU",), set()),
        ):
            spec = self.curated[f"{family}_aten"]
            ops = {
                op: ""
                for op in sorted(self.t.names)
                if op.startswith("aten::")
                and op not in self.primary
                and (_named(op, words) or self._only_under(op, keys) or _base(op) in names)
            }
            self.add(
                Group(f"{family} tensor ops", "unsupported", spec["source"], spec["note"], ops)
            )

    def _fft_ops(self, spec: dict[str, Any]) -> list[str]:
        kernels = [n for n in self.t.names if n.partition(".")[0] in spec["kernels"]]
        transforms = [
            n
            for n in self.t.names
            if n.startswith("aten::fft_")
            and n.partition(".")[0][len("aten::fft_") :] in spec["transforms"]
        ]
        return sorted(set(kernels) | set(transforms))

    def _only_under(self, op: str, keys: tuple[str, ...]) -> bool:
        mine = self.t.kernels.get(op, set())
        dense = {
            "CPU",
            "CompositeExplicitAutograd",
            "CompositeExplicitAutogradNonFunctional",
            "CompositeImplicitAutograd",
        }
        return bool(mine & set(keys)) and not (mine & dense)

    def device_agnostic_views(self) -> None:
        ops = {
            op: ""
            for op in sorted(self.t.views)
            if op not in self.primary
            and op.startswith("aten::")
            and self.t.has(op, "CompositeExplicitAutograd")
            and not self.t.has(op, "CPU")
        }
        self.add(
            Group(
                "views with a device-agnostic kernel",
                "native",
                "torch-device-agnostic",
                "Metadata-only: torch's CompositeExplicitAutograd kernel builds the view through "
                "as_strided/view, which the backend implements.",
                ops,
            )
        )

    def composite_reach(self, calls: dict[str, list[str]]) -> None:
        """Ops whose only device kernel is torch's generic one get the worst of what it calls."""
        memo: dict[str, tuple[str, tuple[str, ...]]] = {}

        def reach(op: str, stack: tuple[str, ...]) -> tuple[str, tuple[str, ...]]:
            if op in memo:
                return memo[op]
            if op not in calls or op in self.primary or op in stack:
                return self.lookup(op), ()
            worst, culprits = "native", []
            for child in calls[op]:
                status, _ = reach(child, (*stack, op))
                if _RANK[status] > _RANK[worst]:
                    worst, culprits = status, [child]
                elif status == worst and status != "native":
                    culprits.append(child)
            memo[op] = (worst, tuple(culprits))
            return memo[op]

        groups = {
            s: Group(
                f"device-agnostic kernels that reach {s} ops"
                if s != "native"
                else "device-agnostic kernels that reach only native ops",
                s,
                "torch-composite-reach",
                "torch's generic kernel (CompositeExplicitAutograd, or a CompositeImplicitAutograd "
                "decomposition) runs on any backend by calling other ops; the status is the worst "
                "of the ops it was seen to call.",
            )
            for s in ("native", "cpu_fallback", "unsupported")
        }
        for op in sorted(calls):
            if op in self.primary or not op.startswith("aten::"):
                continue
            generic = self.t.has(op, "CompositeExplicitAutograd") or self.t.has(
                op, "CompositeImplicitAutograd"
            )
            if not generic or self.t.has(op, "CPU"):
                continue
            status, culprits = reach(op, ())
            children = ", ".join(calls[op]) or "no other op (metadata only)"
            note = (
                f"calls {children}"
                if status == "native"
                else f"calls {', '.join(culprits)} ({status})"
            )
            groups[status].ops[op] = note
        for status in ("native", "cpu_fallback", "unsupported"):
            self.add(groups[status])

    def unregistered_overloads(self) -> None:
        """Overloads that would inherit a base-name entry they do not deserve.

        ``aten::max`` is registered but ``aten::max.other`` is not: list it, so the loader's
        base-name lookup does not call it native.
        """
        base_group = {
            name for name, (_, group) in self.primary.items() if group.endswith("by base name")
        }
        native_groups = {g.name for g in self.groups if g.status == "native"}
        group = Group(
            "unregistered overloads of listed ops",
            "cpu_fallback",
            "generic-cpu-fallback",
            "Another overload of the same name is native; this one has its own CPU kernel and "
            "no device kernel in the evidence, so it takes the generic CPU fallback.",
        )
        for op in sorted(self.t.names):
            base, dot, _ = op.partition(".")
            if not dot or op in self.primary or base not in self.primary or base in base_group:
                continue
            # Only overloads a backend must implement itself: not decomposed, not generic.
            if self.primary[base][1] not in native_groups or not self.t.has(op, "CPU"):
                continue
            if self.primary[base][0] != "cpu_fallback":
                group.ops[op] = f"{base} is {self.primary[base][0]}"
        self.add(group)


SPARSE = ("SparseCPU", "SparseCsrCPU")
SPARSE_WORDS = (
    "sparse",
    "coalesce",
    "_indices",
    "_values",
    "crow_",
    "ccol_",
    "_nnz",
    "_dimI",
    "_dimV",
)
SPARSE_NAMES = {"aten::indices", "aten::values", "aten::row_indices", "aten::col_indices"}


def _base(op: str) -> str:
    return op.partition(".")[0]


def _named(op: str, words: tuple[str, ...]) -> bool:
    """Whether the op's base name (not its overload name) contains one of ``words``."""
    name = _base(op).split("::", 1)[1]
    return any(w in name for w in words)


# --- writing ----------------------------------------------------------------------------------


def render(
    version: str,
    spec: dict[str, Any],
    curated: dict[str, Any],
    groups: list[Group],
    torch_version: str,
) -> str:
    header = [
        f"# TorchNeuron compatibility matrix for torch-neuronx {version} "
        f"(pairs with torch {spec['torch']}).",
        f"# GENERATED by `{COMMAND}` on {_dt.date.today().isoformat()} with torch {torch_version};",
        "# edit compat_matrix/sources/curated.yaml or the importer, not this file.",
        "# Schema: compat_matrix/README.md.",
        "#",
    ]
    header += [f"# {line}".rstrip() for line in curated["honesty_note"].strip().splitlines()]
    counts = {s: sum(len(g.ops) for g in groups if g.status == s) for s in _RANK}
    header.append(
        "# Listed ops: " + ", ".join(f"{n} {s}" for s, n in counts.items()) + "; unlisted: default."
    )
    top = {
        "schema_version": 1,
        "torch_neuronx": version,
        "torch": spec["torch"],
        "neuron_sdk": curated["neuron_sdk"],
        "summary": curated["summary"],
        "evidence_shared_with": [v for v in curated["versions"] if v != version],
        "op_universe": f"aten/c10d overloads of torch {torch_version}",
    }
    parts = ["\n".join(header), _dump(top)]
    parts.append("# Where every claim below comes from. Each group and rule names one key.")
    parts.append(_dump({"evidence": curated["evidence"]}))
    parts.append(_dump({"default": curated["default"]}))
    parts.append("# 64-bit dtypes: computed in 32 bits on the device.")
    parts.append(_dump({"dtype_aliases": curated["dtype_aliases"], "dtypes": curated["dtypes"]}))
    parts.append(_dump({"namespaces": curated["namespaces"]}))
    parts.append(_dump({"memory_formats": curated["memory_formats"]}))
    parts.append(_dump({"compile": curated["compile"]}))
    parts.append(_render_ops(groups))
    return "\n\n".join(p.rstrip() for p in parts) + "\n"


def _dump(data: Any) -> str:
    return yaml.safe_dump(data, sort_keys=False, width=100, allow_unicode=True)


def _render_ops(groups: list[Group]) -> str:
    lines = ["# Per-op status, grouped by the evidence behind it.", "ops:"]
    for group in groups:
        lines.append(f"  # --- {group.name}: {len(group.ops)} ops, {group.status}")
        body = {"group": group.name, "status": group.status, "source": group.source}
        if group.note:
            body["note"] = group.note
        chunk = _dump([body]).rstrip().splitlines()
        lines += ["  " + line for line in chunk]
        lines.append("    ops:")
        for op, note in group.ops.items():
            if note:
                lines.append(f"      - {{op: {op}, note: {json.dumps(note)}}}")
            else:
                lines.append(f"      - {op}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=COMMAND, description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=resources.matrix_dir())
    args = parser.parse_args(argv)
    root = resources.matrix_dir()
    snapshot = json.loads((root / SNAPSHOT_FILE).read_text(encoding="utf-8"))
    curated = yaml.safe_load((root / CURATED_FILE).read_text(encoding="utf-8"))
    torch_version, ops = read_torch_ops()
    minor = ".".join(torch_version.split(".")[:2])
    api_map = root / "api_map" / f"torch-{minor}.yaml"
    calls: dict[str, list[str]] = {}
    if api_map.is_file():
        calls = yaml.safe_load(api_map.read_text(encoding="utf-8")).get("composite_calls", {})
        calls = {normalize_op(k): [normalize_op(c) for c in v] for k, v in calls.items()}
    else:
        print(f"note: {api_map} missing; composite kernels left to the default", file=sys.stderr)
    groups = Classifier(snapshot, curated, ops).run(calls)
    for version, spec in curated["versions"].items():
        text = render(version, spec, curated, groups, torch_version)
        (args.out / f"{version}.yaml").write_text(text, encoding="utf-8")
        print(f"wrote {args.out / f'{version}.yaml'}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
