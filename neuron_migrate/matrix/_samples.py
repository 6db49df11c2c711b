"""Hand-written sample calls for common APIs that PyTorch's OpInfo database does not cover well:
creation functions, Tensor conversions and in-place methods, nn modules (forward and backward),
optimizers and collectives. Needs torch; imported only by `api_map_builder`.

Each sample builds its inputs in ``setup`` (outside the recorder) and calls the API in ``call``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn


@dataclass(frozen=True)
class Sample:
    qualname: str  # torch.zeros, torch.nn.Linear, or a Tensor method name for kind == "method"
    setup: Callable[[], Any]
    call: Callable[[Any], Any]
    kind: str = "function"  # function | method | module | optimizer


def _x(*shape: int) -> torch.Tensor:
    return torch.randn(*shape)


def _fn(name: str, call: Callable[[Any], Any], setup: Callable[[], Any] = lambda: None) -> Sample:
    return Sample(name, setup, call)


def _m(name: str, call: Callable[[Any], Any], setup: Callable[[], Any] | None = None) -> Sample:
    return Sample(name, setup or (lambda: _x(4, 5)), call, "method")


def function_samples() -> list[Sample]:
    return [
        _fn("torch.zeros", lambda _: torch.zeros(3, 4)),
        _fn("torch.ones", lambda _: torch.ones(3, 4)),
        _fn("torch.empty", lambda _: torch.empty(3, 4)),
        _fn("torch.full", lambda _: torch.full((3, 4), 2.0)),
        _fn("torch.arange", lambda _: torch.arange(10)),
        _fn("torch.linspace", lambda _: torch.linspace(0, 1, 5)),
        _fn("torch.logspace", lambda _: torch.logspace(0, 1, 5)),
        _fn("torch.eye", lambda _: torch.eye(3)),
        _fn("torch.rand", lambda _: torch.rand(3, 4)),
        _fn("torch.randn", lambda _: torch.randn(3, 4)),
        _fn("torch.randint", lambda _: torch.randint(0, 10, (3, 4))),
        _fn("torch.randperm", lambda _: torch.randperm(8)),
        _fn("torch.tensor", lambda _: torch.tensor([1.0, 2.0])),
        _fn("torch.as_tensor", lambda _: torch.as_tensor([1.0, 2.0])),
        _fn("torch.scalar_tensor", lambda _: torch.scalar_tensor(1.0)),
        _fn("torch.zeros_like", torch.zeros_like, lambda: _x(3, 4)),
        _fn("torch.ones_like", torch.ones_like, lambda: _x(3, 4)),
        _fn("torch.empty_like", torch.empty_like, lambda: _x(3, 4)),
        _fn("torch.full_like", lambda x: torch.full_like(x, 2.0), lambda: _x(3, 4)),
        _fn("torch.rand_like", torch.rand_like, lambda: _x(3, 4)),
        _fn("torch.randn_like", torch.randn_like, lambda: _x(3, 4)),
        _fn("torch.normal", lambda x: torch.normal(x, 1.0), lambda: _x(3, 4)),
        _fn("torch.bernoulli", torch.bernoulli, lambda: torch.rand(3, 4)),
        _fn("torch.multinomial", lambda x: torch.multinomial(x, 2), lambda: torch.rand(3, 4)),
        _fn("torch.manual_seed", lambda _: torch.manual_seed(0)),
        # Quantized tensors (the released table's `N` category): what each call reaches.
        _fn(
            "torch.quantize_per_tensor",
            lambda x: torch.quantize_per_tensor(x, 0.1, 0, torch.qint8),
            lambda: _x(3, 4),
        ),
        _fn(
            "torch.quantize_per_channel",
            lambda a: torch.quantize_per_channel(a[0], a[1], a[2], 0, torch.qint8),
            lambda: (_x(3, 4), torch.ones(3), torch.zeros(3, dtype=torch.long)),
        ),
        _fn(
            "torch.dequantize",
            torch.dequantize,
            lambda: torch.quantize_per_tensor(_x(3, 4), 0.1, 0, torch.qint8),
        ),
        _fn("torch.is_tensor", torch.is_tensor, lambda: _x(2)),
        _fn("torch.numel", torch.numel, lambda: _x(2)),
        _fn("torch.nn.utils.clip_grad_norm_", _clip, _params_with_grads),
        _fn(
            "torch.nn.utils.clip_grad_value_",
            lambda p: nn.utils.clip_grad_value_(p, 0.5),
            _params_with_grads,
        ),
        _fn("torch.nn.utils.parameters_to_vector", nn.utils.parameters_to_vector, _params),
        _fn(
            "torch.nn.utils.vector_to_parameters",
            lambda p: nn.utils.vector_to_parameters(nn.utils.parameters_to_vector(p) * 0, p),
            _params,
        ),
        *_init_samples(),
        *_sequence_samples(),
    ]


def _params() -> list[nn.Parameter]:
    return [nn.Parameter(torch.randn(4, 5)), nn.Parameter(torch.randn(5))]


def _init_samples() -> list[Sample]:
    """Weight initialisation, in place on a parameter-shaped tensor. (`trunc_normal_` and
    `orthogonal_` return a meta tensor untouched, and the stand-in device reports `meta`: they
    would be mapped to no op at all, so they are left out.)"""
    init = nn.init
    calls: dict[str, Callable[[Any], Any]] = {
        "uniform_": init.uniform_,
        "normal_": init.normal_,
        "constant_": lambda w: init.constant_(w, 0.5),
        "ones_": init.ones_,
        "zeros_": init.zeros_,
        "eye_": init.eye_,
        "xavier_uniform_": init.xavier_uniform_,
        "xavier_normal_": init.xavier_normal_,
        "kaiming_uniform_": init.kaiming_uniform_,
        "kaiming_normal_": init.kaiming_normal_,
    }
    return [_fn(f"torch.nn.init.{name}", call, lambda: _x(4, 5)) for name, call in calls.items()]


def _sequence_samples() -> list[Sample]:
    """Padding and packing variable-length sequences (lengths given as a list: torch wants
    them on the host)."""
    rnn = nn.utils.rnn
    batch = lambda: _x(2, 3, 4)  # noqa: E731
    sequences = lambda: [_x(3, 4), _x(2, 4)]  # noqa: E731
    return [
        _fn("torch.nn.utils.rnn.pad_sequence", rnn.pad_sequence, sequences),
        _fn("torch.nn.utils.rnn.pack_sequence", rnn.pack_sequence, sequences),
        _fn(
            "torch.nn.utils.rnn.pack_padded_sequence",
            lambda x: rnn.pack_padded_sequence(x, [3, 2], batch_first=True),
            batch,
        ),
        _fn(
            "torch.nn.utils.rnn.pad_packed_sequence",
            lambda x: rnn.pad_packed_sequence(
                rnn.pack_padded_sequence(x, [3, 2], batch_first=True), batch_first=True
            ),
            batch,
        ),
    ]


def method_samples() -> list[Sample]:
    long_x = lambda: torch.randint(0, 5, (4, 5))  # noqa: E731
    return [
        _m("to", lambda x: x.to(torch.float16)),
        _m("cpu", lambda x: x.cpu()),
        _m("float", lambda x: x.float(), lambda: torch.randn(4, 5, dtype=torch.float16)),
        _m("double", lambda x: x.double()),
        _m("half", lambda x: x.half()),
        _m("bfloat16", lambda x: x.bfloat16()),
        _m("long", lambda x: x.long()),
        _m("int", lambda x: x.int()),
        _m("bool", lambda x: x.bool()),
        _m("type", lambda x: x.type(torch.float64)),
        _m("type_as", lambda x: x.type_as(torch.zeros(1, dtype=torch.float16))),
        _m("new_zeros", lambda x: x.new_zeros(2, 3)),
        _m("new_ones", lambda x: x.new_ones(2, 3)),
        _m("new_full", lambda x: x.new_full((2, 3), 1.0)),
        _m("new_empty", lambda x: x.new_empty(2, 3)),
        _m("new_tensor", lambda x: x.new_tensor([1.0, 2.0])),
        _m("item", lambda x: x.sum().item()),
        _m("tolist", lambda x: x.tolist()),
        _m("clone", lambda x: x.clone()),
        _m("detach", lambda x: x.detach()),
        _m("detach_", lambda x: x.detach_()),
        _m("contiguous", lambda x: x.t().contiguous()),
        _m("requires_grad_", lambda x: x.requires_grad_()),
        _m("fill_", lambda x: x.fill_(1.0)),
        _m("zero_", lambda x: x.zero_()),
        _m("copy_", lambda x: x.copy_(torch.ones(4, 5))),
        _m("uniform_", lambda x: x.uniform_()),
        _m("normal_", lambda x: x.normal_()),
        _m("bernoulli_", lambda x: x.bernoulli_(0.5)),
        _m("random_", lambda x: x.random_(0, 10)),
        _m("exponential_", lambda x: x.exponential_()),
        _m("masked_fill_", lambda x: x.masked_fill_(x > 0, 0.0)),
        _m("add_", lambda x: x.add_(1.0)),
        _m("sub_", lambda x: x.sub_(1.0)),
        _m("mul_", lambda x: x.mul_(2.0)),
        _m("div_", lambda x: x.div_(2.0)),
        _m("clamp_", lambda x: x.clamp_(-1.0, 1.0)),
        _m("scatter_", lambda x: x.scatter_(1, torch.zeros(4, 1, dtype=torch.long), 1.0)),
        _m("index_fill_", lambda x: x.index_fill_(1, torch.tensor([0, 2]), 0.0)),
        _m("view", lambda x: x.view(5, 4)),
        _m("view_as", lambda x: x.view_as(torch.empty(5, 4))),
        _m("reshape", lambda x: x.reshape(5, 4)),
        _m("reshape_as", lambda x: x.reshape_as(torch.empty(20))),
        _m("expand", lambda x: x[:1].expand(3, 5)),
        _m("expand_as", lambda x: x[:1].expand_as(torch.empty(3, 5))),
        _m("flatten", lambda x: x.flatten()),
        _m("unflatten", lambda x: x.unflatten(1, (5, 1))),
        _m("size", lambda x: x.size()),
        _m("dim", lambda x: x.dim()),
        _m("numel", lambda x: x.numel()),
        _m("element_size", lambda x: x.element_size()),
        _m("is_contiguous", lambda x: x.is_contiguous()),
        _m("data_ptr", lambda x: x.data_ptr()),
        _m("__setitem__", lambda x: x.__setitem__((slice(None), 0), 1.0)),
        _m("__setitem__", lambda x: x.__setitem__(x > 0, 1.0)),
        _m("backward", lambda x: x.sum().backward(), lambda: _x(4, 5).requires_grad_()),
        _m("long", lambda x: x.long(), long_x),
        _m("masked_scatter_", lambda x: x.masked_scatter_(x > 0, torch.zeros(4, 5))),
        _m("index_put_", lambda x: x.index_put_((torch.tensor([0, 1]),), torch.tensor(1.0))),
        _m("pin_memory", lambda x: x.is_pinned()),
        _m("is_pinned", lambda x: x.is_pinned()),
    ]


def _params_with_grads(move: Callable[[Any], Any] = lambda t: t) -> list[nn.Parameter]:
    params = [nn.Parameter(move(torch.randn(4, 5))), nn.Parameter(move(torch.randn(5)))]
    for p in params:
        p.grad = move(torch.randn(p.shape))
    return params


def _clip(params: list[nn.Parameter]) -> Any:
    return nn.utils.clip_grad_norm_(params, 1.0, foreach=True)


# --- modules: (qualname, factory of (module, inputs)) ------------------------------------------


def _long(high: int, *shape: int) -> torch.Tensor:
    return torch.randint(0, high, shape)


ModuleFactory = Callable[[], tuple[nn.Module, tuple[Any, ...]]]


def _mod(module: Callable[[], nn.Module], *inputs: Callable[[], Any]) -> ModuleFactory:
    return lambda: (module(), tuple(make() for make in inputs))


def _f(*shape: int) -> Callable[[], torch.Tensor]:
    return lambda: torch.randn(*shape, requires_grad=True)


def _prob(*shape: int) -> Callable[[], torch.Tensor]:
    return lambda: torch.rand(*shape).clamp(0.05, 0.95).requires_grad_()


def module_factories() -> dict[str, ModuleFactory]:
    m: dict[str, ModuleFactory] = {
        "Linear": _mod(lambda: nn.Linear(8, 4), _f(2, 8)),
        "Bilinear": _mod(lambda: nn.Bilinear(3, 4, 2), _f(2, 3), _f(2, 4)),
        "Conv1d": _mod(lambda: nn.Conv1d(3, 4, 3), _f(2, 3, 10)),
        "Conv2d": _mod(lambda: nn.Conv2d(3, 4, 3), _f(2, 3, 8, 8)),
        "Conv3d": _mod(lambda: nn.Conv3d(2, 2, 2), _f(1, 2, 4, 4, 4)),
        "ConvTranspose1d": _mod(lambda: nn.ConvTranspose1d(3, 4, 3), _f(2, 3, 6)),
        "ConvTranspose2d": _mod(lambda: nn.ConvTranspose2d(3, 4, 3), _f(2, 3, 5, 5)),
        "LayerNorm": _mod(lambda: nn.LayerNorm(8), _f(2, 5, 8)),
        "RMSNorm": _mod(lambda: nn.RMSNorm(8), _f(2, 5, 8)),
        "GroupNorm": _mod(lambda: nn.GroupNorm(2, 4), _f(2, 4, 6)),
        "BatchNorm1d": _mod(lambda: nn.BatchNorm1d(4), _f(3, 4)),
        "BatchNorm2d": _mod(lambda: nn.BatchNorm2d(4), _f(2, 4, 5, 5)),
        "InstanceNorm2d": _mod(lambda: nn.InstanceNorm2d(4, affine=True), _f(2, 4, 5, 5)),
        "Embedding": _mod(lambda: nn.Embedding(10, 4), lambda: _long(10, 2, 3)),
        "EmbeddingBag": _mod(lambda: nn.EmbeddingBag(10, 4), lambda: _long(10, 2, 3)),
        "Dropout": _mod(lambda: nn.Dropout(0.5), _f(4, 5)),
        "Dropout1d": _mod(lambda: nn.Dropout1d(0.5), _f(2, 4, 5)),
        "Dropout2d": _mod(lambda: nn.Dropout2d(0.5), _f(2, 4, 5, 5)),
        "MultiheadAttention": _mod(
            lambda: nn.MultiheadAttention(8, 2, batch_first=True),
            _f(2, 5, 8),
            _f(2, 5, 8),
            _f(2, 5, 8),
        ),
        "TransformerEncoderLayer": _mod(
            lambda: nn.TransformerEncoderLayer(8, 2, 16, batch_first=True), _f(2, 5, 8)
        ),
        "TransformerDecoderLayer": _mod(
            lambda: nn.TransformerDecoderLayer(8, 2, 16, batch_first=True), _f(2, 5, 8), _f(2, 4, 8)
        ),
        "TransformerEncoder": _mod(
            lambda: nn.TransformerEncoder(
                nn.TransformerEncoderLayer(8, 2, 16, batch_first=True),
                1,
                enable_nested_tensor=False,
            ),
            _f(2, 5, 8),
        ),
        "Transformer": _mod(
            lambda: nn.Transformer(8, 2, 1, 1, 16, batch_first=True), _f(2, 5, 8), _f(2, 4, 8)
        ),
        "LSTM": _mod(lambda: nn.LSTM(4, 6, batch_first=True), _f(2, 5, 4)),
        "GRU": _mod(lambda: nn.GRU(4, 6, batch_first=True), _f(2, 5, 4)),
        "RNN": _mod(lambda: nn.RNN(4, 6, batch_first=True), _f(2, 5, 4)),
        "LSTMCell": _mod(lambda: nn.LSTMCell(4, 6), _f(2, 4)),
        "GRUCell": _mod(lambda: nn.GRUCell(4, 6), _f(2, 4)),
        "RNNCell": _mod(lambda: nn.RNNCell(4, 6), _f(2, 4)),
        "MaxPool1d": _mod(lambda: nn.MaxPool1d(2), _f(2, 3, 8)),
        "MaxPool2d": _mod(lambda: nn.MaxPool2d(2), _f(2, 3, 8, 8)),
        "AvgPool1d": _mod(lambda: nn.AvgPool1d(2), _f(2, 3, 8)),
        "AvgPool2d": _mod(lambda: nn.AvgPool2d(2), _f(2, 3, 8, 8)),
        "AdaptiveAvgPool1d": _mod(lambda: nn.AdaptiveAvgPool1d(1), _f(2, 3, 8)),
        "AdaptiveAvgPool2d": _mod(lambda: nn.AdaptiveAvgPool2d((1, 1)), _f(2, 3, 8, 8)),
        "AdaptiveMaxPool2d": _mod(lambda: nn.AdaptiveMaxPool2d((1, 1)), _f(2, 3, 8, 8)),
        "Flatten": _mod(lambda: nn.Flatten(), _f(2, 3, 4)),
        "Unflatten": _mod(lambda: nn.Unflatten(1, (3, 4)), _f(2, 12)),
        "Identity": _mod(lambda: nn.Identity(), _f(2, 3)),
        "Upsample": _mod(lambda: nn.Upsample(scale_factor=2, mode="nearest"), _f(1, 2, 4, 4)),
        "UpsamplingBilinear2d": _mod(
            lambda: nn.UpsamplingBilinear2d(scale_factor=2), _f(1, 2, 4, 4)
        ),
        "PixelShuffle": _mod(lambda: nn.PixelShuffle(2), _f(1, 8, 3, 3)),
        "ZeroPad2d": _mod(lambda: nn.ZeroPad2d(1), _f(1, 2, 3, 3)),
        "ConstantPad1d": _mod(lambda: nn.ConstantPad1d(1, 0.5), _f(1, 2, 3)),
        "ReflectionPad2d": _mod(lambda: nn.ReflectionPad2d(1), _f(1, 2, 3, 3)),
        "ReplicationPad2d": _mod(lambda: nn.ReplicationPad2d(1), _f(1, 2, 3, 3)),
        "CosineSimilarity": _mod(lambda: nn.CosineSimilarity(), _f(3, 4), _f(3, 4)),
        "PairwiseDistance": _mod(lambda: nn.PairwiseDistance(), _f(3, 4), _f(3, 4)),
        "CrossEntropyLoss": _mod(lambda: nn.CrossEntropyLoss(), _f(4, 5), lambda: _long(5, 4)),
        "NLLLoss": _mod(
            lambda: nn.NLLLoss(),
            lambda: torch.randn(4, 5).log_softmax(-1).requires_grad_(),
            lambda: _long(5, 4),
        ),
        "MSELoss": _mod(lambda: nn.MSELoss(), _f(4, 5), lambda: torch.randn(4, 5)),
        "L1Loss": _mod(lambda: nn.L1Loss(), _f(4, 5), lambda: torch.randn(4, 5)),
        "SmoothL1Loss": _mod(lambda: nn.SmoothL1Loss(), _f(4, 5), lambda: torch.randn(4, 5)),
        "HuberLoss": _mod(lambda: nn.HuberLoss(), _f(4, 5), lambda: torch.randn(4, 5)),
        "BCELoss": _mod(lambda: nn.BCELoss(), _prob(4, 5), lambda: torch.rand(4, 5)),
        "BCEWithLogitsLoss": _mod(
            lambda: nn.BCEWithLogitsLoss(), _f(4, 5), lambda: torch.rand(4, 5)
        ),
        "KLDivLoss": _mod(
            lambda: nn.KLDivLoss(reduction="batchmean"),
            lambda: torch.randn(4, 5).log_softmax(-1).requires_grad_(),
            lambda: torch.rand(4, 5).softmax(-1),
        ),
        "CosineEmbeddingLoss": _mod(
            lambda: nn.CosineEmbeddingLoss(),
            _f(3, 4),
            _f(3, 4),
            lambda: torch.tensor([1.0, -1.0, 1.0]),
        ),
        "MarginRankingLoss": _mod(
            lambda: nn.MarginRankingLoss(),
            _f(4),
            _f(4),
            lambda: torch.tensor([1.0, -1.0, 1.0, 1.0]),
        ),
        "TripletMarginLoss": _mod(lambda: nn.TripletMarginLoss(), _f(3, 4), _f(3, 4), _f(3, 4)),
        "CTCLoss": _mod(
            lambda: nn.CTCLoss(),
            lambda: torch.randn(6, 2, 5).log_softmax(2).requires_grad_(),
            lambda: _long(4, 2, 3) + 1,
            lambda: torch.full((2,), 6, dtype=torch.long),
            lambda: torch.full((2,), 3, dtype=torch.long),
        ),
    }
    activations = {
        "ReLU": nn.ReLU,
        "ReLU6": nn.ReLU6,
        "GELU": nn.GELU,
        "SiLU": nn.SiLU,
        "Tanh": nn.Tanh,
        "Sigmoid": nn.Sigmoid,
        "LeakyReLU": nn.LeakyReLU,
        "ELU": nn.ELU,
        "Hardtanh": nn.Hardtanh,
        "Mish": nn.Mish,
        "Softplus": nn.Softplus,
        "PReLU": nn.PReLU,
        "Hardswish": nn.Hardswish,
        "Hardsigmoid": nn.Hardsigmoid,
        "Softsign": nn.Softsign,
        "LogSigmoid": nn.LogSigmoid,
        "Tanhshrink": nn.Tanhshrink,
        "CELU": nn.CELU,
        "SELU": nn.SELU,
        "GLU": nn.GLU,
    }
    for name, cls in activations.items():
        m[name] = _mod(cls, _f(4, 6))
    m["Softmax"] = _mod(lambda: nn.Softmax(dim=-1), _f(4, 6))
    m["LogSoftmax"] = _mod(lambda: nn.LogSoftmax(dim=-1), _f(4, 6))
    return {f"torch.nn.{k}": v for k, v in m.items()}


@dataclass(frozen=True)
class DevicePath:
    """What an API reaches on a PrivateUse1 device that the stand-in device (`meta`) does not
    show, where torch's own code tests for such a device: the ops it runs instead of `replaces`
    (forward, and backward for modules)."""

    forward: tuple[str, ...]
    backward: tuple[str, ...] = ()
    replaces: tuple[str, ...] = ()


# Both seen on neuron-migrate's simulated device. LSTM and GRU call the fused cells (which have
# no CPU kernel) instead of the gate arithmetic when the input is on a PrivateUse1 device.
_LSTM_CELL = DevicePath(
    ("aten::_thnn_fused_lstm_cell",), ("aten::_thnn_fused_lstm_cell_backward_impl",)
)
_GRU_CELL = DevicePath(("aten::_thnn_fused_gru_cell",), ("aten::_thnn_fused_gru_cell_backward",))
# `aten::dropout` (training, 0 < p < 1, not in place) is one aten::native_dropout there, not a
# Bernoulli mask (`is_fused_kernel_acceptable` in ATen's Dropout.cpp); feature and alpha dropout
# keep the mask.
_DROPOUT = DevicePath(
    ("aten::native_dropout",), ("aten::native_dropout_backward",), ("aten::bernoulli_.float",)
)


def device_paths() -> dict[str, DevicePath]:
    return {
        "torch.nn.LSTM": _LSTM_CELL,
        "torch.nn.LSTMCell": _LSTM_CELL,
        "torch.nn.GRU": _GRU_CELL,
        "torch.nn.GRUCell": _GRU_CELL,
        **dict.fromkeys(
            (
                "torch.nn.functional.dropout",
                "torch.nn.functional.multi_head_attention_forward",
                "torch.nn.functional.scaled_dot_product_attention",
                "torch.nn.Dropout",
                "torch.nn.Transformer",
                "torch.nn.TransformerDecoderLayer",
                "torch.nn.TransformerEncoder",
                "torch.nn.TransformerEncoderLayer",
            ),
            _DROPOUT,
        ),
    }


OptimizerFactory = Callable[[Callable[[Any], Any]], torch.optim.Optimizer]


def optimizer_factories() -> dict[str, OptimizerFactory]:
    """Optimizers with foreach=True (the device path the simulated runtime takes).

    Each factory takes ``move``, which puts a tensor on the device being traced.
    """

    def make(cls: Any, **kw: Any) -> OptimizerFactory:
        return lambda move: cls(_params_with_grads(move), **kw)

    o = torch.optim
    return {
        "torch.optim.SGD": make(o.SGD, lr=0.1, momentum=0.9, foreach=True),
        "torch.optim.Adam": make(o.Adam, foreach=True),
        "torch.optim.AdamW": make(o.AdamW, foreach=True),
        "torch.optim.RMSprop": make(o.RMSprop, foreach=True),
        "torch.optim.Adagrad": make(o.Adagrad, foreach=True),
        "torch.optim.Adamax": make(o.Adamax, foreach=True),
        "torch.optim.NAdam": make(o.NAdam, foreach=True),
        "torch.optim.RAdam": make(o.RAdam, foreach=True),
        "torch.optim.Adadelta": make(o.Adadelta, foreach=True),
    }


def distributed_samples() -> list[Sample]:
    """Collectives on a one-rank gloo group (the process group must already be initialised)."""
    import torch.distributed as dist

    x = lambda: torch.randn(4)  # noqa: E731
    return [
        _fn("torch.distributed.all_reduce", dist.all_reduce, x),
        _fn("torch.distributed.broadcast", lambda t: dist.broadcast(t, 0), x),
        _fn("torch.distributed.all_gather", lambda t: dist.all_gather([torch.empty(4)], t), x),
        _fn(
            "torch.distributed.all_gather_into_tensor",
            lambda t: dist.all_gather_into_tensor(torch.empty(4), t),
            x,
        ),
        _fn(
            "torch.distributed.reduce_scatter_tensor",
            lambda t: dist.reduce_scatter_tensor(torch.empty(4), t),
            x,
        ),
        _fn("torch.distributed.reduce", lambda t: dist.reduce(t, 0), x),
        _fn("torch.distributed.gather", lambda t: dist.gather(t, [torch.empty(4)], 0), x),
        _fn("torch.distributed.scatter", lambda t: dist.scatter(t, [torch.randn(4)], 0), x),
        _fn(
            "torch.distributed.all_to_all_single",
            lambda t: dist.all_to_all_single(torch.empty(4), t),
            x,
        ),
        _fn("torch.distributed.barrier", lambda _: dist.barrier()),
    ]


def bookkeeping_samples() -> list[Sample]:
    """Ops that no public API reaches as itself on a device, called directly on the stand-in.

    Recorded for ``composite_calls`` only (what torch's generic kernel calls), never as an API:
    ``torch.tensor([...], device=...)`` lifts its literal through ``aten::lift_fresh``, and traced
    or functionalized code through ``aten::lift_fresh_copy``.
    """
    return [
        _fn("aten::lift_fresh", lambda x: torch.ops.aten.lift_fresh(x), lambda: _x(3)),
        _fn("aten::lift_fresh_copy", lambda x: torch.ops.aten.lift_fresh_copy(x), lambda: _x(3)),
    ]
