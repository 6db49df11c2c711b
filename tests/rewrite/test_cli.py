"""`neuron-migrate rewrite` end to end: diff, --apply, --check, --out-dir, JSON, bad files."""

from __future__ import annotations

import json
import py_compile
import re
import shutil
from pathlib import Path

import pytest

from tests.cli import invoke

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "rewrite"


def run(*args: str):
    return invoke(["rewrite", *args])


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "pkg").mkdir(parents=True)
    for case in ("single_device", "ddp_spawn", "new_api"):
        shutil.copy(FIXTURES / f"{case}.in.py", root / "pkg" / f"{case}.py")
    (root / "plain.py").write_text("import torch\n\nprint(torch.ones(2))\n")
    (root / "README.md").write_text("# sample\n")
    return root


def snapshot(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


def test_default_prints_a_diff_and_writes_nothing(project):
    before = snapshot(project)
    result = run(str(project))
    assert result.exit_code == 0
    assert "+++ b/pkg/ddp_spawn.py" in result.stdout
    assert "-    device = xm.xla_device()" in result.stdout
    assert snapshot(project) == before


def test_check_fails_before_and_passes_after_apply(project):
    assert run(str(project), "--check").exit_code == 1
    assert run(str(project), "--apply").exit_code == 0
    assert run(str(project), "--check").exit_code == 0


def test_apply_is_idempotent_and_compiles(project):
    run(str(project), "--apply")
    once = snapshot(project)
    second = run(str(project), "--apply")
    assert snapshot(project) == once
    assert "0 of 4 files changed" in second.stderr
    for path in project.rglob("*.py"):
        py_compile.compile(str(path), doraise=True)


def test_file_without_torch_xla_is_never_touched(project):
    plain = (project / "plain.py").read_bytes()
    run(str(project), "--apply")
    assert (project / "plain.py").read_bytes() == plain


def test_out_dir_writes_a_migrated_copy_of_the_whole_tree(project, tmp_path):
    before = snapshot(project)
    out = tmp_path / "migrated"
    assert run(str(project), "--out-dir", str(out)).exit_code == 0
    assert snapshot(project) == before
    assert (out / "README.md").read_text() == "# sample\n"
    assert "torch_xla" not in (out / "pkg" / "single_device.py").read_text()
    assert (out / "plain.py").read_bytes() == before["plain.py"]


def test_json_report(project):
    result = run(str(project), "--format", "json")
    report = json.loads(result.stdout)
    assert report["schema_version"] == 1
    assert report["command"] == "rewrite"
    summary = report["summary"]
    assert summary["files_changed"] == 3
    assert summary["rewritten"] > 0
    assert 0 <= summary["conversion_percent"] <= 100
    assert "NM104" in summary["rules"]
    paths = {f["path"] for f in report["files"]}
    assert "pkg/ddp_spawn.py" in paths


def test_summary_goes_to_stderr(project):
    result = run(str(project))
    assert "files would change" in result.stderr
    assert "converted" in result.stderr
    assert "converted" not in result.stdout


def test_a_broken_file_is_reported_and_the_run_goes_on(project):
    (project / "py2.py").write_text("import torch_xla\nprint 'hello'\n")
    (project / "binary.py").write_bytes(b"\x00\x01torch_xla")
    result = run(str(project), "--apply")
    assert result.exit_code == 0
    assert "py2.py: syntax error" in result.stderr
    assert "binary.py" in result.stderr
    assert "torch_xla" not in (project / "pkg" / "single_device.py").read_text()


def test_unsafe_fixes_apply_only_on_request(tmp_path):
    source = "from torch_xla.amp import GradScaler\n\nscaler = GradScaler(2.0**14)\n"
    target = tmp_path / "m.py"
    target.write_text(source)
    run(str(target), "--apply")
    assert "TODO(neuron-migrate NM506)" in target.read_text()
    target.write_text(source)
    run(str(target), "--apply", "--unsafe-fixes")
    expected = 'import torch\n\nscaler = torch.amp.GradScaler("neuron", 2.0**14)\n'
    assert target.read_text() == expected


def test_apply_and_out_dir_together_is_a_usage_error(project, tmp_path):
    result = run(str(project), "--apply", "--out-dir", str(tmp_path / "o"))
    assert result.exit_code == 2
    assert "--apply and --out-dir are exclusive" in result.stderr


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_progress_is_drawn_on_request_and_leaves_stdout_alone(project, jobs):
    python_files = sum(1 for p in project.rglob("*.py"))
    quiet = run("--no-cache", "-j", jobs, str(project))
    shown = run("--no-cache", "-j", jobs, "--progress", str(project))
    assert shown.stdout == quiet.stdout  # the diff, untouched by the bar
    bar = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", shown.stderr)  # the bar's colours and moves
    assert "rewriting" in bar and "rewriting" not in quiet.stderr
    assert f"{python_files}/{python_files}" in bar
    assert "rewriting" not in run("--no-cache", "--no-progress", "--check", str(project)).stderr
