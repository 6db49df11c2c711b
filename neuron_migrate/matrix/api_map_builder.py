"""Maintainer tool: generate the API->aten map, ``compat_matrix/api_map/torch-<minor>.yaml``.

    python -m neuron_migrate.matrix.api_map_builder [--out FILE] [--samples N]

Runs each public API on small sample inputs under a dispatch-mode recorder (`_recorder`) and stores
the op overloads it reaches (``aten::add.Tensor``), at the level a PrivateUse1 backend sees them.
Sources of samples: PyTorch's own OpInfo database (``op_db``; needs ``numpy`` and ``expecttest``
importable, otherwise it is skipped and the header says so) and the hand-written samples in
`_samples` (creation, Tensor conversions, nn modules forward and backward, optimizers with
``foreach=True``, collectives on a one-rank gloo group). Float32 inputs; up to ``--samples``
OpInfo samples per API, their ops united. Bookkeeping ops (`_recorder.DROPPED_OPS`) are left out.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as _dt
import functools
import inspect
import itertools
import os
import signal
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from neuron_migrate import resources

COMMAND = "python -m neuron_migrate.matrix.api_map_builder"
_NAMESPACES = ("nn.functional", "linalg", "fft", "special", "masked", "signal.windows", "sparse")


class _Timeout(Exception):
    pass


@contextlib.contextmanager
def _time_limit(seconds: int) -> Iterator[None]:
    def fire(signum: int, frame: Any) -> None:
        raise _Timeout(f"took over {seconds}s")

    old = signal.signal(signal.SIGALRM, fire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


class Builder:
    def __init__(self, samples_per_op: int) -> None:
        self.samples_per_op = samples_per_op
        self.apis: dict[str, list[str]] = {}
        self.modules: dict[str, dict[str, list[str]]] = {}
        self.methods: dict[str, list[str]] = {}
        self.failed: dict[str, str] = {}
        self.composite_calls: dict[str, list[str]] = {}
        self.opinfo_used = False
        self.verbose = False
        self.current = ""
        self.cpu_traced: set[str] = set()  # traced on plain CPU tensors: the stand-in failed
        # Each traced call shape of an API and the ops that call reached (OpInfo samples, whose
        # arguments are known): kept apart so the scan can choose by a call's arguments.
        self.patterns: dict[str, dict[tuple[Any, ...], list[str]]] = {}

    # recording -------------------------------------------------------------------------------

    def _record(self, fn: Callable[[], Any]) -> tuple[list[str], Any]:
        from neuron_migrate.matrix._recorder import record

        start = time.monotonic()
        try:
            with _time_limit(10), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                return record(fn, self.composite_calls)
        finally:
            if self.verbose and time.monotonic() - start > 1:
                print(f"slow: {self.current} {time.monotonic() - start:.1f}s", file=sys.stderr)

    def _merge(self, table: dict[str, list[str]], key: str, ops: list[str]) -> None:
        current = table.setdefault(key, [])
        current.extend(op for op in ops if op not in current)
        self.failed.pop(key if table is not self.methods else f"Tensor.{key}", None)

    def _try(
        self,
        table: dict[str, list[str]],
        key: str,
        call: Callable[[Any], Any],
        inputs: Any,
        pattern: tuple[Any, ...] | None = None,
    ) -> bool:
        """Trace ``call(inputs)`` on the stand-in device; if that fails, on plain CPU tensors."""
        from neuron_migrate.matrix._recorder import to_stand_in

        label = key if table is not self.methods else f"Tensor.{key}"
        self.current = label
        errors = []
        for on_device in (True, False):
            args = to_stand_in(inputs) if on_device else _clone(inputs)
            try:
                ops, _ = self._record(functools.partial(call, args))
            except Exception as exc:
                errors.append(f"{type(exc).__name__}: {str(exc).splitlines()[0][:160]}")
                continue
            self._merge(table, key, ops)
            if pattern is not None:
                shapes = self.patterns.setdefault(label, {})
                shapes.setdefault(pattern, [])
                shapes[pattern].extend(op for op in ops if op not in shapes[pattern])
            if not on_device:
                self.cpu_traced.add(label)
            return True
        if key not in table:
            self.failed[label] = errors[0]
        return False

    # sources ---------------------------------------------------------------------------------

    def opinfo(self) -> None:
        try:
            from torch.testing._internal.common_methods_invocations import op_db
        except Exception as exc:
            print(f"OpInfo samples skipped: {exc}", file=sys.stderr)
            return
        import torch

        self.opinfo_used = True
        for info in op_db:
            qualnames = _opinfo_qualnames(info.name)
            dtype = torch.float32 if torch.float32 in info.supported_dtypes("cpu") else None
            if dtype is None:
                dtypes = sorted(info.supported_dtypes("cpu"), key=str)
                if not dtypes:
                    continue
                dtype = dtypes[0]
            try:
                with _time_limit(30):
                    samples = list(
                        itertools.islice(
                            info.sample_inputs("cpu", dtype, requires_grad=False),
                            self.samples_per_op,
                        )
                    )
            except Exception as exc:
                for q in qualnames:
                    self.failed.setdefault(q, f"samples: {type(exc).__name__}")
                continue
            method = info.method_variant
            aliases = [a.name for a in getattr(info, "aliases", ())]
            for sample in samples:
                inputs = ((sample.input, *sample.args), sample.kwargs)
                shape = call_pattern(*inputs)
                for q in qualnames:
                    self._try(self.apis, q, _caller(info.op), inputs, shape)
                if method is not None and info.name.split(".")[-1].isidentifier():
                    name = info.name.split(".")[-1]
                    self._try(self.methods, name, _caller(method), inputs, shape)
            # Aliases (torch.absolute for torch.abs) reach the same ops.
            for q in qualnames:
                for aq in (n for a in aliases for n in _opinfo_qualnames(a)):
                    if q in self.apis and aq not in self.apis:
                        self.apis[aq] = list(self.apis[q])

    def curated(self) -> None:
        from neuron_migrate.matrix import _samples
        from neuron_migrate.matrix._recorder import to_stand_in

        for s in _samples.function_samples():
            self._try(self.apis, s.qualname, s.call, s.setup())
        for s in _samples.method_samples():
            self._try(self.methods, s.qualname, s.call, s.setup())
        for name, factory in _samples.module_factories().items():
            self.module(name, factory)
        for name, make in _samples.optimizer_factories().items():
            self._optimizer(name, make)
        self.distributed()
        for s in _samples.bookkeeping_samples():  # composite_calls only, not an API
            with contextlib.suppress(Exception):
                self._record(functools.partial(s.call, to_stand_in(s.setup())))

    def device_paths(self) -> None:
        """Put in what each API reaches on a PrivateUse1 device where torch's code tests for one
        (`_samples.device_paths`): the stand-in device takes the other path."""
        from neuron_migrate.matrix import _samples

        def merged(
            ops: list[str], path_ops: tuple[str, ...], replaces: tuple[str, ...]
        ) -> list[str]:
            kept = [op for op in ops if op not in replaces]
            return [*kept, *(op for op in path_ops if op not in kept)]

        for name, path in _samples.device_paths().items():
            if name in self.apis:
                self.apis[name] = merged(self.apis[name], path.forward, path.replaces)
            entry = self.modules.get(name)
            if entry is not None:
                entry["forward"] = merged(entry["forward"], path.forward, path.replaces)
                entry["backward"] = merged(entry["backward"], path.backward, path.replaces)

    def module(self, name: str, factory: Callable[[], tuple[Any, tuple[Any, ...]]]) -> None:
        """Forward and backward ops of a module; each half falls back to CPU tensors on failure."""
        self.current = name
        found: dict[str, list[str]] = {}
        errors = []
        for on_device in (True, False):
            try:
                fwd, bwd = self._module_ops(factory, on_device, need_forward="forward" not in found)
            except Exception as exc:
                errors.append(f"{type(exc).__name__}: {str(exc).splitlines()[0][:160]}")
                continue
            if fwd is not None and "forward" not in found:
                found["forward"] = fwd
            if bwd is not None:
                found["backward"] = bwd
                if not on_device:
                    self.cpu_traced.add(f"{name} (backward)" if fwd is None else name)
                self.modules[name] = {"forward": found["forward"], "backward": bwd}
                return
        self.failed[name] = errors[0] if errors else "no sample"

    def _module_ops(
        self,
        factory: Callable[[], tuple[Any, tuple[Any, ...]]],
        on_device: bool,
        need_forward: bool,
    ) -> tuple[list[str] | None, list[str] | None]:
        import torch
        from torch.func import functional_call

        from neuron_migrate.matrix._recorder import to_stand_in

        module, inputs = factory()
        module.train()
        move = to_stand_in if on_device else _clone
        params = {
            n: torch.nn.Parameter(move(p.detach()), requires_grad=p.requires_grad)
            for n, p in module.named_parameters()
        }
        buffers = {n: move(b) for n, b in module.named_buffers()}
        args = move(inputs)
        fwd, out = self._record(lambda: functional_call(module, {**params, **buffers}, args))
        outs = [t for t in _tensors(out) if t.requires_grad]
        leaves = [*params.values(), *(t for t in args if _needs_grad(t))]
        grads = [torch.ones_like(t) for t in outs]
        try:
            bwd, _ = self._record(
                lambda: torch.autograd.grad(outs, leaves, grads, allow_unused=True)
            )
        except Exception:
            if need_forward:
                return fwd, None
            raise
        return (fwd if need_forward else None), bwd

    def _optimizer(self, name: str, make: Callable[[Callable[[Any], Any]], Any]) -> None:
        from neuron_migrate.matrix._recorder import to_stand_in

        errors = []
        for on_device in (True, False):
            try:
                opt = make(to_stand_in if on_device else _clone)
                ops, _ = self._record(opt.step)
            except Exception as exc:
                errors.append(f"{type(exc).__name__}: {str(exc).splitlines()[0][:160]}")
                continue
            self.apis[name] = self.apis[f"{name}.step"] = ops
            if not on_device:
                self.cpu_traced.add(name)
            return
        self.failed[name] = errors[0]

    def distributed(self) -> None:
        import torch.distributed as dist

        from neuron_migrate.matrix import _samples

        with tempfile.TemporaryDirectory() as tmp:
            try:
                store = dist.FileStore(os.path.join(tmp, "store"), 1)
                dist.init_process_group("gloo", store=store, rank=0, world_size=1)
            except Exception as exc:
                self.failed["torch.distributed"] = f"init: {type(exc).__name__}: {exc}"
                return
            try:
                for s in _samples.distributed_samples():
                    self._try(self.apis, s.qualname, s.call, s.setup())
            finally:
                dist.destroy_process_group()


def argument_kind(value: Any) -> str:
    """How a call pattern names an argument: `tensor:2` (a tensor and its rank), `int`,
    `float`, `bool`, `none`, `str`, `seq`, `dtype` or `other`."""
    import torch

    if isinstance(value, torch.Tensor):
        return f"tensor:{value.dim()}"
    if isinstance(value, bool):
        return "bool"
    for kind, types in (("int", int), ("float", float), ("str", str), ("seq", (tuple, list))):
        if isinstance(value, types):
            return kind
    if value is None:
        return "none"
    return "dtype" if isinstance(value, torch.dtype) else "other"


def call_pattern(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, ...]:
    """A sample call's shape: its positional argument kinds, then its keywords with theirs."""
    return (
        tuple(argument_kind(a) for a in args),
        tuple(sorted((k, argument_kind(v)) for k, v in kwargs.items())),
    )


def _caller(fn: Any) -> Callable[[Any], Any]:
    return lambda inputs: fn(*inputs[0], **inputs[1])


def _clone(obj: Any) -> Any:
    """Fresh copies: an in-place sample must not change the next sample's input."""
    import torch
    from torch.utils._pytree import tree_map

    return tree_map(lambda v: v.clone() if isinstance(v, torch.Tensor) else v, obj)


def _tensors(out: Any) -> list[Any]:
    import torch

    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, (tuple, list)):
        return [t for item in out for t in _tensors(item)]
    return []


def _needs_grad(t: Any) -> bool:
    import torch

    return isinstance(t, torch.Tensor) and t.requires_grad


def _opinfo_qualnames(name: str) -> list[str]:
    """OpInfo name -> qualified names (``nn.functional.gelu`` -> torch.nn.functional.gelu)."""
    import torch

    if name.startswith("_") or name in ("H", "T", "mH", "mT"):
        return []
    for ns in _NAMESPACES:
        if name.startswith(ns + "."):
            return [f"torch.{name}"]
    if "." in name:
        return []
    return [f"torch.{name}"] if hasattr(torch, name) else []


# --- the public surface considered, for the coverage figure -------------------------------------


def public_surface() -> dict[str, set[str]]:
    import torch
    import torch.nn.functional as F

    def functions(module: Any, prefix: str) -> set[str]:
        names = getattr(module, "__all__", None) or dir(module)
        out = set()
        for n in names:
            if n.startswith("_"):
                continue
            obj = getattr(module, n, None)
            if callable(obj) and not inspect.isclass(obj) and not inspect.ismodule(obj):
                out.add(f"{prefix}.{n}")
        return out

    modules = {
        f"torch.nn.{n}"
        for n in dir(torch.nn)
        if not n.startswith("_")
        and inspect.isclass(getattr(torch.nn, n))
        and issubclass(getattr(torch.nn, n), torch.nn.Module)
        and n
        not in (
            "Module",
            "ModuleList",
            "ModuleDict",
            "Sequential",
            "ParameterList",
            "ParameterDict",
            "Container",
        )
    }
    return {
        "torch": functions(torch, "torch"),
        "torch.nn.functional": functions(F, "torch.nn.functional"),
        "torch.linalg": functions(torch.linalg, "torch.linalg"),
        "torch.fft": functions(torch.fft, "torch.fft"),
        "torch.special": functions(torch.special, "torch.special"),
        "torch.nn modules": modules,
        "Tensor methods": {f"Tensor.{n}" for n in tensor_method_names()},
    }


def tensor_method_names() -> list[str]:
    import torch

    names = []
    for n in dir(torch.Tensor):
        if n.startswith("_") and n not in ("__getitem__", "__setitem__"):
            continue
        obj = getattr(torch.Tensor, n, None)
        if callable(obj) and not inspect.isclass(obj):
            names.append(n)
    return sorted(names)


# --- writing ----------------------------------------------------------------------------------


def render(builder: Builder, torch_version: str, argv: list[str], for_minor: str = "") -> str:
    import yaml

    from neuron_migrate.matrix._recorder import DROPPED_NAMESPACES, DROPPED_OPS

    surface = public_surface()
    mapped = set(builder.apis) | set(builder.modules) | {f"Tensor.{m}" for m in builder.methods}
    considered = set().union(*surface.values()) | mapped
    by_ns = {
        ns: {"mapped": len(names & mapped), "considered": len(names)}
        for ns, names in surface.items()
    }
    minor = for_minor or ".".join(torch_version.split(".")[:2])
    command = " ".join([COMMAND, *argv])
    header = [
        f"# API -> aten map for torch {minor}: the op overloads each public API reaches, as a",
        "# PrivateUse1 backend sees them (below decompositions and autograd).",
    ]
    if not torch_version.startswith(minor + "."):
        header += [
            f"# NOT TRACED WITH TORCH {minor}: generated with torch {torch_version}",
            f"# (the only torch available) and assumed to hold for torch {minor}.",
            f"# Regenerate under torch {minor}.",
        ]
    header += [
        f"# GENERATED by `{command}` on {_dt.date.today().isoformat()} "
        f"with torch {torch_version}. Do not edit by hand.",
        f"# Coverage: {len(mapped)} APIs mapped of {len(considered)} public APIs considered"
        f" ({len(builder.failed)} failed to trace, listed under `failed`).",
        "# Schema: compat_matrix/README.md.",
    ]
    data = {
        "schema_version": 1,
        "torch": torch_version,
        "applies_to": minor,
        "generated": _dt.date.today().isoformat(),
        "command": command,
        "opinfo_samples": builder.opinfo_used,
        "coverage": {"mapped": len(mapped), "considered": len(considered), "by_namespace": by_ns},
        "dropped_ops": sorted(DROPPED_OPS),
        "dropped_namespaces": sorted(DROPPED_NAMESPACES),
        "cpu_traced": sorted(builder.cpu_traced),
    }
    parts = ["\n".join(header), yaml.safe_dump(data, sort_keys=False, width=100).rstrip()]
    parts.append("# Functions (forward ops only).\n" + _table("apis", builder.apis))
    modules = [
        "# nn modules: forward, then backward (gradients of parameters and inputs).",
        "modules:",
    ]
    for name in sorted(builder.modules):
        entry = builder.modules[name]
        modules.append(f"  {name}:")
        modules.append(f"    forward: {_flow(entry['forward'])}")
        modules.append(f"    backward: {_flow(entry['backward'])}")
    parts.append("\n".join(modules))
    parts.append("# Tensor methods by name.\n" + _table("tensor_methods", builder.methods))
    parts.append(
        "# Every public Tensor method name of this torch (traced or not).\n"
        + yaml.safe_dump({"tensor_method_names": tensor_method_names()}, width=100).rstrip()
    )
    parts.append(_patterns(builder.patterns))
    failed = yaml.safe_dump({"failed": dict(sorted(builder.failed.items()))}, width=1000)
    parts.append("# APIs whose samples could not be traced.\n" + failed.rstrip())
    parts.append(
        "# Ops whose only kernel for a new backend is torch's generic one, and the ops that\n"
        "# kernel was seen to call (read by the matrix importer).\n"
        + _table("composite_calls", builder.composite_calls)
    )
    return "\n\n".join(parts) + "\n"


def _patterns(patterns: dict[str, dict[tuple[Any, ...], list[str]]]) -> str:
    """The traced call shapes of each API whose shapes reach different ops (the others add
    nothing to its entry above)."""
    lines = [
        "# Call patterns: the traced call shapes of APIs whose calls reach different ops, each",
        "# with the ops it reached (positional argument kinds, the receiver first for a Tensor",
        "# method, and keywords). The scan chooses among them by a call's arguments.",
        "patterns:",
    ]
    for name in sorted(patterns):
        shapes = patterns[name]
        if len({tuple(sorted(ops)) for ops in shapes.values()}) < 2:
            continue
        lines.append(f"  {_key(name)}:")
        for (args, kwargs), ops in sorted(shapes.items()):
            keywords = ", ".join(f"{k}: {kind}" for k, kind in kwargs)
            lines.append(
                f"  - {{args: [{', '.join(args)}], kwargs: {{{keywords}}}, ops: {_flow(ops)}}}"
            )
    return "\n".join(lines)


def _flow(ops: list[str]) -> str:
    return "[" + ", ".join(ops) + "]"


def _table(key: str, table: dict[str, list[str]]) -> str:
    lines = [f"{key}:"]
    for name in sorted(table):
        lines.append(f"  {_key(name)}: {_flow(table[name])}")
    return "\n".join(lines)


def _key(name: str) -> str:
    return f"'{name}'" if not name[0].isalpha() else name


def main(argv: list[str] | None = None) -> int:
    import torch

    parser = argparse.ArgumentParser(prog=COMMAND, description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--samples", type=int, default=3, help="OpInfo samples per API")
    parser.add_argument("--no-opinfo", action="store_true", help="hand-written samples only")
    parser.add_argument("--verbose", action="store_true", help="report slow samples on stderr")
    parser.add_argument(
        "--also-for",
        action="append",
        default=[],
        metavar="MINOR",
        help="also write torch-MINOR.yaml from this trace, marked as not traced with that torch",
    )
    args = parser.parse_args(argv)
    torch.manual_seed(0)
    torch._C._set_multithreading_enabled(False)  # backward on this thread, as in the runtime
    version = torch.__version__.split("+")[0]
    minor = ".".join(version.split(".")[:2])
    out = args.out or resources.matrix_dir() / "api_map" / f"torch-{minor}.yaml"
    builder = Builder(args.samples)
    builder.verbose = args.verbose
    if not args.no_opinfo:
        builder.opinfo()
    builder.curated()
    builder.device_paths()
    flags = [f"--samples {args.samples}"] + (["--no-opinfo"] if args.no_opinfo else [])
    flags += [f"--also-for {m}" for m in args.also_for]
    out.write_text(render(builder, version, flags), encoding="utf-8")
    print(f"wrote {out}", file=sys.stderr)
    for other in args.also_for:
        path = out.with_name(f"torch-{other}.yaml")
        path.write_text(render(builder, version, flags, for_minor=other), encoding="utf-8")
        print(f"wrote {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
