"""What a re-scan loads: the modules a cache-answered scan does not need stay unimported (each
costs milliseconds of start-up on every CI run)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

# Runs the CLI, then prints which of the heavy modules got imported.
RUN = """
import json, sys
sys.argv = ["neuron-migrate", *sys.argv[1:]]
from neuron_migrate.cli import main
try:
    main()
except SystemExit:
    pass
heavy = ("yaml", "libcst", "rich", "tomllib", "multiprocessing", "neuron_migrate.analysis",
         "dataclasses", "inspect")
print(json.dumps(sorted(m for m in heavy if m in sys.modules)), file=sys.stderr)
"""


def _loaded(*args: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", RUN, *args], capture_output=True, text=True, timeout=300
    )
    loaded: list[str] = json.loads(done.stderr.strip().splitlines()[-1])
    return loaded


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
