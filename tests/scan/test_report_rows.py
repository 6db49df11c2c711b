"""The JSON report writes the rows the workers stored, setting only what differs per run; it must
say exactly what a report built finding by finding says, cold or from the cache."""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from neuron_migrate import api
from neuron_migrate.project.config import Config, PathRule, Policy
from neuron_migrate.report.json_report import render_json
from neuron_migrate.report.summary import baseline_state
from neuron_migrate.scan.baseline import Baseline

FIXTURES = Path(__file__).parents[2] / "fixtures"


def _tree(tmp_path: Path) -> Path:
    tree = tmp_path / "tree"
    shutil.copytree(FIXTURES / "analyze", tree, ignore=shutil.ignore_patterns("*.yaml"))
    shutil.copytree(FIXTURES / "projects" / "mixed_status", tree / "mixed_status")
    return tree


def _reference_findings(report: api.ScanReport) -> list[dict[str, object]]:
    """The findings list as the report defines it: every decoded finding with this run's
    baseline state and gate verdict."""
    return [
        {**f.to_json(), "baseline": baseline_state(report, f), "gate": report.fails(f)}
        for f in sorted(report.findings, key=lambda f: (f.path, f.cell or 0, f.line, f.col, f.code))
    ]


def _without_timing(text: str) -> dict[str, object]:
    data = json.loads(text)
    data["summary"].pop("elapsed_s")
    data["summary"]["files"].pop("from_cache")
    return data


@pytest.mark.parametrize("with_override", [False, True])
@pytest.mark.parametrize("with_baseline", [False, True])
def test_rows_written_as_stored_match_a_finding_by_finding_report(
    tmp_path: Path, with_baseline: bool, with_override: bool
) -> None:
    tree = _tree(tmp_path)
    report = api.scan(tree, jobs=2, use_cache=False, fail_on=("unsupported", "fallback"))
    assert {"unsupported", "cpu_fallback", "xla", "native"} <= {f.status for f in report.findings}
    if with_baseline:  # every other finding is known: the rest are new
        known = frozenset(f.fingerprint for f in report.findings[::2])
        report.baseline = Baseline("baseline.json", known, len(known))
    if with_override:  # the gate differs between files of one report
        report.policy = Policy(
            fail_on=report.fail_on,
            rules=(PathRule(("mixed_status/*",), fail_on=frozenset({"xla"})),),
        )
    written = json.loads(render_json(report))
    reference = _reference_findings(report)
    assert written["findings"] == reference
    assert any(f["gate"] for f in reference) and not all(f["gate"] for f in reference)
    assert written["summary"]["gate"]["failing_findings"] == sum(f["gate"] for f in reference)
    if with_baseline:
        assert {f["baseline"] for f in reference} == {"new", "unchanged"}


def test_select_and_ignore_filter_rows_with_their_counts(tmp_path: Path) -> None:
    tree = _tree(tmp_path)
    everything = api.scan(tree, jobs=1, use_cache=False)
    some = api.scan(
        tree, jobs=1, use_cache=False, config=Config(), select=("NM9",), ignore=("NM901",)
    )
    expected = [f for f in everything.findings if f.code.startswith("NM9") and f.code != "NM901"]
    assert some.findings == expected
    summary = json.loads(render_json(some))["summary"]
    assert summary["findings"] == len(expected)
    assert set(summary["by_code"]) == {f.code for f in expected}


def test_warm_report_is_the_cold_report(tmp_path: Path) -> None:
    tree, cache = _tree(tmp_path), tmp_path / "cache"
    cold = api.scan(tree, jobs=2, cache_dir=cache)
    warm = api.scan(tree, jobs=2, cache_dir=cache)
    assert warm.files_cached == warm.files_analyzed == cold.files_analyzed > 0
    assert _without_timing(render_json(warm)) == _without_timing(render_json(cold))


def test_an_unreadable_cache_entry_is_analysed_again(tmp_path: Path) -> None:
    tree, cache = _tree(tmp_path), tmp_path / "cache"
    cold = api.scan(tree, jobs=1, cache_dir=cache)
    (db_file,) = cache.glob("scan-results-*.sqlite")
    with sqlite3.connect(db_file) as db:
        db.execute("UPDATE results SET meta = ?", (b"not a pickle",))
    again = api.scan(tree, jobs=1, cache_dir=cache)
    assert again.files_cached == 0
    assert again.findings == cold.findings


def test_a_broken_data_snapshot_is_rebuilt(tmp_path: Path) -> None:
    tree, cache = _tree(tmp_path), tmp_path / "cache"
    api.scan(tree, jobs=1, cache_dir=cache)
    (snapshot,) = cache.glob("data-*.pickle")
    snapshot.write_bytes(b"\x80truncated")
    (tree / "new.py").write_text("import torch_xla.core.xla_model as xm\nxm.mark_step()\n")
    from neuron_migrate.scan.scan_data import context_for, header_for

    context_for.cache_clear()
    header_for.cache_clear()
    report = api.scan(tree, jobs=1, cache_dir=cache)
    assert any(f.path == "new.py" for f in report.findings)
    assert snapshot.read_bytes()[:2] != b"\x80t"  # written again, whole


def test_a_rescan_the_cache_answers_loads_no_analyzer(tmp_path: Path) -> None:
    tree, cache = _tree(tmp_path), tmp_path / "cache"
    api.scan(tree, jobs=1, cache_dir=cache)
    heavy = ("yaml", "neuron_migrate.scan.analysis", "neuron_migrate.scan.analyzer.classify")
    probe = (
        "import sys; from pathlib import Path; from neuron_migrate import api; "
        f"r = api.scan(Path({str(tree)!r}), jobs=2, cache_dir=Path({str(cache)!r})); "
        "assert r.files_cached == r.files_analyzed > 0; "
        f"print([m for m in {heavy!r} if m in sys.modules])"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120
    ).stdout
    assert out.strip() == "[]"


@pytest.mark.parametrize("unmapped", [{}, {"torch.a": 3}, {'torch.ü"x\\': 1, "torch.b": 12}])
def test_the_document_around_the_findings_is_json_s_own_indented_dump(
    tmp_path: Path, unmapped: dict[str, int]
) -> None:
    from collections import Counter

    from neuron_migrate.report.json_report import _FINDINGS_SLOT, _document, around_findings

    report = api.scan(_tree(tmp_path), jobs=1, use_cache=False)
    report.unmapped_apis = Counter(unmapped)
    reference = _document(report)
    reference["findings"] = _FINDINGS_SLOT
    head, tail = json.dumps(reference, indent=2).split(json.dumps(_FINDINGS_SLOT))
    assert around_findings(report) == (head.encode("ascii"), tail.encode("ascii"))
