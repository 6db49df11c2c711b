"""Shared helpers: a small valid matrix document to break in tests."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from neuron_migrate.matrix import clear_cache

VALID: dict[str, Any] = {
    "schema_version": 1,
    "torch_neuronx": "9.1.0.0",
    "torch": "9.1.0",
    "summary": "test matrix",
    "evidence": {
        "snap": {"title": "Snapshot", "reference": "repo@abc"},
        "brief": {"title": "Brief", "reference": "brief", "note": "UNVERIFIED"},
    },
    "default": {"status": "cpu_fallback", "source": "snap"},
    "dtype_aliases": {"double": "float64"},
    "dtypes": [{"dtype": "float64", "runs_as": "float32", "warn": True, "source": "snap"}],
    "namespaces": [
        {"namespace": "torch.sparse", "status": "unsupported", "source": "brief"},
        {
            "namespace": "torch.fft",
            "status": "partial",
            "source": "brief",
            "supported": ["fftshift"],
            "unsupported": ["rfft"],
        },
    ],
    "memory_formats": [
        {"name": "channels_last", "status": "unsupported", "source": "snap", "message": "no"}
    ],
    "compile": {
        "backend": "neuron",
        "dynamic_true": "unsupported",
        "requires_dynamic_false": True,
        "modes_with_effect": ["default"],
        "source": "snap",
    },
    "ops": [
        {
            "group": "reg",
            "status": "native",
            "source": "snap",
            "ops": ["aten::add.Tensor", "aten::eq"],
        },
        {"group": "fb", "status": "cpu_fallback", "source": "snap", "ops": ["aten::linalg_qr"]},
        {
            "group": "no",
            "status": "unsupported",
            "source": "brief",
            "ops": [{"op": "aten::_fft_r2c", "note": "complex"}],
        },
    ],
}


@pytest.fixture
def valid_doc() -> dict[str, Any]:
    return copy.deepcopy(VALID)


@pytest.fixture
def write_matrix(tmp_path: Path):
    def write(doc: Any, name: str = "9.1.0.0.yaml") -> Path:
        path = tmp_path / name
        path.write_text(doc if isinstance(doc, str) else yaml.safe_dump(doc), encoding="utf-8")
        return path

    return write


@pytest.fixture(autouse=True)
def _fresh_cache():
    clear_cache()
    yield
    clear_cache()
