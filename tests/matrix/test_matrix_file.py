"""`--matrix FILE` and `matrix = "FILE"`: a matrix made by `matrix import -o FILE` is used
where it lies, by scan, rewrite, run, verify and `matrix show / stats / diff`, without writing
it into the installed package. A broken file is one line naming its field, exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli import invoke

TABLE = Path(__file__).resolve().parents[2] / "fixtures" / "matrix" / "every_row_kind.md"
# torch.sort is cpu_fallback in the bundled matrices; the table's Y row makes it native.
PROGRAM = "import torch\nx = torch.zeros(4, device='neuron')\ny = torch.sort(x)\n"


@pytest.fixture(scope="module")
def matrix_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("imported") / "neuron-matrix.yaml"
    result = invoke(["matrix", "import", str(TABLE), "-o", str(out)])
    assert result.exit_code == 0, result.stderr
    return out


def _scan(path: Path, *args: str) -> dict:
    result = invoke(["scan", str(path), "--no-cache", "-f", "json", *args])
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def _sort_status(report: dict) -> str:
    return next(f["status"] for f in report["findings"] if f["api"] == "torch.sort")


def test_scan_reads_the_matrix_file(tmp_path: Path, matrix_file: Path) -> None:
    program = tmp_path / "train.py"
    program.write_text(PROGRAM, encoding="utf-8")
    bundled = _scan(program, "--no-config")
    assert (bundled["target"], _sort_status(bundled)) == ("2.14.3.1", "cpu_fallback")
    imported = _scan(program, "--no-config", "--matrix", str(matrix_file))
    assert imported["target"] == "2.14.9.0"
    assert _sort_status(imported) == "native"


def test_the_project_config_names_the_matrix_file(tmp_path: Path, matrix_file: Path) -> None:
    (tmp_path / "neuron-matrix.yaml").write_bytes(matrix_file.read_bytes())
    (tmp_path / "pyproject.toml").write_text(
        '[tool.neuron-migrate]\nmatrix = "neuron-matrix.yaml"\n', encoding="utf-8"
    )
    (tmp_path / "train.py").write_text(PROGRAM, encoding="utf-8")
    report = _scan(tmp_path)
    assert report["target"] == "2.14.9.0" and _sort_status(report) == "native"
    # a flag still wins over the config
    assert _scan(tmp_path, "--target", "2.14.3.0")["target"] == "2.14.3.0"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ("schema_version: 1\ntorch_neuronx: 2.14.9.0\n", "m.yaml: torch: missing"),
        ("ops: [", "m.yaml: line"),
    ],
)
def test_a_broken_matrix_file_is_one_line_naming_the_field(
    tmp_path: Path, body: str, field: str
) -> None:
    broken = tmp_path / "m.yaml"
    broken.write_text(body, encoding="utf-8")
    program = tmp_path / "train.py"
    program.write_text(PROGRAM, encoding="utf-8")
    for args in (
        ["scan", str(program), "--no-config", "--matrix", str(broken)],
        ["rewrite", str(program), "--matrix", str(broken)],
        ["run", "--matrix", str(broken), "--", "python", str(program)],
        ["matrix", "show", "aten::sort", "--matrix", str(broken)],
    ):
        result = invoke(args)
        assert result.exit_code == 2, args
        assert len(result.stderr.strip().splitlines()) == 1 and field in result.stderr, args
    (tmp_path / "pyproject.toml").write_text(
        '[tool.neuron-migrate]\nmatrix = "m.yaml"\n', encoding="utf-8"
    )
    result = invoke(["scan", str(program)])
    assert result.exit_code == 2
    assert "tool.neuron-migrate.matrix" in result.stderr and field in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_target_and_matrix_together_are_refused(tmp_path: Path, matrix_file: Path) -> None:
    result = invoke(["scan", str(tmp_path), "-t", "2.14", "--matrix", str(matrix_file)])
    assert result.exit_code == 2 and "exclusive" in result.stderr


def test_matrix_show_stats_and_diff_read_the_file(matrix_file: Path) -> None:
    show = json.loads(
        invoke(["matrix", "show", "torch.sort", "--matrix", str(matrix_file), "-f", "json"]).stdout
    )
    assert [(v["version"], v["status"]) for v in show["versions"]] == [("2.14.9.0", "native")]
    stats = json.loads(
        invoke(["matrix", "stats", "--matrix", str(matrix_file), "-f", "json"]).stdout
    )
    assert [v["version"] for v in stats["versions"]] == ["2.14.9.0"]
    diff = json.loads(
        invoke(["matrix", "diff", "2.14.3.1", "--matrix", str(matrix_file), "-f", "json"]).stdout
    )
    assert any(c["op"] == "aten::sort.stable" for c in diff["changed"])


def test_rewrite_reads_the_matrix_file(tmp_path: Path, matrix_file: Path) -> None:
    (tmp_path / "requirements.txt").write_text("torch-neuronx==2.9.0.2.15.32035\n")
    result = invoke(
        ["rewrite", str(tmp_path), "--no-cache", "--unsafe-fixes", "--matrix", str(matrix_file)]
    )
    assert result.exit_code == 0, result.stderr
    assert "+torch-neuronx==2.14.*" in result.stdout


def test_run_decides_ops_by_the_matrix_file(tmp_path: Path, matrix_file: Path) -> None:
    program = tmp_path / "train.py"
    program.write_text(PROGRAM, encoding="utf-8")
    trace = tmp_path / "trace.json"
    command = ["--", "python", str(program)]
    assert invoke(["run", "-q", "--trace", str(trace), *command]).exit_code == 0
    fell_back = json.loads(trace.read_text())["fallbacks"]
    assert "aten::sort" in str(fell_back)
    args = ["run", "-q", "--matrix", str(matrix_file), "--trace", str(trace), *command]
    assert invoke(args).exit_code == 0
    ran = json.loads(trace.read_text())
    assert ran["target"] == "2.14.9.0" and "aten::sort" not in str(ran["fallbacks"])
