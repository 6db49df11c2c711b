"""`rewrite --apply` keeps what the file system says of a file: symlinks stay links (written
through when they lead inside the tree), hard links stay shared, mode and owner stay, and a
read-only file is an error unless asked."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from tests.cli import invoke

XLA = "import torch_xla.core.xla_model as xm\n\ndevice = xm.xla_device()\n"


def _apply(tree: Path, *extra: str) -> tuple[int, str]:
    result = invoke(["rewrite", "--apply", "--no-cache", "-j", "1", *extra, str(tree)])
    return result.exit_code, result.stderr


def _migrated(path: Path) -> bool:
    return "xla_device" not in path.read_text()


def test_a_symlink_inside_the_tree_stays_a_link_and_its_target_is_migrated(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    (tree / "lib").mkdir(parents=True)
    (tree / "lib" / "common.py").write_text(XLA)
    (tree / "common.py").symlink_to("lib/common.py")
    code, err = _apply(tree)
    assert code == 0, err
    assert (tree / "common.py").is_symlink() and os.readlink(tree / "common.py") == "lib/common.py"
    assert _migrated(tree / "lib" / "common.py")


def test_a_symlink_leading_outside_the_tree_is_refused(tmp_path: Path) -> None:
    tree, outside = tmp_path / "tree", tmp_path / "outside"
    tree.mkdir()
    outside.mkdir()
    (outside / "shared.py").write_text(XLA)
    (tree / "shared.py").symlink_to(outside / "shared.py")
    code, err = _apply(tree)
    assert code == 2
    assert "shared.py" in err and "outside" in err
    assert (tree / "shared.py").is_symlink() and (outside / "shared.py").read_text() == XLA


def test_hard_links_stay_one_file(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "a.py").write_text(XLA)
    os.link(tree / "a.py", tmp_path / "elsewhere.py")
    code, err = _apply(tree)
    assert code == 0, err
    assert os.path.samefile(tree / "a.py", tmp_path / "elsewhere.py")
    assert _migrated(tmp_path / "elsewhere.py")


def test_mode_is_kept(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "run.py").write_text(XLA)
    (tree / "run.py").chmod(0o751)
    assert _apply(tree)[0] == 0
    assert stat.S_IMODE((tree / "run.py").stat().st_mode) == 0o751 and _migrated(tree / "run.py")


def test_a_read_only_file_is_an_error_unless_asked(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "frozen.py").write_text(XLA)
    (tree / "frozen.py").chmod(0o444)
    code, err = _apply(tree)
    assert code == 2 and "frozen.py: read-only" in err
    assert (tree / "frozen.py").read_text() == XLA
    code, err = _apply(tree, "--write-read-only")
    assert code == 0, err
    assert _migrated(tree / "frozen.py")
    assert stat.S_IMODE((tree / "frozen.py").stat().st_mode) == 0o444


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs chown")
def test_another_users_file_keeps_its_owner(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "theirs.py").write_text(XLA)
    os.chown(tree / "theirs.py", 65534, 65534)
    code, err = _apply(tree)
    assert code == 0, err
    info = (tree / "theirs.py").stat()
    assert (info.st_uid, info.st_gid) == (65534, 65534) and _migrated(tree / "theirs.py")
