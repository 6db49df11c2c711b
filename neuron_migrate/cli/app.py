"""The typer application: the root command, the command groups, and how a command line runs.

Each command group lives in its own module (`neuron_migrate.cli.scan`, `...matrix`) with a
`register(app)` function. The root lists the commands from `COMMANDS` and imports a command's
module (and turns it into a click command) only when that command is looked up: to run it, to
draw its help, or to complete its options. `neuron-migrate --help` imports none of them.

Errors keep the project's form whoever finds them, typer or a command: one red line on stderr,
`error: ...`, and exit code 2.
"""

from __future__ import annotations

import contextlib
import importlib
import sys
from typing import Annotated, Any

import typer

from neuron_migrate import __version__
from neuron_migrate.cli.commands import COMMANDS, DESCRIPTION, PROG, VERSION_HELP
from neuron_migrate.cli.help import Command, Group
from neuron_migrate.cli.help_page import print_root_help

CONTEXT_SETTINGS: dict[str, Any] = {"help_option_names": ["-h", "--help"]}


class App(typer.Typer):
    """A typer application whose commands and groups draw their help with `cli.help`."""

    def __init__(self, **settings: Any) -> None:
        super().__init__(cls=Group, **settings)

    def command(self, name: str | None = None, *, cls: Any = None, **settings: Any) -> Any:
        return super().command(name, cls=cls or Command, **settings)


def new_group(name: str) -> App:
    """The command group `name` (`matrix`, `rules`), helped by its line in `COMMANDS`; run
    without one of its commands, it prints its help on stderr and exits 2."""
    group = App(
        name=name,
        help=COMMANDS[name],
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
            help=VERSION_HELP,
            is_eager=True,
            callback=_print_version,
        ),
    ] = False,
) -> None:
    help_when_bare(ctx)


class Root(Group):
    """The root command: knows its commands by name and builds each on first look-up."""

    def list_commands(self, ctx: Any) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: Any, name: str) -> Any:
        if name not in self.commands and name in COMMANDS:
            self.add_command(load_command(name), name)
        return self.commands.get(name)

    def format_help(self, ctx: Any, formatter: Any) -> None:
        print_root_help()  # the page `neuron-migrate --help` draws without typer: no command loads


def load_command(name: str) -> Any:
    """The click command `name`, from its module in `neuron_migrate.cli`."""
    from typer.main import get_group

    holder = App()
    importlib.import_module(f"neuron_migrate.cli.{name}").register(holder)
    command = get_group(holder).commands[name]
    command.short_help = COMMANDS[name]
    return command


def build_root() -> Root:
    """The root click command, with none of its commands loaded yet."""
    from typer.main import get_command

    app = App(
        name=PROG,
        help=DESCRIPTION,
        invoke_without_command=True,
        context_settings=CONTEXT_SETTINGS,
        pretty_exceptions_enable=False,
    )
    app.callback(cls=Root)(_root)
    root = get_command(app)
    assert isinstance(root, Root)
    return root


def run(words: list[str], obj: dict[str, Any] | None = None) -> int:
    """The exit code of `neuron-migrate WORDS`; a command's own errors propagate."""
    command = build_root()
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
