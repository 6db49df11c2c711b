"""The matrix package loads its submodules on first use; every exported name must resolve."""

from __future__ import annotations

import subprocess
import sys

import neuron_migrate.matrix as matrix


def test_every_exported_name_resolves() -> None:
    assert set(matrix.__all__) == set(matrix._SUBMODULE)
    for name in matrix.__all__:
        assert getattr(matrix, name) is not None


def test_unknown_names_are_attribute_errors() -> None:
    try:
        matrix.no_such_name  # noqa: B018
    except AttributeError as exc:
        assert "no_such_name" in str(exc)
    else:
        raise AssertionError("expected AttributeError")


def test_choosing_a_version_reads_no_matrix() -> None:
    probe = (
        "import sys; from neuron_migrate.matrix import resolve_version; resolve_version('2.14'); "
        "print('yaml' in sys.modules, 'neuron_migrate.matrix.loader' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]
