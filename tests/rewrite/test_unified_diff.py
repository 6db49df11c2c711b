"""The diff `rewrite` prints is one `git apply` takes, and applying it gives `--apply`'s result."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from neuron_migrate.rewrite.unified_diff import NO_NEWLINE, lines, unified_diff
from tests.cli import invoke

GIT = shutil.which("git")

XLA_DEVICE = "import torch_xla.core.xla_model as xm\ndevice = xm.xla_device()"


def test_lines_end_at_newlines_only():
    assert lines("a\x0cb\nc\u2028d\n") == ["a\x0cb\n", "c\u2028d\n"]
    assert lines("a\nb") == ["a\n", "b"]
    assert lines("") == []


def test_a_last_line_without_a_newline_is_marked():
    diff = unified_diff("a\nb", "a\nc", "f.py")
    assert diff.endswith(f"-b\n{NO_NEWLINE}+c\n{NO_NEWLINE}")


def test_adding_the_last_newline_shows_as_a_change():
    assert unified_diff("a", "a\n", "f.py").endswith(f"-a\n{NO_NEWLINE}+a\n")


def test_equal_texts_have_no_diff():
    assert unified_diff("a\nb", "a\nb", "f.py") == ""


@pytest.mark.skipif(GIT is None, reason="needs git")
@pytest.mark.parametrize(
    "source",
    [
        pytest.param(XLA_DEVICE, id="no-newline-at-end"),
        pytest.param(f"# page\x0cbreak\n{XLA_DEVICE}\n", id="form-feed-in-a-comment"),
        pytest.param(f"{XLA_DEVICE}\nname = 'a\u2028b'\n", id="line-separator-in-a-string"),
    ],
)
def test_git_applies_the_printed_diff(tmp_path: Path, source: str):
    work, applied = tmp_path / "work", tmp_path / "applied"
    for root in (work, applied):
        root.mkdir()
        (root / "train.py").write_bytes(source.encode())
    printed = invoke(["rewrite", "--no-cache", str(work)])
    assert printed.exit_code == 0, printed.stderr
    assert printed.stdout.startswith("--- a/train.py\n")

    (tmp_path / "change.patch").write_text(printed.stdout, encoding="utf-8", newline="")
    subprocess.run([GIT, "apply", str(tmp_path / "change.patch")], cwd=work, check=True)
    assert invoke(["rewrite", "--no-cache", "--apply", str(applied)]).exit_code == 0
    assert (work / "train.py").read_bytes() == (applied / "train.py").read_bytes()
    assert (work / "train.py").read_bytes() != source.encode()


def test_the_coloured_diff_keeps_a_line_with_a_form_feed_whole():
    from neuron_migrate.cli.rewrite import _colour_diff

    diff = unified_diff("# a\x0cb\nx = 1\n", "# a\x0cb\nx = 2\n", "f.py")
    coloured = _colour_diff(diff)
    assert " # a\x0cb\n" in coloured
    assert coloured.count("\n") == diff.count("\n")
