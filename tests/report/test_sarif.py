"""SARIF 2.1.0: valid against the published schema, with rule help, fingerprints, baseline
state and suppressions."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from neuron_migrate.report.sarif import FINGERPRINT_KEY, UNUSED_RULE, sarif_log
from tests.cli import invoke
from tests.conftest import FIXTURES
from tests.report.sample import sample_report

BUNDLED_SCHEMA = Path(__file__).parent / "sarif-schema-2.1.0.json"


@pytest.fixture(scope="module")
def schema() -> dict:
    return json.loads(BUNDLED_SCHEMA.read_text(encoding="utf-8"))


def test_sample_report_is_valid_sarif(schema: dict) -> None:
    jsonschema.validate(sarif_log(sample_report()), schema)


def test_sample_project_sarif_validates(tmp_path: Path, schema: dict) -> None:
    out = tmp_path / "scan.sarif"
    code, _stdout, err = invoke(
        [
            "scan",
            str(FIXTURES / "projects" / "mixed_status"),
            "--format",
            "sarif",
            "-o",
            str(out),
            "--fail-on",
            "none",
            "--no-cache",
            "--no-config",
            "-j",
            "1",
        ]
    )
    assert code == 0, err
    log = json.loads(out.read_text(encoding="utf-8"))
    jsonschema.validate(log, schema)
    results = log["runs"][0]["results"]
    assert results, "the sample project has findings"
    assert all(r["partialFingerprints"][FINGERPRINT_KEY] for r in results)
    uris = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in results}
    assert all(u.startswith(str(FIXTURES / "projects" / "mixed_status")) for u in uris)


def test_rules_carry_help_from_the_rule_files() -> None:
    log = sarif_log(sample_report())
    rules = {r["id"]: r for r in log["runs"][0]["tool"]["driver"]["rules"]}
    mark_step = rules["NM104"]
    assert mark_step["name"] == "xla-mark-step"
    assert "eagerly" in mark_step["fullDescription"]["text"]
    assert "rules explain NM104" in mark_step["help"]["text"]
    assert "**Replacement:**" in mark_step["help"]["markdown"]
    assert UNUSED_RULE in rules
    for result in log["runs"][0]["results"]:
        assert (
            log["runs"][0]["tool"]["driver"]["rules"][result["ruleIndex"]]["id"] == result["ruleId"]
        )


def test_gate_baseline_and_suppressions_are_visible() -> None:
    results = sarif_log(sample_report())["runs"][0]["results"]
    by_print = {r.get("partialFingerprints", {}).get(FINGERPRINT_KEY): r for r in results}
    assert by_print["aaaa0001"]["level"] == "error"  # new xla finding, fail-on xla
    assert by_print["aaaa0001"]["baselineState"] == "new"
    assert by_print["aaaa0002"]["baselineState"] == "unchanged"
    assert by_print["aaaa0002"]["level"] == "warning"  # in the baseline: does not fail
    assert "aaaa0005" not in by_print  # native op uses are counted, not listed
    ignored, fixme = by_print["bbbb0001"], by_print["bbbb0002"]
    assert ignored["suppressions"] == [
        {"kind": "inSource", "status": "accepted", "justification": "ignore: sampled on the host"}
    ]
    assert fixme["suppressions"][0]["status"] == "underReview"
    notebook = by_print["aaaa0006"]
    assert notebook["locations"][0]["properties"] == {"cell": 3}
    unused = [r for r in results if r["ruleId"] == UNUSED_RULE]
    assert len(unused) == 1 and "NM902" in unused[0]["message"]["text"]
