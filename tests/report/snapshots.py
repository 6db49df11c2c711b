"""Snapshot comparison with machine-specific text redacted. `UPDATE_SNAPSHOTS=1 pytest` rewrites
the stored snapshots instead of comparing."""

from __future__ import annotations

import os
import re
from pathlib import Path

from neuron_migrate import __version__
from neuron_migrate.api import ScanReport

SNAPSHOTS = Path(__file__).parent / "snapshots"


def redact(text: str, report: ScanReport) -> str:
    """Paths, versions and timings vary by machine and release; the format does not."""
    for value, label in (
        (report.root, "<ROOT>"),
        (report.base, "<ROOT>"),
        (report.torch_version, "<TORCH_VERSION>"),
        (report.target, "<TARGET>"),
    ):
        text = text.replace(value, label)
    text = text.replace(f'"{__version__}"', '"<VERSION>"')
    text = text.replace(f"neuron-migrate {__version__}", "neuron-migrate <VERSION>")
    return re.sub(r'"elapsed_s": [0-9.]+', '"elapsed_s": "<ELAPSED>"', text)


def assert_snapshot(name: str, text: str) -> None:
    path = SNAPSHOTS / name
    if os.environ.get("UPDATE_SNAPSHOTS") == "1":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return
    assert path.exists(), f"no snapshot {path.name}; create it with UPDATE_SNAPSHOTS=1"
    expected = path.read_text(encoding="utf-8")
    assert text == expected, f"{name} changed; review and rerun with UPDATE_SNAPSHOTS=1"
