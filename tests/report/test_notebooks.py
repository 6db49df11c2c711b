"""Notebooks: code cells scanned as one module, findings located by cell and line, magics kept,
and changed cells written back without disturbing the rest of the file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from neuron_migrate.project.notebook import (
    MAGIC_PLACEHOLDER,
    NotebookError,
    cell_sources,
    join_notebook,
    split_notebook,
)
from tests.cli import invoke


def _cell(kind: str, source: str, **extra: object) -> dict:
    cell: dict = {"cell_type": kind, "metadata": {}, "source": source.splitlines(keepends=True)}
    if kind == "code":
        cell.update({"execution_count": 1, "outputs": []})
    cell.update(extra)
    return cell


OUTPUT = {"name": "stdout", "output_type": "stream", "text": ["xla:0\n"]}
CELLS = [
    _cell("markdown", "# Training on Trainium — notes"),
    _cell(
        "code", "%pip install torch-neuronx\nimport torch\nimport torch_xla.core.xla_model as xm"
    ),
    _cell("code", "device = xm.xla_device()\nprint(device)", outputs=[OUTPUT]),
    _cell("code", "%%bash\necho not python"),
    _cell("code", "%%time\nfor step in range(3):\n    !nvidia-smi\n    xm.mark_step()\n"),
    _cell("code", "files = !ls\nn = torch.distributions.Normal(0.0, 1.0)"),
    _cell("code", ""),
]


def notebook_text(cells: list[dict] = CELLS) -> str:
    """The layout Jupyter and nbformat write: indent 1, sorted keys, raw UTF-8, final newline."""
    doc = {
        "cells": cells,
        "metadata": {
            "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    return json.dumps(doc, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def test_split_masks_magics_and_locates_lines() -> None:
    split = split_notebook(notebook_text())
    assert [c.cell for c in split.cells] == [2, 3, 5, 6, 7]  # markdown and %%bash left out
    assert "%pip" not in split.source and "!ls" not in split.source
    assert split.source.count(MAGIC_PLACEHOLDER) == 3
    compile(split.source, "nb", "exec")  # the module parses
    lines = split.source.splitlines()
    mark_step = lines.index("    xm.mark_step()") + 1
    assert split.locate(mark_step) == (5, 4)  # the %%time line is line 1 of cell 5
    assert split.locate(lines.index("device = xm.xla_device()") + 1) == (3, 1)


def test_unchanged_module_gives_back_the_same_bytes() -> None:
    text = notebook_text()
    split = split_notebook(text)
    assert join_notebook(text, split, split.source) is text
    sources = cell_sources(split, split.source)
    for number, source in sources.items():
        assert source == "".join(CELLS[number - 1]["source"])


def test_a_changed_cell_is_the_only_change() -> None:
    text = notebook_text()
    split = split_notebook(text)
    module = split.source.replace("device = xm.xla_device()", 'device = torch.device("neuron")')
    module = module.replace("    xm.mark_step()\n", "")
    new = join_notebook(text, split, module)
    old_doc, new_doc = json.loads(text), json.loads(new)
    assert new_doc["cells"][2]["source"] == ['device = torch.device("neuron")\n', "print(device)"]
    assert new_doc["cells"][2]["outputs"] == [OUTPUT]
    assert new_doc["cells"][4]["source"] == [
        "%%time\n",
        "for step in range(3):\n",
        "    !nvidia-smi\n",
    ]
    for i in (0, 1, 3, 5, 6):
        assert new_doc["cells"][i] == old_doc["cells"][i]
    assert new_doc["metadata"] == old_doc["metadata"]
    expected = json.loads(text)
    expected["cells"][2]["source"] = new_doc["cells"][2]["source"]
    expected["cells"][4]["source"] = new_doc["cells"][4]["source"]
    assert new == json.dumps(expected, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def test_lines_added_before_the_first_cell_join_it() -> None:
    text = notebook_text()
    split = split_notebook(text)
    sources = cell_sources(split, "import os\n" + split.source)
    assert sources[2].startswith("import os\n%pip install torch-neuronx\n")


def test_not_a_notebook() -> None:
    with pytest.raises(NotebookError, match="invalid JSON"):
        split_notebook("{not json")
    with pytest.raises(NotebookError, match="no 'cells' list"):
        split_notebook('{"metadata": {}}')


def test_scan_locates_findings_by_cell(tmp_path: Path) -> None:
    (tmp_path / "explore.ipynb").write_text(notebook_text(), encoding="utf-8")
    (tmp_path / "broken.ipynb").write_text("{", encoding="utf-8")
    code, out, err = invoke(
        [
            "scan",
            str(tmp_path),
            "-f",
            "json",
            "--no-cache",
            "--no-config",
            "-j",
            "1",
            "--fail-on",
            "none",
        ]
    )
    assert code == 0, err
    report = json.loads(out)
    found = {(f["api"], f["cell"], f["line"]) for f in report["findings"]}
    assert ("torch_xla.core.xla_model.xla_device", 3, 1) in found
    assert ("torch_xla.core.xla_model.mark_step", 5, 4) in found
    assert ("torch.distributions.Normal", 6, 2) in found
    assert [e["path"] for e in report["errors"]] == ["broken.ipynb"]


def test_suppressions_in_a_notebook_cell(tmp_path: Path) -> None:
    cells = [
        _cell(
            "code",
            "import torch_xla.core.xla_model as xm\n"
            "# neuron-migrate: fixme[NM104]\nxm.mark_step()\n"
            "xm.mark_step()  # neuron-migrate: ignore[NM101]",
        )
    ]
    (tmp_path / "nb.ipynb").write_text(notebook_text(cells), encoding="utf-8")
    _, out, _ = invoke(
        ["scan", str(tmp_path), "-f", "json", "--no-cache", "--no-config", "-j", "1"]
    )
    report = json.loads(out)
    assert [(s["cell"], s["line"], s["suppression"]) for s in report["suppressed"]] == [
        (1, 3, "fixme")
    ]
    assert [(u["cell"], u["line"]) for u in report["unused_suppressions"]] == [(1, 4)]


def test_rewrite_apply_migrates_a_notebook_that_still_opens(tmp_path: Path) -> None:
    path = tmp_path / "explore.ipynb"
    path.write_text(notebook_text(), encoding="utf-8")
    code, _, err = invoke(["rewrite", str(tmp_path), "--apply"])
    assert code == 0, err
    doc = json.loads(path.read_text(encoding="utf-8"))  # still valid JSON ...
    assert doc["nbformat"] == 4 and len(doc["cells"]) == len(CELLS)  # ... and a notebook
    for cell, original in zip(doc["cells"], CELLS, strict=True):
        assert cell["cell_type"] == original["cell_type"]
        assert cell.get("outputs") == original.get("outputs")  # outputs untouched
        assert isinstance(cell["source"], list)
    sources = ["".join(c["source"]) for c in doc["cells"]]
    assert "xla" not in sources[2] and 'torch.device("neuron")' in sources[2]
    assert sources[1].startswith("%pip install torch-neuronx\n")  # magics kept
    assert "    !nvidia-smi" in sources[4] and sources[3] == "%%bash\necho not python"
    first = path.read_bytes()
    invoke(["rewrite", str(tmp_path), "--apply"])
    assert path.read_bytes() == first  # a second run changes nothing


CONTINUED = [
    _cell(
        "code",
        "!pip install \\\n    torch-neuronx \\\n    neuronx-cc\n"
        "import torch_xla.core.xla_model as xm\n"
        "if True:\n    !echo \\\n        indented\n    device = xm.xla_device()\n",
    )
]


def test_a_shell_line_continued_with_a_backslash_is_one_command(tmp_path: Path) -> None:
    # IPython joins `!pip install \` and the indented lines after it into one command.
    split = split_notebook(notebook_text(CONTINUED))
    assert cell_sources(split, split.source)[1] == "".join(CONTINUED[0]["source"])
    (tmp_path / "setup.ipynb").write_text(notebook_text(CONTINUED), encoding="utf-8")
    _, out, _ = invoke(["scan", str(tmp_path), "-f", "json", "--no-cache", "--fail-on", "none"])
    report = json.loads(out)
    assert report["errors"] == []
    assert ("torch_xla.core.xla_model.xla_device", 1, 8) in {
        (f["api"], f["cell"], f["line"]) for f in report["findings"]
    }
    code, _, _ = invoke(["rewrite", str(tmp_path), "--apply"])
    doc = json.loads((tmp_path / "setup.ipynb").read_text(encoding="utf-8"))
    source = "".join(doc["cells"][0]["source"])
    assert code == 0 and "!pip install \\\n    torch-neuronx \\\n    neuronx-cc\n" in source
    assert "xla_device" not in source and "    !echo \\\n        indented\n" in source


def test_a_notebook_that_cannot_be_read_is_an_error_in_the_rewrite_summary(
    tmp_path: Path,
) -> None:
    # cut short while saved: not JSON, but it holds torch_xla code
    text = notebook_text(CONTINUED)
    (tmp_path / "broken.ipynb").write_text(text[: text.index("xla_device")], encoding="utf-8")
    (tmp_path / "m.py").write_text("import torch_xla.core.xla_model as xm\nxm.mark_step()\n")
    _, _, err = invoke(["rewrite", str(tmp_path)])
    assert "broken.ipynb" in err
    assert "1 file could not be read" in err and "100% converted" not in err


WRITEFILE = [
    _cell("markdown", "Write the training script, then run it."),
    _cell(
        "code",
        "%%writefile train.py\n"
        "import torch\n"
        "import torch_xla.core.xla_model as xm\n"
        "\n"
        "device = xm.xla_device()\n"
        "x = torch.ones(3, device=device)\n"
        "xm.mark_step()\n",
    ),
    _cell("code", "!python train.py"),
    _cell("code", "%%writefile notes.txt\nxm.mark_step() is not code here\n"),
]


def test_writefile_cells_are_read_as_the_python_files_they_write(tmp_path: Path) -> None:
    path = tmp_path / "tutorial.ipynb"
    path.write_text(notebook_text(WRITEFILE), encoding="utf-8")
    _, out, _ = invoke(["scan", str(tmp_path), "-f", "json", "--no-cache", "--fail-on", "none"])
    found = {(f["api"], f["cell"], f["line"]) for f in json.loads(out)["findings"]}
    # line 1 of the cell is the %%writefile line; a non-Python file is not read
    assert ("torch_xla.core.xla_model.xla_device", 2, 5) in found
    assert ("torch_xla.core.xla_model.mark_step", 2, 7) in found
    assert all(cell == 2 for _, cell, _ in found)
    code, _, err = invoke(["rewrite", str(tmp_path), "--apply"])
    assert code == 0, err
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    script = "".join(cells[1]["source"])
    assert script.startswith("%%writefile train.py\nimport torch\n")
    assert "torch_xla" not in script and 'torch.device("neuron")' in script
    assert "".join(cells[3]["source"]) == "%%writefile notes.txt\nxm.mark_step() is not code here\n"
