"""`neuron-migrate demo`: scan, rewrite, run and verify a bundled sample project."""

from __future__ import annotations

import typer

from neuron_migrate.resources import DEFAULT_PROJECT


def register(app: typer.Typer) -> None:
    app.command(name="demo")(demo)


def demo(
    project: str = typer.Option(
        DEFAULT_PROJECT,
        "--project",
        "-p",
        help="Sample project: mlp_single, ddp_spawn, transformer_modern, mixed_status.",
    ),
    steps: int = typer.Option(5, "--steps", help="Training steps for the run stage."),
    target: str | None = typer.Option(None, "--target", "-t", help="torch-neuronx version."),
    keep: bool = typer.Option(False, "--keep", help="Keep the migrated copy and print where."),
) -> None:
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
    raise typer.Exit(0 if ran_as_expected else 1)
