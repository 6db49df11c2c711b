"""A file's cost follows its size and its findings, not the length of its lines: thousands of
findings on one (minified) line scan about as fast as the same calls one a line, with a report
of about the same size; and a file that still takes too long is an error, not a stalled run."""

from __future__ import annotations

import json
import statistics
import time
from pathlib import Path

import pytest

from neuron_migrate.scan import time_budget
from tests.cli import invoke

CALLS = 3000
CALL = "xm.xla_device()"
HEAD = "import torch_xla.core.xla_model as xm\n"


def _trees(tmp_path: Path) -> tuple[Path, Path]:
    one_line, many_lines = tmp_path / "one_line", tmp_path / "many_lines"
    one_line.mkdir()
    many_lines.mkdir()
    (one_line / "a.py").write_text(HEAD + "x = [" + ", ".join([CALL] * CALLS) + "]\n")
    (many_lines / "a.py").write_text(
        HEAD + "x = [\n" + "".join(f"{CALL},\n" for _ in range(CALLS)) + "]\n"
    )
    size = (one_line / "a.py").stat().st_size
    assert abs(size - (many_lines / "a.py").stat().st_size) < 0.01 * size  # the same size
    return one_line, many_lines


def _timed(tree: Path) -> tuple[float, int, dict]:
    """The median CPU time of three scans in this process (`-j 1`): wall time would count the
    other tests a parallel run (`pytest -n 2`) or the machine runs beside them."""
    times, report = [], ""
    for _ in range(3):
        started = time.process_time()
        result = invoke(["scan", "--no-cache", "-j", "1", "-f", "json", str(tree)])
        times.append(time.process_time() - started)
        report = result.stdout
    return statistics.median(times), len(report), json.loads(report)


def test_findings_on_one_long_line_cost_what_they_cost_one_a_line(tmp_path: Path) -> None:
    one_line, many_lines = _trees(tmp_path)
    long_s, long_bytes, long_report = _timed(one_line)
    plain_s, plain_bytes, plain_report = _timed(many_lines)
    assert long_report["summary"]["findings"] == plain_report["summary"]["findings"] >= CALLS
    # Bounds as ratios to the plain file of the same size (before: 5x the time, 97x the bytes).
    assert long_s < 2.0 * plain_s, (long_s, plain_s)
    assert long_bytes < 1.5 * plain_bytes, (long_bytes, plain_bytes)
    snippets = [f["snippet"] for f in long_report["findings"]]
    assert max(map(len, snippets)) <= 162 and all(CALL in s for s in snippets)


def test_the_fingerprints_are_those_of_the_whole_line(tmp_path: Path) -> None:
    """Bounding the snippet changes no fingerprint: baselines keep matching."""
    from neuron_migrate.scan.findings import fingerprint

    one_line, _ = _trees(tmp_path)
    report = json.loads(invoke(["scan", "--no-cache", "-f", "json", str(one_line)]).stdout)
    line = (one_line / "a.py").read_text().splitlines()[1].strip()
    findings = report["findings"]
    by_key: dict[tuple[str, str], int] = {}
    for found in findings:
        key = (found["code"], found["api"])
        occurrence = by_key.get(key, 0)
        by_key[key] = occurrence + 1
        if found["line"] == 2:
            assert found["fingerprint"] == fingerprint(
                found["path"], found["code"], found["api"], line, occurrence
            )


def test_a_file_over_its_time_budget_is_an_error_and_the_run_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    one_line, _ = _trees(tmp_path)
    (one_line / "b.py").write_text(HEAD + "xm.mark_step()\n")
    monkeypatch.setenv("NEURON_MIGRATE_FILE_BUDGET_S", "0.000001")
    assert time_budget.budget_s() == 0.000001
    result = invoke(
        ["scan", "--no-cache", "-j", "1", "-f", "json", "--fail-on", "error", str(one_line)]
    )
    report = json.loads(result.stdout)
    kinds = {error["path"]: error["kind"] for error in report["errors"]}
    assert kinds.get("a.py") == "timeout" and result.exit_code == 1
