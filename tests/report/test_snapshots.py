"""Every report format, rendered from one hand-built report and compared with its snapshot."""

from __future__ import annotations

import pytest

from neuron_migrate.report.formats import FORMATS, render
from tests.report.sample import ROOT, sample_report
from tests.report.snapshots import assert_snapshot, redact

SUFFIX = {
    "json": "json",
    "sarif": "sarif.json",
    "junit": "xml",
    "github": "github.txt",
    "markdown": "md",
    "csv": "csv",
    "html": "html",
}


@pytest.mark.parametrize("name", [f for f in FORMATS if f != "terminal"])
def test_format_snapshot(name: str) -> None:
    report = sample_report()
    text = redact(render(report, name), report)
    assert ROOT not in text and "2.14.3.0" not in text
    assert_snapshot(f"sample.{SUFFIX[name]}", text)


def test_terminal_snapshot() -> None:
    import io

    from rich.console import Console

    from neuron_migrate.report.terminal import render_terminal

    report = sample_report()
    buffer = io.StringIO()
    render_terminal(report, Console(file=buffer, width=100, no_color=True))
    assert_snapshot("sample.terminal.txt", redact(buffer.getvalue(), report))


def test_every_format_has_a_snapshot_test() -> None:
    assert set(FORMATS) - {"terminal"} == set(SUFFIX)
