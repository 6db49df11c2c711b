"""The one place that finds the bundled data: rules/, compat_matrix/ and the sample projects.

In a checkout they sit beside the package; in an installed wheel they are packed under
``neuron_migrate/_data/``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

_PACKAGE_DIR = Path(__file__).resolve().parent
_CHECKOUT_ROOT = _PACKAGE_DIR.parent
_WHEEL_DATA = _PACKAGE_DIR / "_data"


def _find(checkout_name: str, wheel_name: str) -> Path:
    wheel_path = _WHEEL_DATA / wheel_name
    if wheel_path.is_dir():
        return wheel_path
    return _CHECKOUT_ROOT / checkout_name


def rules_dir() -> Path:
    return _find("rules", "rules")


def matrix_dir() -> Path:
    return _find("compat_matrix", "compat_matrix")


def digest_yaml(digest: Any, folder: Path) -> None:
    """Feed `digest` (`digests.cache_digest`) every YAML file under `folder`, path and bytes, in a
    fixed order: what a cached result keyed by it depends on of the data."""
    for path in sorted(folder.rglob("*.yaml")):
        digest.update(str(path.relative_to(folder)).encode())
        digest.update(path.read_bytes())


# The sample project `neuron-migrate demo` runs unless told another.
DEFAULT_PROJECT = "mlp_single"


def sample_projects_dir() -> Path:
    return _find("fixtures/projects", "projects")
