"""Find the user's source line behind an op: the first frame outside torch and this package."""

from __future__ import annotations

import os
import sys
import sysconfig
from collections.abc import Iterator
from types import CodeType, FrameType

import torch

_SKIPPED_DIRS = tuple(
    os.path.join(os.path.realpath(path), "")
    for path in (
        os.path.dirname(torch.__file__),
        os.path.dirname(__file__),
        sysconfig.get_paths()["stdlib"],
    )
)
_verdicts: dict[str, bool] = {}


def _is_user_file(filename: str) -> bool:
    verdict = _verdicts.get(filename)
    if verdict is None:
        if filename.startswith("<") and filename != "<stdin>" and filename != "<string>":
            verdict = False  # <frozen importlib._bootstrap> and other synthetic frames
        else:
            verdict = not os.path.realpath(filename).startswith(_SKIPPED_DIRS)
        _verdicts[filename] = verdict
    return verdict


_user_paths: dict[str, str | None] = {}  # absolute co_filename -> its abspath if user code
_UNSEEN = ""


def _user_path(filename: str) -> str | None:
    """`os.path.abspath(filename)` if `filename` is user code, else None."""
    path = _user_paths.get(filename, _UNSEEN)
    if path is not _UNSEEN:
        return path
    if not _is_user_file(filename):
        _user_paths[filename] = None
        return None
    path = os.path.abspath(filename)
    if os.path.isabs(filename):  # a relative name's abspath follows the working directory
        _user_paths[filename] = path
    return path


def _user_frames(frame: FrameType | None) -> Iterator[tuple[FrameType, str]]:
    """Each user frame from `frame` outwards, with its absolute path."""
    paths = _user_paths
    while frame is not None:
        filename = frame.f_code.co_filename
        path = paths.get(filename, _UNSEEN)
        if path is _UNSEEN:
            path = _user_path(filename)
        if path is not None:
            yield frame, path
        frame = frame.f_back


def user_location(frame: FrameType | None = None) -> str | None:
    """`file:line` of the innermost frame that belongs to user code, or None.

    The per-file verdict and absolute path are cached, and so is each user frame's `file:line`
    by bytecode offset. (The sampled calls of every op take `count_call`.)
    """
    for user_frame, path in _user_frames(frame or sys._getframe(1)):
        return _location(user_frame, path)
    return None


def user_stack(frame: FrameType | None = None) -> list[str]:
    """`file:line` of every user frame, innermost first (the same site twice, once)."""
    stack = [_location(f, path) for f, path in _user_frames(frame or sys._getframe(1))]
    return list(dict.fromkeys(stack))


# id(code) -> (code, its call sites {bytecode offset: "file:line"} when it is user code whose
# file name is absolute; None when it is not user code; `_RELATIVE` when its path follows the
# working directory, so its lines are worked out each time). The entry holds the code object,
# so its id cannot be reused while the entry exists.
_RELATIVE: dict[int, str] = {}
_code_sites: dict[int, tuple[CodeType, dict[int, str] | None]] = {}


def count_call(locations: dict[str, int], callers: dict[str, int], frame: FrameType | None) -> None:
    """Count one call: at its innermost user line in `locations`, and at each user line that
    called into it in `callers` (each once).

    The whole stack is walked for the sampled calls of every op, so each frame costs a lookup
    of its code, and a user frame one of its bytecode offset."""
    code_sites = _code_sites
    innermost: str | None = None
    outer: list[str] = []
    while frame is not None:
        code = frame.f_code
        entry = code_sites.get(id(code))
        if entry is None:
            entry = _sites_of(code)
        sites = entry[1]
        if sites is not None:
            location = sites.get(frame.f_lasti)
            if location is None:
                location = _location(frame, _user_path(code.co_filename) or "")
            if innermost is None:
                innermost = location
            elif location != innermost and location not in outer:
                outer.append(location)
        frame = frame.f_back
    if innermost is not None:
        locations[innermost] = locations.get(innermost, 0) + 1
        for caller in outer:
            callers[caller] = callers.get(caller, 0) + 1


def _sites_of(code: CodeType) -> tuple[CodeType, dict[int, str] | None]:
    """The `_code_sites` entry of `code`, made on first sight."""
    filename = code.co_filename
    if _user_path(filename) is None:
        sites = None
    elif not os.path.isabs(filename):
        sites = _RELATIVE
    else:
        sites = _lines_of(code)
    entry = _code_sites[id(code)] = (code, sites)
    return entry


# id(code) -> (code, {bytecode offset: "file:line"}). The entry holds the code object, so its id
# cannot be reused while the entry exists; user code objects are few and live long anyway.
_lines: dict[int, tuple[CodeType, dict[int, str]]] = {}


def _location(frame: FrameType, path: str) -> str:
    """`path:line` of `frame`. Working out `f_lineno` from the line table costs more than a
    stack walk, so it is done once per call site."""
    code = frame.f_code
    entry = _lines.get(id(code))
    if entry is None:
        if not os.path.isabs(code.co_filename):  # its path follows the working directory
            return f"{path}:{frame.f_lineno}"
        entry = _lines[id(code)] = (code, {})
    by_offset = entry[1]
    offset = frame.f_lasti
    location = by_offset.get(offset)
    if location is None:
        location = by_offset[offset] = f"{path}:{frame.f_lineno}"
    return location


def _lines_of(code: CodeType) -> dict[int, str]:
    """The `file:line` of each call site of `code` seen so far, by bytecode offset."""
    entry = _lines.get(id(code))
    if entry is None:
        entry = _lines[id(code)] = (code, {})
    return entry[1]
