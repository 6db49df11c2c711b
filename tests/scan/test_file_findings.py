"""A file's findings as stored JSON rows: the rows are what the report lists, and decode back."""

from __future__ import annotations

import json
import sys

import pytest

from neuron_migrate.scan.file_findings import (
    ROW_SEPARATOR,
    FileFindings,
    finding_row,
    group_by_file,
    run_tail,
    with_run_keys,
)
from neuron_migrate.scan.findings import Finding


def _finding(line: int, code: str = "NM101", **kw: object) -> Finding:
    values: dict[str, object] = {
        "code": code,
        "category": "torch_xla",
        "status": "xla",
        "severity": "warning",
        "path": "pkg/train.py",
        "line": line,
        "col": 4,
        "end_line": line,
        "end_col": 20,
        "api": "torch_xla.core.xla_model.xla_device",
        "message": 'The XLA device is requested with "xm.xla_device()" — ünïcode',
        "aten": ("aten::add.Tensor",),
        "replacement": 'torch.device("neuron")',
        "fixable": True,
        "snippet": "device = xm.xla_device()",
        "fingerprint": f"fp{line:04d}{code}",
    }
    values.update(kw)
    return Finding(**values)  # type: ignore[arg-type]


def _reference_row(finding: Finding, baseline: str | None, gate: bool) -> bytes:
    """How the JSON report wrote a finding before rows were stored: one json.dumps each."""
    data = {**finding.to_json(), "baseline": baseline, "gate": gate}
    return json.dumps(data, separators=(", ", ": ")).encode("ascii")


def test_to_json_lists_every_field_in_order() -> None:
    assert list(_finding(1).to_json()) == list(Finding._fields)


def test_rows_are_the_reports_rows_and_decode_back() -> None:
    findings = [_finding(3), _finding(1, "NM104", cell=2), _finding(1, status="native")]
    table = FileFindings.of("pkg/train.py", findings)
    ordered = sorted(findings, key=lambda f: (f.cell or 0, f.line, f.col, f.code))
    assert table.rows == ROW_SEPARATOR.join(_reference_row(f, None, False) for f in ordered)
    assert table.decode() == ordered
    assert table.statuses == tuple(f.status for f in ordered)
    assert table.fingerprints == tuple(f.fingerprint for f in ordered)
    assert len(table) == 3


def test_run_keys_are_set_on_a_row_as_the_report_writes_them() -> None:
    finding = _finding(7)
    for state in (None, "new", "unchanged"):
        for gate in (False, True):
            row = with_run_keys(finding_row(finding), state, gate)
            assert row == _reference_row(finding, state, gate)


def test_where_keeps_rows_and_fields_together() -> None:
    table = FileFindings.of("a.py", [_finding(1, "NM101"), _finding(2, "NM901"), _finding(3)])
    kept = table.where([True, False, True])
    assert [f.line for f in kept.decode()] == [1, 3]
    assert kept.codes == ("NM101", "NM101")
    assert table.where([True, True, True]) is table


def test_group_by_file_gives_one_table_a_file_in_path_order() -> None:
    a, b = _finding(1, path="b.py"), _finding(2, path="a.py")
    tables = group_by_file([a, b, a._replace(line=9)])
    assert [t.path for t in tables] == ["a.py", "b.py"]
    assert [len(t) for t in tables] == [1, 2]


def test_kinds_count_the_findings_of_each_kind() -> None:
    findings = [_finding(1), _finding(2, "NM901", status="native"), _finding(3), _finding(4)]
    table = FileFindings.of("a.py", findings)
    assert table.kinds == (
        ("NM101", "xla", "torch_xla", True),
        ("NM901", "native", "torch_xla", True),
    )
    assert table.kind_counts == (3, 1)
    assert table.codes == ("NM101", "NM901", "NM101", "NM101")
    assert table.count_with_status({"xla"}) == 3
    assert table.positions_with_status({"native", "unsupported"}) == [1]
    assert table.positions_with_status(set()) == []


def test_positions_with_status_are_every_finding_of_those_statuses_in_order() -> None:
    import random

    statuses = ("xla", "native", "unsupported", "cpu_fallback")
    chooser = random.Random(7)
    for size in (1, 2, 5, 40, 300):
        drawn = [chooser.choice(statuses) for _ in range(size)]
        table = FileFindings.of("a.py", [_finding(i + 1, status=s) for i, s in enumerate(drawn)])
        for wanted in ({"unsupported"}, {"native", "cpu_fallback"}, set(statuses), set()):
            expected = [i for i, status in enumerate(drawn) if status in wanted]
            assert table.positions_with_status(wanted) == expected


def test_tails_replace_only_the_rows_named() -> None:
    findings = [_finding(line) for line in (1, 2, 3)]
    table = FileFindings.of("a.py", findings)
    rows = table.row_list()
    assert table.with_tails([]) == [table.rows]
    set_gate = b"".join(table.with_tails([(0, run_tail(None, True)), (2, run_tail(None, True))]))
    assert set_gate.split(ROW_SEPARATOR) == [
        with_run_keys(rows[0], None, True),
        rows[1],
        with_run_keys(rows[2], None, True),
    ]
    states = b"".join(table.with_tails((i, run_tail("new", i == 1)) for i in range(3)))
    assert states.split(ROW_SEPARATOR) == [_reference_row(f, "new", f.line == 2) for f in findings]


def test_where_recounts_the_kinds_kept() -> None:
    table = FileFindings.of("a.py", [_finding(1, "NM101"), _finding(2, "NM901"), _finding(3)])
    kept = table.where([False, True, False])
    assert kept.kinds == (("NM901", "xla", "torch_xla", True),)
    assert kept.kind_counts == (1,) and kept.fingerprints == ("fp0002NM901",)
    assert kept.row_list() == [table.row_list()[1]]


def test_packed_integers_are_little_endian_on_any_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    from neuron_migrate.scan import file_findings

    assert file_findings._packed("H", [1, 258]) == b"\x01\x00\x02\x01"
    assert list(file_findings._unpacked("Q", file_findings._packed("Q", [7, 2**40]))) == [7, 2**40]
    # A machine of the other byte order swaps on the way in and out: the values survive.
    other = "big" if sys.byteorder == "little" else "little"
    monkeypatch.setattr(file_findings.sys, "byteorder", other)
    assert list(file_findings._unpacked("H", file_findings._packed("H", [1, 258]))) == [1, 258]
