"""Symlinks to folders are not followed (no loops, nothing outside the tree), and each is listed
under `skipped` with the reason, as the README says -- not passed over in silence."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from neuron_migrate.project.discover import FOLDER_LINK
from neuron_migrate.scan import scan_data
from tests.cli import invoke

XLA = "import torch_xla.core.xla_model as xm\nd = xm.xla_device()\n"
pytestmark = pytest.mark.skipif(not hasattr(os, "symlink"), reason="needs symlinks")


def _tree(tmp_path: Path) -> Path:
    tree = tmp_path / "tree"
    (tree / "lib").mkdir(parents=True)
    (tree / "lib" / "model.py").write_text(XLA)
    (tree / "loop").symlink_to(".")
    (tree / "lib" / "etc").symlink_to("/etc")
    (tree / "same_lib").symlink_to("lib")
    return tree


def _report(tree: Path, *cache: str) -> tuple[int, str]:
    scan_data.context_for.cache_clear()
    scan_data.header_for.cache_clear()
    result = invoke(["scan", "-f", "json", *cache, str(tree)])
    return result.exit_code, result.stdout


def test_folder_links_are_listed_under_skipped_with_the_reason(tmp_path: Path) -> None:
    tree = _tree(tmp_path)
    code, out = _report(tree, "--no-cache")
    report = json.loads(out)
    assert code == 0
    assert report["skipped"] == [
        {"path": "lib/etc/", "reason": FOLDER_LINK},
        {"path": "loop/", "reason": FOLDER_LINK},
        {"path": "same_lib/", "reason": FOLDER_LINK},
    ]
    assert {f["path"] for f in report["findings"]} == {"lib/model.py"}


def test_a_cached_and_a_spliced_scan_list_them_too(tmp_path: Path) -> None:
    tree, cache = _tree(tmp_path), tmp_path / "cache"

    def normal(text: str) -> str:
        keep = ("elapsed_s", "from_cache", "cache_dir")
        return "".join(line for line in text.splitlines(True) if not any(k in line for k in keep))

    plain = normal(_report(tree, "--no-cache")[1])
    for _ in range(3):  # cold, then answered by the cache and the kept report
        assert normal(_report(tree, "--cache-dir", str(cache))[1]) == plain


def test_a_file_link_leading_outside_the_tree_is_skipped_not_read(tmp_path: Path) -> None:
    tree, outside = tmp_path / "tree", tmp_path / "outside"
    (tree / "pkg").mkdir(parents=True)
    outside.mkdir()
    xla = "import torch_xla.core.xla_model as xm\ndevice = xm.xla_device()\n"
    (outside / "secret.py").write_text(xla)
    (outside / "notes.ipynb").write_text("{}")
    (tree / "pkg" / "inside.py").write_text(xla)
    (tree / "pkg" / "secret.py").symlink_to(outside / "secret.py")
    (tree / "pkg" / "notes.ipynb").symlink_to(outside / "notes.ipynb")
    (tree / "local.py").symlink_to("pkg/inside.py")  # inside the tree: read
    cached = ["--cache-dir", str(tmp_path / "cache")]
    for cache in (["--no-cache"], cached, cached):  # the last: the kept report's re-scan
        result = invoke(["scan", "-f", "json", *cache, str(tree)])
        report = json.loads(result.stdout)
        skipped = {entry["path"]: entry["reason"] for entry in report["skipped"]}
        assert set(skipped) == {"pkg/secret.py", "pkg/notes.ipynb"}, result.stderr
        assert all("outside" in reason for reason in skipped.values())
        assert sorted({f["path"] for f in report["findings"]}) == ["local.py", "pkg/inside.py"]
        assert report["errors"] == []
