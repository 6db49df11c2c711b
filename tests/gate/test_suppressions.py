"""`# neuron-migrate: ignore[...]` / `fixme[...]`: on the line or the line above, counted apart,
unused ones reported."""

from __future__ import annotations

import json
from pathlib import Path

from neuron_migrate.scan.findings import Finding
from neuron_migrate.scan.suppressions import apply_suppressions, parse_suppressions
from tests.cli import invoke

SOURCE = """import torch
import torch_xla.core.xla_model as xm

device = xm.xla_device()  # neuron-migrate: ignore[NM101] wrapped by our launcher
# neuron-migrate: fixme[NM104]
# (a second comment line between the directive and the code)
xm.mark_step()
text = "# neuron-migrate: ignore[NM104]"
n = torch.distributions.Normal(0.0, 1.0)  # neuron-migrate: ignore[NM104, NM920]
other = xm.xla_device()
"""


def _finding(code: str, line: int, end_line: int | None = None) -> Finding:
    return Finding(
        code, "torch_xla", "xla", "warning", "a.py", line, 0, end_line or line, 5, "api", "message"
    )


def test_parse_reads_comments_only() -> None:
    found = parse_suppressions(SOURCE, "a.py")
    assert [(s.kind, s.codes, s.target_line, s.reason) for s in found] == [
        ("ignore", ("NM101",), 4, "wrapped by our launcher"),
        ("fixme", ("NM104",), 7, ""),
        ("ignore", ("NM104", "NM920"), 9, ""),
    ]


def test_apply_splits_and_reports_unused_codes() -> None:
    found = parse_suppressions(SOURCE, "a.py")
    applied = apply_suppressions(
        [_finding("NM101", 4), _finding("NM104", 7), _finding("NM920", 9), _finding("NM100", 2)],
        found,
    )
    assert [f.code for f in applied.kept] == ["NM100"]
    assert [(s.finding.code, s.kind) for s in applied.suppressed] == [
        ("NM101", "ignore"),
        ("NM104", "fixme"),
        ("NM920", "ignore"),
    ]
    assert [(u.line, u.codes) for u in applied.unused] == [(9, ("NM104",))]


def test_a_multiline_call_is_covered_from_its_last_line() -> None:
    found = parse_suppressions("f(\n  1,\n)  # neuron-migrate: ignore[NM101]\n", "a.py")
    assert apply_suppressions([_finding("NM101", 1, 3)], found).suppressed


def test_counted_separately_in_the_report(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(SOURCE)
    code, out, _err = invoke(
        [
            "scan",
            str(tmp_path),
            "-f",
            "json",
            "--no-cache",
            "--no-config",
            "-j",
            "1",
            "--fail-on",
            "any",
        ]
    )
    report = json.loads(out)
    assert report["summary"]["suppressed"] == {"ignore": 2, "fixme": 1}
    assert {f["code"] for f in report["findings"]}.isdisjoint({"NM104", "NM920"})
    assert [(u["line"], u["codes"]) for u in report["unused_suppressions"]] == [(9, ["NM104"])]
    assert report["summary"]["unused_suppressions"] == 1
    suppressed = {s["code"]: s for s in report["suppressed"]}
    assert suppressed["NM101"]["reason"] == "wrapped by our launcher"
    assert [f["line"] for f in report["findings"] if f["code"] == "NM101"] == [10]
    assert code == 1  # the unsuppressed xla_device() fails --fail-on any
