"""`rewrite` reads the same `[tool.neuron-migrate]` as `scan`: what scan excludes, rewrite
leaves alone, and a malformed table is an error naming its field."""

from __future__ import annotations

from pathlib import Path

from tests.cli import invoke

XLA = "import torch_xla.core.xla_model as xm\n\ndevice = xm.xla_device()\n"


def _project(tmp_path: Path, table: str) -> Path:
    tree = tmp_path / "project"
    tree.mkdir()
    (tree / "pyproject.toml").write_text(f"[tool.neuron-migrate]\n{table}")
    (tree / "train.py").write_text(XLA)
    (tree / "model.py").write_text(XLA)
    return tree


def test_a_file_the_config_excludes_is_not_rewritten(tmp_path: Path) -> None:
    tree = _project(tmp_path, 'exclude = ["train.py"]\n')
    scan = invoke(["scan", "-f", "json", "--no-cache", str(tree)])
    assert '"train.py"' not in scan.stdout and '"model.py"' in scan.stdout
    check = invoke(["rewrite", "--check", "--no-cache", "-f", "json", str(tree)])
    assert check.exit_code == 1 and "train.py" not in check.stdout + check.stderr
    assert invoke(["rewrite", "--apply", "--no-cache", str(tree)]).exit_code == 0
    assert (tree / "train.py").read_text() == XLA and (tree / "model.py").read_text() != XLA


def test_a_malformed_config_is_an_error_naming_the_field(tmp_path: Path) -> None:
    tree = _project(tmp_path, "exclude = 3\n")
    for command in (["scan", "--no-cache"], ["rewrite", "--no-cache"]):
        result = invoke([*command, str(tree)])
        assert result.exit_code == 2, command
        assert "exclude" in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert (tree / "train.py").read_text() == XLA
