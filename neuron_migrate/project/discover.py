"""Which files a scan or rewrite reads, and the prefilter that skips files that cannot matter."""

import fnmatch
import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import NamedTuple

from neuron_migrate.errors import UsageError

SOURCE_SUFFIXES = (".py",)
NOTEBOOK_SUFFIX = ".ipynb"
_PYTHON_SUFFIXES = (".py", ".ipynb")
_SKIP_DIRS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        ".venv",
        "venv",
        "__pycache__",
        "node_modules",
        ".tox",
        ".nox",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        "site-packages",
        ".neuron-migrate-cache",
        ".ipynb_checkpoints",
    }
)

# A file can hold a finding only if it names torch or torch_xla (every API finding resolves
# through an import of torch, torch_xla, functorch, torch_neuronx or neuronx_distributed), holds
# an XLA device string ("xla"), or names an XLA/PJRT/Neuron environment variable (or
# ALLREDUCE_GRADIENTS_BUCKET_SIZE_MB). A file with
# none of these substrings is skipped without being parsed; tests/scan check that no fixture
# with a finding is ever skipped. A NUL byte is let through too: a binary file is no Python
# source, and reading it reports it under `errors` rather than counting it clean.
PREFILTER = re.compile(
    rb"torch|xla|XLA|neuronx_distributed|PJRT_|NEURON|TPU_|XRT_|ALLREDUCE_GRADIENTS|\x00"
)


def may_hold_findings(data: bytes, display: str = "") -> bool:
    """False when the file cannot hold a finding; `display` names a project file kind (shell,
    Dockerfile, dependencies, YAML/JSON) that has needles of its own."""
    if display.endswith("setup.py"):  # Python, and the project's dependencies
        from neuron_migrate.project_files.kinds import DEPENDENCY_NEEDLES

        return PREFILTER.search(data) is not None or DEPENDENCY_NEEDLES.search(data) is not None
    if display and not display.endswith(_PYTHON_SUFFIXES):
        from neuron_migrate.project_files.kinds import kind_of
        from neuron_migrate.project_files.kinds import may_hold_findings as file_may_hold

        kind = kind_of(display, data)
        if kind is not None and kind != "setup-py":
            return file_may_hold(data, kind)
    return PREFILTER.search(data) is not None


class SourcePath(NamedTuple):  # a tuple: a walk makes one a file
    path: str  # absolute (or as given) path used to open the file
    display: str  # relative to the scan root, forward slashes: what reports show


def sources_then_notebooks(files: list[SourcePath]) -> tuple[list[SourcePath], list[SourcePath]]:
    """`files` split in the order every scan takes them: Python sources (through the workers),
    then notebooks."""
    sources = [f for f in files if not f.display.endswith(NOTEBOOK_SUFFIX)]
    notebooks = [f for f in files if f.display.endswith(NOTEBOOK_SUFFIX)]
    return sources, notebooks


def discover(
    root: Path,
    exclude: tuple[str, ...] = (),
    *,
    notebooks: bool = False,
    project_files: bool = False,
    folders: list[str] | None = None,
    folder_links: bool = False,
) -> Iterator[SourcePath]:
    """Source files under `root` (a file or a folder), in a stable, sorted order; Jupyter
    notebooks (`.ipynb`) too when `notebooks` is true (the scan reads them cell by cell, see
    `neuron_migrate.project.notebook`); with `project_files`, the launch scripts, Dockerfiles,
    dependency files and YAML/JSON configs `neuron_migrate.project_files` reads. Each folder
    listed is added to `folders`, if given.

    Folders reached through symlinks are not followed (no loops, no trees outside the root);
    with `folder_links`, each is yielded with a display ending in `/`, for the scan to list
    under `skipped` (`FOLDER_LINK`), and so is a folder that cannot be listed, for the scan to
    list under `errors` (`unlisted_folder`). Symlinked files are read, and a broken or looping
    one is reported by the reader; with `folder_links`, one that leads outside the tree is
    yielded as an `OutsideLink`, for the scan to list under `skipped`.
    """
    if not root.exists() and not root.is_symlink():
        raise UsageError(f"no such file or directory: {root}")
    if root.is_file() or (root.exists() and not root.is_dir()):  # (a FIFO: its reader says so)
        yield SourcePath(str(root), shown_name(root.name))
        return
    suffixes = (*SOURCE_SUFFIXES, NOTEBOOK_SUFFIX) if notebooks else SOURCE_SUFFIXES
    kind_of = None
    if project_files:
        from neuron_migrate.project_files.kinds import discovered_kind

        kind_of = discovered_kind
    inside = os.path.realpath(root) if folder_links else None
    yield from _walk(str(root), "", suffixes, exclude, folders, kind_of, folder_links, inside)


def _walk(
    folder: str,
    rel_dir: str,
    suffixes: tuple[str, ...],
    exclude: tuple[str, ...],
    folders: list[str] | None,
    kind_of: Callable[[str, str], str | None] | None = None,
    folder_links: bool = False,
    inside: str | None = None,
) -> Iterator[SourcePath]:
    """The files under `folder` in the order of their display paths (the report's order: the
    cache then holds consecutive files' rows one after another), in one `scandir` a folder;
    an unreadable folder is passed over."""
    if folders is not None:
        folders.append(folder)
    try:
        with os.scandir(folder) as listing:
            # A subfolder's files sort as its name and a slash: `b.py` < `b/c.py` < `ba.py`.
            entries = sorted(listing, key=_path_key)
    except OSError:
        if folder_links:  # the scan lists it as an error: code it could not read
            yield SourcePath(folder, rel_dir or "./")
        return
    for entry in entries:
        name = entry.name
        if _is_dir(entry):
            if (
                name in _SKIP_DIRS
                or name.endswith(".egg-info")
                or (exclude and _excluded(rel_dir + name, exclude))
            ):
                continue
            shown = rel_dir + shown_name(name) + "/"
            if entry.is_symlink():
                if folder_links:
                    yield SourcePath(entry.path, shown)
                continue
            yield from _walk(
                entry.path, shown, suffixes, exclude, folders, kind_of, folder_links, inside
            )
        elif name.endswith(suffixes) or (
            kind_of is not None and _kind(entry, rel_dir + name, kind_of) is not None
        ):
            display = rel_dir + shown_name(name)
            if exclude and _excluded(display, exclude):
                continue
            if inside is not None and entry.is_symlink() and _leads_out(entry.path, inside):
                yield OutsideLink(entry.path, display)
            else:
                yield SourcePath(entry.path, display)


def _kind(
    entry: os.DirEntry[str], display: str, kind_of: Callable[[str, str], str | None]
) -> str | None:
    """The project file kind of a file the walk meets. One that is not a regular file (a
    FIFO) is never opened to look at its first line: any name a project file may have is
    taken, for its reader to list it as skipped."""
    if _special(entry):
        from neuron_migrate.project_files.kinds import kind_by_name, may_be_shell_script

        kind = kind_by_name(display)
        return kind if kind is not None or not may_be_shell_script(entry.name) else "shell"
    return kind_of(entry.path, display)


def _special(entry: os.DirEntry[str]) -> bool:
    """Neither a regular file nor a folder, nor a broken link (its reader reports it)."""
    try:
        return not entry.is_file() and not entry.is_dir() and os.path.exists(entry.path)
    except OSError:
        return False


class OutsideLink(SourcePath):
    """A symlinked file whose target lies outside the scanned tree (`discover`'s
    `folder_links`): listed under `skipped`, never read (`/etc/passwd` is not the project's)."""


OUTSIDE_LINK = "symlink to a file outside the tree: not read"


def _leads_out(path: str, inside: str) -> bool:
    real = os.path.realpath(path)
    return real != inside and not real.startswith(inside.rstrip(os.sep) + os.sep)


# Why a symlink to a folder is listed under `skipped`.
FOLDER_LINK = "symlink to a folder: not followed"


def is_folder_link(source: SourcePath) -> bool:
    """A folder the walk yields rather than enters (`discover`'s `folder_links`): a symlink to
    a folder, or a folder it could not list (`unlisted_folder` says which)."""
    return source.display.endswith("/")


def unlisted_folder(source: SourcePath) -> str | None:
    """Why the folder `source` could not be listed; None for a symlink to a folder (skipped)."""
    if os.path.islink(source.path):
        return None
    try:
        os.scandir(source.path).close()
    except OSError as exc:
        return f"cannot list the folder: {exc.strerror or exc}"
    return "cannot list the folder"  # (it could be listed when it was walked)


def shown_name(name: str) -> str:
    """A file name as reports show it: as it is, or, for one whose bytes are not UTF-8 (held
    in a `str` as surrogate escapes, which no UTF-8 report can carry), with those bytes as
    `\\xNN`. The file is still opened by its real name (`SourcePath.path`)."""
    if name.isascii():
        return name
    try:
        name.encode()
    except UnicodeEncodeError:
        return os.fsencode(name).decode("utf-8", "backslashreplace")
    return name


def _path_key(entry: os.DirEntry[str]) -> str:
    return entry.name + "/" if _is_dir(entry) else entry.name


def _is_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir()  # follows a symlink, as os.walk does to classify it
    except OSError:
        return False


def _excluded(display: str, patterns: tuple[str, ...]) -> bool:
    return any(fnmatch.fnmatch(display, p) or fnmatch.fnmatch(display + "/", p) for p in patterns)
