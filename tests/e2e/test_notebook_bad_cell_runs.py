"""A notebook with a cell that does not parse is migrated but for that cell, which stays as it
is, and its other cells run on the `neuron` device: run in order as a kernel runs them, the bad
cell left out, as it fails alone in Jupyter (a SyntaxError) while the next cells still run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.scan.cli_helpers import run_cli

pytest.importorskip("torch")
pytestmark = [pytest.mark.torch, pytest.mark.slow]

BAD = "for step in range(3)\n    xm.mark_step()\n"
CELLS = [
    "import torch\nimport torch_xla.core.xla_model as xm\n",
    BAD,
    "device = xm.xla_device()\nx = torch.ones(4, device=device) * 2\n",
    'print("SUM", float(x.sum()), x.device.type)\nxm.mark_step()\n',
]


def test_the_cells_that_parse_are_migrated_and_run(tmp_path: Path) -> None:
    notebook = tmp_path / "train.ipynb"
    cells = [
        {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None, "source": c}
        for c in CELLS
    ]
    notebook.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4}, indent=1))
    code, _, err = run_cli(["rewrite", "--apply", "--no-cache", "."], cwd=str(tmp_path))
    assert code == 0, err
    sources = [c["source"] for c in json.loads(notebook.read_text())["cells"]]
    assert sources[1] == BAD
    assert "xla_device" not in sources[2] and "mark_step" not in sources[3]
    (tmp_path / "cells.py").write_text("".join(s for i, s in enumerate(sources) if i != 1))
    code, out, err = run_cli(["run", "-q", "--", "python", "cells.py"], cwd=str(tmp_path))
    assert code == 0, err
    assert "SUM 8.0 neuron" in out
