"""Each fixtures/analyze/<case>.py is scanned and compared with <case>.expected.yaml.

The comparison covers every finding that is not a native op use: nothing missing, nothing extra.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from neuron_migrate import api

CASES = sorted((Path(__file__).parents[2] / "fixtures" / "analyze").glob("*.py"))


def _expected(case: Path) -> set[tuple[int, str, str, str | None]]:
    data = yaml.safe_load(case.with_suffix(".expected.yaml").read_text())
    return {(f["line"], f["api"], f["status"], f.get("code")) for f in data["findings"]}


@pytest.mark.parametrize("case", CASES, ids=[c.stem for c in CASES])
def test_fixture_findings(case: Path) -> None:
    report = api.scan(case, jobs=1, use_cache=False)
    assert report.errors == []
    expected = _expected(case)
    codes_checked = {code for *_, code in expected if code}
    actual = {
        (f.line, f.api, f.status, f.code if f.code in codes_checked else None)
        for f in report.findings
        if f.status != "native"
    }
    assert actual == expected


def test_every_case_has_expectations() -> None:
    assert len(CASES) >= 10
    for case in CASES:
        assert case.with_suffix(".expected.yaml").exists(), case.name
