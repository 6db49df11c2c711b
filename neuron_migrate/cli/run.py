"""`neuron-migrate run`: a thin shell over `neuron_migrate.runner`."""

from __future__ import annotations

import sys
from pathlib import Path

import typer


def register(app: typer.Typer) -> None:
    app.command(
        name="run",
        context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
    )(run)


def run(
    ctx: typer.Context,
    target: str | None = typer.Option(
        None, "--target", "-t", help="torch-neuronx version to simulate (default: newest)."
    ),
    trace: Path | None = typer.Option(
        None, "--trace", help="Write the merged run trace (JSON) here."
    ),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No summary on stderr."),
) -> None:
    """Run a command on a simulated `neuron` device: `run [OPTIONS] -- CMD ...`.

    CMD is a Python script, `python -m module`, `pytest ...` or `torchrun ... script.py`. Every
    Python process it starts gets the device; each op is decided by the compatibility matrix
    (native runs, cpu_fallback runs and warns, unsupported raises). This executes the code.
    Exits with the command's own exit code; the trace is written even when the command fails.
    """
    from neuron_migrate import runner  # subprocess and tempfile load only for `run`

    result = runner.run(list(ctx.args), target)
    if trace is not None:
        runner.write_trace(result.trace, trace)
    if not quiet:
        lines = runner.summary_lines(result.trace)
        if trace is not None:
            lines.append(f"  trace written to {trace}")
        print("\n".join(lines), file=sys.stderr)
    raise typer.Exit(result.exit_code)
