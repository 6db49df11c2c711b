"""Cached results are keyed by the tool's code, not by its version alone: an editable install
whose code changed under the same version never reads a result the old code computed."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from neuron_migrate import code_identity as identity
from neuron_migrate.rewrite.store import settings_digest
from neuron_migrate.scan import scan_data


@pytest.fixture
def package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    root = tmp_path / "neuron_migrate"
    (root / "scan").mkdir(parents=True)
    (root / "__init__.py").write_text("")
    (root / "scan" / "engine.py").write_text("RULE = 1\n")
    (root / "__pycache__").mkdir()
    monkeypatch.setattr(identity, "_PACKAGE", root)
    identity.code_identity.cache_clear()
    yield root
    identity.code_identity.cache_clear()


def _fresh() -> str:
    identity.code_identity.cache_clear()
    return identity.code_identity()


def test_the_identity_changes_with_any_python_file_of_the_package(package: Path) -> None:
    first = _fresh()
    assert "scan/engine.py" in first and "__pycache__" not in first
    engine = package / "scan" / "engine.py"
    engine.write_text("RULE = 2\n")  # same size: the modification time tells
    os.utime(engine, ns=(1, 1))
    second = _fresh()
    assert second != first
    (package / "scan" / "new.py").write_text("")
    assert _fresh() not in (first, second)
    (package / "__pycache__" / "engine.cpython-311.pyc").write_bytes(b"\0")
    assert _fresh() == _fresh()


def test_scan_and_rewrite_caches_are_keyed_by_it(monkeypatch: pytest.MonkeyPatch) -> None:
    scan_before, rewrite_before = _digests()
    monkeypatch.setattr(scan_data, "code_identity", lambda: "other code")
    monkeypatch.setattr("neuron_migrate.rewrite.store.code_identity", lambda: "other code")
    try:
        scan_after, rewrite_after = _digests()
    finally:
        scan_data._digest.cache_clear()  # no digest of the stand-in outlives the test
    assert scan_after != scan_before and rewrite_after != rewrite_before


def _digests() -> tuple[str, str]:
    scan_data._digest.cache_clear()
    return scan_data.config_digest("2.14.3.0"), settings_digest(unsafe=False)
