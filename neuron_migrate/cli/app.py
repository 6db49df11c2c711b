"""The typer application: the root command, the command groups, and how a command line runs.

Each command group lives in its own module (`neuron_migrate.cli.scan`, `...matrix`) with a
`register(app)` function; only the module of the command named on the line is imported (and
turned into a click command), or all of them for help and shell completion.

Errors keep the project's form whoever finds them, typer or a command: one red line on stderr,
`error: ...`, and exit code 2.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import sys
from typing import Annotated, Any

import typer

from neuron_migrate import __version__
from neuron_migrate.cli.help import Command, Group

PROG = "neuron-migrate"
COMPLETE_VAR = "_NEURON_MIGRATE_COMPLETE"  # what the shell's completion function sets

COMMAND_MODULES = (
    "scan",
    "rewrite",
    "run",
    "matrix",
    "rules",
    "verify",
    "demo",
    "report",
    "server",
)

CONTEXT_SETTINGS: dict[str, Any] = {"help_option_names": ["-h", "--help"]}


class App(typer.Typer):
    """A typer application whose commands and groups draw their help with `cli.help`."""

    def __init__(self, **settings: Any) -> None:
        super().__init__(cls=Group, **settings)

    def command(self, name: str | None = None, *, cls: Any = None, **settings: Any) -> Any:
        return super().command(name, cls=cls or Command, **settings)


def new_group(name: str, help: str) -> App:
    """A command group (`matrix`, `rules`); run without one of its commands, it prints its
    help on stderr and exits 2."""
    group = App(
        name=name,
        help=help,
        invoke_without_command=True,
        add_completion=False,
        context_settings=CONTEXT_SETTINGS,
    )
    group.callback()(help_when_bare)
    return group


def help_when_bare(ctx: typer.Context) -> None:
    if ctx.invoked_subcommand is not None or ctx.resilient_parsing:
        return
    with contextlib.redirect_stdout(sys.stderr):  # rich prints the help to sys.stdout
        text = ctx.get_help()
    if text:
        print(text, file=sys.stderr)
    raise typer.Exit(2)


def _print_version(value: bool) -> None:
    if value:
        print(__version__)
        raise typer.Exit(0)


def _root(
    ctx: typer.Context,
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            help="Print the version and exit.",
            is_eager=True,
            callback=_print_version,
        ),
    ] = False,
) -> None:
    help_when_bare(ctx)


def build_app(command: str | None = None) -> App:
    """The application with every command, or with `command` alone (a command runs sooner
    when the other modules are not imported)."""
    app = App(
        name=PROG,
        help="Move PyTorch code from torch_xla to the native TorchNeuron `neuron` device.",
        invoke_without_command=True,
        context_settings=CONTEXT_SETTINGS,
        pretty_exceptions_enable=False,
    )
    app.callback()(_root)
    only = command in COMMAND_MODULES and COMPLETE_VAR not in os.environ
    for name in (command,) if only else COMMAND_MODULES:
        importlib.import_module(f"neuron_migrate.cli.{name}").register(app)
    return app


def run(words: list[str], obj: dict[str, Any] | None = None) -> int:
    """The exit code of `neuron-migrate WORDS`; a command's own errors propagate."""
    from typer.main import get_command

    command = get_command(build_app(words[0] if words else None))
    try:
        code = command.main(args=words, prog_name=PROG, standalone_mode=False, obj=obj)
    except typer.TyperException as exc:  # click's usage and parameter errors
        say_error(_with_hint(exc))
        return 2
    except typer.Abort:
        return 1
    return code if isinstance(code, int) else 0


def _with_hint(exc: typer.TyperException) -> str:
    message = exc.format_message().rstrip(".")
    ctx = getattr(exc, "ctx", None)
    if ctx is not None:
        message += f" (see `{ctx.command_path} --help`)"
    return message


def say_error(message: str) -> None:
    """One red line on stderr: `error: MESSAGE`."""
    from rich.console import Console
    from rich.markup import escape

    Console(stderr=True).print(
        f"[bold red]error:[/] {escape(message)}", highlight=False, soft_wrap=True
    )
