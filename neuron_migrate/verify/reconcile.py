"""`verify`: the static report reconciled with what a run on the simulated device did.

Each static finding about an op, a dtype, a namespace or a memory format gets one verdict:

- confirmed: the run reached the predicted aten ops from that source line (or, for an nn module
  or an optimizer, from that file: called there, or through a line of it that called into other
  user code and names the object, `utils.step(model, criterion)`) with the predicted status;
- contradicted: they ran with another status; the reason says which ops ran and how;
- not exercised: the run never executed that line (or never ran that module's ops).

Ops the run reached from a line of the scanned code that no finding predicted are listed too:
that is what the static analysis missed. torch_xla findings and advice (e.g. `dynamic=False`)
are not something a run can confirm; they are counted apart.

Run locations are matched to findings by absolute file and line. Pure Python, no torch.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from neuron_migrate.api import ScanReport
from neuron_migrate.scan.analyzer.overloads import DEPENDS
from neuron_migrate.scan.findings import Finding
from neuron_migrate.verify.bindings import Bindings

VERIFIABLE_CATEGORIES = frozenset({"op", "dtype", "namespace", "memory_format", "compile"})
_RANK = {"native": 0, "cpu_fallback": 1, "unsupported": 2}

Location = tuple[str, int]  # (absolute path, line)


@dataclass(frozen=True)
class Reconciled:
    finding: Finding
    verdict: str  # "confirmed" | "contradicted" | "not_exercised"
    observed: str | None  # the status the run showed, if it reached the site
    reason: str
    ops: tuple[str, ...] = ()  # the ops the run reached for this finding


@dataclass(frozen=True)
class Unpredicted:
    op: str
    status: str
    location: str  # path relative to the scanned root, ":line"
    count: int


@dataclass
class VerifyReport:
    scan: ScanReport
    trace: Mapping[str, Any]
    items: list[Reconciled] = field(default_factory=list)
    unpredicted: list[Unpredicted] = field(default_factory=list)
    not_verifiable: list[Finding] = field(default_factory=list)

    def count(self, verdict: str) -> int:
        return sum(1 for item in self.items if item.verdict == verdict)

    @property
    def agreement(self) -> float | None:
        """confirmed / (confirmed + contradicted); None when the run exercised nothing."""
        decided = self.count("confirmed") + self.count("contradicted")
        return self.count("confirmed") / decided if decided else None

    @property
    def exit_code(self) -> int:
        return int(self.trace.get("exit_code", 0))

    @property
    def run_failure(self) -> str | None:
        """Why the run's non-zero exit is no agreement; None when it exited 0 or stopped where
        the report said it would (a refusal it predicted and the run confirmed)."""
        code = self.exit_code
        if code == 0:
            return None
        refused = bool(self.trace.get("refusals")) or bool(compile_refusals(self.trace))
        if refused and any(
            item.verdict == "confirmed" and item.observed == "unsupported" for item in self.items
        ):
            return None  # it stopped on a refusal the report predicted
        ran = bool(self.trace.get("ops")) or bool(self.trace.get("refusals"))
        when = "" if ran else " before any op ran on the device (at import or start-up)"
        return (
            f"the command exited {code}{when}, and the report did not predict it: "
            "the run did not test the report"
        )


def _base(op: str) -> str:
    """`aten::sort.stable` -> `aten::sort`: overloads of one op count as the same op."""
    namespace, sep, name = op.partition("::")
    if not sep:
        return op  # a refused Python API, e.g. torch.distributions.Normal
    return f"{namespace}::{name.split('.')[0]}"


def _parse_location(location: str | None, cwd: Path) -> Location | None:
    if not location:
        return None
    path, sep, line = location.rpartition(":")
    if not sep or not line.isdigit():
        return None
    file = Path(path)
    if not file.is_absolute():
        file = cwd / file
    return (str(file.resolve()), int(line))


def _add_status(statuses: dict[str, str], base: str, status: str) -> None:
    """Keep the worst status each base op ran with."""
    if _RANK.get(status, 0) >= _RANK.get(statuses.get(base, status), 0):
        statuses[base] = status


def _op_locations(entry: Mapping[str, Any]) -> dict[str, int]:
    """Where an op ran: the trace's sampled `locations`, else its first location."""
    locations = entry.get("locations")
    if locations:
        return dict(locations)
    first = entry.get("first_location")
    return {first: entry.get("count", 1)} if first else {}


@dataclass
class _RunIndex:
    """The run trace, indexed by source line."""

    ops_at: dict[Location, dict[str, str]] = field(default_factory=lambda: defaultdict(dict))
    counts: dict[tuple[Location, str], int] = field(default_factory=lambda: defaultdict(int))
    ops_anywhere: dict[str, str] = field(default_factory=dict)  # base op -> worst status
    # file -> base op -> worst status, for ops whose innermost user frame is in that file
    ops_in_file: dict[str, dict[str, str]] = field(default_factory=lambda: defaultdict(dict))
    # (file, base op) -> line -> worst status, for the lines of that file that called into the
    # user code that called the op (the trace's `callers`)
    through: dict[tuple[str, str], dict[int, str]] = field(
        default_factory=lambda: defaultdict(dict)
    )
    downcasts_at: set[Location] = field(default_factory=set)
    refusals_at: dict[Location, list[str]] = field(default_factory=lambda: defaultdict(list))

    @classmethod
    def build(cls, trace: Mapping[str, Any], cwd: Path) -> _RunIndex:
        index = cls()
        for entry in trace.get("ops", []):
            op, status = entry["op"], entry["status"]
            base = _base(op)
            previous = index.ops_anywhere.get(base)
            if previous is None or _RANK.get(status, 0) > _RANK.get(previous, 0):
                index.ops_anywhere[base] = status
            for location, count in _op_locations(entry).items():
                where = _parse_location(location, cwd)
                if where is not None:
                    index.ops_at[where][op] = status
                    index.counts[(where, op)] += count
                    _add_status(index.ops_in_file[where[0]], base, status)
            # A line that called into other code ran none of these ops itself: it never counts
            # for its line's findings, only for the objects it hands over (`module`).
            for location in entry.get("callers") or {}:
                where = _parse_location(location, cwd)
                if where is not None:
                    lines = index.through[(where[0], base)]
                    lines[where[1]] = _worst([status, lines.get(where[1], status)])
        for entry in trace.get("downcasts", []):
            for location in _op_locations(entry):
                where = _parse_location(location, cwd)
                if where is not None:
                    index.downcasts_at.add(where)
        for refusal in [*trace.get("refusals", []), *compile_refusals(trace)]:
            where = _parse_location(refusal.get("location"), cwd)
            if where is not None:
                index.refusals_at[where].append(refusal["op"])
                index.ops_at[where].setdefault(refusal["op"], "unsupported")
        return index


def compile_refusals(trace: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The ops a failed neuron compile could not lower, each with the user line it came from:
    the records the runtime keeps per refused graph (`compile.graphs[].refused`), never its
    message, whose wording is for people."""
    return [
        refusal
        for graph in (trace.get("compile") or {}).get("graphs", [])
        if not graph.get("ok", True)
        for refusal in graph.get("refused") or []
        if refusal.get("kind") == "no_lowering" and refusal.get("op")
    ]


def _worst(statuses: Iterable[str]) -> str:
    return max(statuses, key=lambda s: _RANK.get(s, 0), default="native")


class _Reconciler:
    def __init__(self, scan: ScanReport, trace: Mapping[str, Any], cwd: Path) -> None:
        self.root = Path(scan.root).resolve()
        if self.root.is_file():
            self.root = self.root.parent
        self.index = _RunIndex.build(trace, cwd)
        self.bindings = Bindings()
        self.predicted: dict[Location, set[str]] = defaultdict(set)  # base ops per line
        # Ops a finding on the line was reconciled through (its API's decomposition), per line.
        self.decomposed: dict[Location, set[str]] = defaultdict(set)

    def where(self, finding: Finding) -> Location:
        return (str((self.root / finding.path).resolve()), finding.line)

    def reconcile(self, finding: Finding, is_module: bool) -> Reconciled:
        if finding.category == "op":
            return self.module(finding) if is_module else self.op(finding)
        if finding.category == "dtype":
            return self.dtype(finding)
        return self.refusal(finding)  # namespace, memory_format, compile dynamic=True

    def op(self, finding: Finding) -> Reconciled:
        ran = self.index.ops_at.get(self.where(finding), {})
        if not ran:
            return Reconciled(finding, "not_exercised", None, "the run never reached this line")
        wanted = {_base(op) for op in finding.aten}
        matched = {op: status for op, status in ran.items() if _base(op) in wanted}
        if matched:
            observed = _worst(matched.values())
            ops = tuple(sorted(matched))
            if DEPENDS in finding.message and finding.confidence == "low":
                # the scan named each pattern the call may be: any of them is agreement
                reason = f"ran {', '.join(ops)} ({observed}), one of the patterns it named"
                return Reconciled(finding, "confirmed", observed, reason, ops)
            if observed == finding.status:
                return Reconciled(finding, "confirmed", observed, f"ran {', '.join(ops)}", ops)
            return Reconciled(
                finding,
                "contradicted",
                observed,
                "predicted "
                + finding.status
                + ", ran "
                + ", ".join(f"{op} ({status})" for op, status in sorted(matched.items())),
                ops,
            )
        # Ops of this line that no finding on it predicts: the candidates for this API's
        # decomposition. If there are none, the line's device ops belong to its other calls.
        explained = self.predicted.get(self.where(finding), set())
        ran = {op: status for op, status in ran.items() if _base(op) not in explained}
        if not ran:
            return Reconciled(
                finding,
                "not_exercised",
                None,
                "its ops did not run on the device here (the line's device ops belong to its "
                "other calls)",
            )
        observed_statuses = set(ran.values())
        ops = tuple(sorted(ran))
        self.decomposed[self.where(finding)].update(_base(op) for op in ops)
        if finding.status in observed_statuses:
            return Reconciled(
                finding,
                "confirmed",
                finding.status,
                f"the line ran {finding.status} ops through other aten ops ({', '.join(ops)})",
                ops,
            )
        observed = _worst(observed_statuses)
        return Reconciled(
            finding,
            "contradicted",
            observed,
            f"the line reached {', '.join(ops)} ({observed}), not {', '.join(finding.aten)}: "
            "a decomposition or an argument form the API map did not see",
            ops,
        )

    def module(self, finding: Finding) -> Reconciled:
        # A module's ops run where it is called, not where it is built: match them against the
        # ops that ran from its file (a module built and used there, a custom module's forward,
        # an optimizer stepped there), never against the whole run, in which a file that was
        # never imported would find its ops too. Other code runs the same common ops, so only
        # the ops that give the finding its status (its fallback or unsupported ops) confirm it.
        file = self.where(finding)[0]
        in_file = dict(self.index.ops_in_file.get(file, {}))
        wanted = {_base(op) for op in finding.aten}
        through = self.handed_over(finding, file, wanted)
        for base, lines in through.items():
            for status in lines.values():
                _add_status(in_file, base, status)
        ran = {base: in_file[base] for base in wanted if base in in_file}
        if not ran:
            elsewhere = sorted(base for base in wanted if base in self.index.ops_anywhere)
            reason = "none of its ops ran" + (
                f" from this file (only from others: {', '.join(elsewhere)})" if elsewhere else ""
            )
            return Reconciled(finding, "not_exercised", None, reason)
        decisive = (
            ran
            if finding.status == "native"
            else {op: status for op, status in ran.items() if status == finding.status}
        )
        if not decisive:
            return Reconciled(
                finding,
                "not_exercised",
                None,
                f"its {finding.status} ops did not run (only {', '.join(sorted(ran))}, which "
                "other code runs too)",
            )
        ops = tuple(sorted(decisive))
        reason = f"its ops ran where it was used ({finding.status}): {', '.join(ops)}"
        calling = sorted({n for op in ops for n in through.get(op, ())})
        if calling:
            shown = ", ".join(f"{finding.path}:{n}" for n in calling)
            reason += f", through {shown} (calls into other code)"
        return Reconciled(finding, "confirmed", finding.status, reason, ops)

    def handed_over(
        self, finding: Finding, file: str, wanted: set[str]
    ) -> dict[str, dict[int, str]]:
        """Base op -> {line: status} for the lines of the finding's file that called into other
        user code which ran the op, and that hand the finding's object over: the line that
        builds it, or a statement naming what it is bound to. (The main script calls into
        every op of a run: its file alone says nothing.)"""
        name = self.bindings.bound_name(file, finding.line)
        out: dict[str, dict[int, str]] = {}
        for base in wanted:
            for line, status in self.index.through.get((file, base), {}).items():
                if line == finding.line or (
                    name is not None and name in self.bindings.names_on(file, line)
                ):
                    out.setdefault(base, {})[line] = status
        return out

    def dtype(self, finding: Finding) -> Reconciled:
        where = self.where(finding)
        if where in self.index.downcasts_at:
            return Reconciled(finding, "confirmed", "float64", "float64 computed as float32 here")
        if where in self.index.ops_at:
            return Reconciled(
                finding,
                "contradicted",
                "native",
                "the line ran on the device but made no float64 tensor there",
            )
        return Reconciled(finding, "not_exercised", None, "the run never reached this line")

    def refusal(self, finding: Finding) -> Reconciled:
        where = self.where(finding)
        refused = self.index.refusals_at.get(where)
        if refused:
            observed = "unsupported"
            verdict = "confirmed" if finding.status == "unsupported" else "contradicted"
            return Reconciled(finding, verdict, observed, f"refused: {', '.join(refused)}")
        ran = self.index.ops_at.get(where)
        if ran:
            observed = _worst(ran.values())
            verdict = "confirmed" if observed == finding.status else "contradicted"
            return Reconciled(
                finding, verdict, observed, f"ran without a refusal: {', '.join(sorted(ran))}"
            )
        return Reconciled(finding, "not_exercised", None, "the run never reached this line")

    def unpredicted(self, predicted_anywhere: set[str]) -> list[Unpredicted]:
        """Ops that ran from a line of the scanned tree and that no finding accounts for: not
        predicted at that line, nor reached there by a finding's API through other aten ops
        (`torch.randn` runs `aten::normal_`), nor by a module/optimizer finding (whose ops run
        anywhere)."""
        missed = []
        for where, ops in self.index.ops_at.items():
            path = Path(where[0])
            try:
                shown = path.relative_to(self.root).as_posix()
            except ValueError:
                continue  # outside the scanned tree
            wanted = (
                self.predicted.get(where, set())
                | self.decomposed.get(where, set())
                | predicted_anywhere
            )
            for op, status in ops.items():
                if _base(op) not in wanted:
                    count = self.index.counts.get((where, op), 0)
                    missed.append(Unpredicted(op, status, f"{shown}:{where[1]}", count))
        return sorted(missed, key=lambda u: (-_RANK.get(u.status, 0), u.location, u.op))


def runs_later(api: str) -> bool:
    """Objects whose ops run when they are used, not where they are built: nn modules,
    optimizers, schedulers -- any class (every nn module in the API map is one). Their findings
    are matched against the ops that ran from their file."""
    return api.rsplit(".", 1)[-1][:1].isupper()


def reconcile(
    scan: ScanReport,
    trace: Mapping[str, Any],
    *,
    cwd: Path,
) -> VerifyReport:
    """Reconcile a scan of the code that ran with the run's trace."""
    reconciler = _Reconciler(scan, trace, cwd)
    report = VerifyReport(scan=scan, trace=trace)
    verifiable = []
    for finding in sorted(scan.findings, key=lambda f: (f.path, f.line, f.col)):
        if finding.category not in VERIFIABLE_CATEGORIES or finding.status == "advice":
            report.not_verifiable.append(finding)
            continue
        verifiable.append(finding)
        bases = {_base(op) for op in finding.aten} | {finding.api}
        reconciler.predicted[reconciler.where(finding)].update(bases)
    predicted_anywhere: set[str] = set()
    for finding in verifiable:
        later = runs_later(finding.api)
        item = reconciler.reconcile(finding, later)
        report.items.append(item)
        if later and item.verdict != "not_exercised":
            predicted_anywhere.update(_base(op) for op in finding.aten)
    report.unpredicted = reconciler.unpredicted(predicted_anywhere)
    return report


def verify(
    path: str | Path,
    command: list[str],
    *,
    target: str | None = None,
    fail_on: tuple[str, ...] = (),
    jobs: int | None = None,
) -> VerifyReport:
    """Scan `path`, run `command` on the simulated device, and reconcile the two.

    This executes `command` by design.
    """
    from neuron_migrate import api
    from neuron_migrate.verify import runner

    scan_fail_on = tuple(v for v in fail_on if v != "contradiction")
    scan = api.scan(path, target=target, fail_on=scan_fail_on, jobs=jobs)
    # The device runs the matrix the scan read: a matrix file is named by its path.
    result = runner.run(command, scan.matrix_target or scan.target, stdout_to_stderr=True)
    return reconcile(scan, result.trace, cwd=Path.cwd())


def parse_verify_fail_on(values: Iterable[str]) -> tuple[tuple[str, ...], bool]:
    """Split verify's --fail-on into the scan gate's values and the `contradiction` switch."""
    names = [part.strip() for value in values for part in value.split(",") if part.strip()]
    return tuple(n for n in names if n != "contradiction"), "contradiction" in names


def gate_passed(report: VerifyReport, fail_on_contradiction: bool) -> bool:
    if report.run_failure is not None:
        return False  # a crash the report did not foresee is never agreement
    if fail_on_contradiction and report.count("contradicted"):
        return False
    return report.scan.passed
