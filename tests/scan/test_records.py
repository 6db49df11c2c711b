"""The slotted records (`neuron_migrate.scan.records`): compared, printed and pickled as the
dataclasses they replace were."""

from __future__ import annotations

import pickle

import pytest

from neuron_migrate.scan.file_findings import FileFindings
from neuron_migrate.scan.findings import FileError, Finding
from neuron_migrate.scan.scanned import ScannedFile


def _finding(line: int) -> Finding:
    return Finding(
        "NM101", "torch_xla", "xla", "warning", "a.py", line, 0, line, 5, "torch_xla.x", "m"
    )


def _result(**changes: object) -> ScannedFile:
    values: dict[str, object] = {
        "path": "a.py",
        "findings": FileFindings.of("a.py", [_finding(1), _finding(2)]),
        "unmapped_apis": {"torch.foo": 2},
    }
    values.update(changes)
    return ScannedFile(**values)  # type: ignore[arg-type]


def test_equal_by_every_field_and_only_to_the_same_class() -> None:
    assert _result() == _result()
    assert _result() != _result(from_cache=True)
    assert _result() != _result(findings=FileFindings.of("a.py", [_finding(1)]))
    assert ScannedFile("a.py") != ("a.py",)
    with pytest.raises(TypeError):
        hash(_result())  # mutable, as a dataclass that is not frozen


def test_repr_names_each_field_in_order() -> None:
    text = repr(ScannedFile("a.py", error=FileError("a.py", "bad", "syntax")))
    assert text.startswith("ScannedFile(path='a.py', findings=None, suppressed=(), ")
    assert text.endswith("skipped=None, prefiltered=False, compiles=(), from_cache=False)")


def test_fields_are_the_slots_in_init_order() -> None:
    for record in (ScannedFile, FileFindings):
        assert sorted(record._fields) == sorted(record.__slots__)
    made = ScannedFile(*(f"v{i}" for i in range(len(ScannedFile._fields))))  # type: ignore[arg-type]
    assert [getattr(made, name) for name in ScannedFile._fields] == [
        f"v{i}" for i in range(len(ScannedFile._fields))
    ]


def test_pickles_to_an_equal_record() -> None:
    for original in (_result(), _result(from_cache=True, skipped="empty file")):
        copy = pickle.loads(pickle.dumps(original, pickle.HIGHEST_PROTOCOL))
        assert copy == original and type(copy) is ScannedFile
        assert copy.findings is not None and copy.findings.decode() == [_finding(1), _finding(2)]
