import json

import pytest

from tests.cli import Result, invoke


def run(*args: str) -> Result:
    return invoke(["matrix", *args])


def test_list():
    result = run("list")
    assert result.exit_code == 0, result.stderr
    assert "2.13.3.0" in result.stdout and "2.14.3.0" in result.stdout
    assert "2.14.3.1 (the default target)" in result.stdout
    assert "unlisted-op (assumed, unknown)" in " ".join(result.stdout.split())
    data = json.loads(run("list", "--format", "json").stdout)
    assert [v["torch"] for v in data["versions"]] == ["2.13.0", "2.13.0", "2.14.0", "2.14.0"]
    assert [v["is_default_target"] for v in data["versions"]] == [False, False, False, True]
    for v in data["versions"]:
        assert v["default_confidence"] == "unknown"
        assert v["evidence"]["release-2.33-pipeline-p2p"] == {
            "kind": "released",
            "confidence": "inferred",
        }
        assert ("release-2.34-notes" in v["evidence"]) == v["version"].endswith(".1")


@pytest.mark.parametrize("name", ["aten::sort", "torch.sort", "Tensor.sort"])
def test_show_answers_for_both_versions_with_source(name):
    result = run("show", name)
    assert result.exit_code == 0, result.stderr
    assert "2.13.3.0" in result.stdout and "2.14.3.0" in result.stdout
    assert "cpu_fallback" in result.stdout
    data = json.loads(run("show", name, "--format", "json").stdout)
    versions = data["versions"]
    assert [v["version"] for v in versions] == ["2.13.3.0", "2.13.3.1", "2.14.3.0", "2.14.3.1"]
    for v in versions:
        assert v["status"] == "cpu_fallback"
        sort = next(op for op in v["ops"] if op["op"] == "aten::sort")
        assert sort["status"] == "cpu_fallback" and sort["source"]


def test_show_python_api_via_the_map():
    data = json.loads(run("show", "torch.nn.functional.layer_norm", "-f", "json").stdout)
    assert data["versions"][0]["ops"][0]["op"] == "aten::native_layer_norm"
    assert data["versions"][0]["status"] == "native"


def test_show_namespaces():
    sparse = json.loads(run("show", "torch.sparse.mm", "-f", "json").stdout)
    assert sparse["versions"][0]["status"] == "unsupported"
    assert sparse["versions"][0]["namespace"]["namespace"] == "torch.sparse"
    rfft = json.loads(run("show", "torch.fft.rfft", "-f", "json").stdout)
    assert rfft["versions"][0]["status"] == "cpu_fallback"
    assert rfft["versions"][0]["namespace"] is None


def test_show_one_target():
    data = json.loads(run("show", "aten::sort", "--target", "2.13", "-f", "json").stdout)
    assert [v["version"] for v in data["versions"]] == ["2.13.3.1"]


def test_show_unknown_name_is_a_usage_error():
    result = run("show", "torch.no_such_api")
    assert result.exit_code == 2
    assert "error: unknown name 'torch.no_such_api'" in result.stderr


def test_unknown_version_is_a_usage_error():
    result = run("diff", "2.13.3.0", "9.9")
    assert result.exit_code == 2
    assert "9.9" in result.stderr and result.stdout == ""


def test_diff():
    result = run("diff", "2.13.3.0", "2.14.3.0")
    assert result.exit_code == 0, result.stderr
    assert "2.14.0" in result.stdout and "No op status differences" in result.stdout
    data = json.loads(run("diff", "2.13.3.0", "2.14.3.0", "--format", "json").stdout)
    assert data["changed"] == [] and data["rules"][0]["section"] == "torch"


def test_bad_format():
    result = run("list", "--format", "xml")
    assert result.exit_code == 2
    assert "unknown --format xml" in result.stderr


def test_show_prints_the_evidence_in_words():
    result = run("show", "c10d::send", "--target", "2.14")
    assert result.exit_code == 0, result.stderr
    out = " ".join(result.stdout.split())
    assert "c10d::send: native [release-2.33-pipeline-p2p, released, confidence inferred]" in out
    assert "released, the released Neuron documentation" in out and "confidence inferred." in out
    assert "Inferred: no retrieved released text names send/recv." in out
    data = json.loads(run("show", "c10d::send", "-t", "2.14", "-f", "json").stdout)
    evidence = data["versions"][0]["ops"][0]["evidence"]
    assert (evidence["key"], evidence["kind"]) == ("release-2.33-pipeline-p2p", "released")
    assert evidence["confidence"] == "inferred"
    assert evidence["reference"].startswith("https://awsdocs-neuron")


def test_stats_counts_entries_by_status_and_evidence_kind():
    data = json.loads(run("stats", "--format", "json").stdout)
    assert [v["version"] for v in data["versions"]] == [
        "2.13.3.0",
        "2.13.3.1",
        "2.14.3.0",
        "2.14.3.1",
    ]
    for v in data["versions"]:
        assert sum(v["by_status"].values()) == v["entries"] == sum(v["by_kind"].values())
        by_confidence = v["by_confidence_and_status"]
        assert sum(sum(row.values()) for row in by_confidence.values()) == v["entries"]
        newer = v["version"].endswith(".1")
        for kind, row in v["by_kind_and_status"].items():
            assert sum(row.values()) == v["by_kind"][kind]
        assert v["by_kind"]["released"] == v["by_source"]["release-2.33-quantized"]["entries"] + v[
            "by_source"
        ]["release-2.33-distributed"]["entries"] + v["by_source"]["release-2.33-pipeline-p2p"][
            "entries"
        ] + v["by_source"]["release-2.33-functional-collectives"]["entries"] + (
            v["by_source"]["release-2.34-fp8-matmul"]["entries"] if newer else 0
        )
        # stated in released text: only the functional collectives (and 2.34's FP8 matmul)
        assert by_confidence["released"]["native"] == (
            v["by_source"]["release-2.33-functional-collectives"]["entries"] + newer
        )
        assert v["default"] == {
            "status": "cpu_fallback",
            "source": "unlisted-op",
            "kind": "assumed",
            "confidence": "unknown",
        }
        assert "fft" in v["unknowns"]
    text = run("stats", "--target", "2.14")
    assert text.exit_code == 0, text.stderr
    assert "listed ops by evidence kind" in text.stdout and "released" in text.stdout


@pytest.mark.parametrize("words", [["2.13", "9.9"], ["9.9", "2.13"]])
def test_diff_names_the_unknown_version_without_a_target_option(words: list[str]) -> None:
    result = invoke(["matrix", "diff", *words])
    assert result.exit_code == 2
    assert result.stderr.startswith("error: unknown version 9.9: available ")
    assert "--target" not in result.stderr


def test_show_says_an_op_is_unknown_to_the_matrix_and_what_the_default_gives_it() -> None:
    from neuron_migrate.matrix import available_versions, load_matrix

    result = invoke(["matrix", "show", "aten::nonexistent_op"])
    assert result.exit_code == 0
    text = " ".join(result.stdout.split())
    for version in available_versions():
        default = load_matrix(version).default.status
        assert (
            f"{version} (torch {load_matrix(version).torch_version}): aten::nonexistent_op -> "
            f"{default} aten::nonexistent_op is unknown to the matrix (no entry names it or its "
            f"base op): the default for unlisted ops gives it {default}"
        ) in text
    # A listed op, and an overload that takes its base op's status, are not called unknown.
    assert "unknown to the matrix" not in invoke(["matrix", "show", "aten::sort"]).stdout
