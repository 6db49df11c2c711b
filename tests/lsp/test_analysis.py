"""The language server's analysis in process: the data it classifies with loads once."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("lsprotocol")

from neuron_migrate.lsp import analysis, protocol
from neuron_migrate.scan import scan_data

TEXT = "import torch\nimport torch_xla.core.xla_model as xm\n\nxm.mark_step()\ny = torch.sort(x)\n"


def test_the_rules_matrix_and_api_map_load_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    loads: list[str] = []
    load = scan_data._load

    def counted(target: str) -> scan_data.Context:
        loads.append(target)
        return load(target)

    monkeypatch.setattr(scan_data, "_load", counted)
    scan_data.context_for.cache_clear()
    protocol.matrix_show_text.cache_clear()
    where = analysis.place(tmp_path / "train.py", [tmp_path])
    for edit in range(3):
        found = analysis.analyse(TEXT + f"z = {edit}\n", where)
        assert {f.code for f in found.findings} >= {"NM104"}
    assert analysis.migrated(TEXT, where).changed
    assert analysis.migrated_line(TEXT, where, 4) != TEXT
    assert protocol.matrix_show_text("torch.sort", where.target)
    assert loads == [where.target]
    scan_data.context_for.cache_clear()
