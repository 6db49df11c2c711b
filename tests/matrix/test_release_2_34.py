"""Neuron 2.34 (torch-neuronx 2.13.3.1 / 2.14.3.1): the newest matrices, what they add to the
2.33 evidence, and how sure each status is."""

from __future__ import annotations

import pytest

from neuron_migrate.errors import DataFileError
from neuron_migrate.matrix import diff_matrices, load_matrix, newest_version


def test_the_2_34_pair_is_bundled_and_the_newest_is_the_default_target() -> None:
    assert newest_version() == "2.14.3.1"
    assert load_matrix().version == "2.14.3.1"
    assert (load_matrix("2.13.3.1").torch_version, load_matrix("2.14.3.1").torch_version) == (
        "2.13.0",
        "2.14.0",
    )


@pytest.mark.parametrize(("old", "new"), [("2.13.3.0", "2.13.3.1"), ("2.14.3.0", "2.14.3.1")])
def test_2_34_adds_only_what_its_readable_text_names(old: str, new: str) -> None:
    a, b = load_matrix(old), load_matrix(new)
    diff = diff_matrices(a, b)
    # FP8 matmul: the one op the readable 2.34 text names that 2.33 did not run natively
    assert [(c.op, c.a_status, c.b_status) for c in diff.added + diff.changed] == [
        ("aten::_scaled_mm", "cpu_fallback", "native")
    ]
    verdict = b.op_status("aten::_scaled_mm")
    assert (b.evidence_kind(verdict.source), b.confidence(verdict.source)) == (
        "released",
        "released",
    )
    assert a.confidence(a.op_status("aten::_scaled_mm").source) == "unknown"
    # APIs the release names, with the evidence's confidence: varlen_attn by name, the
    # torch.accelerator memory functions only as a group (which ones is inferred)
    row = b.api_status("torch.nn.attention.varlen.varlen_attn")
    assert row is not None and (row.status, b.confidence(row.source)) == ("native", "released")
    memory = b.api_status("torch.accelerator.memory_allocated")
    assert memory is not None and (memory.kind, b.confidence(memory.source)) == (
        "host_only",
        "inferred",
    )
    # on a 2.33 target the same APIs are refused, on an inference from the 2.34 text
    for api in ("torch.nn.attention.varlen.varlen_attn", "torch.accelerator.memory_allocated"):
        older = a.api_status(api)
        assert older is not None and (older.status, a.confidence(older.source)) == (
            "unsupported",
            "inferred",
        )


def test_what_could_not_be_read_is_said() -> None:
    b = load_matrix("2.14.3.1")
    notes = {u.topic: u.note for u in b.unknowns}
    assert "third highlight" in b.evidence["release-2.34-notes"].note
    assert "could not be read" in b.summary
    assert "2.13.3.1" in notes["torch-neuronx 2.13.3.1 pairing"]
    assert "SDPA dropout" in notes["fixes in 2.34"]
    assert "per-op coverage" in notes  # the 2.33 unknowns stay


def test_evidence_may_say_less_than_its_kind_but_never_more(write_matrix, valid_doc) -> None:
    key = next(iter(valid_doc["evidence"]))
    valid_doc["evidence"][key]["kind"] = "torch-inference"
    valid_doc["evidence"][key]["confidence"] = "released"
    with pytest.raises(DataFileError) as err:
        load_matrix(path=write_matrix(valid_doc))
    assert f"evidence.{key}.confidence" in str(err.value) and "\n" not in str(err.value)
    valid_doc["evidence"][key]["confidence"] = "unknown"
    assert load_matrix(path=write_matrix(valid_doc)).confidence(key) == "unknown"
