"""Every problem in a matrix file is one line naming the file and the field."""

import pytest

from neuron_migrate.errors import DataFileError
from neuron_migrate.matrix import load_matrix


def _error(write_matrix, doc) -> DataFileError:
    path = write_matrix(doc)
    with pytest.raises(DataFileError) as err:
        load_matrix(path=path)
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith(str(path))
    return err.value


def test_bad_group_status(write_matrix, valid_doc):
    valid_doc["ops"][2]["status"] = "maybe"
    err = _error(write_matrix, valid_doc)
    assert err.field == "ops[2].status"
    assert "maybe" in err.problem


def test_source_must_be_an_evidence_key(write_matrix, valid_doc):
    valid_doc["ops"][0]["source"] = "nowhere"
    assert _error(write_matrix, valid_doc).field == "ops[0].source"


def test_bad_op_name(write_matrix, valid_doc):
    valid_doc["ops"][0]["ops"][1] = "not an op"
    assert _error(write_matrix, valid_doc).field == "ops[0].ops[1]"


def test_op_spelled_with_default_overload(write_matrix, valid_doc):
    valid_doc["ops"][0]["ops"][1] = "aten::eq.default"
    err = _error(write_matrix, valid_doc)
    assert err.field == "ops[0].ops[1]" and "aten::eq" in err.problem


def test_duplicate_op(write_matrix, valid_doc):
    valid_doc["ops"][1]["ops"].append("aten::add.Tensor")
    err = _error(write_matrix, valid_doc)
    assert err.field == "ops[1].ops[1]" and "ops[0].ops[0]" in err.problem


def test_missing_default(write_matrix, valid_doc):
    del valid_doc["default"]
    assert _error(write_matrix, valid_doc).field == "default"


def test_dtype_warn_must_be_bool(write_matrix, valid_doc):
    valid_doc["dtypes"][0]["warn"] = "yes"
    assert _error(write_matrix, valid_doc).field == "dtypes[0].warn"


def test_partial_namespace_needs_lists(write_matrix, valid_doc):
    valid_doc["namespaces"][1]["supported"] = []
    valid_doc["namespaces"][1]["unsupported"] = []
    assert _error(write_matrix, valid_doc).field == "namespaces[1]"


def test_compile_dynamic_true_status(write_matrix, valid_doc):
    valid_doc["compile"]["dynamic_true"] = "rejected"
    assert _error(write_matrix, valid_doc).field == "compile.dynamic_true"


def test_memory_format_missing_name(write_matrix, valid_doc):
    del valid_doc["memory_formats"][0]["name"]
    assert _error(write_matrix, valid_doc).field == "memory_formats[0].name"


def test_evidence_needs_a_title(write_matrix, valid_doc):
    del valid_doc["evidence"]["snap"]["title"]
    assert _error(write_matrix, valid_doc).field == "evidence.snap.title"


def test_schema_version(write_matrix, valid_doc):
    valid_doc["schema_version"] = 7
    assert _error(write_matrix, valid_doc).field == "schema_version"


def test_version_must_match_file_name(write_matrix, valid_doc):
    path = write_matrix(valid_doc, name="9.2.0.0.yaml")
    with pytest.raises(DataFileError) as err:
        load_matrix("9.2.0.0", path=path)
    assert err.value.field == "torch_neuronx"


def test_yaml_syntax_error_names_the_line(write_matrix):
    err = _error(write_matrix, "schema_version: 1\nops: [unclosed\n")
    assert err.field.startswith("line ")


def test_top_level_must_be_a_mapping(write_matrix):
    assert _error(write_matrix, "- a\n- b\n").field == "<top>"


def test_bad_evidence_kind(write_matrix, valid_doc):
    valid_doc["evidence"]["snap"]["kind"] = "rumour"
    err = _error(write_matrix, valid_doc)
    assert err.field == "evidence.snap.kind" and "rumour" in err.problem


def test_evidence_without_a_kind_is_unclassified(write_matrix, valid_doc):
    m = load_matrix(path=write_matrix(valid_doc))
    assert m.evidence_kind("snap") == "unclassified"


def test_bad_api_row(write_matrix, valid_doc):
    valid_doc["apis"] = {"torch.sort": {"status": "cpu_fallback", "source": "snap", "ops": ["x"]}}
    assert _error(write_matrix, valid_doc).field == "apis.torch.sort.ops[0]"
    valid_doc["apis"] = {"torch.sort": {"status": "Y", "source": "snap"}}
    assert _error(write_matrix, valid_doc).field == "apis.torch.sort.status"
    valid_doc["apis"] = {"torch.sort": {"status": "native", "source": "snap", "kind": "host"}}
    assert _error(write_matrix, valid_doc).field == "apis.torch.sort.kind"


def test_unknown_needs_a_note(write_matrix, valid_doc):
    valid_doc["unknowns"] = [{"topic": "fft"}]
    assert _error(write_matrix, valid_doc).field == "unknowns[0].note"


def test_bad_compile_option(write_matrix, valid_doc):
    valid_doc["compile"]["other_modes"] = "ignored"
    assert _error(write_matrix, valid_doc).field == "compile.other_modes"


def test_graph_refuses_names_op_statuses(write_matrix, valid_doc):
    valid_doc["compile"]["graph_refuses"] = ["unsupported", "maybe"]
    assert _error(write_matrix, valid_doc).field == "compile.graph_refuses[1]"


def test_graph_refuses_defaults_to_unsupported(write_matrix, valid_doc):
    valid_doc["compile"].pop("graph_refuses", None)
    assert load_matrix(path=write_matrix(valid_doc)).compile.graph_refuses == ("unsupported",)


def test_graph_refuses_is_read(write_matrix, valid_doc):
    valid_doc["compile"]["graph_refuses"] = ["cpu_fallback", "unsupported"]
    loaded = load_matrix(path=write_matrix(valid_doc)).compile.graph_refuses
    assert loaded == ("cpu_fallback", "unsupported")
