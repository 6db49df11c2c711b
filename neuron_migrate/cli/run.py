"""`neuron-migrate run`: a thin shell over `neuron_migrate.verify.runner`."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

from neuron_migrate.cli.options import (
    argument,
    matrix_option,
    option,
    target_option,
    target_or_matrix,
)

if TYPE_CHECKING:
    import typer

# Everything from the first argument that is not one of `run`'s options is the command, its
# own options included; a `--` before it is optional (click drops it).
_PASS_THROUGH = {"allow_interspersed_args": False, "ignore_unknown_options": True}


def register(app: typer.Typer) -> None:
    app.command("run", context_settings=_PASS_THROUGH, options_metavar="[OPTIONS] [--] CMD ...")(
        run
    )


def run(
    command: Annotated[list[str] | None, argument("CMD", "The command to run.")] = None,
    target: Annotated[
        str | None, target_option("torch-neuronx version to simulate (default: newest).")
    ] = None,
    matrix: Annotated[Path | None, matrix_option()] = None,
    trace: Annotated[
        Path | None,
        option("--trace", metavar="FILE", help="Write the merged run trace (JSON) here."),
    ] = None,
    quiet: Annotated[bool, option("-q", "--quiet", help="No summary on stderr.")] = False,
) -> int:
    """Run a command on a simulated `neuron` device: `run [OPTIONS] -- CMD ...`.

    CMD is a Python script, `python -m module`, `pytest ...` or `torchrun ... script.py`. Every
    Python process it starts gets the device; each op is decided by the compatibility matrix
    (native runs, cpu_fallback runs and warns, unsupported raises). This executes the code.
    Exits with the command's own exit code; the trace is written even when the command fails.
    """
    from neuron_migrate.verify import runner  # subprocess and tempfile load only for `run`

    chosen = target_or_matrix(target, matrix)  # a broken matrix file stops here, one line
    words = list(command or ())
    note = runner.interpreter_note(words)
    if note is not None and not quiet:
        print(note, file=sys.stderr)
    result = runner.run(words, chosen)
    if trace is not None:
        runner.write_trace(result.trace, trace)
    if not quiet:
        lines = runner.summary_lines(result.trace)
        if trace is not None:
            lines.append(f"  trace written to {trace}")
        print("\n".join(lines), file=sys.stderr)
    return result.exit_code
