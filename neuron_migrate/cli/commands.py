"""How a command module adds its commands to the parser, and the option types they share."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from neuron_migrate.errors import UsageError

if TYPE_CHECKING:
    Commands = argparse._SubParsersAction[argparse.ArgumentParser]

# A command: the parsed options in, the exit code out.
Handler = Callable[[argparse.Namespace], int]

REPEATABLE = "Repeatable or comma-separated."


def _help_width() -> int:
    """What argparse's formatter makes of `shutil.get_terminal_size()`."""
    try:
        columns = int(os.environ.get("COLUMNS", ""))
    except ValueError:
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 0
    return (columns or 80) - 2


class HelpFormatter(argparse.HelpFormatter):
    """argparse's formatter, given the width it would find itself: it makes one for every
    option added, and finding the width imports `shutil` (with the compression modules), a
    millisecond or two of every run, help or not."""

    def __init__(self, prog: str) -> None:
        super().__init__(prog, width=_help_width())


class DescriptionAsWritten(argparse.RawDescriptionHelpFormatter, HelpFormatter):
    """A command's description printed as written, lines and paragraphs kept."""


def cleandoc(doc: str) -> str:
    """What `inspect.cleandoc` makes of a docstring, without importing `inspect` (a few ms of
    every run): the first line stripped, the common indent of the others removed, and blank
    lines at either end dropped."""
    lines = doc.expandtabs().split("\n")
    indents = [len(line) - len(line.lstrip()) for line in lines[1:] if line.lstrip()]
    margin = min(indents, default=0)
    lines = [lines[0].lstrip()] + [line[margin:] for line in lines[1:]]
    while lines and not lines[-1]:
        lines.pop()
    while lines and not lines[0]:
        lines.pop(0)
    return "\n".join(lines)


def add_command(commands: Commands, name: str, handler: Handler) -> argparse.ArgumentParser:
    """A command whose help is its handler's docstring: the first line in the list of
    commands, all of it under `COMMAND --help`."""
    doc = cleandoc(handler.__doc__ or "")
    parser = commands.add_parser(
        name,
        help=doc.split("\n", 1)[0],
        description=doc,
        formatter_class=DescriptionAsWritten,
    )
    parser.set_defaults(handler=handler)
    return parser


def add_group(commands: Commands, name: str, summary: str) -> Commands:
    """A command group (`matrix list`, `rules explain`); run bare, it prints its help."""
    parser = commands.add_parser(
        name, help=summary, description=summary, formatter_class=HelpFormatter
    )
    parser.set_defaults(group_parser=parser)
    return parser.add_subparsers(title="commands", metavar="COMMAND")


def add_repeatable(parser: argparse.ArgumentParser, *flags: str, help: str) -> None:
    """An option given any number of times, each value possibly comma-separated."""
    parser.add_argument(*flags, action="append", default=[], metavar="VALUE", help=help)


def add_report_options(parser: argparse.ArgumentParser, formats: tuple[str, ...]) -> None:
    """`-f/--format` (checked by `checked_format`, which names the choices) and `-o/--output`."""
    parser.add_argument(
        "-f",
        "--format",
        dest="output_format",
        metavar="FORMAT",
        default=formats[0],
        help=f"Report format: {', '.join(formats)} (default: {formats[0]}).",
    )
    parser.add_argument("-o", "--output", metavar="FILE", type=Path, help="Write the report here.")


def checked_format(value: str, formats: tuple[str, ...]) -> str:
    if value not in formats:
        raise UsageError(f"--format: unknown format {value!r}; choose from {', '.join(formats)}")
    return value


def split_values(values: list[str]) -> tuple[str, ...]:
    return tuple(part.strip() for value in values for part in value.split(",") if part.strip())
