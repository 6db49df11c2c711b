"""`neuron-migrate run`: a thin shell over `neuron_migrate.verify.runner`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from neuron_migrate.cli.commands import add_command

if TYPE_CHECKING:
    from neuron_migrate.cli.commands import Commands


def register(commands: Commands) -> None:
    parser = add_command(commands, "run", run)
    parser.usage = "%(prog)s [-h] [-t VERSION] [--trace FILE] [-q] [--] CMD ..."
    parser.add_argument(
        "-t",
        "--target",
        metavar="VERSION",
        help="torch-neuronx version to simulate (default: newest).",
    )
    parser.add_argument(
        "--trace", metavar="FILE", type=Path, help="Write the merged run trace (JSON) here."
    )
    parser.add_argument("-q", "--quiet", action="store_true", help="No summary on stderr.")
    # Everything from the first argument that is not one of the options above is the command,
    # its own options included; a `--` before it is optional.
    parser.add_argument("command", nargs=argparse.REMAINDER, help="The command to run.")


def command_after_dashes(words: list[str]) -> list[str]:
    return words[1:] if words[:1] == ["--"] else words


def run(args: argparse.Namespace) -> int:
    """Run a command on a simulated `neuron` device: `run [OPTIONS] -- CMD ...`.

    CMD is a Python script, `python -m module`, `pytest ...` or `torchrun ... script.py`. Every
    Python process it starts gets the device; each op is decided by the compatibility matrix
    (native runs, cpu_fallback runs and warns, unsupported raises). This executes the code.
    Exits with the command's own exit code; the trace is written even when the command fails.
    """
    from neuron_migrate.verify import runner  # subprocess and tempfile load only for `run`

    result = runner.run(command_after_dashes(args.command), args.target)
    if args.trace is not None:
        runner.write_trace(result.trace, args.trace)
    if not args.quiet:
        lines = runner.summary_lines(result.trace)
        if args.trace is not None:
            lines.append(f"  trace written to {args.trace}")
        print("\n".join(lines), file=sys.stderr)
    return result.exit_code
