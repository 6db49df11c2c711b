"""Find the user's source line behind an op: the first frame outside torch and this package."""

from __future__ import annotations

import os
import sys
import sysconfig
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


def user_location(frame: FrameType | None = None) -> str | None:
    """`file:line` of the innermost frame that belongs to user code, or None.

    Runs for the sampled calls of every op (`LOCATION_SAMPLES`), so the per-file verdict and
    absolute path are cached, and so is each user frame's `file:line` by bytecode offset.
    """
    frame = frame or sys._getframe(1)
    paths = _user_paths
    while frame is not None:
        filename = frame.f_code.co_filename
        path = paths.get(filename, _UNSEEN)
        if path is _UNSEEN:
            path = _user_path(filename)
        if path is not None:
            return _location(frame, path)
        frame = frame.f_back
    return None


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
