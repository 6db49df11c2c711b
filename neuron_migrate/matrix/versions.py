"""Which matrix versions are bundled, and which one a `--target` names. Reads file names only."""

from __future__ import annotations

import re
from pathlib import Path

from neuron_migrate import resources
from neuron_migrate.errors import DataFileError, UnknownTargetError

VERSION_RE = re.compile(r"^\d+(\.\d+)+$")


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split("."))


def available_versions() -> list[str]:
    """Versions with a bundled matrix, oldest first: ``["2.13.3.0", "2.14.3.0"]``."""
    found = [p.stem for p in resources.matrix_dir().glob("*.yaml") if VERSION_RE.match(p.stem)]
    return sorted(found, key=_version_key)


def paired_torch(version: str) -> str:
    """The torch a native torch-neuronx version pairs with (2.14.3.1 -> 2.14.0); "" for a
    version not of the native form <torch major>.<minor>.3.<n> (an XLA build, 2.9.0.2.15.32035).
    Stated for 2.13.3.0, 2.14.3.0 and 2.14.3.1; inferred for 2.13.3.1."""
    parts = version.split(".")
    return f"{parts[0]}.{parts[1]}.0" if len(parts) == 4 and parts[2] == "3" else ""


def newest_version() -> str:
    versions = available_versions()
    if not versions:
        raise DataFileError(resources.matrix_dir().name, "<dir>", "no matrix files found")
    return versions[-1]


def is_matrix_file(name: str) -> bool:
    """Whether `name` names a matrix file (what `matrix import -o FILE` wrote, `--matrix FILE`)
    rather than a bundled version."""
    return name.endswith((".yaml", ".yml")) and Path(name).is_file()


def resolve_version(version: str | None, given_as: str = "--target") -> str:
    """A bundled version for ``version``: exact, or the newest it is a prefix of (``2.14`` ->
    ``2.14.3.1``, the current 2.14 release, never an older one). ``given_as`` is how the user
    gave it, which an unknown version's error names."""
    versions = available_versions()
    if version is None:
        return newest_version()
    if is_matrix_file(version):  # a matrix file stands for itself, by its absolute path
        return str(Path(version).resolve())
    if version in versions:
        return version
    matches = [v for v in versions if v.startswith(version + ".")]
    if matches:
        return matches[-1]
    raise UnknownTargetError(f"unknown {given_as} {version}: available {', '.join(versions)}")
