import pickle

import pytest

from neuron_migrate.errors import UnknownTargetError
from neuron_migrate.matrix import (
    Matrix,
    available_versions,
    load_matrix,
    newest_version,
    resolve_version,
)


def test_bundled_versions_sorted():
    assert available_versions() == ["2.13.3.0", "2.13.3.1", "2.14.3.0", "2.14.3.1"]
    assert newest_version() == "2.14.3.1"


@pytest.mark.parametrize(
    ("version", "torch"),
    [
        ("2.13.3.0", "2.13.0"),
        ("2.14.3.0", "2.14.0"),
        ("2.13.3.1", "2.13.0"),
        ("2.14.3.1", "2.14.0"),
    ],
)
def test_bundled_matrix_loads(version, torch):
    m = load_matrix(version)
    assert isinstance(m, Matrix)
    assert m.version == version
    assert m.torch_version == torch
    counts = m.status_counts()
    assert counts["native"] > 300 and counts["cpu_fallback"] > 10 and counts["unsupported"] > 100
    # every group and rule names a key under evidence
    for entry in m.ops.values():
        assert entry.source in m.evidence
    assert m.default.status == "cpu_fallback"


def test_default_is_newest_and_cached():
    assert load_matrix() is load_matrix("2.14.3.1")


def test_prefix_resolves_to_the_newest_it_names():
    assert resolve_version("2.13") == "2.13.3.1"
    assert resolve_version("2.14.3") == "2.14.3.1"
    assert resolve_version("2.14.3.0") == "2.14.3.0"


def test_unknown_version_names_the_available_ones():
    with pytest.raises(UnknownTargetError) as err:
        load_matrix("9.9")
    assert str(err.value) == (
        "unknown --target 9.9: available 2.13.3.0, 2.13.3.1, 2.14.3.0, 2.14.3.1"
    )


def test_matrix_pickles():
    m = load_matrix("2.13.3.0")
    again = pickle.loads(pickle.dumps(m))
    assert again.op_status("aten::sort") == m.op_status("aten::sort")


def test_load_from_path(write_matrix, valid_doc):
    m = load_matrix(path=write_matrix(valid_doc))
    assert m.version == "9.1.0.0"
    assert m.op_status("aten::_fft_r2c").note == "complex"


def test_load_named_takes_a_version_or_a_matrix_file(write_matrix, valid_doc):
    from neuron_migrate.matrix.loader import load_named

    assert load_named("2.14").version == "2.14.3.1"
    path = write_matrix(valid_doc)
    assert load_named(str(path)).version == "9.1.0.0"
