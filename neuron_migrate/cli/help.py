"""`--help` of a typer command: its arguments, options and commands, read from click, drawn
by `help_page` (the usage line, the command's description, and a panel of each).

typer draws the same panels with `typer.rich_utils`, which imports rich's Markdown (and with it
markdown-it), Syntax (pygments) and Traceback at once: 250 ms of CPU on the machine where
plain `--help` took 95 ms, against a target of 150 ms. This draws them with rich's Table and
Panel alone. Help texts are printed as written: no markup is read in them (`[tool.x]` stays).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from typer.core import TyperCommand, TyperGroup

from neuron_migrate.cli.help_page import print_page

if TYPE_CHECKING:
    from typer import _click as click


class Command(TyperCommand):
    def format_help(self, ctx: Any, formatter: Any) -> None:
        print_help(self, ctx)


class Group(TyperGroup):
    def format_help(self, ctx: Any, formatter: Any) -> None:
        print_help(self, ctx)


def print_help(command: click.Command, ctx: click.Context) -> None:
    arguments, options = [], []
    for param in command.get_params(ctx):
        if getattr(param, "hidden", False):
            continue
        help_text = getattr(param, "help", None) or ""
        if param.param_type_name == "argument":
            arguments.append((_metavar(param), "", help_text))
        else:
            # Short names first: click builds the help option's names from a set.
            names = ", ".join(sorted([*param.opts, *param.secondary_opts], key=_is_long))
            takes = "" if getattr(param, "is_flag", False) else (param.metavar or "TEXT")
            options.append((names, takes, help_text))
    panels = [("Arguments", arguments), ("Options", options)]
    if isinstance(command, TyperGroup):
        rows = []
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            if sub is not None and not sub.hidden:
                rows.append((name, "", sub.get_short_help_str(limit=200)))
        panels.append(("Commands", rows))
    print_page(ctx.command_path, _usage(command), command.help or "", panels)


def _is_long(name: str) -> bool:
    return name.startswith("--")


def _metavar(argument: click.Parameter) -> str:
    name = argument.metavar or (argument.name or "").upper()  # `options.argument` names it
    return name if argument.nargs == 1 else f"{name}..."


def _usage(command: click.Command) -> str:
    """What follows the command's name; a command whose line click cannot describe (`verify
    PATH [OPTIONS] -- CMD ...`) gives all of it as its `options_metavar`."""
    if command.options_metavar not in (None, "[OPTIONS]"):
        return command.options_metavar
    words = ["[OPTIONS]"]
    for param in command.params:
        if param.param_type_name == "argument":
            words.append(_metavar(param) if param.required else f"[{_metavar(param)}]")
    if isinstance(command, TyperGroup):
        words.append("COMMAND [ARGS]...")
    return " ".join(words)
