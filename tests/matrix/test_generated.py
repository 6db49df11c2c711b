"""The bundled matrices are what the generator writes from the evidence, byte for byte: a change
to curated.yaml or the importer shows up as a diff, and regenerating changes nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from neuron_migrate import resources
from neuron_migrate.matrix import importer

pytestmark = pytest.mark.torch
torch = pytest.importorskip("torch")


@pytest.mark.skipif(not torch.__version__.startswith("2.13."), reason="generated with torch 2.13")
def test_regenerating_gives_the_bundled_files(tmp_path: Path) -> None:
    assert importer.main(["--out", str(tmp_path)]) == 0
    for version in ("2.13.3.0", "2.14.3.0", "2.13.3.1", "2.14.3.1"):
        written = (tmp_path / f"{version}.yaml").read_bytes()
        assert written == (resources.matrix_dir() / f"{version}.yaml").read_bytes(), version


@pytest.mark.skipif(not torch.__version__.startswith("2.13."), reason="generated with torch 2.13")
def test_regenerating_the_compiled_optimizer_steps_gives_the_bundled_files(tmp_path: Path) -> None:
    from neuron_migrate.matrix import compiled_steps_builder

    assert compiled_steps_builder.main(["--also-for", "2.14", "--out", str(tmp_path)]) == 0
    for minor in ("2.13", "2.14"):
        name = f"compiled-steps-torch-{minor}.yaml"
        written = (tmp_path / name).read_bytes()
        assert written == (resources.matrix_dir() / "api_map" / name).read_bytes(), name
