"""`matrix import TABLE`: the official per-API table (released format) becomes a new matrix."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from neuron_migrate import resources
from neuron_migrate.errors import DataFileError
from neuron_migrate.matrix import load_matrix
from neuron_migrate.matrix.import_evidence import import_file
from neuron_migrate.matrix.stats import matrix_stats
from tests.cli import invoke

TABLE = Path(__file__).resolve().parents[2] / "fixtures" / "matrix" / "torch_api_compatibility.md"
BASE = resources.matrix_dir() / "2.14.3.0.yaml"
KEY = "official-table-2.15.3.0"


@pytest.fixture
def imported(tmp_path: Path):
    out = tmp_path / "2.15.3.0.yaml"
    result = invoke(["matrix", "import", str(TABLE), "--base", "2.14.3.0", "-o", str(out)])
    assert result.exit_code == 0, result.stderr
    assert "torch-neuronx 2.15.3.0 over 2.14.3.0" in result.stdout
    return load_matrix(path=out)


def test_rows_decide_the_ops_they_name_and_the_rest_keeps_the_base(imported):
    base = load_matrix("2.14.3.0")
    assert (imported.version, imported.torch_version) == ("2.15.3.0", "2.15.0")
    assert imported.evidence[KEY].kind == "official-table"
    # CPU_FALLBACK names the ATen op; with its dtypes, it falls back for those only and runs
    # natively for the others (the API row keeps the dtypes)
    stable = imported.op_status("aten::sort.stable")
    assert (stable.status, stable.source) == ("native", KEY)
    assert "float64, int64 only" in stable.note
    assert set(imported.dtype_fallbacks("aten::sort.stable")) == {"float64", "int64"}
    assert imported.dtype_fallbacks("aten::_fft_r2c") == ()
    fft = imported.op_status("aten::_fft_r2c")
    assert (fft.status, fft.source) == ("cpu_fallback", KEY)
    # Y Native: the ops the API map says the API reaches
    for op in ("aten::add.Tensor", "aten::gelu", "aten::native_layer_norm"):
        assert (imported.op_status(op).status, imported.op_status(op).source) == ("native", KEY)
    # Y Needs a process group: torch.distributed.all_reduce reaches c10d::allreduce_
    assert imported.op_status("c10d::allreduce_").source == KEY
    # everything no row speaks about: the base's status and evidence
    for op in ("aten::mm", "aten::linalg_qr", "c10d::send", "aten::quantize_per_tensor"):
        assert imported.op_status(op) == base.op_status(op)
    assert imported.compile == base.compile and imported.dtypes == base.dtypes


def test_rows_are_kept_per_api(imported):
    n = imported.api_status("torch.quantize_per_tensor")
    assert (n.status, n.source, n.note) == ("unsupported", KEY, "Quantized operator variant")
    size = imported.api_status("Tensor.size")  # under "## torch.Tensor", a bare name
    assert (size.status, size.kind) == ("native", "host_only")
    assert imported.api_status("torch.distributed.all_reduce").kind == "needs_process_group"
    sort = imported.api_status("Tensor.sort")
    assert (sort.ops, sort.dtypes) == (("aten::sort.stable",), ("float64",))
    stats = matrix_stats(imported)
    assert stats["by_kind"]["official-table"] == 6 and stats["apis"] == 12


def test_show_names_the_table_row(imported, tmp_path):
    from neuron_migrate.matrix.query import describe_name

    report = describe_name("torch.quantize_per_tensor", imported, None)
    assert report.status == "unsupported"
    assert report.table_row["evidence"]["kind"] == "official-table"


def test_importing_twice_writes_the_same_bytes():
    first = import_file(TABLE, base=BASE)
    second = import_file(TABLE, base=BASE)
    assert first == second and first[0] == "2.15.3.0"


def test_refuses_to_overwrite(tmp_path):
    out = tmp_path / "m.yaml"
    out.write_text("keep me", encoding="utf-8")
    result = invoke(["matrix", "import", str(TABLE), "-o", str(out)])
    assert result.exit_code == 2 and "--force" in result.stderr
    assert out.read_text(encoding="utf-8") == "keep me"


ROWS = """# torch-neuronx 2.15.3.0
## torch
| API | Supported | Limitations |
|---|---|---|
| `torch.add` | Y | Native |
{row}
"""


@pytest.mark.parametrize(
    ("row", "problem"),
    [
        ("| `torch.sort` | MAYBE | |", "'MAYBE' is not one of Y, CPU_FALLBACK, N"),
        ("| `torch.sort` | Y | fast |", "a Y row says Native, Host-only or Needs a process group"),
        ("| `torch.sort` | CPU_FALLBACK | float64 |", "names the ATen op"),
        ("| `torch.add` | N | |", "listed twice (first on line 5)"),
        ("| `torch.sort` |", "expected 3 cells, found 1"),
    ],
)
def test_a_bad_row_is_one_line_naming_it(tmp_path, row, problem):
    table = tmp_path / "table.md"
    table.write_text(ROWS.format(row=row), encoding="utf-8")
    with pytest.raises(DataFileError) as err:
        import_file(table, base=BASE)
    message = str(err.value)
    assert "\n" not in message and problem in message
    assert message.startswith(f"{table}: line 6 (row 'torch.")
    result = invoke(["matrix", "import", str(table), "-o", str(tmp_path / "out.yaml")])
    assert result.exit_code == 2 and problem in result.stderr
    assert not (tmp_path / "out.yaml").exists()


def test_a_table_without_a_version_needs_one(tmp_path):
    table = tmp_path / "table.md"
    table.write_text(ROWS.format(row="").replace("# torch-neuronx 2.15.3.0", "# APIs"), "utf-8")
    with pytest.raises(DataFileError, match="pass --version"):
        import_file(table, base=BASE)
    version, text = import_file(table, base=BASE, version="2.16.3.0", torch="2.16.0")
    assert version == "2.16.3.0" and "torch: 2.16.0" in text


def test_scan_refuses_an_api_the_table_marks_n(tmp_path, monkeypatch):
    import shutil

    from neuron_migrate import api
    from neuron_migrate.matrix import clear_cache

    data = tmp_path / "compat_matrix"
    shutil.copytree(resources.matrix_dir(), data)
    # a torch with an API map: the scan maps calls to ops with it
    version, text = import_file(TABLE, base=BASE, torch="2.14.0")
    (data / f"{version}.yaml").write_text(text, encoding="utf-8")
    monkeypatch.setattr(resources, "matrix_dir", lambda: data)
    clear_cache()
    code = tmp_path / "train.py"
    code.write_text(
        "import torch\n\ndef step(x):\n"
        "    q = torch.quantize_per_tensor(x, 0.1, 0, torch.qint8)\n"
        "    return torch.sort(x)\n",
        encoding="utf-8",
    )
    report = api.scan(code, target=version, jobs=1, use_cache=False)
    found = {(f.line, f.api): f for f in report.findings}
    refused = found[4, "torch.quantize_per_tensor"]
    assert refused.status == "unsupported" and f"[{KEY}]" in refused.message
    assert "official table" in refused.message
    assert found[5, "torch.sort"].status == "cpu_fallback"
    clear_cache()


def test_probe_script_stands_alone():
    result = invoke(["matrix", "probe", "--script"])
    assert result.exit_code == 0, result.stderr
    script = result.stdout
    assert script.startswith('"""Record what the installed torch-neuronx really does')
    assert "neuron_migrate" not in script.replace("neuron-migrate", "").split('"""', 2)[2]
    compile(script, "probe.py", "exec")


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        ('{"format": "something-else"}', "format: expected 'neuron-migrate-matrix-probe'"),
        ('{"format": "neuron-migrate-matrix-probe", "versions": {}}', "registered: missing"),
        ("{not json", "<file>: not a probe file"),
    ],
)
def test_a_bad_probe_file_is_one_line(tmp_path, body, problem):
    path = tmp_path / "probe.json"
    path.write_text(body, encoding="utf-8")
    with pytest.raises(DataFileError) as err:
        import_file(path, base=BASE)
    assert "\n" not in str(err.value) and problem in str(err.value)


def test_diff_against_the_imported_file(tmp_path):
    out = tmp_path / "m.yaml"
    assert invoke(["matrix", "import", str(TABLE), "--base", "2.14", "-o", str(out)]).exit_code == 0
    result = invoke(["matrix", "diff", "2.14.3.1", str(out)])
    assert result.exit_code == 0, result.stderr
    text = " ".join(result.stdout.split())
    assert "matrix diff 2.14.3.1 -> 2.15.3.0" in text
    assert f"Ops with the same status on other evidence (5): 5 now {KEY}" in text


def _probe(tmp_path, simulated: bool):
    path = tmp_path / "probe.json"
    path.write_text(
        json.dumps(
            {
                "format": "neuron-migrate-matrix-probe",
                "format_version": 1,
                "versions": {"torch": "2.13.0", "torch_neuronx": "2.14.3.1"},
                "simulated": simulated,
                "registered": {"source": "dispatcher", "ops": ["aten::mse_loss"]},
                "fallback_ops": [],
            }
        ),
        encoding="utf-8",
    )
    return path


def test_a_probe_of_the_simulated_device_confirms_nothing(tmp_path):
    # The simulated device runs the matrix it is given: its probe tests the path, not
    # TorchNeuron, and the torch it ran on is the host's, not the pair's.
    _version, text = import_file(_probe(tmp_path, simulated=True), base=BASE)
    out = tmp_path / "m.yaml"
    out.write_text(text, encoding="utf-8")
    m = load_matrix(path=out)
    verdict = m.op_status("aten::mse_loss")
    assert verdict.status == "native"
    assert (m.evidence_kind(verdict.source), m.confidence(verdict.source)) == (
        "device-probe",
        "unknown",
    )
    assert m.torch_version == "2.14.0"


def test_a_probe_of_a_device_confirms(tmp_path):
    _version, text = import_file(_probe(tmp_path, simulated=False), base=BASE)
    out = tmp_path / "m.yaml"
    out.write_text(text, encoding="utf-8")
    m = load_matrix(path=out)
    assert m.confidence(m.op_status("aten::mse_loss").source) == "confirmed"
    assert m.torch_version == "2.13.0"  # what the device's probe recorded


def test_a_row_naming_a_native_dtype_falls_back_for_the_others_only(tmp_path):
    """`native for float32, falls back for int64`: only int64 falls back."""
    table = Path(__file__).resolve().parents[2] / "fixtures" / "matrix" / "dtype_qualified.md"
    out = tmp_path / "2.14.9.1.yaml"
    result = invoke(["matrix", "import", str(table), "-o", str(out)])
    assert result.exit_code == 0, result.stderr
    matrix = load_matrix(path=out)
    assert matrix.dtype_fallbacks("aten::add.Tensor") == ("float64",)
    assert matrix.dtype_fallbacks("aten::mul.Tensor") == ("int64",)
    assert matrix.op_status("aten::mul.Tensor").status == "native"
