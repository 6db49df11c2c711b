"""File names a report must carry as they are: bytes that are not UTF-8, a newline, a space, `#`
and `%`. No crash, a diff `git apply` takes, SARIF URIs percent-encoded."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli import invoke

XLA = b"import torch_xla.core.xla_model as xm\nd = xm.xla_device()\n"
pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="Linux file names are bytes")


def test_a_file_name_that_is_not_utf8_is_scanned_and_shown_escaped(tmp_path: Path) -> None:
    with open(os.path.join(os.fsencode(tmp_path), b"bad\xff.py"), "wb") as handle:
        handle.write(XLA)
    for form in ("terminal", "json", "sarif"):
        result = invoke(["scan", "--no-cache", "-f", form, "--fail-on", "none", str(tmp_path)])
        assert result.exit_code == 0, result.stderr
        assert (
            "bad\\xff.py" in result.stdout.replace("\\\\", "\\") or "bad%5Cxff.py" in result.stdout
        )
    report = json.loads(invoke(["scan", "--no-cache", "-f", "json", str(tmp_path)]).stdout)
    assert {f["path"] for f in report["findings"]} == {"bad\\xff.py"}


def test_sarif_uris_are_percent_encoded(tmp_path: Path) -> None:
    (tmp_path / "sp ace#%.py").write_bytes(XLA)
    sarif = json.loads(invoke(["scan", "--no-cache", "-f", "sarif", str(tmp_path)]).stdout)
    uris = {
        location["physicalLocation"]["artifactLocation"]["uri"]
        for result in sarif["runs"][0]["results"]
        for location in result["locations"]
    }
    assert uris and all(uri.endswith("sp%20ace%23%25.py") for uri in uris)


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_a_newline_in_a_name_gives_a_diff_git_applies(tmp_path: Path) -> None:
    (tmp_path / "new\nline.py").write_bytes(XLA)
    (tmp_path / "plain.py").write_bytes(XLA)
    git = ["git", "-C", str(tmp_path), "-c", "user.email=t@t", "-c", "user.name=t"]
    subprocess.run([*git, "init", "-q"], check=True)
    result = invoke(["rewrite", "--no-cache", str(tmp_path)])
    assert result.exit_code == 0 and '--- "a/new\\nline.py"' in result.stdout
    check = subprocess.run(
        [*git, "apply", "--check", "-"], input=result.stdout, text=True, capture_output=True
    )
    assert check.returncode == 0, check.stderr


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
@pytest.mark.parametrize("cached", [False, True])
def test_a_name_that_is_not_utf8_gives_a_diff_git_applies(tmp_path: Path, cached: bool) -> None:
    tree = tmp_path / "tree"
    (tree / "sub\xe9").mkdir(parents=True)  # a UTF-8 folder name, then a Latin-1 file name
    bad = os.path.join(os.fsencode(tree / "sub\xe9"), b"caf\xe9.py")
    with open(bad, "wb") as handle:
        handle.write(XLA)
    git = ["git", "-C", str(tree), "-c", "user.email=t@t", "-c", "user.name=t"]
    subprocess.run([*git, "init", "-q"], check=True)
    cache = ["--cache-dir", str(tmp_path / "cache")] if cached else ["--no-cache"]
    if cached:
        assert invoke(["rewrite", *cache, str(tree)]).exit_code == 0
    result = invoke(["rewrite", *cache, str(tree)])
    assert result.exit_code == 0, result.stderr
    assert '--- "a/sub\\303\\251/caf\\351.py"' in result.stdout  # git's own quoting
    applied = subprocess.run(
        [*git, "apply", "-"], input=result.stdout, text=True, capture_output=True
    )
    assert applied.returncode == 0, applied.stderr
    with open(bad, "rb") as handle:
        assert b"xla_device" not in handle.read()
