"""Which files of a report snapshot's tree changed, known without statting the tree: a server's
spare watches the folders of each snapshot it reads ahead (Linux inotify), so that a re-scan it
serves stats only the files that had an event.

A watch starts only if every file of the snapshot lies in a folder it listed, every folder is
still as the snapshot recorded it (else the re-scan lists the tree again anyway), and every
folder is on a local filesystem of a known kind: inotify sees only the changes made through
this machine's kernel, never those made on a network filesystem's other clients. Once the
folders are watched, the files are statted once (the baseline): a file that changed between
the snapshot and the watch is found there, a later change by its event. A file with more than
one hard link, and a symlink (the scan reads the file it names), is watched itself too: a write
through another folder's link reaches only that folder's watch. What the watch cannot vouch
for -- a file created, deleted or renamed in a watched folder, a folder itself changed, moved
or gone, lost events (the queue overflowed) -- makes it lost, and the re-scan stats the tree
as it would without one. A write through a shared memory map raises no event (a stat
signature sees it once the kernel updates the mtime).
"""

from __future__ import annotations

import ctypes
import errno
import os
import stat
import struct
import sys
import threading
from collections.abc import Callable, Iterator, Sequence

from neuron_migrate.incremental.stat_index import Signature, signature_of

IN_MODIFY = 0x2
IN_ATTRIB = 0x4
IN_CLOSE_WRITE = 0x8
IN_MOVED_FROM = 0x40
IN_MOVED_TO = 0x80
IN_CREATE = 0x100
IN_DELETE = 0x200
IN_DELETE_SELF = 0x400
IN_MOVE_SELF = 0x800
IN_UNMOUNT = 0x2000
IN_Q_OVERFLOW = 0x4000
IN_IGNORED = 0x8000
IN_ONLYDIR = 0x01000000
_IN_NONBLOCK = os.O_NONBLOCK
_IN_CLOEXEC = getattr(os, "O_CLOEXEC", 0)

# A file's content or signature changed: it is statted again.
_FILE_CHANGED = IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE
# A folder's listing may have changed, or the watch no longer sees it.
_LISTING_CHANGED = IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO
_WATCH_ENDED = IN_DELETE_SELF | IN_MOVE_SELF | IN_UNMOUNT | IN_IGNORED | IN_Q_OVERFLOW
_FOLDER_MASK = _FILE_CHANGED | _LISTING_CHANGED | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR
_FILE_MASK = _FILE_CHANGED | IN_DELETE_SELF | IN_MOVE_SELF

_EVENT = struct.Struct("iIII")  # struct inotify_event: wd, mask, cookie, len; then the name
_READ_SIZE = 64 * 1024
# While a watch starts, it asks whether to give up (a command waits) once every this many
# folders or files.
_ASK_EVERY = 256

# `statfs` f_type of the filesystems whose every change goes through this machine's kernel
# (linux/magic.h): ext2-4, XFS, Btrfs, tmpfs, overlayfs, F2FS, ZFS, ReiserFS, JFS, bcachefs,
# ramfs.
LOCAL_FILESYSTEMS = frozenset(
    {
        0xEF53,
        0x58465342,
        0x9123683E,
        0x01021994,
        0x794C7630,
        0xF2F52010,
        0x2FC12FC1,
        0x52654973,
        0x3153464A,
        0xCA451A4E,
        0x858458F6,
    }
)


class _Libc:
    """The three libc calls the watch needs, bound once."""

    def __init__(self) -> None:
        libc = ctypes.CDLL(None, use_errno=True)
        self.inotify_init1 = libc.inotify_init1
        self.inotify_init1.argtypes = [ctypes.c_int]
        self.inotify_add_watch = libc.inotify_add_watch
        self.inotify_add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
        self.statfs = libc.statfs
        self.statfs.argtypes = [ctypes.c_char_p, ctypes.c_void_p]


_libc: _Libc | None = None


def _bound() -> _Libc | None:
    global _libc
    if _libc is None and sys.platform.startswith("linux"):
        try:
            _libc = _Libc()
        except (OSError, AttributeError):  # no inotify in this libc
            return None
    return _libc


def filesystem_type(path: str) -> int | None:
    """`statfs`'s f_type for `path` (Linux), None when it cannot be had."""
    libc = _bound()
    if libc is None:
        return None
    buffer = ctypes.create_string_buffer(256)  # struct statfs is 120 bytes on 64-bit Linux
    if libc.statfs(os.fsencode(path), buffer) != 0:
        return None
    return ctypes.c_long.from_buffer(buffer).value & 0xFFFFFFFF


def events(data: bytes) -> Iterator[tuple[int, int, bytes]]:
    """The (watch, mask, name) of each event in what one read of the inotify descriptor gave."""
    offset, size = 0, _EVENT.size
    while offset + size <= len(data):
        wd, mask, _cookie, length = _EVENT.unpack_from(data, offset)
        name = data[offset + size : offset + size + length].rstrip(b"\0")
        offset += size + length
        yield wd, mask, name


def _folder_key(path: str) -> str:
    return os.path.normpath(path)


class TreeWatch:
    """The files of one snapshot that may have changed since it was written, by index."""

    def __init__(self, fd: int, cwd: str, stop: Callable[[], bool] | None = None) -> None:
        self.fd = fd
        self.cwd = cwd  # the snapshot's paths are relative to it
        self.lost = False  # the watch cannot vouch for the tree any more
        self.dirty: set[int] = set()
        self._folders: dict[int, list[str]] = {}  # watch -> the folders it is (by key)
        self._files: dict[int, list[int]] = {}  # watch of a hard-linked file -> its indices
        self._by_name: dict[tuple[str, bytes], int] = {}  # (folder key, name) -> index
        self._stop = stop  # while it starts: give up when it says so

    @classmethod
    def start(
        cls,
        cwd: str,
        paths: Sequence[str],
        signatures: Sequence[Signature | None],
        folders: Sequence[str],
        folder_signatures: Sequence[Signature | None],
        stop: Callable[[], bool] | None = None,
    ) -> TreeWatch | None:
        """A watch of the files at `paths` (relative to `cwd`), which had `signatures` when
        their snapshot was written and were found by listing `folders`; None when it cannot
        be had or could not vouch for the tree, or when `stop` (asked every few hundred
        files) says to give up."""
        libc = _bound()
        if libc is None or not folders or None in folder_signatures:
            return None
        fd = libc.inotify_init1(_IN_NONBLOCK | _IN_CLOEXEC)
        if fd < 0:
            return None
        watch = cls(fd, cwd, stop)
        try:
            if watch._watch_folders(libc, folders, folder_signatures) and watch._baseline(
                libc, paths, signatures
            ):
                return watch
        except OSError:
            pass
        watch.close()
        return None

    def _stopped(self, done: int) -> bool:
        return self._stop is not None and done % _ASK_EVERY == 0 and self._stop()

    def _absolute(self, path: str) -> str:
        return os.path.join(self.cwd, path)

    def _watch_folders(
        self, libc: _Libc, folders: Sequence[str], recorded: Sequence[Signature | None]
    ) -> bool:
        """Watch every folder, then check that each is as recorded and on a local filesystem."""
        keys = []
        for done, folder in enumerate(folders, 1):
            if self._stopped(done):
                return False
            key = _folder_key(self._absolute(folder))
            wd = libc.inotify_add_watch(self.fd, os.fsencode(key), _FOLDER_MASK)
            if wd < 0:  # gone, unreadable, or the user's watches are used up (ENOSPC)
                return False
            self._folders.setdefault(wd, []).append(key)
            keys.append(key)
        local: dict[int, bool] = {}  # by device
        for key, sig in zip(keys, recorded, strict=True):
            now = signature_of(os.stat(key))
            if now != sig:
                return False
            device = now[4]
            if device not in local:
                local[device] = filesystem_type(key) in LOCAL_FILESYSTEMS
            if not local[device]:
                return False
        return True

    def _baseline(
        self, libc: _Libc, paths: Sequence[str], recorded: Sequence[Signature | None]
    ) -> bool:
        """Stat every file once, the folders being watched: those that differ from the
        snapshot are dirty from the start."""
        watched = {key for keys in self._folders.values() for key in keys}
        for index, path in enumerate(paths):
            if self._stopped(index + 1):
                return False
            absolute = self._absolute(path)
            folder, name = os.path.split(absolute)
            key = _folder_key(folder)
            if key not in watched:  # a file given by itself, or listed otherwise
                return False
            self._by_name[(key, os.fsencode(name))] = index
            try:
                st = os.lstat(absolute)
                linked = stat.S_ISLNK(st.st_mode)
                if linked:
                    st = os.stat(absolute)  # the file the link names, as the scan reads it
            except OSError:
                self.dirty.add(index)
                continue
            if signature_of(st) != recorded[index]:
                self.dirty.add(index)
            if linked or st.st_nlink > 1:
                wd = libc.inotify_add_watch(self.fd, os.fsencode(absolute), _FILE_MASK)
                if wd < 0:
                    return False
                self._files.setdefault(wd, []).append(index)
        return True

    def drain(self) -> None:
        """Take in the events queued since the last drain."""
        while not self.lost:
            try:
                data = os.read(self.fd, _READ_SIZE)
            except BlockingIOError:
                return
            except OSError as exc:
                if exc.errno == errno.EINTR:
                    continue
                self.lost = True
                return
            self._took(data)

    def _took(self, data: bytes) -> None:
        for wd, mask, name in events(data):
            if mask & _WATCH_ENDED:
                self.lost = True
                return
            files = self._files.get(wd)
            if files is not None:  # a hard-linked file's own watch
                self.dirty.update(files)
                continue
            if not name or mask & _LISTING_CHANGED:  # the folder itself, or its listing
                self.lost = True
                return
            for key in self._folders.get(wd, ()):
                index = self._by_name.get((key, name))
                if index is not None:
                    self.dirty.add(index)

    def changed(self) -> frozenset[int] | None:
        """The indices of the files that may have changed since the snapshot; None when the
        watch cannot tell."""
        self.drain()
        return None if self.lost else frozenset(self.dirty)

    def close(self) -> None:
        """Stop watching. The kernel removes each watch as the descriptor closes (over 10 ms
        for a thousand folders), on a thread of its own: nothing need wait for it."""
        if self.fd >= 0:
            threading.Thread(target=os.close, args=(self.fd,), daemon=True).start()
            self.fd = -1
            self.lost = True
