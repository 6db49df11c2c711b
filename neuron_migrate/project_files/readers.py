"""One entry point over the file-kind readers: the hits of a file, or a one-line parse error."""

from collections.abc import Iterator
from typing import Any

from neuron_migrate.project_files.hits import Hit, PartlyRead, ReaderError


class UnreadableFile(Exception):
    """A project file its reader cannot parse; the message is one line."""


class PartlyUnreadable(UnreadableFile):
    """A project file some statements of which its reader cannot parse (the message names
    them): `hits` are the others', `unread` the text of those it cannot parse."""

    def __init__(self, message: str, hits: list[Hit], unread: tuple[str, ...]) -> None:
        super().__init__(message)
        self.hits = hits
        self.unread = unread
        self.resolved: list[Any] = []  # what `resolve` makes of `hits`


def read_hits(text: str, kind: str) -> list[Hit]:
    """Raises `PartlyUnreadable` for a shell script some statements of which do not parse."""
    try:
        return list(_hits(text, kind))
    except PartlyRead as exc:
        raise PartlyUnreadable(str(exc), exc.hits, exc.unread) from exc
    except ReaderError as exc:
        raise UnreadableFile(str(exc).splitlines()[0] if str(exc) else type(exc).__name__) from exc


def _hits(text: str, kind: str) -> Iterator[Hit]:
    if kind == "shell":
        from neuron_migrate.project_files.shell import script_hits

        yield from script_hits(text)
    elif kind == "makefile":
        from neuron_migrate.project_files.makefile import makefile_hits

        yield from makefile_hits(text)
    elif kind == "dotenv":
        from neuron_migrate.project_files.dotenv import dotenv_hits

        yield from dotenv_hits(text)
    elif kind == "dockerfile":
        from neuron_migrate.project_files.dockerfile import dockerfile_hits

        yield from dockerfile_hits(text)
    elif kind in ("yaml", "json", "conda"):
        from neuron_migrate.project_files.configs import config_hits

        yield from config_hits(text, kind)
    elif kind == "requirements":
        from neuron_migrate.project_files.deps import requirements_hits

        yield from requirements_hits(text)
    elif kind == "pyproject":
        from neuron_migrate.project_files.deps import pyproject_hits

        yield from pyproject_hits(text)
    elif kind == "pipfile":
        from neuron_migrate.project_files.toml_deps import pipfile_hits

        yield from pipfile_hits(text)
    elif kind == "tox":
        from neuron_migrate.project_files.tox import tox_hits

        yield from tox_hits(text)
    elif kind == "setup-cfg":
        from neuron_migrate.project_files.deps import setup_cfg_hits

        yield from setup_cfg_hits(text)
    elif kind == "setup-py":
        from neuron_migrate.project_files.deps import setup_py_hits

        yield from setup_py_hits(text)
    else:
        raise ValueError(f"unknown project file kind {kind!r}")
