"""`NeuronTensor`: a tensor that reports a `neuron` device and keeps its data in a CPU tensor.

Every aten op on it reaches `_torch_dispatch` (its `__torch_dispatch__`), which asks the matrix
about the op, records it, unwraps the CPU payloads, runs the CPU kernel and wraps the results.
The same function serves the PrivateUse1 kernels through `dispatch` (factories and the few ops
torch runs below the Python key), so one code path decides every op. This is the hot path of
the runtime: it avoids pytree, caches all per-op facts on `_Op`, and touches nothing it does
not need.
"""

from __future__ import annotations

import sys
from typing import Any

import torch
from torch._ops import OpOverload

from neuron_sim.errors import NeuronSimError
from neuron_sim.memory import LEDGER
from neuron_sim.policy import UNSUPPORTED, OpPolicy
from neuron_sim.recorder import LOCATION_SAMPLES, OpRecord
from neuron_sim.source import count_call

_CPU = torch.device("cpu")
_STRIDED = torch.strided
_FAKE_MODE_KEY = torch._C._TorchDispatchModeKey.FAKE
_get_dispatch_mode = torch._C._get_dispatch_mode
_get_frame = sys._getframe
_make_wrapper = torch.Tensor._make_wrapper_subclass
_Tensor = torch.Tensor

# Filled in by `bind()` once the backend is renamed and the matrix is loaded.
_NEURON: torch.device = _CPU
_policy: OpPolicy | None = None
_DOWNCAST: dict[
    torch.dtype, torch.dtype
] = {}  # logical dtype -> storage dtype (float64 -> float32)
_UPCAST: dict[torch.dtype, torch.dtype] = {}  # storage dtype -> logical dtype
_NARROW_INT64 = False  # int64 runs as int32: its values are kept in int32 range
_INT64 = torch.int64
_ALLOWED_MEMORY_FORMATS = (None, torch.contiguous_format, torch.preserve_format)
_MEMORY_FORMAT_MESSAGE = "Neuron tensors only support contiguous or preserve memory format"

# Ops that take a non-scalar CPU tensor beside a neuron tensor on a real device too: the
# transfers, indexing with CPU index tensors, and packed sequences, whose lengths and batch
# sizes torch keeps on the CPU whatever the data's device.
_CPU_TENSOR_OK = {
    "aten::_pack_padded_sequence",
    "aten::_pack_padded_sequence_backward",
    "aten::_pad_packed_sequence",
    "aten::_to_copy",
    "aten::copy_",
    "aten::_copy_from",
    "aten::_copy_from_and_resize",
    "aten::index.Tensor",
    "aten::index_put_",
    "aten::index_put",
    "aten::_index_put_impl_",
    "aten::lift_fresh",
    "aten::lift_fresh_copy",
    "aten::set_.source_Tensor",
}
# Results torch makes on the CPU whatever the device of the data: a packed sequence's batch
# sizes, a padded one's lengths (by position in the op's results).
_HOST_RESULTS = {
    "aten::_pack_padded_sequence": frozenset({1}),
    "aten::_pad_packed_sequence": frozenset({1}),
}


# Set while torch describes tensors to fake them (`patches._fakes_see_the_wrapper_storage`).
describing_for_fakes = False

_TENSOR_DATA = torch._C.TensorBase.__dict__["data"]  # the C getter and setter of `.data`


class NeuronTensor(torch.Tensor):
    """A tensor on the simulated `neuron` device; its data lives in `_elem`, a CPU tensor."""

    _elem: torch.Tensor
    _downcast = False  # True when the logical dtype (float64) is wider than `_elem`'s
    __torch_function__ = torch._C._disabled_torch_function_impl  # type: ignore[assignment]

    # __torch_dispatch__ is `_torch_dispatch`, set below the class (one Python frame per op fewer
    # than a method that calls it).

    # "Traceable" subclass: torch.compile and swap_tensors (model.to keeps Parameter identity)
    # look through it to the CPU payload.
    def __tensor_flatten__(self) -> tuple[list[str], torch.dtype]:
        return ["_elem"], self.dtype

    @staticmethod
    def __tensor_unflatten__(inner_tensors, logical_dtype, outer_size, outer_stride):
        return wrap(inner_tensors["_elem"], logical_dtype is not inner_tensors["_elem"].dtype)

    @property
    def data(self) -> torch.Tensor:
        return _TENSOR_DATA.__get__(self, type(self))

    @data.setter
    def data(self, new: torch.Tensor) -> None:
        # torch points this tensor's metadata at `new`'s storage; its payload must follow, as
        # a device tensor's data would (`p.data = ...`, `vector_to_parameters`).
        _TENSOR_DATA.__set__(self, new)
        if type(new) is NeuronTensor:
            self._elem = new._elem
            self._downcast = new._downcast

    def __repr__(self, *, tensor_contents: Any = None) -> str:  # type: ignore[override]
        # Format a host copy: formatting runs ops (isfinite, masked_select, double) that would
        # otherwise be recorded, warned about and counted as the user's.
        if tensor_contents is None:
            host = self._elem.detach()
            if self._downcast:
                host = host.to(self.dtype)
            tensor_contents = torch._tensor_str._tensor_str(host, len("tensor("))
        text = torch._tensor_str._str(self, tensor_contents=tensor_contents)
        text = "tensor(" + text.removeprefix(f"{type(self).__name__}(")  # as a plain tensor prints
        return f"Parameter containing:\n{text}" if getattr(self, "_is_param", False) else text

    def untyped_storage(self) -> torch.UntypedStorage:
        """The device memory is the payload's: FSDP frees and reallocates a parameter's memory
        by resizing it, and tells shared memory by its `data_ptr()` (the wrapper's own storage
        has no data). Tracers keep the wrapper's own: they fake the payload separately, and a
        shared storage would make the two alias."""
        elem = self._elem
        if type(elem) is _Tensor and not describing_for_fakes:
            return elem.untyped_storage()
        return _Tensor.untyped_storage(self)

    def __format__(self, format_spec: str) -> str:
        if self.dim() == 0:
            return self.item().__format__(format_spec)
        return object.__format__(self, format_spec)

    def tolist(self) -> Any:
        return self.cpu().tolist()

    def numpy(self, *, force: bool = False) -> Any:
        raise TypeError(
            f"can't convert {self.device} device type tensor to numpy. "
            "Use Tensor.cpu() to copy the tensor to host memory first."
        )

    def __reduce_ex__(self, protocol: Any) -> Any:
        from neuron_sim.serialization import rebuild_neuron_tensor

        cpu = self.detach().cpu()
        return rebuild_neuron_tensor, (
            cpu,
            self.requires_grad,
            bool(getattr(self, "_is_param", False)),
        )


# Ops whose kernel is Python code over the tensors themselves (a CompositeExplicitAutograd
# custom op), which a device runs on its tensors before any backend kernel: they run on the
# wrappers, unrecorded, as the native engine (and a real backend) never sees them. Functional
# collectives wrap their results this way (`AsyncCollectiveTensor`, DTensor's TP).
_RUN_ON_WRAPPERS = {"_c10d_functional::_wrap_tensor_autograd"}
_PYTHON_KEY = torch._C.DispatchKeySet(torch._C.DispatchKey.Python)

# Ops with nothing to do on the simulated device: it has one stream per core, and every op has
# finished when it returns (torch has no CPU kernel for them).
_NO_OP = {"aten::record_stream"}


def _no_op(*args: Any, **kwargs: Any) -> Any:
    return None


class _Op:
    """What `dispatch` needs to know about one OpOverload, computed once."""

    __slots__ = (
        "by_dtype",
        "call",
        "cpu_tensor_ok",
        "host_results",
        "on_wrappers",
        "out_alias",
        "record",
        "refused",
        "reshapes",
        "views",
        "wraps_written",
    )

    def __init__(self, func: OpOverload, record: OpRecord) -> None:
        name = record.name
        self.on_wrappers = name in _RUN_ON_WRAPPERS
        # The C++ callable behind `OpOverload.__call__`, without its Python frame.
        self.call = _no_op if name in _NO_OP else func._op
        self.record = record
        self.refused = record.status == UNSUPPORTED or not record.runnable
        # The records of the dtypes an imported table gives a status of their own, by dtype.
        self.by_dtype = (
            {getattr(torch, dtype): split for dtype, split in record.by_dtype.items()}
            if record.by_dtype
            else None
        )
        self.cpu_tensor_ok = name in _CPU_TENSOR_OK or name.startswith("c10d::")
        self.host_results = _HOST_RESULTS.get(name)
        self.out_alias = _written_outputs(func)
        self.reshapes = self.out_alias is not None and _may_reshape_written(func)
        # Not a c10d op's: gloo may still be writing its tensors when it returns.
        self.wraps_written = self.out_alias is not None and not name.startswith("c10d::")
        # Views return tensors over their input's storage, which the ledger already counts.
        returns = func._schema.returns
        self.views = bool(returns) and all(ret.alias_info is not None for ret in returns)


def _written_outputs(func: OpOverload) -> tuple[tuple[int, str], ...] | None:
    """For in-place and `out=` ops: the (position, name) of the argument each output aliases."""
    schema = func._schema
    if not schema.returns:
        return None
    arguments = list(schema.arguments)
    aliases = []
    for ret in schema.returns:
        info = ret.alias_info
        if info is None or not info.is_write:
            return None
        for position, arg in enumerate(arguments):
            if arg.alias_info is not None and arg.alias_info.before_set == info.before_set:
                aliases.append((-1 if arg.kwarg_only else position, arg.name))
                break
        else:
            return None
    return tuple(aliases)


def _may_reshape_written(func: OpOverload) -> bool:
    """Ops that can give the tensors they write new sizes or storage: in-place view ops
    (`t_`, `unsqueeze_`, `resize_`, `set_`), `out=` ops (they resize a mis-shaped `out`)."""
    if torch.Tag.inplace_view in func.tags or "resize" in func._schema.name:
        return True
    return any(
        arg.kwarg_only and arg.alias_info is not None and arg.alias_info.is_write
        for arg in func._schema.arguments
    )


_OPS: dict[Any, _Op] = {}  # keyed by `OpOverload._op`: hashing an OpOverload runs Python code


def _describe(func: OpOverload) -> _Op:
    assert _policy is not None, "neuron_sim is not installed"
    name = func.name()
    if name in _RUN_ON_WRAPPERS:  # never recorded: a record of its own, out of the trace
        record = OpRecord(name, "", None, None)
    else:
        record = _policy.record_for(name)
    op = _OPS[func._op] = _Op(func, record)
    return op


def _run_on_wrappers(func: OpOverload, args: tuple[Any, ...], kwargs: Any) -> Any:
    with torch._C._ExcludeDispatchKeyGuard(_PYTHON_KEY):
        return func(*args, **(kwargs or {}))


def wrap(elem: torch.Tensor, downcast: bool = False, counted: bool = False) -> NeuronTensor:
    """A fresh neuron wrapper around the CPU tensor `elem` (`counted`: its storage is known to
    the memory ledger already, as a view's is)."""
    dtype = elem.dtype
    if downcast:
        logical = _UPCAST.get(dtype)
        downcast = logical is not None
        if logical is not None:
            dtype = logical
    elif dtype in _DOWNCAST and elem.dim() and not counted and type(elem) is _Tensor:
        # A non-scalar float64 computed in 64 bits (from 0-dim or host tensors: `torch.stack`
        # of scalars) is stored as what the device computes it as.
        elem = elem.to(_DOWNCAST[dtype])
        downcast = True
    offset = elem.storage_offset()
    if offset or elem.layout is not _STRIDED:
        wrapper = _make_wrapper(
            NeuronTensor,
            elem.size(),
            strides=elem.stride(),
            storage_offset=offset,
            dtype=dtype,
            device=_NEURON,
            layout=elem.layout,
        )
    else:  # most payloads: two keyword arguments fewer for torch to parse
        wrapper = _make_wrapper(
            NeuronTensor, elem.size(), strides=elem.stride(), dtype=dtype, device=_NEURON
        )
    wrapper._elem = elem
    if downcast:
        wrapper._downcast = True
    if not counted and type(elem) is _Tensor:  # not the FakeTensors torch.compile traces with
        LEDGER.track(elem)
        if dtype is _INT64 and _NARROW_INT64:
            _wrap_int32(elem)
    return wrapper


def _wrap_int32(elem: torch.Tensor, wide_inputs: bool = False) -> None:
    """int64 runs as int32 (the matrix's rule): wrap every int64 value the device writes as an
    int32 would wrap it. Arithmetic modulo 2**32 on values already in int32 range gives what
    int32 kernels give, so computing in int64 and wrapping is computing in int32, while index
    tensors keep the int64 dtype the CPU kernels ask for. The evidence casts non-scalar tensors
    only: a 0-dim value keeps its 64 bits, unless it was computed from a non-scalar int64
    tensor (`wide_inputs`: its op ran in 32 bits)."""
    if elem.numel() and (wide_inputs or elem.dim()):
        elem.copy_(elem.to(torch.int32))


def _wide_int64(values: Any) -> bool:
    """Whether a non-scalar int64 neuron tensor is among `values` (or their lists)."""
    for value in values:
        kind = type(value)
        if kind is NeuronTensor:
            if value.dtype is _INT64 and value.dim():
                return True
        elif (kind is list or kind is tuple) and _wide_int64(value):
            return True
    return False


def _wrap_scalar_results(result: Any, kind: type, args: tuple[Any, ...]) -> None:
    """A 0-dim int64 result of an op with a non-scalar int64 input was computed in 32 bits."""
    if kind is _Tensor:  # the usual case, without a list
        if result.dtype is _INT64 and not result.dim() and _wide_int64(args):
            _wrap_int32(result, wide_inputs=True)
        return
    if kind is not tuple and kind is not list:
        return
    scalars = [r for r in result if type(r) is _Tensor and r.dtype is _INT64 and not r.dim()]
    if scalars and _wide_int64(args):
        for r in scalars:
            _wrap_int32(r, wide_inputs=True)


def _only_scalars(args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    """Whether an op makes and reads 0-dim tensors only: every tensor it takes is 0-dim (and it
    takes one), or it is a factory of shape `()`; a float64 it is asked for stays float64."""
    if args and type(args[0]) in (list, tuple) and not args[0]:
        return True
    tensors = [v for v in (*args, *kwargs.values()) if isinstance(v, _Tensor)]
    for v in (*args, *kwargs.values()):
        if type(v) in (list, tuple):
            tensors.extend(item for item in v if isinstance(item, _Tensor))
    return bool(tensors) and all(t.dim() == 0 for t in tensors)


def _mixing_error() -> RuntimeError:
    return RuntimeError(
        "Expected all tensors to be on the same device, but found at least two devices, "
        f"{_NEURON} and cpu!"
    )


def _unwrap_list(seq: Any, check_cpu: bool) -> tuple[list[Any], bool]:
    out = []
    downcast = False
    for item in seq:
        kind = type(item)
        if kind is NeuronTensor:
            out.append(item._elem)
            if item._downcast:
                downcast = True
        elif kind is list:  # c10d collectives take lists of lists
            inner_list, inner = _unwrap_list(item, check_cpu)
            out.append(inner_list)
            downcast |= inner
        else:
            if check_cpu and isinstance(item, _Tensor) and item.dim():
                raise _mixing_error()
            out.append(item)
    return out, downcast


def _map_kwargs(
    kwargs: dict[str, Any], check_cpu: bool, args: tuple[Any, ...] = ()
) -> tuple[dict[str, Any], bool]:
    mapped = {}
    downcast = False
    for key, value in kwargs.items():
        kind = type(value)
        if kind is NeuronTensor:
            value = value._elem
        elif kind is torch.device:
            if value.type == "neuron":
                value = _checked(value)
        elif kind is torch.dtype:
            narrow = _DOWNCAST.get(value)
            if narrow is not None and not _only_scalars(args, kwargs):
                _note_downcast(value, narrow)
                value = narrow
                downcast = True
        elif kind is list or kind is tuple:
            value, inner = _unwrap_list(value, check_cpu)
            downcast |= inner
        elif kind is torch.memory_format:
            if value not in _ALLOWED_MEMORY_FORMATS:
                raise _refuse_memory_format(value)
        elif check_cpu and isinstance(value, _Tensor) and value.dim():
            raise _mixing_error()
        mapped[key] = value
    return mapped, downcast


def _record_by_dtype(op: _Op, args: tuple[Any, ...], kwargs: Any) -> OpRecord:
    """The record of an op whose status depends on the dtype: the first dtype with a status of
    its own among its neuron tensors' (logical) dtypes and a dtype it is asked for."""
    assert op.by_dtype is not None
    values = [*args, *(kwargs or {}).values()]
    for value in values:
        if type(value) is NeuronTensor or isinstance(value, torch.dtype):
            found = op.by_dtype.get(value if isinstance(value, torch.dtype) else value.dtype)
        elif type(value) in (list, tuple):
            found = next(
                (
                    op.by_dtype[item.dtype]
                    for item in value
                    if type(item) is NeuronTensor and item.dtype in op.by_dtype
                ),
                None,
            )
        else:
            continue
        if found is not None:
            return found
    return op.record


def _note_location(record: OpRecord) -> None:
    """Count this call against the user line that made it and the user lines that called into
    that one (the first LOCATION_SAMPLES calls)."""
    assert _policy is not None
    if record.count == 0:
        _policy.first_use(record)
    count_call(record.locations, record.callers, _get_frame(1))


def _torch_dispatch(
    cls: type, func: OpOverload, types: Any, args: tuple[Any, ...] = (), kwargs: Any = None
) -> Any:
    """Run `func` for neuron tensors: decide, record, unwrap, run on CPU, wrap."""
    op = _OPS.get(func._op) or _describe(func)
    if op.on_wrappers:
        return _run_on_wrappers(func, args, kwargs)
    tracing = _get_dispatch_mode(_FAKE_MODE_KEY) is not None
    if not tracing:  # while torch.compile traces, the graph check decides instead
        record = op.record if op.by_dtype is None else _record_by_dtype(op, args, kwargs)
        if op.refused:
            assert _policy is not None
            raise _policy.refuse(record)
        if record.count < LOCATION_SAMPLES:
            _note_location(record)
        record.count += 1
    if func is _TO_COPY:
        return _to_copy(args[0], kwargs or {})

    check_cpu = not (tracing or op.cpu_tensor_ok)
    downcast = False
    unwrapped = []
    for arg in args:
        kind = type(arg)
        if kind is NeuronTensor:
            unwrapped.append(arg._elem)
            if arg._downcast:
                downcast = True
        elif kind is list or kind is tuple:
            if arg and type(arg[0]) is not int:
                arg, inner = _unwrap_list(arg, check_cpu)
                downcast |= inner
            unwrapped.append(arg)
        elif kind is torch.device:
            unwrapped.append(_checked(arg) if arg.type == "neuron" else arg)
        else:
            if check_cpu and isinstance(arg, _Tensor) and arg.dim():
                raise _mixing_error()
            unwrapped.append(arg)
    if kwargs:
        mapped, inner = _map_kwargs(kwargs, check_cpu, args)
        downcast |= inner
        result = op.call(*unwrapped, **mapped)
    else:
        result = op.call(*unwrapped)

    if op.out_alias is not None:
        written = _written_arguments(op.out_alias, args, kwargs)
        if _NARROW_INT64 and op.wraps_written and not tracing:
            for tensor in written if type(written) is tuple else (written,):
                if type(tensor) is NeuronTensor and tensor.dtype is _INT64:
                    _wrap_int32(tensor._elem, not tensor.dim() and _wide_int64(args))
        # Not while torch.compile traces: a tracer's wrapper pointed at a real storage breaks
        # dynamo's fake copies of it (AOTAutograd's functional graph gets the shapes right).
        if op.reshapes and not tracing:
            _follow_payloads(written)
        return written
    kind = type(result)
    if _NARROW_INT64 and not tracing and not op.views:
        _wrap_scalar_results(result, kind, args)
    if kind is _Tensor:
        return wrap(result, downcast, op.views)
    if kind is tuple or kind is list:
        if tracing:  # torch.compile traces with FakeTensors, a Tensor subclass
            return kind(wrap(r, downcast) if isinstance(r, _Tensor) else r for r in result)
        views = op.views
        if op.host_results is not None:
            host = op.host_results
            return kind(
                wrap(r, downcast, views) if type(r) is _Tensor and i not in host else r
                for i, r in enumerate(result)
            )
        return kind(wrap(r, downcast, views) if type(r) is _Tensor else r for r in result)
    if tracing and isinstance(result, _Tensor):
        return wrap(result, downcast)
    return result


NeuronTensor.__torch_dispatch__ = classmethod(_torch_dispatch)  # type: ignore[assignment]


def dispatch(func: OpOverload, args: tuple[Any, ...], kwargs: dict[str, Any] | None) -> Any:
    """`_torch_dispatch` for the PrivateUse1 kernels (factories, ops below the Python key)."""
    return _torch_dispatch(NeuronTensor, func, (), args, kwargs)


def _written_arguments(
    aliases: tuple[tuple[int, str], ...], args: tuple[Any, ...], kwargs: dict[str, Any] | None
) -> Any:
    """In-place and `out=` ops return the very objects they wrote to."""
    outputs = [
        args[position] if 0 <= position < len(args) else (kwargs or {})[name]
        for position, name in aliases
    ]
    return outputs[0] if len(outputs) == 1 else tuple(outputs)


def _follow_payloads(written: Any) -> None:
    """After an op that may have resized or re-pointed the payloads it wrote (`resize_`, `t_`,
    `set_`, a mis-shaped `out=`): give each wrapper its payload's geometry, count its bytes."""
    for wrapper in written if type(written) is tuple else (written,):
        if type(wrapper) is NeuronTensor:
            _match_geometry(wrapper)
            LEDGER.refresh(wrapper._elem)


_SET_STORAGE = torch.ops.aten.set_.source_Storage_storage_offset


def _match_geometry(wrapper: NeuronTensor) -> None:
    """Give `wrapper` the sizes, strides and offset of its payload, without dispatching an op.

    As torch does for wrapper subclasses (`return_and_correct_aliasing`): `set_` runs on the
    wrapper itself under the Meta key, pointing it at a data-less neuron storage that is large
    enough for the new geometry.
    """
    elem = wrapper._elem
    size, stride, offset = elem.size(), elem.stride(), elem.storage_offset()
    if wrapper.size() == size and wrapper.stride() == stride and wrapper.storage_offset() == offset:
        return
    shell = _make_wrapper(
        NeuronTensor,
        size,
        strides=stride,
        storage_offset=offset,
        dtype=wrapper.dtype,
        device=_NEURON,
    )
    with torch._C._DisableTorchDispatch():
        meta_included = torch._C._meta_in_tls_dispatch_include()
        torch._C._set_meta_in_tls_dispatch_include(True)
        try:
            _SET_STORAGE(wrapper, _Tensor.untyped_storage(shell), offset, size, stride)
        finally:
            torch._C._set_meta_in_tls_dispatch_include(meta_included)


def _to_copy(src: Any, kwargs: dict[str, Any]) -> Any:
    """Moves between devices and dtypes; the only op that may leave the device."""
    device = kwargs.get("device")
    dtype = kwargs.get("dtype")
    memory_format = kwargs.get("memory_format")
    if memory_format not in _ALLOWED_MEMORY_FORMATS:
        raise _refuse_memory_format(memory_format)
    is_neuron = type(src) is NeuronTensor
    elem = src._elem if is_neuron else src
    logical = dtype if dtype is not None else src.dtype
    leaving = device is not None and device.type != "neuron"
    copy_kwargs = dict(kwargs)
    if leaving:  # to the host: the logical dtype comes back (float64 again)
        copy_kwargs["dtype"] = logical
        return torch.ops.aten._to_copy.default(elem, **copy_kwargs)
    copy_kwargs["device"] = _checked(device) if device is not None else _CPU
    narrow = _DOWNCAST.get(logical) if elem.dim() else None  # a 0-dim one keeps its 64 bits
    if narrow is not None:
        copy_kwargs["dtype"] = narrow
        if not is_neuron or not src._downcast:
            _note_downcast(logical, narrow)
    elif dtype is None:
        copy_kwargs.pop("dtype", None)
    return wrap(torch.ops.aten._to_copy.default(elem, **copy_kwargs), narrow is not None)


def downcast_of(dtype: Any) -> torch.dtype | None:
    """The storage dtype of a logical dtype the device computes narrower, else None."""
    return _DOWNCAST.get(dtype) if isinstance(dtype, torch.dtype) else None


def _note_downcast(logical: torch.dtype, narrow: torch.dtype) -> None:
    if _policy is not None and _get_dispatch_mode(_FAKE_MODE_KEY) is None:
        _policy.note_downcast(_dtype_name(logical), _dtype_name(narrow))


def _dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def _refuse_memory_format(memory_format: Any) -> NeuronSimError:
    from neuron_sim.source import user_location

    location = user_location()
    message = _MEMORY_FORMAT_MESSAGE + (f" (got {memory_format} at {location})" if location else "")
    if _policy is not None:
        _policy.trace.refusals.append(
            {"op": f"memory_format={memory_format}", "location": location, "message": message}
        )
    return NeuronSimError(message)


_TO_COPY = torch.ops.aten._to_copy.default


_visible_cores = 1


def set_visible_cores(count: int) -> None:
    global _visible_cores
    _visible_cores = count


def set_current_core(index: int) -> None:
    """New neuron tensors report core `index` (`torch.neuron.set_device`)."""
    global _NEURON
    _NEURON = torch.device("neuron", index)


def _checked(device: torch.device) -> torch.device:
    """The host, for a neuron device whose index this process sees (else the refusal)."""
    index = device.index
    if index is not None and not 0 <= index < _visible_cores:
        raise RuntimeError(
            f"neuron device index {index} is out of range: this process sees {_visible_cores} "
            f"NeuronCore(s) (torch.neuron.device_count() == {_visible_cores}; "
            "NEURON_RT_VISIBLE_CORES decides)"
        )
    return _CPU


def bind(policy: OpPolicy, neuron: torch.device) -> None:
    """Connect the dispatcher to the installed device and matrix (called once by `install`)."""
    global _NEURON, _policy, _NARROW_INT64
    _NEURON = neuron
    _policy = policy
    _NARROW_INT64 = policy.downcast_rule("int64") == "int32"
    for logical in (torch.float64, torch.complex128):
        runs_as = policy.downcast_rule(_dtype_name(logical))
        if runs_as is not None:
            narrow = getattr(torch, runs_as)
            _DOWNCAST[logical] = narrow
            _UPCAST[narrow] = logical
    rule = policy.matrix.memory_format_status("channels_last")
    message = getattr(rule, "message", None)
    if message:
        global _MEMORY_FORMAT_MESSAGE
        _MEMORY_FORMAT_MESSAGE = message
