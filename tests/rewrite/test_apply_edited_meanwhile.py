"""`rewrite --apply` never replaces a file whose bytes changed after the rewrite read them: an
edit made while the run goes on (an editor's save, a `git checkout`, a line appended) is kept,
the file is named on stderr, and the run exits 2, as for any file not written.

The edit is injected between the read and the write: each result the tree rewrite hands to the
writer has its file changed on disk first. With the cache, the results come from it; the pool
(`-j 2`) and this process (`-j 1`) both go through the same check.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from neuron_migrate.rewrite import rewriter
from tests.cli import invoke

XLA = "import torch_xla.core.xla_model as xm\n\ndevice = xm.xla_device()\n"
EDIT = "# a line a person added while the rewrite ran\n"


def _tree(tmp_path: Path, count: int = 6) -> Path:
    tree = tmp_path / "tree"
    tree.mkdir()
    for index in range(count):
        (tree / f"m{index}.py").write_text(XLA + f"x{index} = device\n")
    return tree


def _edit_meanwhile(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """From now on, each file the rewrite read is edited (a line appended) before its result
    is written. Returns the files edited so far."""
    edited: list[str] = []
    tree_rewrite = rewriter.rewrite_tree

    def edited_after_read(*args: object, **kwargs: object) -> Iterator[rewriter.FileRewrite]:
        for result in tree_rewrite(*args, **kwargs):  # type: ignore[arg-type]
            if result.changed:
                with open(result.path, "a", encoding="utf-8") as handle:
                    handle.write(EDIT)
                edited.append(result.display)
            yield result

    monkeypatch.setattr(rewriter, "rewrite_tree", edited_after_read)
    return edited


@pytest.fixture
def edits_meanwhile(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    return _edit_meanwhile(monkeypatch)


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_file_edited_after_it_was_read_is_not_replaced(
    tmp_path: Path, edits_meanwhile: list[str], jobs: str
) -> None:
    tree = _tree(tmp_path)
    result = invoke(["rewrite", "--apply", "--no-cache", "-j", jobs, str(tree)])
    assert result.exit_code == 2, result.stderr
    assert len(edits_meanwhile) == 6
    for path in sorted(tree.glob("*.py")):
        text = path.read_text()
        assert text.endswith(EDIT) and "xm.xla_device()" in text, path  # the edit is kept
        assert f"{path.name}: changed since it was read" in result.stderr
    assert not [name for name in os.listdir(tree) if name.endswith(".tmp")]


def test_with_the_cache_a_stored_result_is_not_written_over_an_edit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tree = _tree(tmp_path)
    cache = tmp_path / "cache"
    shown = invoke(["rewrite", "--cache-dir", str(cache), "-j", "1", str(tree)])
    assert shown.exit_code == 0 and "+device = torch.device(" in shown.stdout, shown.stderr
    edited = _edit_meanwhile(monkeypatch)
    result = invoke(["rewrite", "--apply", "--cache-dir", str(cache), "-j", "1", str(tree)])
    assert "6 files' results from the cache" in result.stderr
    assert result.exit_code == 2 and len(edited) == 6, result.stderr
    for path in tree.glob("*.py"):
        assert path.read_text() == XLA + f"x{path.stem[1:]} = device\n" + EDIT


def test_only_the_edited_files_are_left(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tree = _tree(tmp_path, 4)
    tree_rewrite = rewriter.rewrite_tree

    def one_edited(*args: object, **kwargs: object) -> Iterator[rewriter.FileRewrite]:
        for result in tree_rewrite(*args, **kwargs):  # type: ignore[arg-type]
            if result.display == "m2.py":
                Path(result.path).write_text(XLA + "# rewritten by someone else\n")
            yield result

    monkeypatch.setattr(rewriter, "rewrite_tree", one_edited)
    result = invoke(["rewrite", "--apply", "--no-cache", "-j", "1", str(tree)])
    assert result.exit_code == 2
    assert "m2.py: changed since it was read" in result.stderr
    assert (tree / "m2.py").read_text() == XLA + "# rewritten by someone else\n"
    for name in ("m0.py", "m1.py", "m3.py"):
        assert "xla_device" not in (tree / name).read_text()


def test_a_hard_linked_file_edited_meanwhile_is_not_overwritten(
    tmp_path: Path, edits_meanwhile: list[str]
) -> None:
    tree = _tree(tmp_path, 1)
    os.link(tree / "m0.py", tmp_path / "elsewhere.py")
    result = invoke(["rewrite", "--apply", "--no-cache", "-j", "1", str(tree)])
    assert result.exit_code == 2
    assert (tmp_path / "elsewhere.py").read_text().endswith(EDIT)
    assert "xm.xla_device()" in (tree / "m0.py").read_text()


def test_a_file_deleted_after_it_was_read_is_named_and_the_run_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tree = _tree(tmp_path, 3)
    tree_rewrite = rewriter.rewrite_tree

    def one_deleted(*args: object, **kwargs: object) -> Iterator[rewriter.FileRewrite]:
        for result in tree_rewrite(*args, **kwargs):  # type: ignore[arg-type]
            if result.display == "m1.py":
                os.unlink(result.path)
            yield result

    monkeypatch.setattr(rewriter, "rewrite_tree", one_deleted)
    result = invoke(["rewrite", "--apply", "--no-cache", "-j", "1", str(tree)])
    assert result.exit_code == 2
    assert "m1.py: deleted since it was read: not written" in result.stderr
    assert "Traceback" not in result.stderr
    assert not (tree / "m1.py").exists()  # not made again
    for name in ("m0.py", "m2.py"):
        assert "xla_device" not in (tree / name).read_text()


def test_a_file_that_cannot_be_written_is_named_and_the_run_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tree = _tree(tmp_path, 3)
    from neuron_migrate.rewrite import in_place

    writer = in_place.write_atomically

    def full_disk(path: str, data: bytes, *args: object, **kwargs: object) -> None:
        if path.endswith("m0.py"):
            raise OSError(28, "No space left on device")
        writer(path, data, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(in_place, "write_atomically", full_disk)
    result = invoke(["rewrite", "--apply", "--no-cache", "-j", "1", str(tree)])
    assert result.exit_code == 2
    assert "m0.py: not written: No space left on device" in result.stderr
    assert "xla_device" in (tree / "m0.py").read_text()
    for name in ("m1.py", "m2.py"):
        assert "xla_device" not in (tree / name).read_text()
