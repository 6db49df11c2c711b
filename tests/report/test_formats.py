"""What each format promises beyond its snapshot: HTML stands alone, JUnit and CSV parse, the
GitHub commands are escaped, Markdown leads with the verdict; every format runs from the CLI."""

from __future__ import annotations

import csv
import io
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from neuron_migrate.report.formats import FORMATS, render
from tests.cli import invoke
from tests.report.sample import sample_report

SOURCE = """import torch
import torch_xla.core.xla_model as xm

device = xm.xla_device()
prior = torch.distributions.Normal(0.0, 1.0)
xm.mark_step()
"""


def test_html_is_self_contained_and_interactive() -> None:
    html = render(sample_report(), "html")
    assert not re.search(r"https?://|//cdn|<link|src=|@import|url\(", html), "no network"
    assert html.count("<svg") == 2  # findings by status, findings by file
    assert "Findings by status" in html and "Files with the most findings" in html
    assert 'id="findings"' in html and "addEventListener('click'" in html  # sortable
    assert "torch-neuronx <b>2.14.3.0</b>" in html  # the matrix version
    assert "&lt;on the device&gt; &amp; &quot;refused&quot;" in html  # escaped
    assert "<on the device>" not in html


def test_html_shows_what_the_matrix_rests_on() -> None:
    from neuron_migrate.matrix import load_matrix
    from neuron_migrate.matrix.stats import matrix_stats

    html = render(sample_report(), "html")
    stats = matrix_stats(load_matrix("2.14.3.0"))
    table = html[html.index('<table id="matrix-evidence">') :]
    table = table[: table.index("</table>")]
    released = stats["by_kind_and_status"]["released"]
    row = "".join(
        f"<td>{n}</td>"
        for n in (
            released["native"],
            released["cpu_fallback"],
            released["unsupported"],
            stats["by_kind"]["released"],
        )
    )
    assert f"<tr><td>released</td>{row}" in table
    assert f"<td><b>{stats['entries']}</b></td>" in table
    assert "Not settled by the release: per-op coverage" in html


def test_junit_counts_follow_the_gate() -> None:
    root = ET.fromstring(render(sample_report(), "junit"))
    assert root.tag == "testsuites"
    # NM104 and NM920 are new and fail; the gate case fails too.
    assert root.get("failures") == "3"
    assert root.get("skipped") == "2" and root.get("errors") == "1"
    failed = [c.get("name") for c in root.iter("testcase") if c.find("failure") is not None]
    assert any(n.startswith("NM104") for n in failed) and "gate" in failed


def test_csv_has_one_row_per_finding_and_suppression() -> None:
    rows = list(csv.DictReader(io.StringIO(render(sample_report(), "csv"))))
    report = sample_report()
    assert len(rows) == len(report.findings) + len(report.suppressed)
    marked = {r["fingerprint"]: r for r in rows}
    assert marked["bbbb0001"]["suppression"] == "ignore"
    assert marked["bbbb0001"]["reason"] == "sampled on the host"
    assert marked["aaaa0001"]["gate"] == "fail" and marked["aaaa0002"]["baseline"] == "unchanged"
    assert marked["aaaa0006"]["cell"] == "3"


def test_github_commands_escape_their_properties() -> None:
    lines = render(sample_report(), "github").splitlines()
    assert all(line.startswith("::") for line in lines[:-1])
    title = re.search(r"title=([^:]*)::", lines[0])
    assert title and "%3A" in title.group(1) and ":" not in title.group(1)
    assert lines[-1].endswith(
        "gate failed (2 findings and 1 file not scanned: losses.py:27 NM920, train.py:52 NM104,"
        " legacy/py2.py (not scanned))"
    )


def test_markdown_leads_with_the_verdict() -> None:
    text = render(sample_report(), "markdown")
    assert text.splitlines()[2].startswith("❌ **Gate failed**: 2 findings")
    assert "1 ignored, 1 fixme" in text and "Unused suppressions: 1" in text
    assert "\\| x" in text  # a pipe in a message does not break the table


@pytest.mark.parametrize("name", FORMATS)
def test_every_format_from_the_cli(tmp_path: Path, name: str) -> None:
    (tmp_path / "train.py").write_text(SOURCE)
    out = tmp_path / f"report.{name}"
    code, stdout, err = invoke(
        [
            "scan",
            str(tmp_path),
            "-f",
            name,
            "-o",
            str(out),
            "--no-cache",
            "--no-config",
            "--fail-on",
            "xla",
            "-j",
            "1",
        ]
    )
    assert code == 1, err  # torch_xla uses fail --fail-on xla
    assert stdout == ""
    text = out.read_text(encoding="utf-8")
    assert "mark_step" in text
