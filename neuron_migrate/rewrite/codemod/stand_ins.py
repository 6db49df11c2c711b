"""A torch_xla import kept only for code left for a person, made harmless where torch_xla is
missing: the program starts, and that code raises when it runs, naming its rule and advice.

    # TODO(neuron-migrate NM100): this torch_xla import is still used by code marked below; ...
    try:
        import torch_xla.core.xla_model as xm
    except ImportError:
        xm = NotMigrated("NM116: call torch.neuron.synchronize(), then read ...")

`NotMigrated` is a helper class added to the file (`helpers.py`). The `try` is the import pass's
own shape: a later run finds it (`is_stand_in_try`), settles the import inside as it settles an
unguarded one, and writes the handler again for the names still kept, or drops the `try` with
its import. The scan reads the handler's assignments as placeholders (`scopes`), as it reads
`xm = None`.
"""

from collections.abc import Iterable, Sequence
from typing import NamedTuple

import libcst as cst

from neuron_migrate.rewrite.codemod.collapse import real_statements
from neuron_migrate.rewrite.codemod.names import dotted
from neuron_migrate.rewrite.codemod.skeleton import OpaqueStatement
from neuron_migrate.scan.analyzer.availability import STAND_IN

__all__ = ["STAND_IN", "Bound", "bound_names", "is_stand_in_try", "stand_in_try", "with_handler"]


def _torch_xla(module: str) -> bool:
    return module == "torch_xla" or module.startswith("torch_xla.")


class Bound(NamedTuple):
    local: str  # the name bound
    names: str  # what it names: `torch_xla` for `import torch_xla.core.xla_model`
    imported: str  # what is imported: `torch_xla.core.xla_model`, `torch_xla.runtime.world_size`


def bound_names(line: cst.BaseStatement) -> list[Bound] | None:
    """The names a line of torch_xla imports binds; None for a line that imports anything
    else, or a star."""
    out: list[Bound] = []
    if isinstance(line, OpaqueStatement):
        for imported in line.cut.imports:
            module = imported.module
            if not _torch_xla(module) or imported.name == "*":
                return None
            if imported.name is None:
                local = imported.local or module.partition(".")[0]
                out.append(Bound(local, module if imported.local else local, module))
            else:
                full = f"{module}.{imported.name}"
                out.append(Bound(imported.local or imported.name, full, full))
        return out or None
    for small in getattr(line, "body", ()):
        if isinstance(small, cst.Import):
            for alias in small.names:
                module = dotted(alias.name)
                if not _torch_xla(module):
                    return None
                if alias.asname is None:
                    out.append(Bound("torch_xla", "torch_xla", module))
                else:
                    out.append(Bound(alias.asname.name.value, module, module))  # type: ignore[union-attr]
        elif isinstance(small, cst.ImportFrom):
            if small.module is None or small.relative or isinstance(small.names, cst.ImportStar):
                return None
            module = dotted(small.module)
            if not _torch_xla(module):
                return None
            for alias in small.names:
                full = f"{module}.{dotted(alias.name)}"
                local = alias.asname.name.value if alias.asname else dotted(alias.name)  # type: ignore[union-attr]
                out.append(Bound(local, full, full))
        else:
            return None
    return out or None


def _handler_todos(handler: cst.ExceptHandler, stand_in: str) -> list[tuple[str, list[str]]] | None:
    """What a stand-in handler binds: each name with the texts it gives the stand-in; None when
    the handler is not one."""
    kind = handler.type
    if handler.name is not None or not isinstance(kind, cst.Name) or kind.value != "ImportError":
        return None
    todos = []
    body = handler.body.body if isinstance(handler.body, cst.IndentedBlock) else ()
    # the handler holds no torch_xla: its lines are opaque to the codemod
    for stmt in (line for opaque in body for line in real_statements(opaque)):
        small = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) else None
        if not (
            isinstance(small, cst.Assign)
            and len(small.targets) == 1
            and isinstance(small.targets[0].target, cst.Name)
            and isinstance(small.value, cst.Call)
            and isinstance(small.value.func, cst.Name)
            and small.value.func.value == stand_in
        ):
            return None
        todos.append((small.targets[0].target.value, [_text(arg) for arg in small.value.args]))
    return todos or None


def _text(arg: cst.Arg) -> str:
    """A plain string argument's text ("" for anything else: a handler a person edited)."""
    value = arg.value
    if arg.keyword is None and not arg.star and isinstance(value, cst.SimpleString):
        text = value.evaluated_value
        return text if isinstance(text, str) else ""
    return ""


def is_stand_in_try(node: cst.Try, stand_in: str) -> bool:
    """The import pass's own `try`: one `except ImportError:` that binds each name to a
    stand-in, no `else:` or `finally:`."""
    return (
        len(node.handlers) == 1
        and node.orelse is None
        and node.finalbody is None
        and _handler_todos(node.handlers[0], stand_in) is not None
    )


def _handler(stand_in: str, todos: Iterable[tuple[str, Sequence[str]]]) -> cst.ExceptHandler:
    lines = [
        cst.SimpleStatementLine(
            body=[
                cst.Assign(
                    targets=[cst.AssignTarget(target=cst.Name(name))],
                    value=cst.Call(
                        func=cst.Name(stand_in),
                        args=[cst.Arg(cst.SimpleString(_quoted(text))) for text in texts],
                    ),
                )
            ]
        )
        for name, texts in todos
    ]
    return cst.ExceptHandler(body=cst.IndentedBlock(body=lines), type=cst.Name("ImportError"))


def _quoted(text: str) -> str:
    """`text` as a string literal, in double quotes unless it holds some and no single ones."""
    quote = "'" if '"' in text and "'" not in text else '"'
    return quote + text.replace("\\", "\\\\").replace(quote, "\\" + quote) + quote


def stand_in_try(
    line: cst.BaseStatement, stand_in: str, todos: Iterable[tuple[str, Sequence[str]]]
) -> cst.Try:
    """`line` (a line of torch_xla imports) in a `try` whose handler binds each of its names
    to a stand-in with its `todos` ("NM116: advice"); the line's leading lines go above it."""
    inner = line.with_changes(leading_lines=[])
    return cst.Try(
        body=cst.IndentedBlock(body=[inner]),
        handlers=[_handler(stand_in, todos)],
        leading_lines=getattr(line, "leading_lines", ()),
    )


def with_handler(
    node: cst.Try, stand_in: str, todos: Iterable[tuple[str, Sequence[str]]]
) -> cst.Try:
    """A stand-in `try` with its handler written for `todos`; as it is (its layout kept) when
    it says that already."""
    todos = [(name, list(texts)) for name, texts in todos]
    old = node.handlers[0]
    if _handler_todos(old, stand_in) == todos:
        return node
    return node.with_changes(handlers=[old.with_changes(body=_handler(stand_in, todos).body)])
