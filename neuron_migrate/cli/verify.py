"""`neuron-migrate verify`: the scan confirmed by a run on the simulated device."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from neuron_migrate.cli.commands import (
    add_command,
    add_repeatable,
    add_report_options,
    checked_format,
)
from neuron_migrate.errors import UsageError
from neuron_migrate.report.output import write_output

if TYPE_CHECKING:
    from neuron_migrate.cli.commands import Commands

FORMATS = ("terminal", "json", "markdown")


def register(commands: Commands) -> None:
    parser = add_command(commands, "verify", verify_command)
    parser.usage = "%(prog)s [-h] PATH [OPTIONS] -- CMD ..."
    parser.add_argument("path", type=Path, help="The (migrated) code to scan.")
    parser.add_argument("-t", "--target", metavar="VERSION", help="torch-neuronx version.")
    add_report_options(parser, FORMATS)
    add_repeatable(
        parser,
        "--fail-on",
        help="As in scan, plus `contradiction`. Repeatable or comma-separated.",
    )
    parser.add_argument("-j", "--jobs", metavar="N", type=int, help="Scan worker processes.")
    parser.add_argument("--show-native", action="store_true", help="List native findings too.")
    parser.set_defaults(command=[])  # what follows `--`, cut off before parsing


def verify_command(args: argparse.Namespace) -> int:
    """Scan PATH, run `-- CMD ...` on the simulated device, and reconcile the two.

    Each op, dtype and namespace finding is confirmed, contradicted (with the reason) or not
    exercised by the run; ops that ran but that no finding predicted are listed with their source
    line. This executes CMD.
    """
    from rich.console import Console

    from neuron_migrate.report.verify_report import (
        render_verify_json,
        render_verify_markdown,
        render_verify_terminal,
    )
    from neuron_migrate.verify.reconcile import gate_passed, parse_verify_fail_on, verify

    output_format, output = args.output_format, args.output
    checked_format(output_format, FORMATS)
    if not args.command:
        raise UsageError("verify: give the command to run after `--`, e.g. `-- python train.py`")
    scan_fail_on, on_contradiction = parse_verify_fail_on(args.fail_on)
    report = verify(
        args.path, list(args.command), target=args.target, fail_on=scan_fail_on, jobs=args.jobs
    )
    if output_format == "json":
        write_output(render_verify_json(report), output)
    elif output_format == "markdown":
        write_output(render_verify_markdown(report), output)
    elif output is not None:
        with output.open("w", encoding="utf-8") as handle:
            render_verify_terminal(
                report, Console(file=handle, width=100), show_native=args.show_native
            )
    else:
        render_verify_terminal(report, Console(), show_native=args.show_native)
    return 0 if gate_passed(report, on_contradiction) else 1
