"""The `neuron-migrate` command line: parse options, call the API, render, exit code.

Exit codes: 0 clean / gate passed, 1 gate failed (or `rewrite --check` would change files),
2 usage, configuration or internal error.
"""

from __future__ import annotations

import importlib
import sys

import typer

from neuron_migrate import __version__
from neuron_migrate.errors import NeuronMigrateError

app = typer.Typer(
    name="neuron-migrate",
    help="Move PyTorch code from torch_xla to the native TorchNeuron `neuron` device.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

# Each command group lives in its own module with a `register(app)` function.
_COMMAND_MODULES = ("scan", "rewrite", "run", "matrix", "rules", "verify", "demo", "report")


def _version(value: bool) -> None:
    if value:
        print(__version__)
        raise typer.Exit()


@app.callback()
def _main(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """Scan, rewrite, run and verify PyTorch code for the native `neuron` device."""


for _name in _COMMAND_MODULES:
    try:
        _module = importlib.import_module(f"neuron_migrate.cli.{_name}")
    except ModuleNotFoundError as exc:
        if exc.name != f"neuron_migrate.cli.{_name}":
            raise
        continue
    _module.register(app)


def _say(message: str) -> None:
    from rich.console import Console  # only when there is something to say

    Console(stderr=True).print(message, highlight=False, soft_wrap=True)


def main() -> None:
    try:
        # Outside standalone mode click returns typer.Exit's code instead of raising it.
        code = app(standalone_mode=False)
    except NeuronMigrateError as exc:
        _say(f"[bold red]error:[/] {exc}")
        sys.exit(2)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except typer.Abort:
        _say("[red]aborted[/]")
        sys.exit(2)
    except KeyboardInterrupt:
        sys.exit(130)
    except Exception as exc:
        # Usage errors (an unknown option, a missing argument) arrive here outside standalone
        # mode. They are click exceptions, which typer may vendor: recognise them by shape.
        show = getattr(exc, "show", None)
        if callable(show) and isinstance(getattr(exc, "exit_code", None), int):
            show()
            sys.exit(2)
        raise
    sys.exit(code if isinstance(code, int) else 0)
