"""[tool.neuron-migrate] in pyproject.toml: found upward, overridden by flags, strict."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from neuron_migrate.errors import DataFileError
from neuron_migrate.project.config import find_config, load_config
from tests.cli import invoke

XLA = "import torch_xla.core.xla_model as xm\n\ndevice = xm.xla_device()\nxm.mark_step()\n"


def _project(tmp_path: Path, table: str) -> Path:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n\n" + table)
    (tmp_path / "src" / "pkg").mkdir(parents=True)
    (tmp_path / "src" / "pkg" / "train.py").write_text(XLA)
    (tmp_path / "src" / "tests").mkdir()
    (tmp_path / "src" / "tests" / "test_train.py").write_text(XLA)
    return tmp_path


def _scan(path: Path, *flags: str) -> tuple[int, dict, str]:
    code, out, err = invoke(["scan", str(path), "-f", "json", "--no-cache", "-j", "1", *flags])
    return code, (json.loads(out) if out else {}), err


def test_found_upward_from_the_scanned_path(tmp_path: Path) -> None:
    _project(tmp_path, '[tool.neuron-migrate]\nfail-on = "xla"\n')
    assert find_config(tmp_path / "src" / "pkg" / "train.py") == tmp_path / "pyproject.toml"
    code, report, _ = _scan(tmp_path / "src" / "pkg")
    assert code == 1 and report["summary"]["gate"]["fail_on"] == ["error", "unsupported", "xla"]
    assert report["config"] == str(tmp_path / "pyproject.toml")


def test_flags_override_the_config(tmp_path: Path) -> None:
    _project(tmp_path, '[tool.neuron-migrate]\nfail-on = "xla"\ntarget = "2.13"\n')
    code, report, _ = _scan(tmp_path, "--fail-on", "none", "--target", "2.14.3.0")
    assert code == 0 and report["target"] == "2.14.3.0"
    code, report, _ = _scan(tmp_path, "--no-config")
    assert code == 0 and report["config"] is None


def test_target_select_ignore_and_exclude(tmp_path: Path) -> None:
    _project(
        tmp_path,
        '[tool.neuron-migrate]\ntarget = "2.14"\nselect = ["NM1"]\nignore = ["NM104"]\n'
        'exclude = ["src/tests/*"]\n',
    )
    _, report, _ = _scan(tmp_path / "src")
    assert report["target"] == "2.14.3.1"  # a prefix names the newest version it prefixes
    assert {f["code"] for f in report["findings"]} == {"NM101"}
    assert {f["path"] for f in report["findings"]} == {"pkg/train.py"}
    _, report, _ = _scan(tmp_path / "src", "--select", "NM104")
    assert {f["code"] for f in report["findings"]} == set()  # NM104 is still ignored
    _, report, _ = _scan(tmp_path / "src", "--select", "NM104", "--ignore", "NM2")
    assert {f["code"] for f in report["findings"]} == {"NM104"}


def test_per_path_overrides(tmp_path: Path) -> None:
    _project(
        tmp_path,
        '[tool.neuron-migrate]\nfail-on = "xla"\n\n[[tool.neuron-migrate.overrides]]\n'
        'paths = ["src/pkg/*"]\nfail-on = "none"\nignore = ["NM104"]\n',
    )
    code, report, _ = _scan(tmp_path / "src")
    failing = {f["path"] for f in report["findings"] if f["gate"]}
    assert failing == {"tests/test_train.py"} and code == 1
    pkg_codes = {f["code"] for f in report["findings"] if f["path"] == "pkg/train.py"}
    assert "NM104" not in pkg_codes and "NM101" in pkg_codes


@pytest.mark.parametrize(
    ("table", "named"),
    [
        ("bogus = 1", "tool.neuron-migrate.bogus: unknown key"),
        ('fail-on = "sometimes"', "tool.neuron-migrate.fail-on: unknown value 'sometimes'"),
        ('target = "9.9"', "tool.neuron-migrate.target: unknown version 9.9"),
        ('select = ["E501"]', "tool.neuron-migrate.select: 'E501' is not a rule code"),
        ("exclude = 3", "tool.neuron-migrate.exclude: must be a list"),
        (
            "[[tool.neuron-migrate.overrides]]\nignore = ['NM1']",
            "tool.neuron-migrate.overrides[0].paths: missing",
        ),
        (
            "[[tool.neuron-migrate.overrides]]\npaths = ['a']\ncolour = 1",
            "tool.neuron-migrate.overrides[0].colour: unknown key",
        ),
    ],
)
def test_a_bad_config_is_one_line_exit_2(tmp_path: Path, table: str, named: str) -> None:
    _project(tmp_path, "[tool.neuron-migrate]\n" + table + "\n")
    code, out, err = invoke(["scan", str(tmp_path), "--no-cache", "-j", "1"])
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and named in err
    assert str(tmp_path / "pyproject.toml") in err


def test_invalid_toml_names_the_file(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.neuron-migrate\n")
    with pytest.raises(DataFileError, match="invalid TOML"):
        load_config(tmp_path / "pyproject.toml")


def test_a_pyproject_without_the_table_is_passed_over(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.neuron-migrate]\nfail-on = "xla"\n')
    inner = tmp_path / "inner"
    inner.mkdir()
    (inner / "pyproject.toml").write_text("[tool.other]\nx = 1\n")
    assert find_config(inner) == tmp_path / "pyproject.toml"


@pytest.mark.parametrize("command", [["scan"], ["rewrite"]])
def test_a_config_that_is_not_utf8_is_one_line_exit_2(tmp_path: Path, command: list[str]) -> None:
    # A fail-on the scan would have obeyed, and a byte TOML forbids (TOML is UTF-8).
    (tmp_path / "pyproject.toml").write_bytes(
        b'[tool.neuron-migrate]\nfail-on = "any"\n# caf\xe9\n'
    )
    (tmp_path / "train.py").write_text(XLA)
    code, out, err = invoke([*command, str(tmp_path), "--no-cache", "-j", "1"])
    assert code == 2 and out == "", err
    assert len(err.strip().splitlines()) == 1 and "not valid UTF-8" in err
    assert str(tmp_path / "pyproject.toml") in err


def test_a_pyproject_without_the_table_is_not_read_whatever_its_bytes(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_bytes(b"[project]\nname = 'caf\xe9'\n")
    (tmp_path / "train.py").write_text(XLA)
    assert invoke(["scan", str(tmp_path), "--no-cache", "-j", "1"])[0] == 0
