"""GitHub code scanning shows a SARIF result's message, and a GitHub annotation its message, with
no snippet: a project-file finding's message names what it is about (`XLA_USE_BF16`), not only
what to do about it."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli import invoke


def _tree(tmp_path: Path) -> Path:
    (tmp_path / "Dockerfile").write_text("FROM python:3.12\nENV XLA_USE_BF16=1\n")
    (tmp_path / "run.sh").write_text("export XLA_USE_BF16=1\npython train.py\n")
    return tmp_path


def test_sarif_messages_name_the_subject(tmp_path: Path) -> None:
    result = invoke(["scan", "--no-cache", "-f", "sarif", str(_tree(tmp_path))])
    results = json.loads(result.stdout)["runs"][0]["results"]
    bf16 = [r for r in results if r["ruleId"] == "NM702"]
    assert len(bf16) == 2
    assert all(r["message"]["text"].startswith("XLA_USE_BF16: ") for r in bf16)


def test_github_messages_name_the_subject(tmp_path: Path) -> None:
    result = invoke(["scan", "--no-cache", "-f", "github", str(_tree(tmp_path))])
    lines = [line for line in result.stdout.splitlines() if "NM702" in line]
    assert len(lines) == 2
    assert all("::XLA_USE_BF16: no native switch" in line for line in lines)


def test_a_message_that_names_its_subject_is_left_as_it_is(tmp_path: Path) -> None:
    (tmp_path / "run.sh").write_text("torchrun --nproc_per_node=2 train.py\n")
    result = invoke(["scan", "--no-cache", "-f", "sarif", str(tmp_path)])
    (found,) = json.loads(result.stdout)["runs"][0]["results"]
    assert found["message"]["text"].startswith("keep torchrun")
