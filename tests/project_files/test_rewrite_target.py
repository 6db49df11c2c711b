"""`rewrite --target`: what a rewrite writes that depends on the torch-neuronx version (a
dependency pin, the pair a marker names, the matrix behind unsupported-op markers) follows the
target, as `scan --target` does; the project's `[tool.neuron-migrate] target` too."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli import invoke

XLA_PINS = "torch-neuronx==2.9.0.2.15.32035\ntorch==2.9.0\n"


def _tree(root: Path, pyproject: str | None = None) -> Path:
    tree = root / "proj"
    tree.mkdir()
    (tree / "requirements.txt").write_text(XLA_PINS)
    if pyproject is not None:
        (tree / "pyproject.toml").write_text(pyproject)
    return tree


@pytest.mark.parametrize(
    ("target", "neuronx", "torch"),
    [
        ("2.13", "2.13", "2.13.0"),
        ("2.14.3.0", "2.14", "2.14.0"),  # the family: pip takes its newest build
        (None, "2.14", "2.14.0"),
    ],
)
def test_the_pin_follows_the_target(
    tmp_path: Path, target: str | None, neuronx: str, torch: str
) -> None:
    tree = _tree(tmp_path)
    args = ["rewrite", "--no-cache", "--unsafe-fixes", "--apply"]
    args += ["--target", target] if target else []
    assert invoke([*args, str(tree)]).exit_code == 0
    pins = (tree / "requirements.txt").read_text()
    assert pins == f"torch-neuronx=={neuronx}.*\ntorch=={torch}\n"


def test_the_marker_names_the_targets_pair(tmp_path: Path) -> None:
    diff = invoke(["rewrite", "--no-cache", "--target", "2.13", str(_tree(tmp_path))]).stdout
    assert "TorchNeuron 2.13.3.1 needs torch-neuronx==2.13.* with torch==2.13.0" in diff
    assert "2.14" not in diff


def test_a_cached_result_is_kept_per_target(tmp_path: Path) -> None:
    tree = _tree(tmp_path)
    cache = ["--cache-dir", str(tmp_path / "cache")]
    first = invoke(["rewrite", "--unsafe-fixes", *cache, "--target", "2.14", str(tree)]).stdout
    second = invoke(["rewrite", "--unsafe-fixes", *cache, "--target", "2.13", str(tree)]).stdout
    assert "+torch-neuronx==2.14.*" in first
    assert "+torch-neuronx==2.13.*" in second


def test_the_projects_configured_target_is_the_default(tmp_path: Path) -> None:
    tree = _tree(tmp_path, '[tool.neuron-migrate]\ntarget = "2.13"\n')
    assert invoke(["rewrite", "--no-cache", "--unsafe-fixes", "--apply", str(tree)]).exit_code == 0
    assert (tree / "requirements.txt").read_text().startswith("torch-neuronx==2.13.*\n")


@pytest.mark.parametrize("bad", ["9.9", ""])
def test_an_unknown_or_empty_target_is_one_line_and_exit_2(tmp_path: Path, bad: str) -> None:
    tree = _tree(tmp_path)
    result = invoke(["rewrite", "--no-cache", "--target", bad, str(tree)])
    assert result.exit_code == 2
    assert len(result.stderr.strip().splitlines()) == 1
    assert "--target" in result.stderr
    assert (tree / "requirements.txt").read_text() == XLA_PINS


def test_the_python_op_markers_read_the_targets_matrix(monkeypatch: pytest.MonkeyPatch) -> None:
    from neuron_migrate.rewrite.codemod import refused
    from neuron_migrate.rewrite.codemod.engine import rewrite_source
    from neuron_migrate.scan import scan_data

    asked: list[str] = []
    real = scan_data.context_for

    def context_for(version: str):  # type: ignore[no-untyped-def]
        asked.append(version)
        return real(version)

    monkeypatch.setattr(scan_data, "context_for", context_for)
    refused.target_context.cache_clear()
    source = (
        "import torch\nimport torch_xla.core.xla_model as xm\n\n"
        "x = torch.randn(2, device=xm.xla_device()).to_sparse()\n"
    )
    rewrite_source(source, target="2.13.3.0")
    assert asked == ["2.13.3.0"]


def test_the_json_report_names_the_target(tmp_path: Path) -> None:
    import json

    tree = _tree(tmp_path)
    out = invoke(["rewrite", "--no-cache", "--format", "json", "--target", "2.13", str(tree)])
    assert json.loads(out.stdout)["target"] == "2.13.3.1"
