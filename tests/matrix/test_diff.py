from neuron_migrate.matrix import diff_matrices, load_matrix


def test_bundled_versions_differ_only_in_torch_pairing():
    d = diff_matrices(load_matrix("2.13.3.0"), load_matrix("2.14.3.0"))
    assert not (d.changed or d.added or d.removed)
    assert [(r.section, r.a, r.b) for r in d.rules] == [("torch", "2.13.0", "2.14.0")]


def test_diff_reports_status_listing_and_rule_changes(write_matrix, valid_doc):
    a = load_matrix(path=write_matrix(valid_doc, "9.1.0.0.yaml"))
    valid_doc["torch_neuronx"] = "9.2.0.0"
    valid_doc["ops"][1]["status"] = "native"  # linalg_qr: cpu_fallback -> native
    valid_doc["ops"][0]["ops"].append("aten::mul.Tensor")  # added
    valid_doc["ops"][2]["ops"] = [{"op": "aten::_fft_c2c"}]  # _fft_r2c removed, c2c added
    valid_doc["compile"]["modes_with_effect"] = ["default", "max-autotune"]
    b = load_matrix(path=write_matrix(valid_doc, "9.2.0.0.yaml"))
    d = diff_matrices(a, b)
    assert [(c.op, c.a_status, c.b_status) for c in d.changed] == [
        ("aten::linalg_qr", "cpu_fallback", "native")
    ]
    assert {c.op for c in d.added} == {"aten::mul.Tensor", "aten::_fft_c2c"}
    assert [c.op for c in d.removed] == ["aten::_fft_r2c"]
    assert any(r.section == "compile" and r.key == "modes_with_effect" for r in d.rules)
    assert d.to_dict()["a_version"] == "9.1.0.0"


def test_diff_reports_entries_whose_evidence_changed(write_matrix, valid_doc):
    a = load_matrix(path=write_matrix(valid_doc, "9.1.0.0.yaml"))
    valid_doc["torch_neuronx"] = "9.2.0.0"
    valid_doc["evidence"]["table"] = {"title": "T", "reference": "t.md", "kind": "official-table"}
    valid_doc["ops"][0]["ops"] = ["aten::eq"]  # add.Tensor moves to a group of the table
    valid_doc["ops"].append(
        {"group": "t", "status": "native", "source": "table", "ops": ["aten::add.Tensor"]}
    )
    b = load_matrix(path=write_matrix(valid_doc, "9.2.0.0.yaml"))
    d = diff_matrices(a, b)
    assert not (d.changed or d.added or d.removed)
    [moved] = d.evidence_changed
    assert (moved.op, moved.a_source, moved.b_source) == ("aten::add.Tensor", "snap", "table")
    assert not d.is_empty
