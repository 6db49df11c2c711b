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
  really runs;
- torch's ``native_functions.yaml`` (shipped in ``torchgen``): the ``structured_delegate`` of
  each structured functional/in-place overload. A backend without its own kernel for
  ``aten::any.dim`` runs torch's CompositeExplicitAutogradNonFunctional kernel for it, which
  allocates the result and calls the delegate ``aten::any.out``.

The versions of one Neuron release are written from the same evidence; only the version and the
torch pairing differ. A version with a `release` (2.13.3.1 and 2.14.3.1: Neuron 2.34) adds that
release's evidence, op groups, API rows and unknowns from ``curated.yaml`` to the shared ones.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from neuron_migrate import resources
from neuron_migrate.matrix.names import normalize_op
from neuron_migrate.matrix.writer import Group, dump_yaml, render_ops
from neuron_migrate.yaml_data import load_yaml

SNAPSHOT_FILE = "sources/dev-snapshot-2026-04-registered-ops.json"
CURATED_FILE = "sources/curated.yaml"
COMMAND = "python -m neuron_migrate.matrix.importer"
_RANK = {"native": 0, "cpu_fallback": 1, "unsupported": 2}
_CEANF = "CompositeExplicitAutogradNonFunctional"
_BY_BASE = "dev-snapshot registered by base name"
# What torch's CompositeExplicitAutogradNonFunctional kernel of a structured functional overload
# calls besides its out= delegate: the allocation of the result.
_ALLOCATION = ("aten::empty.memory_format", "aten::empty_strided")
# What torch calls to copy between the host and a PrivateUse1 device; no CPU kernel of its own.
_TRANSFER = "aten::_copy_from"
# The kernels torch runs an op with on the host, as the simulated device asks for them.
_HOST_KEYS = (
    "CPU",
    "CompositeExplicitAutograd",
    "CompositeExplicitAutogradNonFunctional",
    "CompositeImplicitAutograd",
)
_DEVICE_HANDLED = frozenset({_TRANSFER, "aten::_copy_from_and_resize", "aten::record_stream"})
# A registered op torch has no host kernel for (CUDA- or MKLDNN-only): native on the snapshot's
# word, which nothing here can check.
_NOT_SIMULATED = (
    "no CPU kernel in the torch this file was generated with (only CUDA/MKLDNN/MPS ones): the "
    "simulated device, which runs each op with torch's CPU kernel, cannot run it "
    "(NeuronNotSimulatedError), so its status rests on the dev snapshot's registration alone"
)
_APIS_COMMENT = "# Public APIs the release names (what `matrix import` writes for table rows)."


@dataclass
class TorchOps:
    """What the installed torch's dispatcher says about every aten/c10d op overload."""

    names: set[str]
    kernels: dict[str, set[str]]
    views: set[str]
    # structured functional/in-place overload -> the out= overload its generic kernel calls
    delegates: dict[str, str] = field(default_factory=dict)

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
    "QuantizedCPU",
)


def read_torch_ops() -> tuple[str, TorchOps]:
    import torch
    import torch.distributed

    # Registers the rest of the functional collectives (_c10d_functional::_wrap_tensor_autograd,
    # which DTensor calls): without it the op universe would depend on what was imported before.
    import torch.distributed._functional_collectives

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
    return torch.__version__.split("+")[0], TorchOps(names, kernels, views, read_delegates(names))


def read_delegates(names: set[str]) -> dict[str, str]:
    """``structured_delegate`` of every structured overload, from the installed torchgen."""
    try:
        import torchgen
    except ImportError:
        print("note: torchgen missing; structured variants left to the default", file=sys.stderr)
        return {}
    path = Path(torchgen.__file__).parent / "packaged/ATen/native/native_functions.yaml"
    entries = load_yaml(path.read_text(encoding="utf-8"))
    result = {}
    for entry in entries:
        delegate = entry.get("structured_delegate")
        if delegate:
            op = normalize_op("aten::" + entry["func"].split("(", 1)[0])
            if op in names:
                result[op] = normalize_op(f"aten::{delegate}")
    return result


# --- classification ---------------------------------------------------------------------------


class Classifier:
    def __init__(self, snapshot: dict[str, Any], curated: dict[str, Any], ops: TorchOps) -> None:
        self.snapshot = snapshot
        self.curated = curated
        self.t = ops
        self.primary: dict[str, tuple[str, str]] = {}  # op -> (status, group name)
        self.groups: list[Group] = []
        self.reached: dict[str, list[str]] = {}  # generic-kernel op -> what it reaches

    def add(self, group: Group) -> None:
        for op in group.ops:
            if op in self.primary:
                raise SystemExit(f"{op} classified twice ({self.primary[op][1]}, {group.name})")
            self.primary[op] = (group.status, group.name)
        if group.ops:
            self.groups.append(group)

    def run(self, composite_calls: dict[str, list[str]]) -> list[Group]:
        self.registered()
        self.explicit_fallbacks()
        self.distributed()
        self.fft_kernels()
        self.quantized()
        self.unsupported_families()
        self.without_cpu_kernels()
        self.device_agnostic_views(composite_calls)
        self.generic_kernels(composite_calls)
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
            _BY_BASE,
            "native",
            "dev-snapshot-registered",
            "Registered under a bare name that is not an overload in this torch (for example "
            "aten::eq, which only has eq.Scalar/eq.Tensor); read as covering every overload of "
            "the name, which is what the loader's base-name lookup does.",
        )
        for op in reg:
            if op in self.t.names:
                exact.ops[op] = "" if self._host_runs(op) else _NOT_SIMULATED
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

    def fft_kernels(self) -> None:
        fft = self.curated["fft_aten"]
        self.add(
            Group(
                "fft kernels and transforms",
                fft["status"],
                fft["source"],
                fft["note"],
                {op: "" for op in self._fft_ops(fft) if op not in self.primary},
            )
        )

    def quantized(self) -> None:
        """Quantized operator variants, which the released table's description calls N: named
        for quantized tensors, or with a kernel for them only (``aten::eq.Tensor`` has a
        QuantizedCPU kernel too, but is a dense op)."""
        spec = self.curated["quantized_aten"]
        ops = {
            op: ""
            for op in sorted(self.t.names)
            if op.startswith("aten::")
            and op not in self.primary
            and (_quantized_name(op) or self._only_under(op, ("QuantizedCPU",)))
        }
        self.add(
            Group("quantized operator variants", "unsupported", spec["source"], spec["note"], ops)
        )

    def unsupported_families(self) -> None:
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

    def without_cpu_kernels(self) -> None:
        """Ops the generic CPU fallback cannot run: no kernel for the CPU, nor a device-agnostic
        one (the transfer `aten::_copy_from` aside, which every backend implements)."""
        ops = {
            op: ""
            for op in sorted(self.t.names)
            if op.startswith("aten::")
            and op not in self.primary
            and op != _TRANSFER
            and not self.t.kernels.get(op)
        }
        self.add(
            Group(
                "ops without a CPU kernel",
                "unsupported",
                "torch-no-cpu-kernel",
                "The generic CPU fallback redispatches to the CPU kernel, which these ops lack.",
                ops,
            )
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

    def _host_runs(self, op: str) -> bool:
        """Whether torch can run `op` on the host (a CPU or device-agnostic kernel), as the
        simulated device does; the transfers and record_stream it implements itself."""
        return op in _DEVICE_HANDLED or any(self.t.has(op, key) for key in _HOST_KEYS)

    def _only_under(self, op: str, keys: tuple[str, ...]) -> bool:
        mine = self.t.kernels.get(op, set())
        dense = {
            "CPU",
            "CompositeExplicitAutograd",
            "CompositeExplicitAutogradNonFunctional",
            "CompositeImplicitAutograd",
        }
        return bool(mine & set(keys)) and not (mine & dense)

    def device_agnostic_views(self, calls: dict[str, list[str]]) -> None:
        # aten::lift_fresh returns its input; aten::alias builds the alias without dispatching.
        ops = {
            op: "seen to call no other op" if calls.get(op) == [] else ""
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

    def generic_kernels(self, calls: dict[str, list[str]]) -> None:
        """Ops with no device kernel of their own that run one of torch's generic kernels.

        Two kinds, classified together because they call each other:

        - structured functional/in-place overloads (``aten::any.dim``): torch's
          CompositeExplicitAutogradNonFunctional kernel allocates the result and calls the
          ``structured_delegate`` (``aten::any.out``);
        - ops whose only kernel is CompositeExplicitAutograd(NonFunctional) or a
          CompositeImplicitAutograd decomposition, by what that kernel was seen to call.

        Each gets the worst status of what it reaches, where a reached op's status is the one the
        finished matrix gives it (exact entry, base name with the unregistered-overload rule, or
        the default), never better.
        """
        by_base = {op for op, (_, group) in self.primary.items() if group == _BY_BASE}
        structured: dict[str, list[str]] = {}
        for op, delegate in sorted(self.t.delegates.items()):
            if op in self.primary or _base(op) in by_base or not self.t.has(op, _CEANF):
                continue
            inplace = _base(op).endswith("_")
            structured[op] = [delegate] if inplace else [*_ALLOCATION, delegate]
        composite: dict[str, list[str]] = {}
        for op in sorted(calls):
            if op in self.primary or op in structured or not op.startswith("aten::"):
                continue
            generic = any(
                self.t.has(op, k)
                for k in ("CompositeExplicitAutograd", _CEANF, "CompositeImplicitAutograd")
            )
            if generic and not self.t.has(op, "CPU"):
                composite[op] = calls[op]
        reached = {**composite, **structured}
        resolve = _Resolver(self, reached, by_base, self.curated["default"]["status"])

        groups: dict[tuple[str, str], Group] = {}
        for kind, source, label, note in (
            (
                "structured",
                "torch-structured-out-redispatch",
                "structured variants whose out= overload is {s}",
                "No device kernel for this functional/in-place overload: torch's "
                "CompositeExplicitAutogradNonFunctional kernel runs, allocates the result on the "
                "device and calls the out= overload (its structured_delegate), which decides the "
                "status.",
            ),
            (
                "composite",
                "torch-composite-reach",
                "device-agnostic kernels that reach {s} ops",
                "torch's generic kernel (CompositeExplicitAutograd(NonFunctional), or a "
                "CompositeImplicitAutograd decomposition) runs on any backend by calling other "
                "ops; the status is the worst of the ops it was seen to call.",
            ),
        ):
            for s in _RANK:
                name = label.format(s=s)
                if kind == "composite" and s == "native":
                    name = "device-agnostic kernels that reach only native ops"
                groups[kind, s] = Group(name, s, source, note)
        for op in sorted(reached):
            status, culprits = resolve(op)
            if op in structured:
                delegate = structured[op][-1]
                alloc = "" if len(structured[op]) == 1 else "allocates the result, "
                note = f"{alloc}calls {delegate} ({resolve(delegate)[0]})"
                groups["structured", status].ops[op] = note
            else:
                children = ", ".join(calls[op]) or "no other op (metadata only)"
                note = (
                    f"calls {children}"
                    if status == "native"
                    else f"calls {', '.join(culprits)} ({status})"
                )
                groups["composite", status].ops[op] = note
        for group in groups.values():
            self.add(group)
        self.reached = reached

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
            "dev-snapshot-unregistered",
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


class _Resolver:
    """Status of an op as the finished matrix will give it, while the generic kernels are placed.

    Mirrors the loader's lookup (exact, base name, listed overloads of a bare name, default) and
    the importer's last rule (an overload with its own CPU kernel does not inherit a native base
    name), so an op is never classified better than something it reaches.
    """

    def __init__(
        self, c: Classifier, reached: dict[str, list[str]], by_base: set[str], default: str
    ) -> None:
        self.c = c
        self.reached = reached
        self.by_base = by_base
        self.default = default
        self.memo: dict[str, tuple[str, tuple[str, ...]]] = {}
        self.stack: list[str] = []
        self.listed_by_base: dict[str, list[str]] = {}
        for op in [*c.primary, *reached]:
            self.listed_by_base.setdefault(_base(op), []).append(op)

    def __call__(self, op: str) -> tuple[str, tuple[str, ...]]:
        if op in self.c.primary:
            return self.c.primary[op][0], ()
        if op in self.memo:
            return self.memo[op]
        if op not in self.reached or op in self.stack:
            return self.inherited(op), ()
        self.stack.append(op)
        try:
            worst, culprits = "native", []
            for child in self.reached[op]:
                status = self(child)[0]
                if _RANK[status] > _RANK[worst]:
                    worst, culprits = status, [child]
                elif status == worst and status != "native" and child not in culprits:
                    culprits.append(child)
        finally:
            self.stack.pop()
        self.memo[op] = (worst, tuple(culprits))
        return self.memo[op]

    def known(self, op: str) -> bool:
        return op in self.c.primary or (op in self.reached and op not in self.stack)

    def inherited(self, op: str) -> str:
        """An op with no entry of its own: what the loader (and the last rule) will say."""
        base, dot, _ = op.partition(".")
        if dot:
            if not self.known(base):
                return self.default
            status = self(base)[0]
            if status == "native" and base not in self.by_base and self.c.t.has(op, "CPU"):
                return "cpu_fallback"  # listed by unregistered_overloads
            return status
        listed = [o for o in self.listed_by_base.get(base, []) if self.known(o)]
        statuses = {self(o)[0] for o in listed}
        return statuses.pop() if len(statuses) == 1 else self.default


SPARSE = ("SparseCPU", "SparseCsrCPU")
SPARSE_WORDS = ("sparse", "coalesce", "crow_", "ccol_", "_nnz", "_dimI", "_dimV")
# The accessors of a sparse tensor's parts, by name: "_indices" and "_values" as words would
# also take dense ops (`max_pool2d_with_indices`, `tril_indices`, `_nested_get_values`).
SPARSE_NAMES = {
    f"aten::{name}{copy}"
    for name in ("indices", "values", "_indices", "_values", "row_indices", "col_indices")
    for copy in ("", "_copy")
}


# Base names of the quantized-tensor accessors; "quantiz" in a name, less fake quantization,
# which takes and returns float tensors.
_QUANTIZED_NAME = re.compile(r"^aten::(q_\w+|int_repr|\w*quantiz\w*)$")


def _quantized_name(op: str) -> bool:
    base, _, overload = op.partition(".")
    if "fake_quantize" in base:
        return False
    return bool(_QUANTIZED_NAME.match(base)) or overload == "quantized"


def _base(op: str) -> str:
    return op.partition(".")[0]


def _named(op: str, words: tuple[str, ...]) -> bool:
    """Whether the op's base name (not its overload name) contains one of ``words``."""
    name = _base(op).split("::", 1)[1]
    return any(w in name for w in words)


# --- writing ----------------------------------------------------------------------------------


def for_release(
    spec: dict[str, Any], curated: dict[str, Any], groups: list[Group]
) -> tuple[dict[str, Any], list[Group]]:
    """The curated input and the op groups of one version: the shared ones, plus what its
    release adds (its groups take their ops out of the shared ones: an op is listed once)."""
    release = curated.get("releases", {}).get(spec.get("release", ""))
    if release is None:
        return curated, groups
    added = [
        Group(g["group"], g["status"], g["source"], g["note"], dict(_expand_plain(g["ops"])))
        for g in release.get("ops", [])
    ]
    taken = {op for g in added for op in g.ops}
    kept = []
    for group in groups:
        ops = {op: note for op, note in group.ops.items() if op not in taken}
        if ops:
            kept.append(Group(group.name, group.status, group.source, group.note, ops))
    merged = {
        **curated,
        "neuron_sdk": release["neuron_sdk"],
        "summary": release["summary"],
        "honesty_note": curated["honesty_note"] + release["honesty_note"],
        "evidence": {**curated["evidence"], **release["evidence"]},
        "unknowns": [*curated["unknowns"], *release.get("unknowns", [])],
        "apis": {**curated.get("apis", {}), **release.get("apis", {})},
    }
    return merged, [*kept, *added]


def _expand_plain(items: Iterable[Any]) -> Iterable[tuple[str, str]]:
    for item in items:
        yield (item["op"], item.get("note", "")) if isinstance(item, dict) else (item, "")


def render(
    version: str,
    spec: dict[str, Any],
    curated: dict[str, Any],
    groups: list[Group],
    torch_version: str,
) -> str:
    curated, groups = for_release(spec, curated, groups)
    header = [
        f"# TorchNeuron compatibility matrix for torch-neuronx {version} "
        f"(pairs with torch {spec['torch']}).",
        f"# GENERATED by `{COMMAND}` with torch {torch_version};",
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
        "evidence_shared_with": [
            v
            for v, other in curated["versions"].items()
            if v != version and other.get("release") == spec.get("release")
        ],
        "op_universe": f"aten/c10d overloads of torch {torch_version}",
    }
    parts = ["\n".join(header), dump_yaml(top)]
    parts.append("# Where every claim below comes from. Each group and rule names one key.")
    parts.append(dump_yaml({"evidence": curated["evidence"]}))
    parts.append(dump_yaml({"default": curated["default"]}))
    parts.append("# 64-bit dtypes: computed in 32 bits on the device.")
    parts.append(
        dump_yaml({"dtype_aliases": curated["dtype_aliases"], "dtypes": curated["dtypes"]})
    )
    parts.append(dump_yaml({"namespaces": curated["namespaces"]}))
    parts.append(dump_yaml({"memory_formats": curated["memory_formats"]}))
    parts.append(dump_yaml({"compile": curated["compile"]}))
    parts.append("# What the released behaviour does not settle (said, not guessed).")
    parts.append(dump_yaml({"unknowns": curated["unknowns"]}))
    if curated.get("apis"):
        parts.append(_APIS_COMMENT)
        parts.append(dump_yaml({"apis": curated["apis"]}))
    parts.append(render_ops(groups))
    return "\n\n".join(p.rstrip() for p in parts) + "\n"


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
