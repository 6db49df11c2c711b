"""Small patches to torch where a pure-Python backend cannot register what C++ backends do."""

from __future__ import annotations

import functools
import importlib
import sys
import weakref
from typing import Any

import torch
import torch.accelerator

from neuron_sim import device_module
from neuron_sim.tensor import NeuronTensor


def apply(native_engine: bool = False) -> None:
    _synchronize_is_a_no_op()
    if not native_engine:  # the native engine gives torch a pinned allocator
        _pinned_memory_is_pageable()
        _fake_tensors_detach_on_meta()
        _storage_resizes_are_counted()
        _fakes_see_the_wrapper_storage()
    else:  # the Python engine's NeuronTensor formats its payload itself
        _printing_formats_the_host_memory()
    _parameters_move_by_swap()
    _neuron_generators_are_host_generators()
    _accelerator_memory_reads_the_ledger()
    # Optimizers pick foreach (multi-tensor) kernels for plain tensors on accelerators; neuron
    # parameters are a subclass, which would otherwise send them down the per-tensor loop.
    importlib.import_module("torch.optim.optimizer")._foreach_supported_types.append(NeuronTensor)
    # With a PrivateUse1 device guard the autograd engine runs backward on a device thread with
    # its own OpenMP team, about twice as slow on small machines. Run it inline instead
    # (thread-local: threads that start their own backward keep the default).
    torch._C._set_multithreading_enabled(False)


def _synchronize_is_a_no_op() -> None:
    # The Python DeviceGuard cannot synchronize streams; ops run eagerly, nothing to wait for.
    original = torch.accelerator.synchronize

    @functools.wraps(original)
    def synchronize(device: Any = None, /) -> None:
        if device is None or torch.device(device).type == "neuron" or isinstance(device, int):
            return
        original(device)

    torch.accelerator.synchronize = synchronize


def _fake_tensors_detach_on_meta() -> None:
    """A FakeTensor of a neuron tensor (DTensor's sharding propagation, FSDP2) is made from a
    meta tensor that carries the device's dispatch keys: `Tensor._make_subclass` detaches it,
    which would reach the Python engine's PrivateUse1 `detach` kernel, and a tensor returned
    from Python is already bound to a Python object, which `_make_subclass` refuses. With the
    Meta key included, as torch's own fake kernels run, the detach is torch's C++ one."""
    from torch._subclasses.fake_tensor import FakeTensor

    original = FakeTensor.__new__

    def __new__(cls: Any, *args: Any, **kwargs: Any) -> Any:
        meta_included = torch._C._meta_in_tls_dispatch_include()
        torch._C._set_meta_in_tls_dispatch_include(True)
        try:
            return original(cls, *args, **kwargs)
        finally:
            torch._C._set_meta_in_tls_dispatch_include(meta_included)

    FakeTensor.__new__ = __new__  # type: ignore[method-assign]


def _storage_resizes_are_counted() -> None:
    """A neuron tensor's storage is its host payload's (`NeuronTensor.untyped_storage`), which
    FSDP resizes to free and reallocate a parameter's memory: the memory counters follow."""
    from neuron_sim.memory import LEDGER

    resize = torch._C.StorageBase.resize_  # type: ignore[attr-defined]

    def resize_(self: torch.UntypedStorage, size: int) -> torch.UntypedStorage:
        resize(self, size)
        LEDGER.resized(self)
        return self

    torch.UntypedStorage.resize_ = resize_  # type: ignore[method-assign,assignment]


def _fakes_see_the_wrapper_storage() -> None:
    """While torch.compile describes a neuron tensor to fake it, the wrapper answers with its own
    storage (`NeuronTensor.untyped_storage`): the payload is faked on its own, and one storage for
    both would make the fake wrapper alias its payload."""
    from torch._subclasses.meta_utils import MetaTensorDescriber

    from neuron_sim import tensor

    original = MetaTensorDescriber.describe_tensor

    @functools.wraps(original)
    def describe_tensor(self: Any, t: torch.Tensor, **kwargs: Any) -> Any:
        if tensor.describing_for_fakes:
            return original(self, t, **kwargs)
        tensor.describing_for_fakes = True
        try:
            return original(self, t, **kwargs)
        finally:
            tensor.describing_for_fakes = False

    MetaTensorDescriber.describe_tensor = describe_tensor  # type: ignore[method-assign]


def _pinned_memory_is_pageable() -> None:
    # torch cannot take a pinned-memory allocator from Python, so `pin_memory()` (and
    # DataLoader(pin_memory=True)) would fail; host tensors stay pageable instead.
    def pin_memory(self: torch.Tensor, device: Any = None) -> torch.Tensor:
        return self

    def is_pinned(self: torch.Tensor, device: Any = None) -> bool:
        return False

    torch.Tensor.pin_memory = pin_memory  # type: ignore[method-assign,assignment]
    torch.Tensor.is_pinned = is_pinned  # type: ignore[method-assign,assignment]


class NeuronGenerator(torch._C.Generator):
    """`torch.Generator(device="neuron")`: torch asks a C++ backend for a device generator, which
    a Python backend cannot give. Neuron tensors compute on the host, so their random numbers
    come from a host generator: this one, which reports the neuron device. Other devices get
    torch's own generator."""

    def __new__(cls, device: Any = None) -> Any:
        if device is not None and torch.device(device).type == "neuron":
            return super().__new__(cls)
        return torch._C.Generator() if device is None else torch._C.Generator(device)

    @property
    def device(self) -> torch.device:  # type: ignore[override]
        return torch.device("neuron", 0)


def _neuron_generators_are_host_generators() -> None:
    torch.Generator = NeuronGenerator  # type: ignore[misc]


def _accelerator_memory_reads_the_ledger() -> None:
    # torch.accelerator's memory functions ask the C++ allocator, which a Python backend lacks.
    for name in (
        "memory_allocated",
        "max_memory_allocated",
        "memory_reserved",
        "max_memory_reserved",
        "memory_stats",
        "reset_peak_memory_stats",
        "reset_accumulated_memory_stats",
        "empty_cache",
    ):
        replacement = getattr(device_module, name)
        setattr(torch.accelerator, name, replacement)
        setattr(torch.accelerator.memory, name, replacement)


def _printing_formats_the_host_memory() -> None:
    """`print(t)` formats the device tensor's memory on the host, as printing on a device
    formats a host copy: torch's formatting runs ops (`abs`, `double`, `masked_select`) that
    would otherwise be recorded as the user's, and its `double()` would report float64 tensors
    made on the device for a float32 tensor."""
    from torch import _tensor_str

    from neuron_sim import native

    original = _tensor_str._str
    engine = native.load()

    @functools.wraps(original)
    def _str(self: torch.Tensor, *, tensor_contents: Any = None) -> str:
        if (
            tensor_contents is None
            and self.device.type == "neuron"
            and (type(self) is torch.Tensor or type(self) is torch.nn.Parameter)
        ):
            host = engine.host_view(self.detach())
            tensor_contents = _tensor_str._tensor_str(host, len("tensor("))
        return original(self, tensor_contents=tensor_contents)

    _tensor_str._str = _str


def _parameters_move_by_swap() -> None:
    """`model.to("neuron")` keeps each Parameter object, as on a real device, where it can.

    Torch keeps a parameter's identity across devices only between backends it knows to share a
    tensor type (CPU, CUDA, ...); for others it makes new Parameters, which optimizers built
    before the move would not hold. Moving by `swap_tensors`, as torch does for tensor
    subclasses, keeps them -- unless an autograd graph still holds the parameter (a CPU forward
    whose result is alive), which `swap_tensors` refuses: the parameter then moves as torch moves
    any parameter to a backend of another tensor type, as a new Parameter.
    """
    import torch.nn.modules.module as module

    traceable = module.is_traceable_wrapper_subclass

    def moves_by_swap(tensor: Any) -> bool:
        wanted = bool(traceable(tensor)) or (
            isinstance(tensor, torch.Tensor) and tensor.device.type == "neuron"
        )
        if not wanted:
            return False
        # `Module._apply` asks about the moved tensor; the parameter it came from is its local.
        param = sys._getframe(1).f_locals.get("param")
        return not isinstance(param, torch.Tensor) or _swappable(param)

    module.is_traceable_wrapper_subclass = moves_by_swap  # type: ignore[assignment]


def _swappable(tensor: torch.Tensor) -> bool:
    """What `torch.utils.swap_tensors` accepts: no weak references, and no reference from C++
    but the tensor's own and its AccumulateGrad node's (an autograd graph that saved it holds
    one more)."""
    return not weakref.getweakrefs(tensor) and tensor._use_count() <= 2  # type: ignore[attr-defined]
