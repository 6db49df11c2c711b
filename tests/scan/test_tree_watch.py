"""The watch of a snapshot's tree: every change a stat signature would show is named, and what it
cannot vouch for makes it lost."""

from __future__ import annotations

import os
import struct
import sys
from pathlib import Path

import pytest

from neuron_migrate.incremental import tree_watch
from neuron_migrate.incremental.stat_index import signature_of
from neuron_migrate.incremental.tree_watch import (
    IN_CREATE,
    IN_MODIFY,
    IN_Q_OVERFLOW,
    TreeWatch,
    events,
)

FILES = ("a.py", "pkg/b.py", "pkg/c.py", "pkg/sub/d.py")


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    if not sys.platform.startswith("linux"):
        pytest.skip("inotify is Linux's")
    if tree_watch.filesystem_type(str(tmp_path)) not in tree_watch.LOCAL_FILESYSTEMS:
        pytest.skip("the temporary folder is not on a filesystem the watch trusts")
    root = tmp_path / "tree"
    for name in FILES:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(f"# {name}\n")
    return root


def _snapshot(root: Path) -> tuple[list[str], list, list[str], list]:
    """What a snapshot records: the files' paths and signatures, the folders' and theirs."""
    paths = [str(root / name) for name in FILES]
    folders = [str(root), str(root / "pkg"), str(root / "pkg" / "sub")]
    return (
        paths,
        [signature_of(os.stat(p)) for p in paths],
        folders,
        [signature_of(os.stat(f)) for f in folders],
    )


def _watch(root: Path, recorded: tuple[list[str], list, list[str], list] | None = None):
    paths, signatures, folders, folder_signatures = recorded or _snapshot(root)
    return TreeWatch.start(os.getcwd(), paths, signatures, folders, folder_signatures)


def _edit(path: Path) -> None:
    with path.open("a") as handle:  # in place, as most editors save
        handle.write("x = 1\n")


def test_an_edit_after_the_watch_started_is_named(tree: Path) -> None:
    watch = _watch(tree)
    assert watch is not None and watch.changed() == frozenset()
    _edit(tree / "pkg/c.py")
    assert watch.changed() == {2}
    _edit(tree / "a.py")
    os.chmod(tree / "pkg/sub/d.py", 0o600)  # ctime: a signature would show it
    assert watch.changed() == {0, 2, 3}
    watch.close()


def test_an_edit_between_the_snapshot_and_the_watch_is_found_by_the_baseline(tree: Path) -> None:
    recorded = _snapshot(tree)
    _edit(tree / "pkg/b.py")
    watch = _watch(tree, recorded)
    assert watch is not None and watch.changed() == {1}
    watch.close()


def test_paths_relative_to_the_working_folder(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tree.parent)
    paths, signatures, _, folder_signatures = _snapshot(tree)
    relative = [os.path.relpath(p) for p in paths]
    watch = TreeWatch.start(
        str(tree.parent),
        relative,
        signatures,
        ["tree", "tree/pkg/", "./tree/pkg/sub"],
        folder_signatures,
    )
    assert watch is not None
    _edit(tree / "pkg/sub/d.py")
    assert watch.changed() == {3}
    watch.close()


@pytest.mark.parametrize(
    "change",
    [
        lambda root: (root / "pkg/new.py").write_text(""),  # a file appears
        lambda root: (root / "pkg/b.py").unlink(),
        lambda root: (root / "a.py").rename(root / "e.py"),
        lambda root: (root / "pkg/notes.txt").write_text(""),  # any name: the listing moved
        lambda root: (root / "pkg/sub").rename(root / "pkg/sub2"),
        lambda root: os.chmod(root / "pkg", 0o700),  # a folder itself
    ],
)
def test_what_may_change_the_listing_makes_the_watch_lost(tree: Path, change) -> None:
    watch = _watch(tree)
    assert watch is not None
    change(tree)
    assert watch.changed() is None and watch.lost
    watch.close()


def test_a_hard_linked_file_written_from_another_folder_is_named(
    tree: Path, tmp_path: Path
) -> None:
    os.link(tree / "pkg/b.py", tmp_path / "elsewhere.py")
    watch = _watch(tree)
    assert watch is not None
    _edit(tmp_path / "elsewhere.py")  # no event in the tree's folders
    assert watch.changed() == {1}
    watch.close()


def test_no_watch_where_it_could_not_vouch_for_the_tree(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    paths, signatures, folders, folder_signatures = _snapshot(tree)
    # A file outside the folders listed (a tree given as one file lists none).
    assert (
        TreeWatch.start(os.getcwd(), paths, signatures, folders[1:], folder_signatures[1:]) is None
    )
    assert TreeWatch.start(os.getcwd(), paths, signatures, [], []) is None
    # A folder not settled when listed, or changed since.
    unsettled = [None, *folder_signatures[1:]]
    assert TreeWatch.start(os.getcwd(), paths, signatures, folders, unsettled) is None
    (tree / "pkg/new.py").write_text("")
    assert _watch(tree, (paths, signatures, folders, folder_signatures)) is None
    # A filesystem whose changes may come from elsewhere (NFS, SMB, FUSE...).
    monkeypatch.setattr(tree_watch, "LOCAL_FILESYSTEMS", frozenset())
    assert _watch(tree) is None


def test_a_watch_refused_by_the_kernel_means_none(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    libc = tree_watch._bound()
    assert libc is not None

    class NoRoom:  # the user's inotify watches are used up (ENOSPC)
        inotify_init1 = libc.inotify_init1
        statfs = libc.statfs

        @staticmethod
        def inotify_add_watch(fd: int, path: bytes, mask: int) -> int:
            return -1

    monkeypatch.setattr(tree_watch, "_bound", lambda: NoRoom)
    assert _watch(tree) is None


def test_events_are_read_from_the_kernels_layout() -> None:
    def event(wd: int, mask: int, name: bytes) -> bytes:
        padded = name + b"\0" * (-len(name) % 16 or (16 if name else 0))
        return struct.pack("iIII", wd, mask, 0, len(padded)) + padded

    data = event(3, IN_MODIFY, b"b.py") + event(1, IN_CREATE, b"") + event(-1, IN_Q_OVERFLOW, b"")
    assert list(events(data)) == [
        (3, IN_MODIFY, b"b.py"),
        (1, IN_CREATE, b""),
        (-1, IN_Q_OVERFLOW, b""),
    ]


def test_lost_events_make_the_watch_lost(tree: Path) -> None:
    watch = _watch(tree)
    assert watch is not None
    watch._took(struct.pack("iIII", -1, IN_Q_OVERFLOW, 0, 0))  # the kernel's queue overflowed
    assert watch.changed() is None
    watch.close()


def test_a_symlinked_files_target_written_elsewhere_is_named(tree: Path, tmp_path: Path) -> None:
    target = tmp_path / "elsewhere.py"
    target.write_text("x = 1\n")
    (tree / "pkg/c.py").unlink()
    (tree / "pkg/c.py").symlink_to(target)  # the scan reads the file it names
    watch = _watch(tree)
    assert watch is not None and watch.changed() == frozenset()
    _edit(target)  # in a folder the watch does not see
    assert watch.changed() == {2}
    watch.close()


def test_a_watch_gives_up_when_told_to_while_it_starts(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tree_watch, "_ASK_EVERY", 2)
    asked: list[int] = []

    def stop_at(count: int):
        def stop() -> bool:
            asked.append(count)
            return len(asked) >= count

        return stop

    paths, signatures, folders, folder_signatures = _snapshot(tree)
    for count in (1, 2):  # among the folders, then among the files
        asked.clear()
        start = (os.getcwd(), paths, signatures, folders, folder_signatures, stop_at(count))
        assert TreeWatch.start(*start) is None and len(asked) == count
    asked.clear()
    watch = TreeWatch.start(os.getcwd(), paths, signatures, folders, folder_signatures, stop_at(9))
    assert watch is not None and len(asked) == 3  # 3 folders, 4 files: asked at 2, 2 and 4
    watch.close()
