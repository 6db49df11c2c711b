"""bench/lsp_latency.py runs end to end on a short buffer (no timing asserted)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pygls")

BENCH = Path(__file__).resolve().parents[2] / "bench" / "lsp_latency.py"


def test_the_latency_bench_runs() -> None:
    done = subprocess.run(
        [sys.executable, str(BENCH), "--lines", "120", "--edits", "2", "--gap", "0.1"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "didChange -> publishDiagnostics over 2 edits" in done.stdout
    assert "server exit code after shutdown/exit: 0" in done.stdout
