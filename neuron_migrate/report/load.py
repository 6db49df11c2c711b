"""Reading JSON reports back, and merging shard reports into one (`report merge`)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from neuron_migrate.api import ScanReport
from neuron_migrate.errors import DataFileError, UsageError
from neuron_migrate.project.config import PathRule, Policy
from neuron_migrate.scan.baseline import Baseline
from neuron_migrate.scan.file_findings import group_by_file
from neuron_migrate.scan.findings import FileError, Finding
from neuron_migrate.scan.gate import parse_fail_on
from neuron_migrate.scan.suppressions import SuppressedFinding, Suppression


def load_report(path: Path) -> ScanReport:
    shown = str(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise DataFileError(shown, "(file)", "no such report") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise DataFileError(shown, "(file)", f"cannot read: {exc}") from None
    except json.JSONDecodeError as exc:
        raise DataFileError(shown, "(file)", f"invalid JSON at line {exc.lineno}") from None
    try:
        return report_from_dict(data)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise DataFileError(
            shown, "(report)", f"not a neuron-migrate scan report ({exc})"
        ) from None


def report_from_dict(data: dict[str, Any]) -> ScanReport:
    major = str(data["schema_version"]).split(".")[0]
    if major != "1":
        raise ValueError(f"schema_version {data['schema_version']} is not 1.x")
    summary = data["summary"]
    files = summary["files"]
    gate = summary["gate"]
    findings = [Finding.from_json(f) for f in data["findings"]]
    unchanged = {f["fingerprint"] for f in data["findings"] if f.get("baseline") == "unchanged"}
    baseline_info = summary.get("baseline")
    shard = data.get("shard")
    overrides = gate.get("overrides", [])
    prefix = overrides[0]["path_prefix"] if overrides else ""
    return ScanReport(
        root=data["root"],
        target=data["target"],
        torch_version=data["torch_version"],
        files=group_by_file(findings),
        errors=[FileError(**e) for e in data["errors"]],
        skipped=list(data.get("skipped", [])),
        unmapped_apis=Counter(summary.get("unmapped_apis", {})),
        api_map_coverage=_coverage(summary),
        files_total=files["total"],
        files_analyzed=files["analyzed"],
        files_prefiltered=files["skipped_by_prefilter"],
        files_cached=files["from_cache"],
        files_done=files["total"],
        elapsed_s=summary.get("elapsed_s", 0.0),
        fail_on=frozenset(gate["fail_on"]),
        base=data.get("base", "."),
        suppressed=[
            SuppressedFinding(Finding.from_json(s), s["suppression"], s.get("reason", ""))
            for s in data.get("suppressed", [])
        ],
        unused_suppressions=[
            Suppression(
                u["path"],
                u["line"],
                u["line"],
                u["kind"],
                tuple(u["codes"]),
                u.get("reason", ""),
                u.get("cell"),
            )
            for u in data.get("unused_suppressions", [])
        ],
        baseline=(
            Baseline(baseline_info["path"], frozenset(unchanged), baseline_info["entries"])
            if baseline_info
            else None
        ),
        policy=Policy(
            fail_on=frozenset(gate["fail_on"]),
            rules=tuple(
                PathRule(tuple(o["paths"]), fail_on=frozenset(o["fail_on"])) for o in overrides
            ),
            prefix=prefix,
        ),
        shard=(shard["index"], shard["count"]) if shard else None,
        changed_since=data.get("changed_since"),
        config_path=data.get("config"),
    )


def merge_reports(reports: list[ScanReport], fail_on: tuple[str, ...] = ()) -> ScanReport:
    """One report from several (shards of one scan). The gate is recomputed on the whole:
    `fail_on` when given, else the policy the shards recorded (they must agree)."""
    if not reports:
        raise UsageError("report merge: give at least one report")
    first = reports[0]
    for other in reports[1:]:
        if (other.target, other.torch_version) != (first.target, first.torch_version):
            raise UsageError(
                f"report merge: reports target different versions ({first.target} and "
                f"{other.target})"
            )
    _check_shards(reports)
    policies = {(r.fail_on, r.policy.rules if r.policy else ()) for r in reports}
    if not fail_on and len(policies) > 1:
        raise UsageError("report merge: the reports were gated differently; pass --fail-on")
    policy = first.policy or Policy(fail_on=first.fail_on)
    if fail_on:
        policy = Policy(fail_on=parse_fail_on(fail_on), prefix=policy.prefix)
    merged = ScanReport(
        root=first.root if all(r.root == first.root for r in reports) else "(merged)",
        target=first.target,
        torch_version=first.torch_version,
        fail_on=policy.fail_on,
        policy=policy,
        base=first.base,
        changed_since=first.changed_since,
        config_path=first.config_path,
        api_map_coverage=first.api_map_coverage,
    )
    prints: set[str] = set()
    for report in reports:
        merged.files += report.files
        merged.errors += report.errors
        merged.skipped += report.skipped
        merged.suppressed += report.suppressed
        merged.unused_suppressions += report.unused_suppressions
        merged.unmapped_apis.update(report.unmapped_apis)
        merged.files_total += report.files_total
        merged.files_done += report.files_done
        merged.files_analyzed += report.files_analyzed
        merged.files_prefiltered += report.files_prefiltered
        merged.files_cached += report.files_cached
        merged.elapsed_s = max(merged.elapsed_s, report.elapsed_s)
        if report.baseline is not None:
            prints |= report.baseline.fingerprints
    baselines = [r.baseline for r in reports if r.baseline is not None]
    if baselines:
        merged.baseline = Baseline(baselines[0].path, frozenset(prints), baselines[0].entries)
    return merged


def _check_shards(reports: list[ScanReport]) -> None:
    shards = [r.shard for r in reports if r.shard is not None]
    if not shards:
        return
    if len(shards) != len(reports):
        raise UsageError("report merge: some reports are shards and some are not")
    counts = {count for _, count in shards}
    if len(counts) > 1:
        raise UsageError(f"report merge: shards of different splits ({sorted(counts)})")
    count = counts.pop()
    seen = Counter(index for index, _ in shards)
    twice = sorted(i for i, n in seen.items() if n > 1)
    if twice:
        raise UsageError(f"report merge: shard {twice[0]}/{count} given twice")
    missing = sorted(set(range(1, count + 1)) - set(seen))
    if missing:
        raise UsageError(f"report merge: shard {missing[0]}/{count} is missing")


def _coverage(summary: dict[str, Any]) -> tuple[int, int]:
    coverage = summary.get("api_map_coverage") or {}
    return (int(coverage.get("mapped", 0)), int(coverage.get("public_apis", 0)))
