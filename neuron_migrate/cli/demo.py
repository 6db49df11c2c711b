"""`neuron-migrate demo`: scan, rewrite, run and verify a bundled sample project."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from neuron_migrate.cli.commands import add_command
from neuron_migrate.resources import DEFAULT_PROJECT

if TYPE_CHECKING:
    from neuron_migrate.cli.commands import Commands


def register(commands: Commands) -> None:
    parser = add_command(commands, "demo", demo)
    parser.add_argument(
        "-p",
        "--project",
        metavar="NAME",
        default=DEFAULT_PROJECT,
        help="Sample project: mlp_single, ddp_spawn, transformer_modern, mixed_status "
        f"(default: {DEFAULT_PROJECT}).",
    )
    parser.add_argument(
        "--steps",
        metavar="N",
        type=int,
        default=5,
        help="Training steps for the run stage (default: 5).",
    )
    parser.add_argument("-t", "--target", metavar="VERSION", help="torch-neuronx version.")
    parser.add_argument(
        "--keep", action="store_true", help="Keep the migrated copy and print where."
    )


def demo(args: argparse.Namespace) -> int:
    """Show the four stages on a copy of a bundled sample project (needs the runtime extra).

    The run stage executes the migrated sample's train.py on the simulated device.
    """
    from rich.console import Console

    from neuron_migrate.demo import run_demo

    outcome = run_demo(
        Console(), project=args.project, steps=args.steps, target=args.target, keep=args.keep
    )
    expected_failure = args.project == "mixed_status"  # it stops on an unsupported namespace
    ran_as_expected = (
        (outcome.run_exit_code != 0) if expected_failure else outcome.run_exit_code == 0
    )
    return 0 if ran_as_expected else 1
