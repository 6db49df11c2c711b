"""`neuron-migrate demo`: scan, rewrite, run and verify a bundled sample project."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

from neuron_migrate.cli.options import option
from neuron_migrate.resources import DEFAULT_PROJECT

if TYPE_CHECKING:
    import typer


def register(app: typer.Typer) -> None:
    app.command("demo")(demo)


def demo(
    project: Annotated[
        str,
        option(
            "-p",
            "--project",
            metavar="NAME",
            help="Sample project: mlp_single, ddp_spawn, transformer_modern, mixed_status "
            f"(default: {DEFAULT_PROJECT}).",
        ),
    ] = DEFAULT_PROJECT,
    steps: Annotated[
        int, option("--steps", metavar="N", help="Training steps for the run stage (default: 5).")
    ] = 5,
    target: Annotated[
        str | None, option("-t", "--target", metavar="VERSION", help="torch-neuronx version.")
    ] = None,
    keep: Annotated[bool, option("--keep", help="Keep the migrated copy and print where.")] = False,
) -> int:
    """Show the four stages on a copy of a bundled sample project (needs the runtime extra).

    The run stage executes the migrated sample's train.py on the simulated device.
    """
    from rich.console import Console

    from neuron_migrate.demo import run_demo

    outcome = run_demo(Console(), project=project, steps=steps, target=target, keep=keep)
    expected_failure = project == "mixed_status"  # it stops on an unsupported namespace
    ran_as_expected = (
        (outcome.run_exit_code != 0) if expected_failure else outcome.run_exit_code == 0
    )
    return 0 if ran_as_expected else 1
