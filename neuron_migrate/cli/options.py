"""What the command modules share: option declarations, value checks, the stderr console.

Each option's help says its default itself, so typer's `[default: ...]` is turned off (`option`).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from neuron_migrate.errors import UsageError

if TYPE_CHECKING:
    from rich.console import Console

REPEATABLE = "Repeatable or comma-separated."


def option(*names: str, help: str, metavar: str | None = None, **settings: Any) -> Any:
    """A `typer.Option` whose help text states its default where it has one."""
    return typer.Option(*names, help=help, metavar=metavar, show_default=False, **settings)


def repeatable(name: str, help: str, metavar: str = "VALUE") -> Any:
    """An option given any number of times (its values: `split_values`)."""
    return option(name, metavar=metavar, help=help)


def argument(metavar: str, help: str, **settings: Any) -> Any:
    """A `typer.Argument` named METAVAR in usage lines and errors."""
    return typer.Argument(help=help, metavar=metavar, show_default=False, **settings)


def target_option(help: str) -> Any:
    """`-t/--target VERSION`: a torch-neuronx version (a bundled matrix, or a prefix of one:
    the newest it names)."""
    return option("-t", "--target", metavar="VERSION", help=help)


def matrix_option() -> Any:
    """`--matrix FILE`: a matrix file (what `matrix import -o FILE` wrote) used instead of the
    bundled matrices."""
    return option(
        "--matrix",
        metavar="FILE",
        help="Use this matrix file (e.g. from `matrix import -o FILE`) instead of --target.",
    )


def target_or_matrix(target: str | None, matrix: Path | None) -> str | None:
    """What `--target` / `--matrix` choose: a version, a matrix file's target (it is loaded
    first, so a broken file is one error naming its field), or None (the project's, else the
    newest)."""
    if matrix is None:
        return target
    if target is not None:
        raise UsageError("--target and --matrix are exclusive: a version, or a matrix file")
    from neuron_migrate.matrix.loader import matrix_file_target

    return matrix_file_target(matrix)


def format_option(formats: tuple[str, ...]) -> Any:
    """`-f/--format`, the first of `formats` its default (checked by `checked_format`)."""
    return option(
        "-f",
        "--format",
        metavar="FORMAT",
        help=f"Report format: {', '.join(formats)} (default: {formats[0]}).",
    )


OutputOption = Annotated[
    Path | None, option("-o", "--output", metavar="FILE", help="Write the report here.")
]
ShowNativeOption = Annotated[bool, option("--show-native", help="List native op uses too.")]
NoCacheOption = Annotated[bool, option("--no-cache", help="Do not read or write the result cache.")]
CacheDirOption = Annotated[
    Path | None, option("--cache-dir", metavar="DIR", help="Where the result cache lives.")
]


def checked_choice(value: str, choices: tuple[str, ...], flag: str = "--format") -> str:
    if value not in choices:
        raise UsageError(f"{flag}: unknown value {value!r}; choose from {', '.join(choices)}")
    return value


def checked_format(value: str, formats: tuple[str, ...]) -> str:
    if value not in formats:
        raise UsageError(f"--format: unknown format {value!r}; choose from {', '.join(formats)}")
    return value


def checked_jobs(jobs: int | None) -> int | None:
    if jobs is not None and jobs < 1:
        raise UsageError("--jobs must be at least 1")
    return jobs


def split_values(values: list[str] | None, flag: str | None = None) -> tuple[str, ...]:
    """The values of a repeatable option, each possibly comma-separated. With `flag`, an empty
    value is an error naming it (an empty `--fail-on` turned the gate back to its default
    unseen)."""
    if flag is not None and any(not value.strip() for value in values or ()):
        raise UsageError(f"{flag}: empty value")
    return tuple(
        part.strip() for value in values or () for part in value.split(",") if part.strip()
    )


# Piped (not a terminal), rich would lay tables out in 80 columns and cut what does not fit
# (`xm.get_xla_supported_de…`): data for another program or a file is never cut, so a table
# gets the width of its widest row.
PIPED_WIDTH = 100_000


def data_console(**settings: Any) -> Console:
    """The console a command prints its tables and data on (stdout): the terminal's width on
    a terminal; piped, as wide as the data, so that nothing is truncated or wrapped."""
    import sys

    from rich.console import Console

    if not sys.stdout.isatty():
        settings.setdefault("width", PIPED_WIDTH)
    return Console(**settings)


def stderr_console() -> Console:
    from rich.console import Console

    return Console(stderr=True)
