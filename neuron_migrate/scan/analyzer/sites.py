"""Sites: every place in a module that the scan reports and the codemod may rewrite.

A site is a reference to an imported API (`xm.mark_step`, `F.relu`, `torch.float64`), an import
of torch_xla, a method call that may be a Tensor method (`x.sort()`), or an XLA idiom outside the
torch_xla namespace (the `'xla'` device string, `init_process_group('xla')`, XLA environment
variables, ...). Spans are 1-based lines and 0-based *character* columns, the same as libcst's
`PositionProvider`, so the codemod finds each site's node by its span and the two tools agree on
what they see by construction.
"""

import ast
import re
from collections.abc import Callable, Container
from typing import NamedTuple

from neuron_migrate.scan.analyzer.arguments import Arg, arguments_of
from neuron_migrate.scan.analyzer.compiled import (
    Imported,
    compiled_regions,
    imported_compiles,
    named_regions,
)
from neuron_migrate.scan.analyzer.placement import DEVICE, HOST, UNKNOWN, Placer
from neuron_migrate.scan.analyzer.scopes import (
    LOCAL,
    Binding,
    NameModel,
    Parents,
    Resolution,
    Scope,
)

# Qualified-name roots worth a site. Everything else (numpy, the project's own modules) is not.
API_ROOTS = frozenset(
    {"torch", "torch_xla", "torch_neuronx", "functorch", "neuronx_distributed", "os"}
)
# The libraries whose imports are sites (settled by the rewrite's import pass, or kept).
_IMPORT_ROOTS = ("torch_xla", "torch_neuronx", "neuronx_distributed")
# The libraries whose calls' arguments and statements the transforms read.
_READ_ARGUMENTS = ("torch_xla", "torch_neuronx", "neuronx_distributed")
_XLA_DEVICE = re.compile(r"^xla(:\d+)?$")
_XLA_ENV = re.compile(
    r"^(XLA_|PJRT_|PT_XLA_|NEURON_|TPU_|XRT_)|^(ALLREDUCE_GRADIENTS_BUCKET_SIZE_MB|GPU_NUM_DEVICES)$"
)
_LITERAL_RECEIVERS = (
    ast.Constant,
    ast.List,
    ast.Dict,
    ast.Set,
    ast.Tuple,
    ast.JoinedStr,
    ast.ListComp,
    ast.DictComp,
    ast.SetComp,
)
# Receivers of a method call that `find_chained_methods` leaves alone: name chains (the
# reference search has them) and literals (no tensor).
_NOT_CHAINED_RECEIVERS = (ast.Name, ast.Attribute, *_LITERAL_RECEIVERS)
_TORCH_AUTOCASTS = frozenset(
    {"torch.autocast", "torch.amp.autocast", "torch.amp.autocast_mode.autocast"}
)
_XLA_AUTOCASTS = frozenset({"torch_xla.amp.autocast", "torch_xla.amp.autocast_mode.autocast"})
# TorchScript saved or loaded: beside torch_neuronx, a traced module with a compiled Neuron graph.
_NEURONX_TRACES = frozenset({"torch_neuronx.trace", "torch_neuronx.xla_impl.trace.trace"})
_TRACED_ARTIFACTS = frozenset(
    {
        "torch.jit.save",
        "torch.jit.load",
        "torch.jit._serialization.save",
        "torch.jit._serialization.load",
    }
)
_GET_BACKEND = frozenset(
    {"torch.distributed.get_backend", "torch.distributed.distributed_c10d.get_backend"}
)
_COLLECTIONS = (ast.Tuple, ast.List, ast.Set)
_GROUP_MAKERS = frozenset(
    {
        "torch.distributed.new_group",
        "torch.distributed.init_process_group",
        "torch.distributed.new_subgroups",
        "torch.distributed.new_subgroups_by_enumeration",
    }
)
_NOT_TENSORS = frozenset({"self", "cls", "super"})
_UNRESOLVED = Resolution((), True)  # a key not yet in a cache of meanings
# Libraries and builtins whose calls return no torch tensor: methods on their results are theirs.
_NON_TENSOR_LIBRARIES = frozenset(
    {
        "numpy",
        "pandas",
        "scipy",
        "math",
        "statistics",
        "json",
        "re",
        "os",
        "pathlib",
        "collections",
        "time",
        "datetime",
    }
)
_NON_TENSOR_BUILTINS = frozenset(
    {"list", "dict", "set", "tuple", "str", "bytes", "sorted", "range", "open", "zip"}
)
_ENV_METHODS = {"get", "setdefault", "pop"}  # on a copy of the environment
_UPDATE = {"update"}
_ENV_CALLS = {"os.environ.get", "os.environ.setdefault", "os.environ.pop", "os.getenv", "os.putenv"}
# The rendezvous address a script sets for xmp.spawn's workers: torchrun sets it for its own.
_RENDEZVOUS_ENV = frozenset({"MASTER_ADDR", "MASTER_PORT"})
_SPAWNS = frozenset(
    {
        "torch_xla.distributed.xla_multiprocessing.spawn",
        "torch_xla.launch",
        "torch_xla.torch_xla.launch",
    }
)
_ENV_SETTERS = frozenset({"os.environ.setdefault", "os.putenv"})
# What classification makes of a reference to a torch API, told by its qualified name alone (the
# scan's `references` predicate, `classify.reference_verdict`): findings maybe; nothing; only a
# count, for a call the API map lacks (`unmapped_apis`). The last two get no site in a scan.
REPORTED, UNREPORTED, UNMAPPED = "reported", "unreported", "unmapped"
_PRUNED_ROOTS = ("torch", "functorch")

Span = tuple[int, int, int, int]


class Site(NamedTuple):
    kind: str  # "name" | "call" | "method" | "import" | "idiom"
    line: int
    col: int
    end_line: int
    end_col: int
    qualname: str | None = None
    idiom: str | None = None
    detail: str | None = None  # idiom value, method name, or the import's bound name
    call_span: Span | None = None  # for calls: the whole call; for imports: the statement
    ambiguous: tuple[str, ...] = ()  # all meanings, when the name has several
    guarded: bool = False  # under an availability guard or a try/except ImportError
    used: bool = True  # imports: is the bound name read anywhere
    # For calls: literal positional arguments (repr, or None when not a literal) and keywords.
    args: tuple[str | None, ...] = ()
    kwargs: tuple[tuple[str, str | None], ...] = ()
    discarded: bool = False  # a call whose value is thrown away (an expression statement)
    # For torch function calls and method calls: where the call runs ("host", "device",
    # "unknown"; see `placement`). "" for every other site.
    placement: str = ""
    compiled: int = 0  # inside a region compiled for the neuron backend: the torch.compile line
    # ... compiled by another module of the project: where (`train.py:12`); "" in this module
    compiled_at: str = ""
    # torch_xla calls that are a simple statement's value: the statement is alone on its line
    # (not after `if c:`, no semicolon).
    own_line: bool = False
    # ... or the only statement of a one-line body (`if c: call()`), which a rewrite into
    # statements turns into an indented block.
    own_suite: bool = False
    # A name (not called) in a type annotation (`loader: pl.MpDeviceLoader`): it names a class.
    in_annotation: bool = False
    literal: bool = False  # idioms: the node is one plain string literal
    # Why `rewrite` leaves the site for a person, where its shape says so ("" when nothing does):
    # read by `fixability.fix_blocker`, which the scan and the codemod both ask.
    blocked: str = ""
    # A reference passed straight to a call (`xm.reduce_scatter(xm.REDUCE_SUM, ...)`): that
    # call's span. Its fate follows the call's when the call is torch_xla's.
    argument_of: Span | None = None
    # Environment variable idioms: the key of a statement that sets or deletes the variable
    # (`os.environ[K] = v`, `del os.environ[K]`, `os.environ.setdefault(K, v)` / `.pop(K)`,
    # `os.putenv(K, v)`), which a rule may delete; a key read anywhere else is not.
    env_setting: bool = False
    # ... the value it sets, where written as a constant (`"0"`, `False` -> "False"; None: not
    # known), and whether it deletes the variable: a rule's `values:` read them.
    env_value: str | None = None
    env_unset: bool = False
    # torch_xla calls: every argument, as the transforms read it.
    call_args: tuple[Arg, ...] = ()
    # torch_xla calls: the statement whose whole value the call is ("expression", "assignment"
    # to one name or attribute, "return", "with" without `as`), "" inside an expression or
    # another statement.
    statement: str = ""
    target: str = ""  # an "assignment": the source of its target
    in_fstring: bool = False  # torch_xla calls: inside an f-string's replacement field
    # torch_xla calls whose value is the receiver of a method call (`pl.ParallelLoader(...)
    # .per_device_loader(device)`): the method's name and arguments.
    method: str = ""
    method_args: tuple[Arg, ...] = ()

    @property
    def span(self) -> Span:
        return (self.line, self.col, self.end_line, self.end_col)


# A site with one field changed, made straight from its values (`_replace` costs a dict).
_make_site = Site._make
_PLACEMENT = Site._fields.index("placement")


def _most_relevant(qualnames: tuple[str, ...]) -> str:
    """For an ambiguous name, the meaning worth reporting: a torch_xla one if any."""
    return min(
        qualnames,
        key=lambda q: (not q.startswith("torch_xla"), q.partition(".")[0] not in API_ROOTS, q),
    )


class _Columns:
    """Converts ast's UTF-8 byte offsets to character columns (cheap for ASCII sources)."""

    def __init__(self, source: str) -> None:
        self._lines: list[bytes] | None = (
            None if source.isascii() else [ln.encode() for ln in source.splitlines(True)]
        )

    def col(self, line: int, byte_col: int) -> int:
        if self._lines is None or line - 1 >= len(self._lines):
            return byte_col
        return len(self._lines[line - 1][:byte_col].decode("utf-8", "replace"))

    def span(self, node: ast.AST) -> Span:
        line, end_line = node.lineno, node.end_lineno or node.lineno  # type: ignore[attr-defined]
        return (
            line,
            self.col(line, node.col_offset),  # type: ignore[attr-defined]
            end_line,
            self.col(end_line, node.end_col_offset or 0),  # type: ignore[attr-defined]
        )


def _statement_of(call: ast.Call, parent: ast.AST | None) -> tuple[str, str]:
    """How `call` stands in its statement (`Site.statement`), and an assignment's target."""
    if isinstance(parent, ast.Expr):
        return "expression", ""
    if isinstance(parent, ast.Return) and parent.value is call:
        return "return", ""
    if isinstance(parent, ast.withitem) and parent.optional_vars is None:
        return "with", ""  # `with call():`, its value not bound
    if isinstance(parent, ast.Assign) and parent.value is call and len(parent.targets) == 1:
        target = parent.targets[0]
        if isinstance(target, (ast.Name, ast.Attribute)):
            return "assignment", ast.unparse(target)
    return "", ""


def _literal(node: ast.expr) -> str | None:
    if isinstance(node, ast.Constant):
        return repr(node.value)
    return None


def _string(node: ast.expr | None) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


def _may_be_xla(node: ast.expr) -> bool:
    """Whether a value known only at run time may be 'xla': not when every value it can take is
    a string seen here (`"nccl" if cuda else "gloo"`)."""
    if isinstance(node, ast.IfExp):
        return _may_be_xla(node.body) or _may_be_xla(node.orelse)
    value = _string(node)
    return value is None or value == "xla"


def _device_strings(node: ast.expr | None) -> list[tuple[ast.expr, str]]:
    """The XLA device strings an expression may be: itself, or a branch of a conditional
    (`"xla" if use_tpu else "cpu"`)."""
    if isinstance(node, ast.IfExp):
        return [*_device_strings(node.body), *_device_strings(node.orelse)]
    value = _string(node)
    if node is None or value is None or not _XLA_DEVICE.match(value):
        return []
    return [(node, value)]


_ENV_IDIOMS = frozenset({"xla-env-var", "spawn-rendezvous-env"})
# Every idiom `find_idioms` reports reads a string constant holding one of these (a device
# string, a backend, an environment variable's name, ...), a keyword argument named like an
# XLA environment variable (`dict(os.environ, XLA_USE_BF16="1")`), or a torch_xla or
# torch_neuronx import: a module with none of them is not searched for idioms.
_IDIOM_STRINGS = re.compile(
    r"xla|XLA|NEURON|PJRT_|pjrt://|TPU_|XRT_|ALLREDUCE_GRADIENTS_BUCKET_SIZE_MB|GPU_NUM_DEVICES"
    r"|MASTER_ADDR|MASTER_PORT"
)
_ENV_KEYWORDS = re.compile(r"XLA_|PJRT_|NEURON_|TPU_|XRT_|ALLREDUCE_GRADIENTS|GPU_NUM_DEVICES")


def _environ(expr: ast.expr) -> bool:
    return isinstance(expr, ast.Attribute) and expr.attr == "environ"


def _sets_environment(key: ast.AST, parents: Parents) -> bool:
    """Whether `key` is the key of a statement that sets or deletes an environment variable:
    `os.environ[K] = v`, `del os.environ[K]`, `os.environ.setdefault(K, v)`, `.pop(K)`,
    `os.putenv(K, v)`."""
    parent = parents.get(key)
    if isinstance(parent, ast.Subscript) and parent.slice is key and _environ(parent.value):
        statement = parents.get(parent)
        if isinstance(statement, ast.Assign):
            return statement.targets == [parent]
        return isinstance(statement, ast.Delete) and statement.targets == [parent]
    if not (isinstance(parent, ast.Call) and parent.args and parent.args[0] is key):
        return False
    if not isinstance(parents.get(parent), ast.Expr):
        return False
    func = parent.func
    if not isinstance(func, ast.Attribute):
        return False
    if func.attr in ("setdefault", "pop"):
        return _environ(func.value)
    return func.attr == "putenv" and isinstance(func.value, ast.Name) and func.value.id == "os"


def _set_value(key: ast.AST, parents: Parents) -> tuple[str | None, bool]:
    """For the key of a statement that sets or deletes a variable (`_sets_environment`): the
    constant it sets, as the environment holds it (None when not a constant), and whether it
    deletes the variable (`del os.environ[K]`, `os.environ.pop(K)`)."""
    parent = parents.get(key)
    value: ast.AST | None = None
    if isinstance(parent, ast.Subscript):
        statement = parents.get(parent)
        if isinstance(statement, ast.Delete):
            return None, True
        value = statement.value if isinstance(statement, ast.Assign) else None
    elif isinstance(parent, ast.Call):
        if isinstance(parent.func, ast.Attribute) and parent.func.attr == "pop":
            return None, True
        value = parent.args[1] if len(parent.args) > 1 else None
    if isinstance(value, ast.Constant) and isinstance(value.value, str | int | bool):
        return str(value.value), False
    return None, False


def _autocast_device_blocker(call: ast.Call, argument: ast.expr | None, node: ast.expr) -> str:
    """Why a device string given to an autocast is left for a person: unpacked arguments may
    pass a dtype, which one written out would clash with; a branch of a conditional without a
    dtype keyword would get a dtype that changes the other device's autocast too."""
    if node is argument:
        unpacked = any(isinstance(a, ast.Starred) for a in call.args) or any(
            k.arg is None for k in call.keywords
        )
        return "unpacked arguments may pass a dtype" if unpacked else ""
    if _keyword(call, "dtype") is None:
        return "a branch of a conditional device: a dtype written out would change the other's"
    return ""


_COMPOUND = (ast.If, ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith, ast.Try, ast.Match)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef, ast.Module)


def _dynamic_shapes(call: ast.Call) -> str:
    """Why a torch.compile for XLA is left for a person: `dynamic=` True, or a value known only
    at run time (None, torch's automatic choice, and False are pinned to False)."""
    dynamic = _keyword(call, "dynamic")
    if dynamic is None or (
        isinstance(dynamic, ast.Constant) and (dynamic.value is None or dynamic.value is False)
    ):
        return ""
    return "dynamic shapes, which the neuron backend rejects: a person decides"


def _main_guard(node: ast.AST) -> bool:
    """`if __name__ == "__main__":` without an `else`."""
    if not isinstance(node, ast.If) or node.orelse:
        return False
    test = node.test
    return (
        isinstance(test, ast.Compare)
        and isinstance(test.left, ast.Name)
        and test.left.id == "__name__"
        and len(test.comparators) == 1
        and _string(test.comparators[0]) == "__main__"
    )


def _under_condition(node: ast.AST, parents: Parents) -> bool:
    """Whether a compound statement other than the main guard lies between `node` and its
    function, class or module."""
    parent = parents.get(node)
    while parent is not None and not isinstance(parent, _SCOPES):
        if isinstance(parent, _COMPOUND) and not _main_guard(parent):
            return True
        parent = parents.get(parent)
    return False


def _assigned_value(target: ast.AST | None, parents: Parents) -> ast.expr | None:
    """The value a name binding assigns (`NAME = value`, `NAME: type = value`)."""
    statement = parents.get(target)
    if (
        isinstance(statement, ast.Assign)
        and len(statement.targets) == 1
        and statement.targets[0] is target
    ):
        return statement.value
    if isinstance(statement, ast.AnnAssign) and statement.target is target:
        return statement.value
    if isinstance(statement, ast.arguments) and isinstance(target, ast.arg):
        return _default(statement, target)
    return None


def _default(args: ast.arguments, arg: ast.arg) -> ast.expr | None:
    """A parameter's default value (None when it has none)."""
    return next((default for a, default in _parameter_defaults(args) if a is arg), None)


def _parameter_defaults(args: ast.arguments) -> list[tuple[ast.arg, ast.expr]]:
    """The parameters that have a default, each with it."""
    positional = [*args.posonlyargs, *args.args]
    pairs = list(
        zip(positional[len(positional) - len(args.defaults) :], args.defaults, strict=True)
    )
    return pairs + [
        (a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d is not None
    ]


def _runtime_device(value: ast.expr) -> bool:
    """`t.device.type`, `x.device`, `str(t.device)`: a device the runtime reports, which says
    'neuron' once migrated."""
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "str":
        return len(value.args) == 1 and _runtime_device(value.args[0])
    return isinstance(value, ast.Attribute) and value.attr in ("type", "device")


def _if_leaves(value: ast.expr) -> list[ast.expr]:
    if isinstance(value, ast.IfExp):
        return [*_if_leaves(value.body), *_if_leaves(value.orelse)]
    return [value]


def _own_returns(definition: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.Return]:
    """The function's `return` statements, not those of functions or classes inside it."""
    found: list[ast.Return] = []
    todo: list[ast.AST] = list(definition.body)
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Return):
            found.append(node)
        elif not isinstance(
            node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
        ):
            todo.extend(ast.iter_child_nodes(node))
    return found


def _assigned_once(bindings: list[Binding]) -> bool:
    """One assignment binds the name: not a parameter, whose callers may pass anything."""
    return len(bindings) == 1 and not isinstance(bindings[0].node, ast.arg)


def _assigned_string(target: ast.AST | None, parents: Parents) -> ast.expr | None:
    """The string constant a name binding assigns (`NAME = "xla"`, `NAME: str = "xla"`)."""
    value = _assigned_value(target, parents)
    return value if _string(value) is not None else None


def _tests_xla_name(operands: list[ast.expr]) -> bool:
    """Whether a comparison names 'xla' (alone or in a literal collection): the cheap test
    before a variable is followed to its value."""
    for operand in operands:
        elements = operand.elts if isinstance(operand, _COLLECTIONS) else [operand]
        if any(_string(e) == "xla" for e in elements):
            return True
    return False


def _xla_option_keys(options: ast.expr | None) -> list[ast.expr]:
    """The keys of a dict literal that name torch_xla's process-group options."""
    if not isinstance(options, ast.Dict):
        return []
    return [k for k in options.keys if k is not None and (_string(k) or "").startswith("xla")]


def _target_name(target: ast.expr) -> str:
    """`device` for `device = ...`, `args.device = ...` and `self._device = ...`."""
    if isinstance(target, ast.Name):
        return target.id
    if isinstance(target, ast.Attribute):
        return target.attr
    return ""


def _keyword(call: ast.Call, name: str) -> ast.expr | None:
    for kw in call.keywords:
        if kw.arg == name:
            return kw.value
    return None


def _argument(call: ast.Call, position: int, name: str) -> ast.expr | None:
    if len(call.args) > position and not isinstance(call.args[position], ast.Starred):
        return call.args[position]
    return _keyword(call, name)


def _is_xla(qualname: str | None) -> bool:
    return qualname is not None and qualname.partition(".")[0] in ("torch_xla", "torch_neuronx")


def _is_test(name: ast.expr, parent: ast.AST | None, parents: Parents) -> bool:
    """Whether a bare module name is only tested (`xr is None`, `if xr:`, `not xr`, `xr and
    ...`) rather than handed on as a value (`f(xm)`, `_XM = xm`, `m = xm or fallback`) that
    code then calls into."""
    return (
        isinstance(parent, ast.Compare)
        or _truth_tested(name, parent, parents)
        or _feature_tested(name, parent, parents)
    )


def _feature_tested(name: ast.expr, parent: ast.AST | None, parents: Parents) -> bool:
    """Whether `name` is the module of a feature test of the torch_xla version that is only
    truth-tested: `if hasattr(torch_xla, "launch"):`, `A if hasattr(torch_xla, "device") else B`.
    On the device the test asks nothing the migrated arms do not settle (the guard pass takes
    the newer arm)."""
    return (
        isinstance(parent, ast.Call)
        and isinstance(parent.func, ast.Name)
        and parent.func.id == "hasattr"
        and len(parent.args) == 2
        and not parent.keywords
        and parent.args[0] is name
        and isinstance(parent.args[1], ast.Constant)
        and isinstance(parent.args[1].value, str)
        and _truth_tested(parent, parents.get(parent), parents)
    )


def _truth_tested(node: ast.expr, parent: ast.AST | None, parents: Parents) -> bool:
    """Whether only the truth of `node`'s value is read: a condition, `not node`, or an operand
    of `and`/`or` whose value never comes out as the module: one before the last of an `and`
    (it comes out only when false), any of an operation that is itself only truth-tested."""
    if isinstance(parent, ast.BoolOp):
        if isinstance(parent.op, ast.And) and node is not parent.values[-1]:
            return True
        return _truth_tested(parent, parents.get(parent), parents)
    if isinstance(parent, ast.UnaryOp):
        return isinstance(parent.op, ast.Not)
    if isinstance(parent, (ast.If, ast.While, ast.IfExp, ast.Assert)):
        return parent.test is node
    return False


_XLA_BACKEND_MODULE = "torch_xla.distributed.xla_backend"
_MODEL_WRAPPER = "torch_xla.distributed.xla_multiprocessing.MpModelWrapper"

# The expressions an annotation is made of around a class name: `Optional[T]`, `T | None`.
_ANNOTATION_PARTS = (ast.Subscript, ast.Tuple, ast.List, ast.BinOp)


def _in_annotation(node: ast.expr, parents: Parents) -> bool:
    """Whether `node` is a parameter's, a return's or a variable's annotation, or part of one."""
    parent = parents.get(node)
    while isinstance(parent, _ANNOTATION_PARTS):
        node, parent = parent, parents.get(parent)
    if isinstance(parent, ast.arg | ast.AnnAssign):
        return parent.annotation is node
    if isinstance(parent, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
        # the model makes the function the parent of its parameters' annotations
        arguments = parent.args
        params = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
        params += [a for a in (arguments.vararg, arguments.kwarg) if a is not None]
        returns = getattr(parent, "returns", None)
        return node is returns or any(node is param.annotation for param in params)
    return False


# A `placed_calls` entry for a call placed without a site of its own (`_SiteFinder.methods`).
_NO_SITE = -1


def _chain_meaning(base: Resolution, attrs: list[str]) -> tuple[Resolution, str | None, bool]:
    """What `name.a.b` means, `base` being what `name` means: the same answer as
    `NameModel.resolve_chain`, without walking the chain again; its single qualified name; and
    whether one of its meanings is an API worth a site (`API_ROOTS`)."""
    resolution = base
    if attrs:
        suffix = "." + ".".join(attrs)
        resolution = Resolution(tuple(q + suffix for q in base.qualnames), base.local)
    worth_a_site = any(q.partition(".")[0] in API_ROOTS for q in resolution.qualnames)
    return resolution, resolution.qualname, worth_a_site


def torch_api(qualname: str) -> str:
    """The name classification reads a torch API by: functorch's as torch.func's."""
    if qualname.startswith("functorch"):
        return "torch.func" + qualname[len("functorch") :]
    return qualname


class _SiteFinder:
    def __init__(
        self,
        source: str,
        tree: ast.Module,
        methods: Callable[[str], bool] | None = None,
        references: Callable[[str], str] | None = None,
    ) -> None:
        self.model = NameModel(tree, _IDIOM_STRINGS.search)
        # The method names worth a site (None: every one): what the caller can report.
        self.methods = methods
        # What a reference to a torch API comes to (REPORTED, ...; None: every one a site).
        self.references = references
        self._verdicts: dict[str, str] = {}
        # The calls left without a site that classification counts as unmapped: (the span
        # their site would have had, the API).
        self.unmapped: list[tuple[Span, str]] = []
        # A torch reference was left without a site (classification asks whether any is).
        self.refers_to_torch = False
        self.tree = tree
        # What this module's compiles reach in other modules (`compiled.imported_compiles`).
        self.imported: tuple[Imported, ...] = ()
        self.columns = _Columns(source)
        self.source = source
        self.lines: list[str] | None = None  # split when a discarded call asks
        self.sites: list[Site] = []
        self.call_qualnames: dict[int, str] = {}  # id(Call) -> callee qualname
        self.chain_qualnames: dict[int, str] = {}  # id(Name/Attribute chain) -> qualname
        self.reported_backends: set[int] = set()  # backend strings reported, by id
        self.device_strings: set[int] = set()  # device strings reported, by id
        self.spawns = False  # the module starts workers with xmp.spawn or torch_xla.launch
        self.placed_calls: list[tuple[int, ast.Call]] = []  # (index in sites, call) to place
        self.imported_modules = {
            r.module for r in self.model.imports if isinstance(r.statement, ast.Import) and r.module
        }
        # The module uses the XLA-based torch-neuronx: its TorchScript files are Neuron-traced.
        self.uses_neuronx = any(
            (r.module or "").partition(".")[0] == "torch_neuronx" for r in self.model.imports
        )

    def site(self, kind: str, node: ast.AST, **fields: object) -> Site:
        line, col, end_line, end_col = self.columns.span(node)
        site = Site(kind, line, col, end_line, end_col, **fields)  # type: ignore[arg-type]
        self.sites.append(site)
        return site

    def call_fields(
        self, call: ast.Call, qualname: str | None = None, scope: Scope | None = None
    ) -> dict[str, object]:
        """`qualname`: the callee's; only a torch_xla call's transforms ask for its arguments
        and statement (`scope`: where the call is, to resolve the names it is given)."""
        parent = self.model.parents.get(call)
        discarded = isinstance(parent, ast.Expr)
        fields: dict[str, object] = {
            "call_span": self.columns.span(call),
            "args": tuple(_literal(a) for a in call.args),
            "kwargs": tuple((k.arg or "**", _literal(k.value)) for k in call.keywords),
            "discarded": discarded,
        }
        if qualname is None or not qualname.startswith(_READ_ARGUMENTS) or scope is None:
            return fields
        fields["call_args"] = arguments_of(call, lambda node: self._qualname(node, scope))
        fields["in_fstring"] = self._in_fstring(call)
        outer = self.model.parents.get(parent) if isinstance(parent, ast.Attribute) else None
        if isinstance(outer, ast.Call) and outer.func is parent:
            assert isinstance(parent, ast.Attribute)
            fields["method"] = parent.attr
            fields["method_args"] = arguments_of(outer, lambda node: self._qualname(node, scope))
        statement, target = _statement_of(call, parent)
        fields["statement"], fields["target"] = statement, target
        if statement and statement != "with":
            fields["own_line"] = self.alone_on_line(call if discarded else parent)  # type: ignore[arg-type]
            fields["own_suite"] = discarded and self.alone_after_colon(call)
        return fields

    def _in_fstring(self, node: ast.AST) -> bool:
        parents = self.model.parents
        parent = parents.get(node)
        while parent is not None and not isinstance(parent, ast.stmt):
            if isinstance(parent, ast.JoinedStr):
                return True
            parent = parents.get(parent)
        return False

    def _qualname(self, node: ast.expr, scope: Scope) -> str | None:
        resolution = self.model.resolve_chain(node, scope, mark_used=False)
        return resolution.qualname if resolution else None

    def alone_on_line(self, node: ast.expr) -> bool:
        """Nothing but blanks before `node` on its first line, and nothing but blanks or a
        comment after it on its last (no `if c:` header, no other statement beside it)."""
        if self.lines is None:
            self.lines = self.source.splitlines()
        line, col, end_line, end_col = self.columns.span(node)
        if end_line > len(self.lines):
            return False
        before = self.lines[line - 1][:col]
        after = self.lines[end_line - 1][end_col:].strip()
        if after.startswith(";"):  # a semicolon that ends the line separates nothing
            after = after[1:].strip()
        return not before.strip() and (not after or after.startswith("#"))

    def alone_after_colon(self, node: ast.expr) -> bool:
        """A compound statement's header before `node` on its line (`if c: node`), and
        nothing but blanks or a comment after it: the one statement of a one-line body."""
        if self.lines is None:
            self.lines = self.source.splitlines()
        line, col, end_line, end_col = self.columns.span(node)
        if end_line > len(self.lines):
            return False
        after = self.lines[end_line - 1][end_col:].strip()
        if after.startswith(";"):
            after = after[1:].strip()
        before = self.lines[line - 1][:col].rstrip()
        return before.endswith(":") and (not after or after.startswith("#"))

    # -- references to imported names -----------------------------------------------------------

    def find_references(self) -> None:
        model = self.model
        parents = model.parents
        attribute = ast.Attribute
        call = ast.Call
        # A name's meaning, by (name, scope it is read in): a module reads the same few names
        # (`self`, `torch`, its locals) thousands of times. The same answer as asking the
        # model each time: a meaning asked for outside another's computation is final.
        meanings: dict[tuple[str, Scope], Resolution | None] = {}
        resolve_name = model.resolve_name
        # Only a name that some scope binds by an import or an alias can mean an import: the
        # rest (most reads) need no resolution.
        importing = model.importing_names
        # What a chain of a name means (`torch.nn.functional`), by the name's meaning and the
        # chain's attributes: its resolution, that resolution's single qualified name, and
        # whether any of its meanings is an API worth a site. Derived from the name's meaning
        # alone, so computed once a module however often it is read (`torch.Tensor`).
        chains: dict[tuple[object, ...], tuple[Resolution, str | None, bool]] = {}
        for name, (scope, guarded) in model.loads.items():
            parent = parents.get(name)
            base = None
            if name.id in importing:
                key = (name.id, scope)
                base = meanings.get(key, _UNRESOLVED)
                if base is _UNRESOLVED:
                    base = meanings[key] = resolve_name(name.id, scope)
            if base is None or not base.qualnames:
                # Not an import: a method call on it may be a Tensor method (`x.sort()`,
                # `self.w.double()`); a direct `self.method()` is the object's own.
                if parent.__class__ is not attribute or parent.value is not name:
                    continue
                if name.id in _NOT_TENSORS:
                    outer = parents.get(parent)
                    if outer.__class__ is not attribute or outer.value is not parent:
                        continue
                chain: ast.expr = parent
                parent = parents.get(chain)
                while parent.__class__ is attribute and parent.value is chain:
                    chain = parent
                    parent = parents.get(chain)
                if parent.__class__ is call and parent.func is chain:
                    self._method_call(chain, parent, guarded)  # type: ignore[arg-type]
                continue
            chain = name
            attrs: list[str] = []
            while parent.__class__ is attribute and parent.value is chain:
                chain = parent
                attrs.append(parent.attr)
                parent = parents.get(chain)
            chain_key = (base, *attrs)
            meaning = chains.get(chain_key)
            if meaning is None:
                meaning = chains[chain_key] = _chain_meaning(base, attrs)
            resolution, qualname, worth_a_site = meaning
            if qualname:
                self.chain_qualnames[id(chain)] = qualname
            if worth_a_site:
                self.add_reference(chain, parent, resolution, guarded, scope)

    def add_reference(
        self,
        chain: ast.expr,
        parent: ast.AST | None,
        resolution: Resolution,
        guarded: bool,
        scope: Scope,
    ) -> None:
        is_call = isinstance(parent, ast.Call) and parent.func is chain
        qualname = resolution.qualname
        if (
            not is_call
            and isinstance(chain, ast.Name)
            and qualname is not None
            and qualname.partition(".")[0] in ("torch", "functorch")
            and self._aliases_only(chain.id, scope)
        ):
            return  # `DT = torch.float64` is the site; `dtype=DT` only reads it again
        if is_call and qualname in _XLA_AUTOCASTS:
            assert isinstance(parent, ast.Call)
            dtype = self.autocast_dtype(parent, scope)
            if dtype is not None:  # not the call NM505 rewrites: the autocast was disabled
                self.call_qualnames[id(parent)] = qualname
                self.idiom("xla-autocast-dtype", parent, dtype, guarded)
                return
        if (
            isinstance(chain, ast.Name)
            and not is_call
            and (qualname in self.imported_modules or _is_xla(qualname))
            and _is_test(chain, parent, self.model.parents)
        ):
            return  # `if xr is not None:` reads the module object, it uses no API
        if (
            self.references is not None
            and qualname is not None
            and qualname.startswith(_PRUNED_ROOTS)
            and self._unreported(chain, parent if is_call else None, qualname)  # type: ignore[arg-type]
        ):
            return

        fields: dict[str, object] = {
            "qualname": qualname or _most_relevant(resolution.qualnames),
            "guarded": guarded,
            "ambiguous": resolution.qualnames + ((LOCAL,) if resolution.local else ())
            if resolution.ambiguous
            else (),
        }
        caller = self.model.parents.get(parent) if isinstance(parent, ast.keyword) else parent
        if not is_call and isinstance(caller, ast.Call) and caller.func is not chain:
            fields["argument_of"] = self.columns.span(caller)
        if not is_call and _in_annotation(chain, self.model.parents):
            fields["in_annotation"] = True
        if is_call:
            assert isinstance(parent, ast.Call)
            fields.update(self.call_fields(parent, qualname, scope))
            if qualname == _MODEL_WRAPPER and self._wrapper_internals_read(parent, scope):
                fields["blocked"] = "the wrapper's own attributes are read, not only its .to()"
            if qualname:
                self.call_qualnames[id(parent)] = qualname
                if qualname.partition(".")[0] == "torch":
                    self.placed_calls.append((len(self.sites), parent))
        self.site("call" if is_call else "name", chain, **fields)

    def _unreported(self, chain: ast.expr, call: ast.Call | None, qualname: str) -> bool:
        """Whether a reference to a torch API gets no site (`references`): what its site would
        have done for the rest of the scan is done here (a call is named and placed in its
        turn, an unmapped one counted)."""
        root = qualname.partition(".")[0]
        if root not in _PRUNED_ROOTS:
            return False
        verdict = self._verdicts.get(qualname)
        if verdict is None:
            assert self.references is not None
            verdict = self._verdicts[qualname] = self.references(torch_api(qualname))
        if verdict == REPORTED:
            return False
        self.refers_to_torch = self.refers_to_torch or root == "torch"
        if call is not None:
            self.call_qualnames[id(call)] = qualname
            if root == "torch":
                self.placed_calls.append((_NO_SITE, call))
            if verdict == UNMAPPED:
                self.unmapped.append((self.columns.span(chain), torch_api(qualname)))
        return True

    def _wrapper_internals_read(self, call: ast.Call, scope: Scope) -> bool:
        """`MODEL = xmp.MpModelWrapper(m)` whose MODEL is read as the wrapper (`MODEL._model`):
        the model itself, which replaces the wrapper, has only the wrapper's `.to()` in common."""
        target = self.model.parents.get(call)
        if not (isinstance(target, ast.Assign) and len(target.targets) == 1):
            return False
        name = target.targets[0]
        if not isinstance(name, ast.Name):
            return False
        owner = self.model.scope_binding(name.id, scope)
        if owner is None:
            return False
        for load in self.model.loads_of(name.id, owner):
            read = self.model.parents.get(load)
            if isinstance(read, ast.Attribute) and read.attr != "to":
                return True
        return False

    def _aliases_only(self, name: str, scope: Scope) -> bool:
        """Whether `name`, read in `scope`, is bound only by assignments of other names."""
        owner = self.model.scope_binding(name, scope)
        return owner is not None and all(b.kind == "alias" for b in owner.bindings[name])

    def autocast_dtype(self, call: ast.Call, scope: Scope) -> str | None:
        """The dtype given to torch_xla's autocast, when it is not bfloat16 (or None): on Neuron
        such an autocast turned itself off. Its qualified name, else its source text."""
        dtype = _argument(call, 2, "dtype")
        if dtype is None or (isinstance(dtype, ast.Constant) and dtype.value is None):
            return None
        resolution = self.model.resolve_chain(dtype, scope)
        qualname = resolution.qualname if resolution else None
        if qualname == "torch.bfloat16":
            return None
        return qualname or ast.unparse(dtype)

    def _method_call(self, attribute: ast.Attribute, call: ast.Call, guarded: bool) -> None:
        """`x.sort()`, `self.w.double()`, `model(x).sum()`: maybe a Tensor method."""
        if self.methods is not None and not self.methods(attribute.attr):
            # No site, but placed all the same: placements are memoised, and a value's
            # placement in a cycle of assignments may depend on which call asked first.
            self.placed_calls.append((_NO_SITE, call))
            return
        self.placed_calls.append((len(self.sites), call))
        self.site(
            "method", attribute, detail=attribute.attr, guarded=guarded, **self.call_fields(call)
        )

    def find_chained_methods(self) -> None:
        """Methods on receivers that are not name chains: `model(x).sum()`, `a[0].double()`."""
        for node, guarded in self.model.calls:  # every Call, collected by the name model's walk
            func = node.func
            if (
                isinstance(func, ast.Attribute)
                and not isinstance(func.value, _NOT_CHAINED_RECEIVERS)
                and not self._makes_no_tensor(func.value)
            ):
                self._method_call(func, node, guarded)

    def _makes_no_tensor(self, receiver: ast.expr) -> bool:
        """`np.array(x).median()`, `sorted(x).index(y)`: the receiver is the result of a call
        known to return something other than a tensor."""
        if not isinstance(receiver, ast.Call):
            return False
        qualname = self.chain_qualnames.get(id(receiver.func))
        if qualname is not None:
            return qualname.partition(".")[0] in _NON_TENSOR_LIBRARIES
        func = receiver.func
        return isinstance(func, ast.Name) and func.id in _NON_TENSOR_BUILTINS

    # -- imports ------------------------------------------------------------------------------

    def find_imports(self) -> None:
        for record in self.model.imports:
            module = record.module
            if not module or module.partition(".")[0] not in _IMPORT_ROOTS:
                continue
            self.site(
                "import",
                record.alias,
                qualname=module,
                detail=record.alias.asname or record.alias.name.partition(".")[0],
                call_span=self.columns.span(record.statement),
                guarded=record.binding.guarded,
                used=record.binding.used,
            )

        for alias, module, guarded in self.model.star_imports:
            if module.partition(".")[0] == "torch_xla":
                # the names it binds cannot be listed, so none of their uses is a site
                self.idiom("torch-xla-star-import", alias, module, guarded)

    # -- XLA idioms outside the torch_xla namespace --------------------------------------------

    def may_hold_idioms(self) -> bool:
        """False when the module holds none of what every idiom reads (`_IDIOM_STRINGS`).
        A keyword's name is looked for in the text, which holds it as it is when ASCII."""
        model = self.model
        return (
            model.marked_strings
            or any((r.module or "").partition(".")[0] in _IMPORT_ROOTS for r in model.imports)
            or any(module.partition(".")[0] in _IMPORT_ROOTS for _, module, _ in model.star_imports)
            or not self.source.isascii()
            or _ENV_KEYWORDS.search(self.source) is not None
        )

    def find_idioms(self) -> None:
        if not self.may_hold_idioms():
            return
        # The name model's walk collected the candidates: no walk of our own.
        # An idiom's node (a string, an argument) shares the guard of the candidate it is in.
        self.spawns = any(q in _SPAWNS for q in self.call_qualnames.values())
        for call, guarded in self.model.calls:
            self.idioms_in_call(call, guarded)
        for node, guarded in self.model.idiom_nodes:
            kind = type(node)
            if kind is ast.Compare:
                self.idioms_in_compare(node, guarded)  # type: ignore[arg-type]
            elif kind is ast.Subscript:
                self.env_subscript(node, guarded)  # type: ignore[arg-type]
            elif kind is ast.Assign or kind is ast.AnnAssign:
                self.device_assignment(node, guarded)  # type: ignore[arg-type]
            elif kind is ast.Dict:
                self.env_dict(node, guarded)  # type: ignore[arg-type]
            elif kind is ast.arguments:
                self.device_defaults(node, guarded)  # type: ignore[arg-type]

    def idiom(
        self, kind: str, node: ast.AST, detail: str | None, guarded: bool, blocked: str = ""
    ) -> None:
        if kind == "xla-device-string":
            if id(node) in self.device_strings:
                return  # `device = "xla"` read as an autocast's device type too
            self.device_strings.add(id(node))
        literal = isinstance(node, ast.Constant) and isinstance(node.value, str)
        setting = kind in _ENV_IDIOMS and _sets_environment(node, self.model.parents)
        value, unset = _set_value(node, self.model.parents) if setting else (None, False)
        self.site(
            "idiom",
            node,
            idiom=kind,
            detail=detail,
            guarded=guarded,
            literal=literal,
            blocked=blocked,
            env_setting=setting,
            env_value=value,
            env_unset=unset,
        )

    def idioms_in_call(self, call: ast.Call, guarded: bool) -> None:
        qualname = self.call_qualnames.get(id(call))
        autocast = qualname in _TORCH_AUTOCASTS
        for kw in call.keywords:
            if kw.arg in ("device", "device_type"):
                for node, value in _device_strings(kw.value):
                    blocked = _autocast_device_blocker(call, kw.value, node) if autocast else ""
                    self.idiom("xla-device-string", node, value, guarded, blocked)
        func = call.func
        first = call.args[0] if call.args else None
        first_string = _string(first)
        if first is not None:
            is_to = isinstance(func, ast.Attribute) and func.attr == "to" and qualname is None
            if is_to or qualname in (
                "torch.device",
                "torch.autocast",
                "torch.amp.autocast",
                "torch.random.fork_rng",
                "torch.amp.GradScaler",
            ):
                for node, value in _device_strings(first):
                    blocked = _autocast_device_blocker(call, first, node) if autocast else ""
                    self.idiom("xla-device-string", node, value, guarded, blocked)
        if (
            first_string
            and _XLA_DEVICE.match(first_string)
            and isinstance(func, ast.Attribute)
            and func.attr == "startswith"
            and qualname is None
            and self._mentions_device(func.value)
        ):
            assert first is not None  # str(device).startswith("xla"): a device-type test
            self.idiom("xla-device-type-compare", first, first_string, guarded)
        if qualname in _TORCH_AUTOCASTS:
            device_type = _argument(call, 0, "device_type")
            if isinstance(device_type, ast.Name) and _argument(call, 1, "dtype") is None:
                self.autocast_device_variable(call, device_type, guarded)
        saves_trace = self.uses_neuronx and self._saves_trace(func)
        if (qualname in _TRACED_ARTIFACTS and self.uses_neuronx) or saves_trace:
            self.site(
                "idiom",
                call,
                idiom="neuron-traced-artifact",
                detail="save" if saves_trace else (qualname or "").rpartition(".")[2],
                call_span=self.columns.span(call),
                guarded=guarded,
            )
        if qualname in _GROUP_MAKERS:
            self.xla_group_options(_keyword(call, "pg_options"), guarded)
        if qualname == "torch.distributed.init_process_group":
            backend = _argument(call, 0, "backend")
            if _string(backend) == "xla":
                assert backend is not None
                self.idiom("xla-process-group", backend, "xla", guarded)
            elif isinstance(backend, ast.Name):
                self.backend_variable(backend, guarded)
            elif backend is not None and _may_be_xla(backend) and self.registers_xla():
                # `args.dist_backend`, `cfg["backend"]`: known only at run time, in a module that
                # registers the 'xla' backend; a person says which backend runs
                self.idiom("xla-process-group", backend, "xla", guarded)
            init_method = _argument(call, 1, "init_method")
            if _string(init_method) in ("xla://", "pjrt://"):
                assert init_method is not None
                self.idiom("xla-init-method", init_method, _string(init_method), guarded)
        elif qualname in ("torch.compile", "torch._dynamo.optimize"):
            backend = _keyword(call, "backend")
            if qualname == "torch._dynamo.optimize" and backend is None:
                backend = _argument(call, 0, "backend")
            if _string(backend) in ("openxla", "openxla_eval"):
                assert backend is not None
                blocked = _dynamic_shapes(call) if qualname == "torch.compile" else ""
                self.idiom("openxla-compile-backend", backend, _string(backend), guarded, blocked)
        elif qualname in _ENV_CALLS or (
            qualname is None and self._env_method(func, _ENV_METHODS) is not None
        ):
            self.env_name(_argument(call, 0, "key"), guarded)
            if qualname in _ENV_SETTERS:
                self.rendezvous_env(_argument(call, 0, "key"), guarded)
        elif (
            qualname is None
            and isinstance(func, ast.Name)
            and func.id == "dict"
            and first is not None
            and self._is_environment(first)
        ):
            for kw in call.keywords:  # dict(os.environ, XLA_USE_BF16="1")
                if kw.arg and _XLA_ENV.match(kw.arg):
                    self.idiom("xla-env-var", kw.value, kw.arg, guarded)
        elif qualname == "os.environ.update" or (
            qualname is None and self._env_method(func, _UPDATE) is not None
        ):
            for arg in call.args:
                if isinstance(arg, ast.Dict):
                    for key in arg.keys:
                        self.env_name(key, guarded)
            for kw in call.keywords:
                if kw.arg and _XLA_ENV.match(kw.arg):
                    self.idiom("xla-env-var", kw.value, kw.arg, guarded)

    def _saves_trace(self, func: ast.expr) -> bool:
        """`traced.save(path)` of a name bound to torch_neuronx.trace's result: the TorchScript
        method the native trace (a compiled function) does not have."""
        if not (isinstance(func, ast.Attribute) and func.attr == "save"):
            return False
        if not isinstance(func.value, ast.Name):
            return False
        binding = self.model.binding_of(func.value)
        if binding is None:
            return False
        values = (_assigned_value(bound.node, self.model.parents) for bound in binding[1])
        return any(self.call_qualnames.get(id(v)) in _NEURONX_TRACES for v in values)

    def backend_variable(self, name: ast.Name, guarded: bool) -> None:
        """`BACKEND = "xla"` ... `init_process_group(BACKEND)`. A constant assigned once and
        read only as a backend is reported at its string, which the rule rewrites; any other
        variable that may hold "xla" is reported at the argument, for a person."""
        binding = self.model.binding_of(name)
        if binding is None:
            return
        owner, bindings = binding
        strings = [_assigned_string(b.node, self.model.parents) for b in bindings]
        if "xla" not in [_string(s) for s in strings]:
            # a value known only at run time (a parameter, a read): it may be XLA's when the
            # module registers the 'xla' backend
            values = [_assigned_value(b.node, self.model.parents) for b in bindings]
            unknown = any(v is None or _may_be_xla(v) for v in values)
            if None in strings and unknown and self.registers_xla():
                self.idiom("xla-process-group", name, "xla", guarded)
            return
        string = strings[0]
        if (
            _assigned_once(bindings)
            and string is not None
            and (self._only_backends(name.id, owner) or self._device_backend(string))
        ):
            if id(string) not in self.reported_backends:
                self.reported_backends.add(id(string))
                self.device_strings.add(id(string))  # one site: its rewrite serves both
                self.idiom("xla-process-group", string, "xla", guarded)
            return
        self.idiom("xla-process-group", name, "xla", guarded)

    def registers_xla(self) -> bool:
        """The module imports torch_xla's backend, whose import registers the name 'xla'."""
        return any(r.module == _XLA_BACKEND_MODULE for r in self.model.imports)

    def autocast_device_variable(self, call: ast.Call, name: ast.Name, guarded: bool) -> None:
        """`dt = "xla"` ... `torch.autocast(device_type=dt)` without a dtype: the autocast gets
        the dtype the literal case gets when `dt` is one device string, assigned once (which is
        then the device string reported); else it may be another device's, for a person."""
        binding = self.model.binding_of(name)
        if binding is None:
            return
        bindings = binding[1]
        strings = [_assigned_string(b.node, self.model.parents) for b in bindings]
        if not any(_XLA_DEVICE.match(_string(s) or "") for s in strings):
            return
        sure = _assigned_once(bindings) and strings[0] is not None
        if sure:
            assert strings[0] is not None
            self.idiom("xla-device-string", strings[0], _string(strings[0]), bindings[0].guarded)
        span = self.columns.span(call)
        detail = "xla" if sure else "xla-or-other"
        self.site(
            "idiom",
            call,
            idiom="xla-autocast-device-variable",
            detail=detail,
            call_span=span,
            guarded=guarded,
            blocked="" if sure else "the variable may hold another device's type",
        )

    def xla_group_options(self, options: ast.expr | None, guarded: bool) -> None:
        """`pg_options={"xla_pg_options": ...}`, given as a dict or a variable assigned one."""
        if isinstance(options, ast.Name):
            binding = self.model.binding_of(options)
            values = (
                [_assigned_value(b.node, self.model.parents) for b in binding[1]] if binding else []
            )
            if any(_xla_option_keys(v) for v in values):
                self.idiom("xla-pg-options", options, "xla_pg_options", guarded)
            return
        for key in _xla_option_keys(options):
            self.idiom("xla-pg-options", key, _string(key), guarded)

    def _device_backend(self, string: ast.expr) -> bool:
        """`device = "xla"` read as a device and as the backend too: the device string's
        rewrite, "neuron", is the native backend's name, so the one literal serves both."""
        assign = self.model.parents.get(string)
        targets = (
            assign.targets
            if isinstance(assign, ast.Assign)
            else [assign.target]
            if isinstance(assign, ast.AnnAssign)
            else []
        )
        return _string(string) == "xla" and any(
            "device" in _target_name(t).lower() for t in targets
        )

    def _only_backends(self, name: str, owner: Scope) -> bool:
        """Whether every read of `name` (bound in `owner`) is a process group's backend."""
        for load in self.model.loads_of(name, owner):
            call = self.model.parents.get(load)
            if isinstance(call, ast.keyword):
                call = self.model.parents.get(call)
            if not (
                isinstance(call, ast.Call)
                and self.call_qualnames.get(id(call)) == "torch.distributed.init_process_group"
                and _argument(call, 0, "backend") is load
            ):
                return False
        return True

    def idioms_in_compare(self, compare: ast.Compare, guarded: bool) -> None:
        operands = [compare.left, *compare.comparators]
        if any(self.call_qualnames.get(id(o)) in _GET_BACKEND for o in operands) or (
            _tests_xla_name(operands) and any(self._holds_backend(o) for o in operands)
        ):
            self.backend_names(operands, guarded)
        strings = [(o, _string(o)) for o in operands]
        for operand, value in strings:
            if value is None:
                continue
            others = [o for o in operands if o is not operand]
            if _XLA_DEVICE.match(value) and any(self._mentions_device(o) for o in others):
                producers = self.device_producers(others)
                if producers is None:
                    # the value compared comes from where the rewrite cannot follow: changing
                    # the test alone would make it never true (or always), so a person decides
                    self.idiom("xla-device-type-compare-unresolved", operand, value, guarded)
                    continue
                for string in producers:  # rewritten with the test, so the two agree
                    self.idiom("xla-device-string", string, _string(string), guarded)
                self.idiom("xla-device-type-compare", operand, value, guarded)
            elif value == "NEURON" and any(self._is_device_kind_query(o) for o in others):
                self.idiom("neuron-device-type-compare", operand, value, guarded)

    def _holds_backend(self, operand: ast.expr) -> bool:
        """`b` after `b = dist.get_backend()`: a name every binding of which assigns the
        backend's name (a parameter does not: its callers may pass anything)."""
        if not isinstance(operand, ast.Name):
            return False
        binding = self.model.binding_of(operand)
        if binding is None:
            return False
        values = [
            None if isinstance(b.node, ast.arg) else _assigned_value(b.node, self.model.parents)
            for b in binding[1]
        ]
        return all(v is not None and self.call_qualnames.get(id(v)) in _GET_BACKEND for v in values)

    def backend_names(self, operands: list[ast.expr], guarded: bool) -> None:
        """`dist.get_backend() == "xla"`, `... in ("xla", "gloo")`: the 'xla' names tested."""
        for operand in operands:
            elements = operand.elts if isinstance(operand, _COLLECTIONS) else [operand]
            for element in elements:
                if _string(element) == "xla":
                    self.idiom("xla-backend-compare", element, "xla", guarded)

    def device_producers(self, operands: list[ast.expr]) -> list[ast.expr] | None:
        """For a test of a variable against 'xla' (`DEVICE == "xla"`): the device strings that
        produce its value and are not reported yet (a local function's `return "xla"`), or None
        when some producer is unknown (a parameter without a default, an imported function, a
        loop). A device
        reported by the runtime (`t.device.type`) needs none; an attribute is taken as such."""
        found: list[ast.expr] = []
        for operand in operands:
            if not isinstance(operand, ast.Name) or not self._mentions_device(operand):
                continue
            binding = self.model.binding_of(operand)
            if binding is None:
                return None
            for bound in binding[1]:
                # a parameter: its default (rewritten with the test when a device string, as
                # are `device=`/`device_type=` keywords of calls); none: its callers may pass
                # anything
                value = _assigned_value(bound.node, self.model.parents)
                strings = self._produced(value)
                if strings is None:
                    return None
                found.extend(strings)
        return found

    def _produced(self, value: ast.expr | None, depth: int = 0) -> list[ast.expr] | None:
        """The device strings an assigned value needs rewritten with a test of it ([] when
        the assignment's own rewrite or the runtime takes care of it), or None: unknown."""
        if value is None:
            return None
        if isinstance(value, ast.IfExp):
            body = self._produced(value.body, depth)
            orelse = self._produced(value.orelse, depth)
            return None if body is None or orelse is None else [*body, *orelse]
        if _string(value) is not None:
            return []  # `device = "xla"`: the assignment's own site (device_assignment)
        if _runtime_device(value) or self.call_qualnames.get(id(value)) == "torch.device":
            return []
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and depth == 0:
            return self._returned(value.func)
        return None

    def _returned(self, func: ast.Name) -> list[ast.expr] | None:
        """The device strings a function of this module returns, when every `return` of it
        gives a string or the runtime's device type; else None."""
        binding = self.model.binding_of(func)
        if binding is None or len(binding[1]) != 1:
            return None
        definition = binding[1][0].node
        if not isinstance(definition, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return None
        found: list[ast.expr] = []
        returns = [r for r in _own_returns(definition)]
        if not returns:
            return None
        for ret in returns:
            if ret.value is None:
                return None
            if _string(ret.value) is not None or isinstance(ret.value, ast.IfExp):
                strings = _device_strings(ret.value)
                leaves = _if_leaves(ret.value)
                if any(_string(leaf) is None for leaf in leaves):
                    return None
                found.extend(s for s, _ in strings if id(s) not in self.device_strings)
                continue
            produced = self._produced(ret.value, depth=1)
            if produced is None:
                return None
            found.extend(produced)
        return found

    def _mentions_device(self, expr: ast.expr) -> bool:
        text = ast.unparse(expr) if not isinstance(expr, ast.Name) else expr.id
        return "device" in text.lower() or text.endswith(".type")

    def _is_device_kind_query(self, expr: ast.expr) -> bool:
        if isinstance(expr, ast.Call):
            qualname = self.call_qualnames.get(id(expr), "")
            return qualname.startswith("torch_xla")
        return "device" in ast.unparse(expr).lower()

    def env_subscript(self, node: ast.Subscript, guarded: bool) -> None:
        if self._is_environment(node.value):
            self.env_name(node.slice, guarded)
            if isinstance(node.ctx, ast.Store):
                self.rendezvous_env(node.slice, guarded)

    def rendezvous_env(self, key: ast.expr | None, guarded: bool) -> None:
        """`os.environ["MASTER_PORT"] = ...` in a script that starts its workers with
        xmp.spawn or torch_xla.launch: under torchrun, which sets it, a second address."""
        value = _string(key)
        if self.spawns and value in _RENDEZVOUS_ENV and self.chain_env(key):
            assert key is not None
            conditional = _under_condition(key, self.model.parents)
            blocked = "set under a condition: a person decides" if conditional else ""
            self.idiom("spawn-rendezvous-env", key, value, guarded, blocked)

    def chain_env(self, key: ast.expr | None) -> bool:
        """Whether `key` is the key of os.environ itself (not of a copy for a child)."""
        parent = self.model.parents.get(key)
        if isinstance(parent, ast.Subscript):
            return self.chain_qualnames.get(id(parent.value)) == "os.environ"
        return True  # os.environ.setdefault / os.putenv: resolved by qualname

    def env_dict(self, node: ast.Dict, guarded: bool) -> None:
        """`{**os.environ, "PJRT_DEVICE": "NEURON"}`: a child process's environment."""
        pairs = zip(node.keys, node.values, strict=True)
        if any(k is None and self._is_environment(v) for k, v in pairs):
            for key in node.keys:
                self.env_name(key, guarded)

    def _is_environment(self, expr: ast.expr) -> bool:
        """os.environ, or a variable named for an environment (`env`, `process_env`,
        `self.env`): the copy of it a launcher hands a child process."""
        if self.chain_qualnames.get(id(expr)) == "os.environ":
            return True
        name = expr.id if isinstance(expr, ast.Name) else getattr(expr, "attr", None)
        return isinstance(name, str) and "env" in name.lower()

    def _env_method(self, func: ast.expr, methods: Container[str]) -> str | None:
        """`update` for `env.update(...)` on an environment copy, when one of `methods`; None
        for anything else. (The name first: the test of the receiver costs more.)"""
        if (
            isinstance(func, ast.Attribute)
            and func.attr in methods
            and self._is_environment(func.value)
        ):
            return func.attr
        return None

    def env_name(self, key: ast.expr | None, guarded: bool) -> None:
        value = _string(key)
        if value and _XLA_ENV.match(value):
            assert key is not None
            self.idiom("xla-env-var", key, value, guarded)

    def device_assignment(self, node: ast.Assign | ast.AnnAssign, guarded: bool) -> None:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        if any("device" in _target_name(t).lower() for t in targets):
            for string, value in _device_strings(node.value):
                self.idiom("xla-device-string", string, value, guarded)

    def device_defaults(self, args: ast.arguments, guarded: bool) -> None:
        for arg, default in _parameter_defaults(args):
            if "device" in arg.arg.lower():
                for node, value in _device_strings(default):
                    self.idiom("xla-device-string", node, value, guarded)

    # -- placement ----------------------------------------------------------------------------

    def mark_compiled(self, compiled_from: dict[str, str]) -> None:
        """Stamp the calls inside a region compiled for the neuron backend with its line (and
        where, for a region another module compiles: `compiled_from` maps the names of this
        module's functions and classes to it); note what this module's compiles reach in
        other modules (`self.imported`)."""
        if not self.placed_calls and not self.model.calls:
            return
        if "torch.compile" in self.chain_qualnames.values():
            regions = compiled_regions(self.model, lambda node: self.chain_qualnames.get(id(node)))
            self.imported = imported_compiles(
                self.model, lambda node: self.chain_qualnames.get(id(node)), regions
            )
            for index, call in self.placed_calls:
                if index == _NO_SITE:
                    continue
                site = self.sites[index]
                line = next((c for first, last, c in regions if first <= site.line <= last), 0)
                if line:
                    self.sites[index] = self._stepped(site._replace(compiled=line), call)
        if not compiled_from:
            return
        elsewhere = named_regions(self.tree, compiled_from)
        for index, call in self.placed_calls:
            if index == _NO_SITE:
                continue
            site = self.sites[index]
            if site.compiled:
                continue
            where = next((w for first, last, w in elsewhere if first <= site.line <= last), "")
            if where:
                line = int(where.rpartition(":")[2] or 0)
                site = site._replace(compiled=line or 1, compiled_at=where)
                self.sites[index] = self._stepped(site, call)

    def _stepped(self, site: Site, call: ast.Call) -> Site:
        """A compiled `opt.step()` with `opt = torch.optim.Adam(...)` (a name assigned in this
        module): the site's qualname is the optimizer's step (`torch.optim.Adam.step`)."""
        receiver = call.func.value if isinstance(call.func, ast.Attribute) else None
        if site.kind != "method" or site.detail != "step" or not isinstance(receiver, ast.Name):
            return site
        found = self.model.binding_of(receiver)
        optimizers = set()
        for binding in found[1] if found else []:
            statement = self.model.parents.get(binding.node)
            value = statement.value if isinstance(statement, ast.Assign) else None
            if isinstance(value, ast.Call):
                optimizers.add(self.chain_qualnames.get(id(value.func)) or "")
        (optimizer,) = optimizers if len(optimizers) == 1 else ("",)
        if (
            not optimizer.startswith("torch.optim.")
            or not optimizer.rpartition(".")[2][:1].isupper()
        ):
            return site
        return site._replace(qualname=f"{optimizer}.step")

    def place_calls(self) -> None:
        """Stamp each torch call and method call with where it runs (host, device, unknown)."""
        if not self.placed_calls:
            return
        # The calls without a site are placed only for the order of the questions, which
        # matters only where a cycle is cut or a chain is too deep (`Placer.order_free`):
        # the sites' calls alone first, all of them in turn only where that happened.
        placements = self._placements(self.placed_calls, sites_only=True)
        if placements is None:
            placements = self._placements(self.placed_calls, sites_only=False)
        assert placements is not None
        sites = self.sites
        for index, placement in placements:
            if placement not in (HOST, DEVICE):
                placement = UNKNOWN
            site = sites[index]
            sites[index] = _make_site((*site[:_PLACEMENT], placement, *site[_PLACEMENT + 1 :]))

    def _placements(
        self, calls: list[tuple[int, ast.Call]], sites_only: bool
    ) -> list[tuple[int, str]] | None:
        """Each site's index with where its call runs; None when placing only the sites'
        calls may give other answers than placing every call in turn."""
        placer = Placer(self.model, lambda node: self.chain_qualnames.get(id(node)))
        placer.default_device = any(
            q == "torch.set_default_device" for q in self.call_qualnames.values()
        )
        placements: list[tuple[int, str]] = []
        skipped = False
        for index, call in calls:
            if index == _NO_SITE:
                skipped = skipped or sites_only
                if not sites_only:
                    placer.runs_on(call)
                continue
            placements.append((index, placer.runs_on(call)))
            if skipped and not placer.order_free:
                return None  # as it would be at the end: neither is ever undone
        if skipped and not placer.order_free:
            return None
        return placements


def find_sites(source: str, tree: ast.Module | None = None) -> list[Site]:
    """All sites of a module, in source order. Raises SyntaxError for code that does not parse."""
    return find_module_sites(source, tree)[0]


def find_module_sites(
    source: str,
    tree: ast.Module | None = None,
    compiled_from: dict[str, str] | None = None,
    methods: Callable[[str], bool] | None = None,
) -> tuple[list[Site], tuple[Imported, ...]]:
    """`find_sites`, with the regions other modules compile (`compiled_from`: name -> where)
    marked, and what this module's compiles reach in other modules. `methods`: the method
    names worth a site (a scan's classification ignores the rest); None: every one."""
    found = scan_sites(source, tree, compiled_from, methods)
    return found.sites, found.imported


class ScanSites(NamedTuple):
    sites: list[Site]
    imported: tuple[Imported, ...]
    # The calls to torch APIs the API map lacks, left without a site: (the span their site
    # would have had, the API), in order (`classify_sites` counts them in their turn).
    unmapped: list[tuple[Span, str]]
    refers_to_torch: bool  # a reference to torch was left without a site


def scan_sites(
    source: str,
    tree: ast.Module | None = None,
    compiled_from: dict[str, str] | None = None,
    methods: Callable[[str], bool] | None = None,
    references: Callable[[str], str] | None = None,
) -> ScanSites:
    """`find_module_sites`, with `references`: what a reference to a torch API comes to
    (REPORTED, UNREPORTED, UNMAPPED; `classify.reference_verdict`); only the reported ones get
    a site, the unmapped calls are counted. None: every reference gets a site."""
    if tree is None:
        tree = ast.parse(source)
    finder = _SiteFinder(source, tree, methods, references)
    finder.find_references()
    finder.find_imports()
    finder.find_chained_methods()
    finder.find_idioms()
    finder.place_calls()
    finder.mark_compiled(compiled_from or {})
    ordered = sorted(finder.sites, key=lambda s: (s.line, s.col, s.end_line, s.end_col, s.kind))
    unmapped = sorted(finder.unmapped)
    return ScanSites(ordered, finder.imported, unmapped, finder.refers_to_torch)
