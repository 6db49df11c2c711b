"""Find the user's source line behind an op: the first frame outside torch and this package."""

from __future__ import annotations

import os
import sys
import sysconfig
from types import FrameType

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


def user_location(frame: FrameType | None = None) -> str | None:
    """`file:line` of the innermost frame that belongs to user code, or None."""
    frame = frame or sys._getframe(1)
    while frame is not None:
        filename = frame.f_code.co_filename
        if _is_user_file(filename):
            return f"{os.path.abspath(filename)}:{frame.f_lineno}"
        frame = frame.f_back
    return None
