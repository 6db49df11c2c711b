"""Text for people says in words what a status rests on: no internal evidence tags
(`[project-brief]`, `UNVERIFIED`) in the reports people read or in `matrix show`. JSON, SARIF
and CSV, read by programs, keep the keys (docs/report-schema.md)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from neuron_migrate.report.evidence_words import in_words
from tests.cli import invoke

PROJECT = Path(__file__).parents[2] / "fixtures" / "projects" / "mixed_status"
TAG = re.compile(r"\[[a-z0-9][a-z0-9.-]*(, [a-z0-9][a-z0-9.-]*)*\]")


def test_the_terminal_report_names_no_evidence_key() -> None:
    result = invoke(["scan", str(PROJECT), "--no-cache", "--fail-on", "none"])
    assert result.exit_code == 0, result.stderr
    text = " ".join(result.stdout.split())
    assert "UNVERIFIED" not in text and not TAG.search(text), TAG.search(text)
    assert "torch.distributions.Normal: unsupported" in text
    assert "(rests on: The project's design brief, which no TorchNeuron text" in text


@pytest.mark.parametrize("fmt", ["markdown", "html", "junit", "github"])
def test_the_other_reports_for_people_name_no_evidence_key(fmt: str) -> None:
    result = invoke(["scan", str(PROJECT), "--no-cache", "--fail-on", "none", "-f", fmt])
    assert result.exit_code == 0, result.stderr
    text = " ".join(result.stdout.split())
    assert "[project-brief]" not in text and "[generic-cpu-fallback]" not in text
    assert "(rests on: The project" in text


def test_matrix_show_says_no_unverified() -> None:
    for name in ("torch.distributions.Normal", "torch.sparse.mm", "Tensor.double"):
        assert "UNVERIFIED" not in invoke(["matrix", "show", name]).stdout


def test_in_words_replaces_known_keys_only() -> None:
    titles = {"a-key": "What A is", "b.key": "What B is"}
    assert (
        in_words("x is slow [a-key, b.key]", titles) == "x is slow (rests on: What A is; What B is)"
    )
    assert in_words("x is slow [a-key, other]", titles) == "x is slow [a-key, other]"
    assert in_words("see [a-key] here", titles) == "see [a-key] here"
