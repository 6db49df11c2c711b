"""`torch.compile(backend="neuron")`: static shapes, whole-graph lowering, every compile counted.

The backend hands the graph to AOTAutograd. On the native engine neuron tensors are real
device tensors, which AOTAutograd traces as it traces any device's; accepted graphs run on CPU
tensors over the device inputs' memory, one engine call per graph (op by op through the engine
when they hold float64, which it computes as float32). On the Python engine AOTAutograd looks
through `NeuronTensor` (a traceable subclass) and produces plain CPU aten graphs; while dynamo
and AOTAutograd trace, calls that create neuron tensors from nothing
(`torch.arange(n, device=x.device)`) build the CPU payload and wrap it, as the eager factory
fallback does. Each graph, after torch's decompositions, is checked against the matrix: the
compiler lowers whole graphs, so an op without an eager device kernel (`cpu_fallback`) is
lowered too, and only an op whose status the matrix's `compile.graph_refuses` names
(`unsupported`) has no lowering. Such a graph fails
to compile, naming the op and the user's source line; by default that raises, and with
`TORCH_NEURONX_DISABLE_FALLBACK_EXECUTION=0` or the `fallback_execution` compile option (the
matrix's `compile` rules name both) the original graph runs eagerly instead, op by op on the
device. Every int64 value an accepted graph computes wraps as an int32, as eager ops' results
do (`int64_graph`). Graphs run through `graph_runner`.

Importing dynamo costs about a second, so all of this is set up at the first `torch.compile`.
"""

from __future__ import annotations

import functools
import os
import re
import warnings
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from neuron_sim import graph_runner
from neuron_sim.errors import NeuronCompileError
from neuron_sim.int64_graph import wrap_int64_values
from neuron_sim.policy import NATIVE, UNSUPPORTED, OpPolicy
from neuron_sim.recorder import Compile, ProcessTrace, refusal
from neuron_sim.source import _is_user_file, user_stack
from neuron_sim.tensor import NeuronTensor, downcast_of, wrap

BACKEND_NAME = "neuron"
# Benchmarks that measure overhead (not verdicts) may turn the graph check off; the refused
# ops are still listed in the compile record.
refuse_unlowerable_ops = True
_policy: OpPolicy | None = None
_seen_frames: set[int] = set()
_native_engine = False
_CPU = torch.device("cpu")
_FRAME_LINE = re.compile(r'File "([^"]+)", line (\d+)')


def _user_frames(node: torch.fx.Node) -> list[str]:
    """The user frames of the stack trace dynamo stored on a graph node, innermost first."""
    stack = node.meta.get("stack_trace") or ""
    frames = [f"{path}:{line}" for path, line in _FRAME_LINE.findall(stack) if _is_user_file(path)]
    return list(dict.fromkeys(reversed(frames)))


def _compiled_function() -> str | None:
    """`file:line (name)` of the Python function dynamo is compiling right now."""
    try:
        from torch._dynamo.symbolic_convert import InstructionTranslator

        code = InstructionTranslator.current_tx().f_code
    except Exception:  # private API: a missing name only costs the label
        return None
    return f"{code.co_filename}:{code.co_firstlineno} ({code.co_name})"


def _signature(example_inputs: list[Any]) -> str:
    parts = []
    for value in example_inputs:
        if isinstance(value, torch.Tensor):
            shape = "x".join(str(s) for s in value.shape) or "scalar"
            dtype = str(value.dtype).removeprefix("torch.")
            parts.append(f"{dtype}[{shape}]@{value.device.type}")
        else:
            parts.append(type(value).__name__)
    return ", ".join(parts)


def _dynamic_inputs(example_inputs: list[Any]) -> bool:
    for value in example_inputs:
        if isinstance(value, torch.SymInt):
            return True
        if isinstance(value, torch.Tensor) and any(
            isinstance(s, torch.SymInt) for s in value.shape
        ):
            return True
    return False


def _check_graph(which: str, record: Compile, gm: torch.fx.GraphModule) -> int:
    """Raise if `gm` holds an op with no lowering (an eager status the matrix's
    `compile.graph_refuses` names); return its op count.

    Each refused op is recorded in `record.refused` with its user frames: the compiled code's
    (from the node's stack trace), then those that called the compiled code (compiling runs
    inside its first call). An op of torch's own modules has only the latter."""
    assert _policy is not None
    refuses = _policy.matrix.compile.graph_refuses
    count = 0
    refused: dict[str, dict[str, Any]] = {}
    calling = user_stack()
    for node in gm.graph.nodes:
        if node.op != "call_function":
            continue
        target = node.target
        if isinstance(target, torch._ops.OpOverload):
            count += 1
            status = _policy.record_for(target.name()).status
            if status in refuses and target.name() not in refused:
                frames = _user_frames(node)
                frames += [frame for frame in calling if frame not in frames]
                refused[target.name()] = refusal(
                    target.name(), status, "no_lowering", which, frames
                )
        elif isinstance(target, torch._ops.HigherOrderOperator):
            count += 1
    if refused:
        record.refused.extend(refused.values())
        listing = "; ".join(
            f"{op} ({why['status']}" + (f", {why['location']})" if why["location"] else ")")
            for op, why in refused.items()
        )
        message = f"{which} graph contains ops that cannot be lowered to neuron: {listing}"
        record.error = message
        if refuse_unlowerable_ops:
            record.ok = False
            raise NeuronCompileError(message)
    return count


def _is_neuron_device(value: Any) -> bool:
    if isinstance(value, torch.device):
        return value.type == "neuron"
    return isinstance(value, str) and (value == "neuron" or value.startswith("neuron:"))


def _to_host(value: Any) -> Any:
    return _CPU if _is_neuron_device(value) else value


def _born_on_neuron(result: Any, downcast: bool) -> Any:
    """Wrap the plain CPU tensors a host-placed call returned (NeuronTensors stay as they are)."""
    if type(result) is not NeuronTensor and isinstance(result, torch.Tensor):
        return wrap(result, downcast)
    if isinstance(result, (tuple, list)):
        return type(result)(_born_on_neuron(item, downcast) for item in result)
    return result


def _call_on_host(func: Any, args: tuple[Any, ...], kwargs: Any) -> Any:
    """`func(args, kwargs)` with each neuron device argument made the CPU, results wrapped.

    `func` takes the argument tuple and dict as they are (an op's boxed form). A float64 result
    is stored as float32, as eager `dispatch` stores it.
    """
    args = tuple(_to_host(arg) for arg in args)
    kwargs = {key: _to_host(value) for key, value in kwargs.items()}
    narrow = downcast_of(kwargs.get("dtype"))
    if narrow is not None:
        kwargs["dtype"] = narrow
    return _born_on_neuron(func(args, kwargs), narrow is not None)


def _creates_on_neuron(args: tuple[Any, ...], kwargs: Any) -> bool:
    """A neuron device argument and no neuron tensor: a factory, or a move to the device."""
    return _names_neuron(args, kwargs) and not _takes_neuron_tensor(args, kwargs)


def _fake_factories_on_host() -> None:
    """Fake mode makes a neuron factory a `NeuronTensor` around a CPU FakeTensor.

    Dynamo traces with fake mode alone; left to itself, fake mode makes the result of
    `torch.arange(n, device=tokens.device)` a FakeTensor on the neuron device, whose views and
    detaches carry the PrivateUse1 key to the boundary kernels, and which meets the traced
    `NeuronTensor`s (CPU FakeTensors inside) as a tensor on another device.
    """
    from torch._subclasses.fake_tensor import FakeTensorMode

    original = FakeTensorMode.dispatch

    @functools.wraps(original)
    def dispatch(self: Any, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        if kwargs and "device" in kwargs and _creates_on_neuron(args, kwargs):
            return _call_on_host(functools.partial(original, self, func, types), args, kwargs)
        return original(self, func, types, args, kwargs)

    FakeTensorMode.dispatch = dispatch  # type: ignore[method-assign]


class _NeuronFactoriesOnHost(TorchDispatchMode):
    """While AOTAutograd traces: ops that create neuron tensors build CPU payloads, wrapped.

    Every other value AOTAutograd traces on the device is a `NeuronTensor` around a CPU
    tensor, and the graphs it emits run on those payloads. A factory with a neuron device and
    no neuron tensor argument (`torch.arange(n, device=tokens.device)`, or the masks C++
    composites such as the math attention build from `query.options()`) would instead reach
    fake mode and yield a FakeTensor on the neuron device, which the tracer cannot snapshot:
    its meta payload carries the PrivateUse1 key and lands on the boundary kernels. In eager
    runs the same ops reach `dispatch` through the PrivateUse1 fallback, which does the same:
    run on the CPU, wrap. A user mode runs before the tracer's own modes, so the CPU op is
    what gets traced. Ops that take a neuron tensor go on to `dispatch` unchanged.
    """

    def __torch_dispatch__(
        self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: Any = None
    ) -> Any:
        kwargs = kwargs or {}
        if _creates_on_neuron(args, kwargs):
            return _call_on_host(lambda a, k: func(*a, **k), args, kwargs)
        return func(*args, **kwargs)


def _names_neuron(args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    return any(_is_neuron_device(value) for value in args) or any(
        _is_neuron_device(value) for value in kwargs.values()
    )


def _takes_neuron_tensor(args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    return any(type(value) is NeuronTensor for value in args) or any(
        type(value) is NeuronTensor for value in kwargs.values()
    )


def neuron_backend(gm: torch.fx.GraphModule, example_inputs: list[Any], **kwargs: Any) -> Any:
    """The dynamo backend registered as "neuron"."""
    from torch._dynamo.backends.common import aot_autograd
    from torch._functorch.aot_autograd import make_boxed_func

    assert _policy is not None
    compile_id = torch._guards.CompileContext.current_compile_id()
    frame = (
        compile_id.frame_id if compile_id is not None and compile_id.frame_id is not None else -1
    )
    record = Compile(
        frame=frame,
        graph=_compiled_function() or f"frame {frame}",
        signature=_signature(example_inputs),
        recompile=frame in _seen_frames,
    )
    _seen_frames.add(frame)
    _policy.trace.compiles.append(record)

    def forward_compiler(graph: torch.fx.GraphModule, inputs: list[Any]) -> Any:
        record.forward_ops = _check_graph("forward", record, graph)
        return make_boxed_func(_runnable(_as_device_computes(graph)))

    def backward_compiler(graph: torch.fx.GraphModule, inputs: list[Any]) -> Any:
        record.backward_ops = _check_graph("backward", record, graph)
        return make_boxed_func(_runnable(_as_device_computes(graph)))

    compiler = aot_autograd(
        fw_compiler=forward_compiler,
        bw_compiler=backward_compiler,
        decompositions=_decompositions(),
    )
    try:
        if _dynamic_inputs(example_inputs):
            record.ok = False
            record.error = "dynamic shapes"
            record.refused.append(refusal(None, UNSUPPORTED, "dynamic_shapes", None, user_stack()))
            raise NeuronCompileError(
                'torch.compile(backend="neuron") does not support dynamic=True (or shapes '
                "marked dynamic): TorchNeuron compiles static shapes and recompiles once per "
                "new input shape; leave dynamic unset or pass dynamic=False"
            )
        if _native_engine:
            return compiler(gm, example_inputs)
        with _NeuronFactoriesOnHost():
            return compiler(gm, example_inputs)
    except NeuronCompileError as error:
        if not _falls_back_to_eager(kwargs.get("options")):
            raise
        record.fell_back = True
        warnings.warn(
            f"{error}; running the graph eagerly (compile fallback execution is on)",
            NeuronCompileFallbackWarning,
            stacklevel=2,
        )
        return gm.forward


class NeuronCompileFallbackWarning(UserWarning):
    """A graph failed to compile and runs eagerly instead (fallback execution is on)."""


_FALSE = ("0", "false", "no", "off")


def _falls_back_to_eager(options: Any) -> bool:
    """Whether a graph that fails to compile runs eagerly: the compile option, else the
    environment variable, else the matrix's default (TorchNeuron 2.33: it raises)."""
    assert _policy is not None
    rules = _policy.matrix.compile
    if rules.fallback_option and isinstance(options, dict) and rules.fallback_option in options:
        return bool(options[rules.fallback_option])
    value = os.environ.get(rules.fallback_env) if rules.fallback_env else None
    if value is not None and value.strip():
        # The variable *disables* fallback execution: 0 turns fallback back on.
        return value.strip().lower() in _FALSE
    return not rules.failure_raises


def _as_device_computes(graph: torch.fx.GraphModule) -> torch.fx.GraphModule:
    """`graph`, made to compute as eager ops on the device do: int64 as int32 where the matrix
    says so (each int64 value the graph computes wraps, not only its results)."""
    assert _policy is not None
    if _policy.downcast_rule("int64") == "int32":
        wrap_int64_values(graph)
    return graph


def _runnable(graph: torch.fx.GraphModule) -> Any:
    if not _native_engine:
        return graph_runner.runnable(graph)
    from neuron_sim import native

    if _computes_narrower(graph):
        # float64 must compute as float32: each op through the engine's kernel, which does that
        run = graph_runner.runnable(graph)

        def run_op_by_op(*args: Any) -> Any:
            with native.graph_scope():
                return run(*args)

        return run_op_by_op
    engine = native.load()
    constants = _constants_on_host(graph, engine)
    run = graph_runner.runnable(graph, on_host=True)
    on_device = _outputs_on_device(graph)

    def run_on_host(*args: Any, _keep: Any = constants) -> Any:
        # `_keep`: the device constants whose memory the graph's host views read
        inputs = list(args)
        host = engine.graph_inputs(inputs)
        outputs = run(*host)
        return type(outputs)(engine.graph_outputs(outputs, inputs, host, on_device))

    return run_on_host


def _constants_on_host(graph: torch.fx.GraphModule, engine: Any) -> list[torch.Tensor]:
    """Point the graph's device tensor constants (a `torch.tensor([...], device=x.device)`
    literal the trace lifted into the graph) at host views of their memory, as its inputs are;
    return the device tensors, which must outlive the graph."""
    kept = []
    for node in graph.graph.find_nodes(op="get_attr"):
        owner, _, name = node.target.rpartition(".")
        module = graph.get_submodule(owner) if owner else graph
        value = getattr(module, name, None)
        if isinstance(value, torch.Tensor) and value.device.type == "neuron":
            kept.append(value)
            host = engine.host_view(value)
            if name in module._buffers:
                module._buffers[name] = host
            elif name in module._parameters:
                module._parameters[name] = torch.nn.Parameter(host, value.requires_grad)
            else:
                setattr(module, name, host)
    return kept


_NARROWED = (torch.float64, torch.complex128)


def _computes_narrower(graph: torch.fx.GraphModule) -> bool:
    """Whether the graph holds a float64 value (computed as float32 on the device)."""
    for node in graph.graph.nodes:
        value = node.meta.get("val")
        values = value if isinstance(value, (list, tuple)) else (value,)
        if any(isinstance(v, torch.Tensor) and v.dtype in _NARROWED for v in values):
            return True
        if any(v in _NARROWED for v in node.kwargs.values()):
            return True
    return False


def _outputs_on_device(graph: torch.fx.GraphModule) -> list[bool]:
    """For each graph output: whether it is a tensor the traced graph made on the device."""
    (results,) = graph.graph.find_nodes(op="output")[0].args
    flags = []
    for result in results if isinstance(results, (list, tuple)) else (results,):
        value = result.meta.get("val") if isinstance(result, torch.fx.Node) else None
        flags.append(isinstance(value, torch.Tensor) and value.device.type == "neuron")
    return flags


@functools.cache
def _decompositions() -> dict[Any, Any]:
    """PyTorch's core decompositions, less those of ops the matrix lists as native.

    TorchNeuron lowers the whole graph after PyTorch's decompositions, so a composite the device
    lacks reaches the check as the primitive ops it is made of. An op the device has stays
    whole, as eager `dispatch` sees it: the matrix is keyed at the level the backend sees, and
    the graphs are checked at the same level (`_safe_softmax` is native; the `any.dim` its
    decomposition makes is not).
    """
    from torch._decomp import core_aten_decompositions

    assert _policy is not None
    matrix = _policy.matrix
    return {
        op: decomposition
        for op, decomposition in core_aten_decompositions().items()
        if not (
            isinstance(op, torch._ops.OpOverload) and matrix.op_status(op.name()).status == NATIVE
        )
    }


@functools.cache
def _register_backend() -> None:
    import torch._dynamo
    from torch._dynamo.backends.registry import register_backend

    register_backend(neuron_backend, name=BACKEND_NAME)
    if not _native_engine:
        _fake_factories_on_host()
    # Past the recompile limit dynamo silently runs eager; a neuron run must say so.
    torch._dynamo.config.fail_on_recompile_limit_hit = True
    # A second shape would otherwise turn on automatic dynamic shapes, which neuron refuses.
    torch._dynamo.config.automatic_dynamic_shapes = False
    _count_recompile_limit_hits()


def _count_recompile_limit_hits() -> None:
    from torch._dynamo import convert_frame

    original = convert_frame.exceeds_recompile_limit

    @functools.wraps(original)
    def exceeds_recompile_limit(*args: Any, **kwargs: Any) -> Any:
        result = original(*args, **kwargs)
        if result[0] and _policy is not None:
            _policy.trace.recompile_limit_hits += 1
        return result

    convert_frame.exceeds_recompile_limit = exceeds_recompile_limit


def _is_neuron(backend: Any) -> bool:
    return backend == BACKEND_NAME or backend is neuron_backend


def install(policy: OpPolicy, native_engine: bool = False) -> None:
    """Wrap `torch.compile` so a neuron compile is static-shaped and registered on first use.

    `native_engine`: neuron tensors are real PrivateUse1 tensors, which fake mode and
    AOTAutograd trace as they trace any device's (no factory rerouting while tracing)."""
    global _policy, _native_engine
    _policy = policy
    _native_engine = native_engine
    original_compile = torch.compile

    @functools.wraps(original_compile)
    def compile(model: Any = None, **options: Any) -> Any:
        backend = options.get("backend")
        if backend is None:
            _register_backend()
            from torch._dynamo.backends.registry import get_default_backend

            backend = get_default_backend()
            if backend == "inductor":
                # TorchNeuron picks its backend when the code runs on a neuron device.
                backend = BACKEND_NAME
            options["backend"] = backend
        if _is_neuron(backend):
            _register_backend()
            _mode_as_released(options)
            # dynamic=True is rejected when the graph compiles (its shapes are symbolic then);
            # unset, it means static shapes, each new one a recompile.
            if options.get("dynamic") is None:
                options["dynamic"] = False
            if model is None:  # the decorator form: @torch.compile(backend="neuron")
                decorator = original_compile(**options)
                return lambda fn: _autocopying(decorator(fn), fn)
            return _autocopying(original_compile(model, **options), model)
        return (
            original_compile(model, **options) if model is not None else original_compile(**options)
        )

    torch.compile = compile
    import sys

    if "torch._dynamo" in sys.modules:
        _register_backend()


# The released backend copies CPU inputs of a compiled graph to the device unless this is 1: the
# dev source's name; the released env-var page lists it cut (TORCH_NEURONX_DYNAMO_DISABLE_CPU_A…).
AUTOCOPY_OFF_ENV = "TORCH_NEURONX_DYNAMO_DISABLE_CPU_AUTOCOPY"


def _autocopying(compiled: Any, original: Any) -> Any:
    """`compiled`, with the CPU tensors it is called with copied to the neuron device first,
    as the released backend does, where the call also has neuron inputs (its module's
    parameters, or another argument): then dynamo would otherwise trace a device mismatch. A
    call with no neuron input at all is left as it is (a CPU model compiled for neuron)."""
    if os.environ.get(AUTOCOPY_OFF_ENV) == "1":
        return compiled
    module = original if isinstance(original, torch.nn.Module) else None

    def on_device(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, Any] | None:
        values = [*args, *kwargs.values()]
        if not any(_is_cpu(v) for v in values):
            return None
        neuron = any(_is_neuron_tensor(v) for v in values) or (
            module is not None
            and any(_is_neuron_tensor(t) for t in (*module.parameters(), *module.buffers()))
        )
        if not neuron:
            return None
        moved = tuple(_to_neuron(v) for v in args), {k: _to_neuron(v) for k, v in kwargs.items()}
        return moved

    if isinstance(compiled, torch.nn.Module):

        def pre_hook(_: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
            return on_device(args, kwargs)

        compiled.register_forward_pre_hook(pre_hook, with_kwargs=True)
        return compiled

    @functools.wraps(compiled)
    def call(*args: Any, **kwargs: Any) -> Any:
        moved = on_device(args, kwargs)
        if moved is not None:
            args, kwargs = moved
        return compiled(*args, **kwargs)

    return call


def _is_cpu(value: Any) -> bool:
    return isinstance(value, torch.Tensor) and value.device.type == "cpu"


def _is_neuron_tensor(value: Any) -> bool:
    return isinstance(value, torch.Tensor) and value.device.type == "neuron"


def _to_neuron(value: Any) -> Any:
    return value.to("neuron") if _is_cpu(value) else value


def _mode_as_released(options: dict[str, Any]) -> None:
    """A `mode=` without effect on the neuron backend: a warning, and the default mode (or a
    refusal, where the matrix says so)."""
    assert _policy is not None
    mode = options.get("mode")
    rules = _policy.matrix.compile
    if mode is None or mode == "default" or mode in rules.modes_with_effect:
        return
    if rules.other_modes == "refused":
        raise NeuronCompileError(
            f'torch.compile(backend="neuron") does not support mode={mode!r}; only '
            f"{', '.join(repr(m) for m in rules.modes_with_effect)} has an effect"
        )
    warnings.warn(
        f'torch.compile(backend="neuron", mode={mode!r}): only mode="default" has an effect '
        "on the neuron backend; running as the default",
        UserWarning,
        stacklevel=3,
    )
    del options["mode"]


def update_trace(trace: ProcessTrace) -> None:
    """Copy dynamo's own counters into the trace just before it is written."""
    trace.graph_breaks = graph_break_count()


def graph_break_count() -> int:
    """How many graph breaks dynamo has taken in this process (0 if dynamo never loaded)."""
    import sys

    if "torch._dynamo.utils" not in sys.modules:
        return 0
    counters = sys.modules["torch._dynamo.utils"].counters
    return int(sum(counters["graph_break"].values()))
