"""The CI gate: which findings fail the build (`--fail-on`)."""

from __future__ import annotations

from collections.abc import Iterable

from neuron_migrate.errors import UsageError
from neuron_migrate.scan.findings import Finding

# Each --fail-on value and the finding statuses it fails on.
FAIL_ON: dict[str, frozenset[str]] = {
    "unsupported": frozenset({"unsupported"}),
    "fallback": frozenset({"unsupported", "cpu_fallback"}),
    "float64": frozenset({"unsupported", "float64"}),
    "xla": frozenset({"unsupported", "xla", "error"}),
    "any": frozenset({"unsupported", "cpu_fallback", "float64", "xla", "advice", "error"}),
    "error": frozenset({"error"}),
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
    return frozenset(statuses)


def failing(findings: Iterable[Finding], statuses: frozenset[str]) -> list[Finding]:
    return [f for f in findings if f.status in statuses]
