"""What a scan loads for project files: the shell grammar only for shell, `packaging` only for
dependency files (the cost of the import is part of every scan that meets such a file)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

PROBE = """
import sys
from pathlib import Path
from neuron_migrate import api
api.scan(Path(sys.argv[1]), use_cache=False, fail_on=("none",), jobs=1)
print("packaging" in sys.modules, "tree_sitter" in sys.modules)
"""


def _loaded(tree: Path) -> str:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(tree)], capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


def test_each_reader_loads_only_its_own_parser(tmp_path: Path) -> None:
    python = tmp_path / "python"
    python.mkdir()
    (python / "train.py").write_text("import torch_xla.core.xla_model as xm\nxm.mark_step()\n")
    assert _loaded(python) == "False False"
    shell = tmp_path / "shell"
    shell.mkdir()
    (shell / "run.sh").write_text("export PJRT_DEVICE=NEURON\n")
    assert _loaded(shell) == "False True"
    deps = tmp_path / "deps"
    deps.mkdir()
    (deps / "requirements.txt").write_text("torch-xla==2.9.0\n")
    assert _loaded(deps) == "True False"
