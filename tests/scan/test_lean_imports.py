"""What a re-scan loads: the modules a cache-answered scan does not need stay unimported (each
costs milliseconds of start-up on every CI run)."""

from __future__ import annotations

from pathlib import Path

from tests.loaded_modules import loaded_modules

HEAVY = (
    "yaml",
    "libcst",
    "rich",
    "tomllib",
    "multiprocessing",
    "neuron_migrate.analysis",
    "dataclasses",
    "inspect",
)


def _loaded(*args: str) -> list[str]:
    return loaded_modules(HEAVY, *args)


def test_a_warm_rescan_loads_no_analysis_and_an_edit_no_yaml(tmp_path: Path) -> None:
    tree, cache = tmp_path / "tree", tmp_path / "cache"
    tree.mkdir()
    for n in range(3):
        (tree / f"m{n}.py").write_text("import torch_xla.core.xla_model as xm\nxm.mark_step()\n")
    scan = ["scan", str(tree), "-f", "json", "--cache-dir", str(cache), "-j", "2"]
    assert "yaml" in _loaded(*scan)  # the first scan reads the rules and the matrix
    assert _loaded(*scan) == []
    (tree / "m0.py").write_text("import torch_xla.core.xla_model as xm\nxm.xla_device()\n")
    # One file to analyse: in this process, from the data snapshot; no YAML, no pool, and no
    # dataclass defined on the way (`neuron_migrate.records`).
    assert _loaded(*scan) == ["neuron_migrate.analysis"]
