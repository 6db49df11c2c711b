"""A torch_xla import kept only for code left for a person, made harmless where torch_xla is
missing: the program starts, and that code raises when it runs, naming its rule and advice.

    # TODO(neuron-migrate NM100): this torch_xla import is still used by code marked below; ...
    try:
        import torch_xla.core.xla_model as xm
    except ImportError:
        xm = NotMigrated(get_memory_info="NM116: call torch.neuron.synchronize(), then ...")

`NotMigrated` is a helper class added to the file (`helpers.py`). The `try` is the import pass's
own shape: a later run finds it (`is_stand_in_try`), settles the import inside as it settles an
unguarded one, and writes the handler again for the names still kept, or drops the `try` with
its import. The scan reads the handler's assignments as placeholders (`scopes`), as it reads
`xm = None`.
"""

from typing import NamedTuple

import libcst as cst

from neuron_migrate.rewrite.codemod.collapse import real_statements
from neuron_migrate.rewrite.codemod.names import dotted
from neuron_migrate.rewrite.codemod.skeleton import OpaqueStatement


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


# What a stand-in is given: per name, its arguments, (None, advice) for the name itself and
# (attribute, advice) for an attribute read from it: `xm = NotMigrated(mark_step="NM104: ...")`.
Todos = list[tuple[str, list[tuple[str | None, str]]]]


def _handler_todos(handler: cst.ExceptHandler, stand_in: str) -> Todos | None:
    """What a stand-in handler binds: each name with what it gives the stand-in; None when the
    handler is not one."""
    kind = handler.type
    if handler.name is not None or not isinstance(kind, cst.Name) or kind.value != "ImportError":
        return None
    todos: Todos = []
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
        todos.append((small.targets[0].target.value, [_argument(arg) for arg in small.value.args]))
    return todos or None


def _argument(arg: cst.Arg) -> tuple[str | None, str]:
    """A stand-in's argument: its keyword and text ("" for anything but a plain string: a
    handler a person edited, written again)."""
    keyword = arg.keyword.value if arg.keyword is not None else None
    value = arg.value
    if not arg.star and isinstance(value, cst.SimpleString):
        text = value.evaluated_value
        return keyword, text if isinstance(text, str) else ""
    return keyword, ""


def is_stand_in_try(node: cst.Try, stand_in: str) -> bool:
    """The import pass's own `try`: one `except ImportError:` that binds each name to a
    stand-in, no `else:` or `finally:`."""
    return (
        len(node.handlers) == 1
        and node.orelse is None
        and node.finalbody is None
        and _handler_todos(node.handlers[0], stand_in) is not None
    )


def _handler(stand_in: str, todos: Todos) -> cst.ExceptHandler:
    lines = [
        cst.SimpleStatementLine(
            body=[
                cst.Assign(
                    targets=[cst.AssignTarget(target=cst.Name(name))],
                    value=cst.Call(
                        func=cst.Name(stand_in),
                        args=[
                            cst.Arg(
                                cst.SimpleString(_quoted(text)),
                                keyword=cst.Name(keyword) if keyword else None,
                                equal=cst.AssignEqual(
                                    whitespace_before=cst.SimpleWhitespace(""),
                                    whitespace_after=cst.SimpleWhitespace(""),
                                )
                                if keyword
                                else cst.MaybeSentinel.DEFAULT,
                            )
                            for keyword, text in arguments
                        ],
                    ),
                )
            ]
        )
        for name, arguments in todos
    ]
    return cst.ExceptHandler(body=cst.IndentedBlock(body=lines), type=cst.Name("ImportError"))


def _quoted(text: str) -> str:
    """`text` as a string literal, in double quotes unless it holds some and no single ones."""
    quote = "'" if '"' in text and "'" not in text else '"'
    return quote + text.replace("\\", "\\\\").replace(quote, "\\" + quote) + quote


def stand_in_try(line: cst.BaseStatement, stand_in: str, todos: Todos) -> cst.Try:
    """`line` (a line of torch_xla imports) in a `try` whose handler binds each of its names
    to a stand-in with its `todos`; the line's leading lines go above it."""
    inner = line.with_changes(leading_lines=[])
    return cst.Try(
        body=cst.IndentedBlock(body=[inner]),
        handlers=[_handler(stand_in, todos)],
        leading_lines=getattr(line, "leading_lines", ()),
    )


def with_handler(node: cst.Try, stand_in: str, todos: Todos) -> cst.Try:
    """A stand-in `try` with its handler written for `todos`; as it is (its layout kept) when
    it says that already."""
    old = node.handlers[0]
    if _handler_todos(old, stand_in) == todos:
        return node
    return node.with_changes(handlers=[old.with_changes(body=_handler(stand_in, todos).body)])


def defines(statement: cst.BaseStatement, name: str) -> bool:
    """Whether a top-level statement is the definition of class `name`."""
    if isinstance(statement, cst.ClassDef):
        return statement.name.value == name
    headers = getattr(statement, "headers", None)  # an opaque compound statement
    return headers is not None and name in headers.binds
