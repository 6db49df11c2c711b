"""A help page drawn with rich: the usage line, the description, and panels of rows (names,
metavar, help), as `--help` shows them for every command.

No typer here: `neuron-migrate --help` draws the root page from `commands` alone, without
building the application (typer and its click were about half of that command's time).
"""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING

from neuron_migrate.cli.commands import COMMANDS, DESCRIPTION, PROG, ROOT_OPTIONS, ROOT_USAGE

if TYPE_CHECKING:
    from rich.console import RenderableType

Row = tuple[str, str, str]  # names, metavar, help


def print_page(
    path: str, usage: str, description: str, panels: list[tuple[str, list[Row]]]
) -> None:
    """Print the page of the command `path` (`neuron-migrate scan`). Help texts are printed as
    written: no markup is read in them (`[tool.x]` stays)."""
    from rich.console import Console, Group
    from rich.padding import Padding
    from rich.text import Text

    parts: list[RenderableType] = [
        Text.assemble(("Usage: ", "yellow"), (path, "bold"), " " + usage)
    ]
    if description:
        parts.append(Padding(Text(inspect.cleandoc(description)), (1, 0, 0, 1)))
    parts += [_panel(title, rows) for title, rows in panels if rows]
    Console(highlight=False).print(Group(*parts))


def print_root_help() -> None:
    """The page of `neuron-migrate --help`."""
    commands = [(name, "", line) for name, line in COMMANDS.items()]
    print_page(
        PROG, ROOT_USAGE, DESCRIPTION, [("Options", list(ROOT_OPTIONS)), ("Commands", commands)]
    )


def _panel(title: str, rows: list[Row]) -> RenderableType:
    from rich.panel import Panel
    from rich.table import Table
    from rich.text import Text

    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold cyan", no_wrap=True)
    table.add_column(style="yellow", no_wrap=True)
    table.add_column()
    for names, takes, help_text in rows:
        table.add_row(names, takes, Text(help_text))  # a str cell would be read as markup
    return Panel(table, title=title, title_align="left", border_style="dim")
