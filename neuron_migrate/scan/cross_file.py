"""Compiled regions across files: which functions and classes of a module other modules of
the scanned tree compile, from what each file's compiles reach through its imports
(`analyzer.compiled.imported_compiles`).

A name is found by its module: an absolute `pkg.model` is the file whose path ends with
`pkg/model.py` (or `pkg/model/__init__.py`), the nearest to the compiling file where several
do; a relative `.model` is looked up from the compiling file's folder. Imports re-exported by
another module (`from pkg import Net` where `pkg/__init__.py` imports it) are not followed.
"""

from collections.abc import Iterable
from pathlib import PurePosixPath

# A file's compiles: (its display path, (imported qualified name, line) for each).
Compiles = tuple[str, tuple[tuple[str, int], ...]]


def compiled_elsewhere(
    files: Iterable[Compiles], displays: Iterable[str]
) -> dict[str, dict[str, str]]:
    """For each file of `displays` that other files compile: its compiled names, each with
    where it is compiled (`train.py:12`, the first place)."""
    modules: dict[tuple[str, ...], list[str]] = {}
    for display in displays:
        parts = _module_parts(display)
        if parts:
            for start in range(len(parts)):
                modules.setdefault(parts[start:], []).append(display)
    found: dict[str, dict[str, str]] = {}
    for display, compiles in files:
        for qualname, line in compiles:
            target = _target(qualname, display, modules)
            if target is not None and target[0] != display:
                found.setdefault(target[0], {}).setdefault(target[1], f"{display}:{line}")
    return found


def _module_parts(display: str) -> tuple[str, ...]:
    path = PurePosixPath(display.replace("\\", "/"))
    if path.suffix != ".py":
        return ()
    parts = (*path.parent.parts, path.stem)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return tuple(p for p in parts if p not in (".", ""))


def _target(
    qualname: str, compiler: str, modules: dict[tuple[str, ...], list[str]]
) -> tuple[str, str] | None:
    """The file that defines `qualname` and the name in it; None when it is not in the tree."""
    level = len(qualname) - len(qualname.lstrip("."))
    *module, name = qualname[level:].split(".")
    if level:
        folder = _module_parts(compiler)[:-1]
        if level - 1 > len(folder):
            return None
        wanted = (*folder[: len(folder) - (level - 1)], *module)
        matches = [d for d in modules.get(wanted, []) if _module_parts(d) == wanted]
    else:
        matches = modules.get(tuple(module), []) if module else []
    if not matches:
        return None
    nearest = max(matches, key=lambda d: (_shared(d, compiler), -len(d)))
    return nearest, name


def _shared(one: str, other: str) -> int:
    """How many leading folders two paths share."""
    count = 0
    for a, b in zip(
        PurePosixPath(one).parent.parts, PurePosixPath(other).parent.parts, strict=False
    ):
        if a != b:
            break
        count += 1
    return count
