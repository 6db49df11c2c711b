"""The records a compatibility matrix is made of, and the queries on it.

The records, and the matrix holding them, are named tuples (see `scan.records` for why
not frozen dataclasses). All pickle across a process pool. No torch here.
"""

from collections.abc import Iterable, Mapping
from typing import NamedTuple

from neuron_migrate.matrix.names import normalize_dtype, normalize_memory_format, normalize_op

OP_STATUSES: tuple[str, ...] = ("native", "cpu_fallback", "unsupported")
NAMESPACE_STATUSES: tuple[str, ...] = ("native", "cpu_fallback", "unsupported", "partial")

# How strong a source is, strongest first. Every evidence key names one; `matrix stats` counts
# entries by it. "unclassified" is what a matrix written before kinds existed gets.
EVIDENCE_KINDS: dict[str, str] = {
    "official-table": "the official per-API compatibility table of the release",
    "device-probe": "recorded on a device by `neuron-migrate matrix probe`",
    "released": "the released Neuron documentation (2.33; what could be read of 2.34)",
    "dev-snapshot": "a pre-release TorchNeuron snapshot (April 2026); the release may differ",
    "torch-inference": "inferred from torch's own dispatcher and kernels, not from TorchNeuron",
    "unverified": "a claim no retrieved text confirms (the project brief)",
    "assumed": "no source names it: the matrix default, an inference from absence",
    "unclassified": "a source without a kind",
}

# How sure a status is, surest first: what a finding, `matrix show` and the gate say. A source's
# kind gives its confidence unless the evidence says less (a released page from which an op list
# was inferred is `inferred`). Only a device (or the official table) confirms.
CONFIDENCES: dict[str, str] = {
    "confirmed": "the official table, or a probe recorded on a Neuron device",
    "released": "stated in released Neuron text",
    "dev-snapshot": "read from a pre-release snapshot; the release may differ",
    "inferred": "inferred (from torch's kernels, from an API the release names, from absence)",
    "unknown": "no source settles it",
}
KIND_CONFIDENCE: dict[str, str] = {
    "official-table": "confirmed",
    "device-probe": "confirmed",
    "released": "released",
    "dev-snapshot": "dev-snapshot",
    "torch-inference": "inferred",
    "unverified": "unknown",
    "assumed": "unknown",
    "unclassified": "unknown",
}


class Evidence(NamedTuple):
    """A source the matrix rests on: a derived op list, a docs page, the project brief."""

    key: str
    title: str
    reference: str
    note: str = ""
    kind: str = "unclassified"  # one of EVIDENCE_KINDS
    confidence: str = "unknown"  # one of CONFIDENCES, never above KIND_CONFIDENCE[kind]


class OpVerdict(NamedTuple):
    """What the matrix says about one op, and why (`source` is an evidence key)."""

    op: str
    status: str
    source: str
    note: str = ""


class OpEntry(NamedTuple):
    """One listed op: its status, the evidence key of its group, and an optional per-op note."""

    status: str
    source: str
    group: str
    note: str = ""


class DtypeRule(NamedTuple):
    dtype: str
    runs_as: str | None
    warn: bool
    source: str
    note: str = ""


class NamespaceRule(NamedTuple):
    """A rule for a whole Python namespace, e.g. ``torch.sparse``.

    A ``partial`` namespace names its ``supported`` and ``unsupported`` members; members in neither
    list take ``unlisted_status``.
    """

    namespace: str
    status: str
    source: str
    note: str = ""
    aliases: tuple[str, ...] = ()
    supported: tuple[str, ...] = ()
    unsupported: tuple[str, ...] = ()
    unlisted_status: str = "unsupported"


class NamespaceVerdict(NamedTuple):
    """The verdict for one qualified name under a namespace rule."""

    qualname: str
    namespace: str
    status: str
    source: str
    note: str = ""


class MemoryFormatRule(NamedTuple):
    name: str
    status: str
    source: str
    message: str = ""


class CompileRules(NamedTuple):
    backend: str
    dynamic_true_status: str
    requires_dynamic_false: bool
    modes_with_effect: tuple[str, ...]
    source: str
    note: str = ""
    # What another `mode=` gets: "warn" (logs a warning and runs as the default) or "refused".
    other_modes: str = "warn"
    # Whether a graph that fails to compile raises (True) or runs eagerly (False) by default,
    # and the environment variable and compile option that change it.
    failure_raises: bool = True
    fallback_env: str = ""
    fallback_option: str = ""
    # The eager statuses whose ops have no lowering in a compiled graph: one of them fails the
    # graph's compile (the other ops are lowered with the graph, fallbacks included).
    graph_refuses: tuple[str, ...] = ("unsupported",)


class ApiEntry(NamedTuple):
    """One public API's row in an imported official table (`apis:` in the matrix file).

    `kind` is the table's sub-kind of `Y`: native, host_only or needs_process_group; empty
    for `CPU_FALLBACK` and `N` rows. `ops` names the ATen ops a `CPU_FALLBACK` row gives, and
    `dtypes` the dtypes it says are affected (empty: all).
    """

    status: str
    source: str
    kind: str = ""
    ops: tuple[str, ...] = ()
    dtypes: tuple[str, ...] = ()
    note: str = ""


class Unknown(NamedTuple):
    """Something the released behaviour does not settle, said instead of guessed."""

    topic: str
    note: str


class Matrix(NamedTuple):
    """One torch-neuronx version's compatibility matrix, loaded and validated."""

    version: str
    torch_version: str
    path: str
    evidence: Mapping[str, Evidence]
    ops: Mapping[str, OpEntry]
    default: OpVerdict
    dtypes: tuple[DtypeRule, ...]
    dtype_aliases: Mapping[str, str]
    namespaces: tuple[NamespaceRule, ...]
    memory_formats: tuple[MemoryFormatRule, ...]
    compile: CompileRules
    summary: str = ""
    # base name -> listed overloads, built once; used when a query names no overload.
    by_base: Mapping[str, tuple[str, ...]] = {}  # read, never changed
    # Rows of an imported official per-API table, by qualified name (empty for the bundled ones).
    apis: Mapping[str, ApiEntry] = {}  # read, never changed
    unknowns: tuple[Unknown, ...] = ()

    # --- ops -------------------------------------------------------------------------------

    def op_status(self, op: str) -> OpVerdict:
        """Status of an op: the exact overload, then its base name, then the matrix default.

        Accepts ``aten::add.Tensor``, ``aten::sort``, ``aten.sort.default``, ``c10d::allreduce_``.
        A query without an overload that is not listed itself takes the status of its listed
        overloads when they all agree (``aten::add`` -> ``aten::add.Tensor``, ``aten::add.out``).
        """
        name = normalize_op(op)
        entry = self.ops.get(name)
        if entry is not None:
            return OpVerdict(name, entry.status, entry.source, entry.note)
        base, _, overload = name.partition(".")
        if overload:
            entry = self.ops.get(base)
            if entry is not None:
                note = f"no entry for this overload; status of {base}"
                return OpVerdict(name, entry.status, entry.source, note)
        else:
            listed = self.by_base.get(base, ())
            statuses = {self.ops[o].status for o in listed}
            if len(statuses) == 1:
                first = self.ops[listed[0]]
                note = f"status of its listed overloads: {', '.join(listed)}"
                return OpVerdict(name, first.status, first.source, note)
        return OpVerdict(name, self.default.status, self.default.source, self.default.note)

    def is_listed(self, op: str) -> bool:
        return normalize_op(op) in self.ops

    def overloads_of(self, op: str) -> tuple[str, ...]:
        """Listed overloads sharing the base name of ``op`` (``aten::add`` -> add.Tensor, ...)."""
        return self.by_base.get(normalize_op(op).partition(".")[0], ())

    def ops_with_status(self, status: str) -> tuple[str, ...]:
        return tuple(sorted(name for name, e in self.ops.items() if e.status == status))

    def evidence_kind(self, source: str) -> str:
        evidence = self.evidence.get(source)
        return evidence.kind if evidence is not None else "unclassified"

    def confidence(self, source: str) -> str:
        """How sure a status resting on the evidence key `source` is (one of CONFIDENCES)."""
        evidence = self.evidence.get(source)
        return evidence.confidence if evidence is not None else "unknown"

    def surest(self, sources: Iterable[str]) -> str:
        """The surest confidence among `sources`: a verdict several sources give is as sure
        as the best of them ("unknown" for none)."""
        order = list(CONFIDENCES)
        return min((self.confidence(s) for s in sources), key=order.index, default="unknown")

    def api_status(self, qualname: str) -> ApiEntry | None:
        """The imported table's row for a public API (``torch.sort``), if the matrix has one."""
        return self.apis.get(qualname)

    def api_lifts_namespace(self, qualname: str) -> bool:
        """Whether a Y row names this API (or the class or function it belongs to:
        ``torch.distributions.Normal.sample`` under ``torch.distributions.Normal``): the
        table's word on that API wins over the rule for its whole namespace."""
        name = qualname
        while name:
            row = self.apis.get(name)
            if row is not None:
                return row.status != "unsupported"
            name = name.rpartition(".")[0]
        return False

    def dtype_fallbacks(self, op: str) -> tuple[str, ...]:
        """The dtypes for which an imported table says `op` falls back, where it names them
        (``aten::add.Tensor`` falls back for float64): the op's status is for the others."""
        name = normalize_op(op)
        return tuple(
            dtype
            for row in self.apis.values()
            if row.status == "cpu_fallback" and name in row.ops
            for dtype in row.dtypes
        )

    def status_counts(self) -> dict[str, int]:
        counts = dict.fromkeys(OP_STATUSES, 0)
        for entry in self.ops.values():
            counts[entry.status] += 1
        return counts

    # --- rules -----------------------------------------------------------------------------

    def dtype_rule(self, dtype: str) -> DtypeRule | None:
        name = normalize_dtype(dtype)
        name = self.dtype_aliases.get(name, name)
        for rule in self.dtypes:
            if rule.dtype == name:
                return rule
        return None

    def namespace_rule(self, qualname: str) -> NamespaceRule | None:
        for rule in self.namespaces:
            for prefix in (rule.namespace, *rule.aliases):
                if qualname == prefix or qualname.startswith(prefix + "."):
                    return rule
        return None

    def namespace_status(self, qualname: str) -> NamespaceVerdict | None:
        """Verdict for a name under a namespace rule; None when no rule covers it (``torch.add``).

        For a partial namespace (``torch.fft``) a member gets ``native`` or ``unsupported`` from
        the rule's lists, and the note says the namespace is partial.
        """
        rule = self.namespace_rule(qualname)
        if rule is None or self.api_lifts_namespace(qualname):
            return None
        if rule.status != "partial":
            return NamespaceVerdict(qualname, rule.namespace, rule.status, rule.source, rule.note)
        member = _member(qualname, rule)
        if member is None:
            return NamespaceVerdict(qualname, rule.namespace, "partial", rule.source, rule.note)
        if member in rule.supported:
            status, why = "native", "listed as supported"
        elif member in rule.unsupported:
            status, why = "unsupported", "listed as unsupported"
        else:
            status, why = rule.unlisted_status, "not listed"
        note = f"{rule.namespace} is partial; {member} is {why}. {rule.note}".strip()
        return NamespaceVerdict(qualname, rule.namespace, status, rule.source, note)

    def memory_format_status(self, name: str) -> MemoryFormatRule | None:
        key = normalize_memory_format(name)
        for rule in self.memory_formats:
            if rule.name == key:
                return rule
        return None


def _member(qualname: str, rule: NamespaceRule) -> str | None:
    for prefix in (rule.namespace, *rule.aliases):
        if qualname.startswith(prefix + "."):
            return qualname[len(prefix) + 1 :].split(".")[0]
    return None
