"""A hand-built report that exercises every part of every format, independent of the analyzer
and the matrix data (so the snapshots change only when a format does)."""

from __future__ import annotations

from collections import Counter

from neuron_migrate.api import ScanReport
from neuron_migrate.project.config import PathRule, Policy
from neuron_migrate.scan.baseline import Baseline
from neuron_migrate.scan.file_findings import group_by_file
from neuron_migrate.scan.findings import FileError, Finding
from neuron_migrate.scan.gate import parse_fail_on
from neuron_migrate.scan.suppressions import SuppressedFinding, Suppression

ROOT = "/home/someone/project/src"


def _finding(**kw: object) -> Finding:
    base: dict[str, object] = {
        "category": "torch_xla",
        "status": "xla",
        "severity": "warning",
        "col": 4,
        "end_col": 18,
        "aten": (),
        "replacement": None,
        "fixable": False,
        "cell": None,
    }
    base.update(kw)
    base.setdefault("end_line", base["line"])
    return Finding(**base)  # type: ignore[arg-type]


FINDINGS = [
    _finding(
        code="NM104",
        path="train.py",
        line=52,
        api="torch_xla.core.xla_model.mark_step",
        message="A lazy-graph step marker (xm.mark_step / torch_xla.sync).",
        replacement="(deleted)",
        fixable=True,
        snippet="xm.mark_step()",
        fingerprint="aaaa0001",
    ),
    _finding(
        code="NM101",
        path="train.py",
        line=33,
        api="torch_xla.core.xla_model.xla_device",
        message="The XLA device is requested with xm.xla_device().",
        replacement='torch.device("neuron")',
        fixable=True,
        snippet="device = xm.xla_device()",
        fingerprint="aaaa0002",
    ),
    _finding(
        code="NM902",
        category="op",
        status="cpu_fallback",
        path="model.py",
        line=16,
        col=20,
        end_col=30,
        api="torch.sort",
        aten=("aten::sort",),
        message="torch.sort: cpu_fallback (aten::sort) [generic-cpu-fallback]",
        snippet="ranked, _ = torch.sort(h, dim=1)",
        fingerprint="aaaa0003",
    ),
    _finding(
        code="NM920",
        category="namespace",
        status="unsupported",
        severity="error",
        path="losses.py",
        line=27,
        col=16,
        end_col=42,
        api="torch.distributions.Normal",
        message='torch.distributions.Normal: unsupported <on the device> & "refused" | x',
        snippet="prior = torch.distributions.Normal(0, 1)",
        fingerprint="aaaa0004",
    ),
    _finding(
        code="NM901",
        category="op",
        status="native",
        severity="info",
        path="model.py",
        line=12,
        col=8,
        end_col=20,
        api="torch.matmul",
        aten=("aten::mm",),
        message="torch.matmul: native",
        snippet="y = torch.matmul(a, b)",
        fingerprint="aaaa0005",
    ),
    _finding(
        code="NM910",
        category="dtype",
        status="float64",
        path="explore.ipynb",
        line=2,
        col=10,
        end_col=23,
        api="torch.float64",
        cell=3,
        confidence="low",
        message="float64 runs as float32 on the device",
        replacement="torch.float32",
        snippet="x = t.to(torch.float64)",
        fingerprint="aaaa0006",
    ),
]
SUPPRESSED = [
    SuppressedFinding(
        _finding(
            code="NM920",
            category="namespace",
            status="unsupported",
            severity="error",
            path="losses.py",
            line=40,
            api="torch.distributions.Normal",
            message="torch.distributions.Normal: unsupported",
            snippet="n = Normal(0, 1)",
            fingerprint="bbbb0001",
        ),
        "ignore",
        "sampled on the host",
    ),
    SuppressedFinding(
        _finding(
            code="NM104",
            path="train.py",
            line=60,
            api="torch_xla.core.xla_model.mark_step",
            message="A lazy-graph step marker.",
            snippet="xm.mark_step()",
            fingerprint="bbbb0002",
        ),
        "fixme",
        "",
    ),
]
UNUSED = [Suppression("model.py", 30, 31, "ignore", ("NM902",), "stale")]
ERRORS = [
    FileError(
        "legacy/py2.py", "syntax error at line 3: Missing parentheses (Python 2 code?)", "syntax"
    )
]


def sample_report(*, with_baseline: bool = True) -> ScanReport:
    fail_on = parse_fail_on(["xla"])
    return ScanReport(
        root=ROOT,
        target="2.14.3.0",
        torch_version="2.14.0",
        files=group_by_file(FINDINGS),
        errors=list(ERRORS),
        skipped=[{"path": "empty.py", "reason": "empty file"}],
        unmapped_apis=Counter({"torch.special.erfcx": 2}),
        files_total=7,
        files_analyzed=5,
        files_prefiltered=0,
        files_cached=1,
        files_done=7,
        elapsed_s=0.25,
        fail_on=fail_on,
        base=ROOT,
        suppressed=list(SUPPRESSED),
        unused_suppressions=list(UNUSED),
        baseline=Baseline("neuron-migrate-baseline.json", frozenset({"aaaa0002"}), 3)
        if with_baseline
        else None,
        policy=Policy(
            fail_on=fail_on, rules=(PathRule(("tests/*",), fail_on=frozenset()),), prefix="src/"
        ),
    )
