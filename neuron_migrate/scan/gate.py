"""The CI gate: which findings fail the build (`--fail-on`)."""

from __future__ import annotations

from collections.abc import Iterable

from neuron_migrate.errors import UsageError
from neuron_migrate.scan.findings import Finding

# A cpu_fallback whose evidence is only inferred or unknown (an op no source names is assumed to
# fall back): the gate counts it apart and fails on it under `fallback` only with `strict`. A
# fallback is a matter of speed, and failing a build on an inference from absence is noise. An
# unsupported finding fails whatever its evidence: being wrong there costs a look, not a broken run.
UNSURE_EVIDENCE = frozenset({"inferred", "unknown"})
UNSURE_FALLBACK = "cpu_fallback:unsure"

# Each --fail-on value and the finding statuses it fails on.
FAIL_ON: dict[str, frozenset[str]] = {
    "unsupported": frozenset({"unsupported"}),
    "fallback": frozenset({"unsupported", "cpu_fallback"}),
    "float64": frozenset({"unsupported", "float64"}),
    "xla": frozenset({"unsupported", "xla", "error"}),
    "any": frozenset(
        {"unsupported", "cpu_fallback", UNSURE_FALLBACK, "float64", "xla", "advice", "error"}
    ),
    "error": frozenset({"error"}),
    "strict": frozenset(),  # with fallback: the unsure fallbacks fail too
    "none": frozenset(),
}
# The status a file that could not be scanned fails the gate with (`--fail-on error`, and `xla`
# and `any`): one that could not be read, decoded or parsed after the prefilter saw torch or
# xla in it (or whose bytes were never read) may hide findings. A binary file or a symlink
# loop is no source, and fails nothing.
ERROR_STATUS = "error"
HIDING_ERRORS = frozenset({"syntax", "encoding", "unreadable", "too_large", "internal", "timeout"})
DEFAULT_FAIL_ON = ("unsupported",)


def parse_fail_on(values: Iterable[str]) -> frozenset[str]:
    """Union of the statuses the given --fail-on values fail on (values may be comma-joined)."""
    statuses: set[str] = set()
    values = list(values)
    if any(not value.strip() for value in values):
        raise UsageError(f"--fail-on: empty value; choose from {', '.join(FAIL_ON)}")
    names = [part.strip() for value in values for part in value.split(",") if part.strip()]
    for name in names or DEFAULT_FAIL_ON:
        if name not in FAIL_ON:
            raise UsageError(f"--fail-on: unknown value {name!r}; choose from {', '.join(FAIL_ON)}")
        statuses |= FAIL_ON[name]
    if "none" in names and len(set(names)) > 1:
        raise UsageError("--fail-on: 'none' cannot be combined with other values")
    if "strict" in names and "cpu_fallback" in statuses:
        statuses.add(UNSURE_FALLBACK)
    return frozenset(statuses)


def gate_status(finding: Finding) -> str:
    """The status the gate counts a finding by: its own, or UNSURE_FALLBACK."""
    if finding.status == "cpu_fallback" and finding.evidence_confidence in UNSURE_EVIDENCE:
        return UNSURE_FALLBACK
    return finding.status


def report_status(status: str) -> str:
    """The status a report shows for a gate status."""
    return "cpu_fallback" if status == UNSURE_FALLBACK else status


def failing(findings: Iterable[Finding], statuses: frozenset[str]) -> list[Finding]:
    return [f for f in findings if gate_status(f) in statuses]
