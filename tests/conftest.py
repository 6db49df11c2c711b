from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "fixtures"


@pytest.fixture(autouse=True)
def _isolated_cache(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Tests never read or write the user's result cache, nor hand a command to a server the
    user runs (tests/server start their own)."""
    monkeypatch.setenv("NEURON_MIGRATE_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
    monkeypatch.setenv("NEURON_MIGRATE_SERVER_DIR", str(tmp_path_factory.mktemp("server")))
