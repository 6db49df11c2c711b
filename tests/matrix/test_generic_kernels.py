"""Ops classified by the generic kernel they run are never better than what that kernel reaches."""

from __future__ import annotations

import re

import pytest
import yaml

from neuron_migrate import resources
from neuron_migrate.matrix import load_matrix
from neuron_migrate.matrix.names import normalize_op

_RANK = {"native": 0, "cpu_fallback": 1, "unsupported": 2}
_VERSIONS = ("2.13.3.0", "2.14.3.0")


def _composite_calls(minor: str) -> dict[str, list[str]]:
    path = resources.matrix_dir() / "api_map" / f"torch-{minor}.yaml"
    calls = yaml.safe_load(path.read_text(encoding="utf-8"))["composite_calls"]
    return {normalize_op(k): [normalize_op(c) for c in v] for k, v in calls.items()}


@pytest.mark.parametrize("version", _VERSIONS)
def test_composite_reach_never_better_than_what_it_calls(version):
    matrix = load_matrix(version)
    calls = _composite_calls(".".join(matrix.torch_version.split(".")[:2]))
    entries = [op for op, e in matrix.ops.items() if e.source == "torch-composite-reach"]
    assert len(entries) > 50
    bad = []
    for op in entries:
        mine = matrix.op_status(op).status
        for child in calls[op]:
            theirs = matrix.op_status(child).status
            if _RANK[theirs] > _RANK[mine]:
                bad.append(f"{op} ({mine}) calls {child} ({theirs})")
    assert not bad, bad


@pytest.mark.parametrize("version", _VERSIONS)
def test_structured_variant_takes_its_out_overload_status(version):
    matrix = load_matrix(version)
    entries = {
        op: e for op, e in matrix.ops.items() if e.source == "torch-structured-out-redispatch"
    }
    assert len(entries) > 100
    for op, entry in entries.items():
        match = re.search(r"calls (aten::\S+) \((\w+)\)", entry.note)
        assert match, (op, entry.note)
        delegate, said = match.groups()
        assert matrix.op_status(delegate).status == said == entry.status, (op, delegate)


def test_examples():
    matrix = load_matrix("2.14.3.0")
    # any.out is a device kernel; any.dim runs torch's generic kernel, which calls it
    assert matrix.op_status("aten::any.dim").status == "native"
    assert matrix.op_status("aten::any.dim").source == "torch-structured-out-redispatch"
    # any.dims_out has no device kernel, so any.dims does not inherit aten::any's native
    assert matrix.op_status("aten::any.dims").status == "cpu_fallback"
    assert matrix.op_status("aten::_safe_softmax").status == "native"
    # tensor literals: lift_fresh returns its input, lift_fresh_copy clones it
    assert matrix.op_status("aten::lift_fresh").status == "native"
    assert matrix.op_status("aten::lift_fresh_copy").status == "native"
    # max.other is a call of aten::maximum, which has no device kernel
    assert matrix.op_status("aten::max.other").status == "cpu_fallback"


def test_torch_gives_private_use1_the_generic_structured_kernel():
    torch = pytest.importorskip("torch")
    has = torch._C._dispatch_has_kernel_for_dispatch_key
    assert has("aten::any.dim", "CompositeExplicitAutogradNonFunctional")
    assert not has("aten::any.out", "CompositeExplicitAutogradNonFunctional")
    table = torch._C._dispatch_dump_table("aten::any.dim")
    line = next(x for x in table.splitlines() if x.startswith("PrivateUse1:"))
    assert "CompositeExplicitAutogradNonFunctional" in line and "default backend kernel" in line


# Dense ops whose names hold a sparse accessor's ("_indices"), and the accessors themselves.
_DENSE_NAMED_LIKE_SPARSE = (
    "aten::max_pool1d_with_indices",
    "aten::max_pool2d_with_indices",
    "aten::max_pool2d_with_indices_backward",
    "aten::max_pool3d_with_indices",
    "aten::tril_indices",
    "aten::triu_indices",
)
_SPARSE_ACCESSORS = (
    "aten::_indices",
    "aten::_values",
    "aten::indices",
    "aten::values_copy",
    "aten::col_indices",
    "aten::crow_indices",
)


@pytest.mark.parametrize("version", _VERSIONS)
def test_the_sparse_rule_takes_sparse_accessors_not_dense_ops_named_like_them(version):
    matrix = load_matrix(version)
    statuses = {op: matrix.op_status(op).status for op in _DENSE_NAMED_LIKE_SPARSE}
    assert "unsupported" not in statuses.values(), statuses
    assert {matrix.op_status(op).status for op in _SPARSE_ACCESSORS} == {"unsupported"}


@pytest.mark.parametrize("version", _VERSIONS)
def test_ops_without_a_cpu_kernel_cannot_fall_back(version):
    matrix = load_matrix(version)
    for op in (
        "aten::_thnn_fused_lstm_cell",
        "aten::_thnn_fused_gru_cell",
        "aten::cudnn_convolution",
    ):
        entry = matrix.op_status(op)
        assert (entry.status, entry.source) == ("unsupported", "torch-no-cpu-kernel"), op
    # The transfer between the host and the device has no CPU kernel either, and works.
    assert matrix.op_status("aten::_copy_from").status != "unsupported"
