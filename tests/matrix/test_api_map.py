import pytest

from neuron_migrate.errors import UsageError
from neuron_migrate.matrix.api_map import available_api_maps, load_api_map


@pytest.fixture(scope="module")
def amap():
    return load_api_map("2.13")


def test_available():
    assert available_api_maps() == ["2.13", "2.14"]


def test_functions(amap):
    assert "aten::sort" in amap.aten_for("torch.sort")
    assert amap.aten_for("torch.nn.functional.layer_norm") == ("aten::native_layer_norm",)
    assert amap.aten_for("torch.add") == ("aten::add.Tensor",)
    assert "aten::_fft_r2c" in amap.aten_for("torch.fft.rfft")
    assert amap.aten_for("torch.distributed.all_reduce") == ("c10d::allreduce_",)
    assert amap.aten_for("torch.not_an_api") is None


def test_modules_forward_then_backward(amap):
    ops = amap.aten_for("torch.nn.Linear")
    assert ops[:2] == ("aten::t", "aten::addmm") and "aten::mm" in ops
    fwd, bwd = amap.aten_for_module("torch.nn.Embedding")
    assert fwd == ("aten::embedding",) and "aten::embedding_dense_backward" in bwd
    # traced on a non-CPU stand-in device: no CPU-only kernels such as mkldnn
    assert not any("mkldnn" in op for op in amap.aten_for("torch.nn.LSTM"))


def test_device_paths_replace_what_the_stand_in_device_shows(amap):
    # On a PrivateUse1 device, dropout is one native_dropout, and LSTM/GRU call fused cells.
    for api in ("torch.nn.functional.dropout", "torch.nn.Dropout", "torch.nn.TransformerEncoder"):
        ops = amap.aten_for(api)
        assert "aten::native_dropout" in ops and "aten::bernoulli_.float" not in ops, api
    assert "aten::bernoulli_.float" in amap.aten_for("torch.nn.functional.dropout2d")
    fwd, bwd = amap.aten_for_module("torch.nn.GRU")
    assert "aten::_thnn_fused_gru_cell" in fwd and "aten::_thnn_fused_gru_cell_backward" in bwd


def test_tensor_methods(amap):
    assert amap.aten_for_tensor_method("sort") == amap.aten_for("Tensor.sort")
    assert "aten::sort" in amap.aten_for_tensor_method("sort")
    assert amap.is_tensor_method("sort") and amap.is_tensor_method("view")
    assert not amap.is_tensor_method("definitely_not_a_method")


def test_coverage(amap):
    mapped, considered = amap.coverage()
    assert 200 <= mapped <= considered


def test_2_14_is_marked(amap):
    m14 = load_api_map("2.14.0")
    assert m14.torch_minor == "2.14"
    assert m14.aten_for("torch.sort") == amap.aten_for("torch.sort")


def test_unknown_minor():
    with pytest.raises(UsageError):
        load_api_map("1.0")


@pytest.mark.torch
def test_recorder_sees_backend_level_ops():
    torch = pytest.importorskip("torch")
    from neuron_migrate.matrix._recorder import record, to_stand_in

    x = to_stand_in(torch.randn(4, 5))
    calls: dict[str, list[str]] = {}
    ops, _ = record(lambda: torch.sort(x), calls)
    assert ops == ["aten::sort"]
    assert calls["aten::sort"] == ["aten::sort.stable"]


def test_the_builder_names_each_sample_call_by_its_argument_kinds():
    torch = pytest.importorskip("torch")
    from neuron_migrate.matrix.api_map_builder import call_pattern

    shape = call_pattern((torch.ones(2, 3), 1, True, None), {"dtype": torch.float16, "p": 0.5})
    assert shape == (("tensor:2", "int", "bool", "none"), (("dtype", "dtype"), ("p", "float")))
