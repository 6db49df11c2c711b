"""`neuron-migrate verify`: the scan confirmed by a run on the simulated device."""

from __future__ import annotations

from pathlib import Path

import typer

from neuron_migrate.errors import UsageError
from neuron_migrate.output import write_output

FORMATS = ("terminal", "json", "markdown")


def register(app: typer.Typer) -> None:
    app.command(
        name="verify",
        context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
    )(verify_command)


def verify_command(
    ctx: typer.Context,
    path: Path = typer.Argument(..., help="The (migrated) code to scan."),
    target: str | None = typer.Option(None, "--target", "-t", help="torch-neuronx version."),
    output_format: str = typer.Option(
        "terminal", "--format", "-f", help="terminal, json, markdown."
    ),
    output: Path | None = typer.Option(None, "--output", "-o", help="Write the report here."),
    fail_on: list[str] = typer.Option(
        [], "--fail-on", help="As in scan, plus `contradiction`. Repeatable or comma-separated."
    ),
    jobs: int | None = typer.Option(None, "--jobs", "-j", help="Scan worker processes."),
    show_native: bool = typer.Option(False, "--show-native", help="List native findings too."),
) -> None:
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
    from neuron_migrate.verify import gate_passed, parse_verify_fail_on, verify

    if output_format not in FORMATS:
        raise UsageError(
            f"--format: unknown format {output_format!r}; choose from {', '.join(FORMATS)}"
        )
    if not ctx.args:
        raise UsageError("verify: give the command to run after `--`, e.g. `-- python train.py`")
    scan_fail_on, on_contradiction = parse_verify_fail_on(fail_on)
    report = verify(path, list(ctx.args), target=target, fail_on=scan_fail_on, jobs=jobs)
    if output_format == "json":
        write_output(render_verify_json(report), output)
    elif output_format == "markdown":
        write_output(render_verify_markdown(report), output)
    elif output is not None:
        with output.open("w", encoding="utf-8") as handle:
            render_verify_terminal(report, Console(file=handle, width=100), show_native=show_native)
    else:
        render_verify_terminal(report, Console(), show_native=show_native)
    raise typer.Exit(0 if gate_passed(report, on_contradiction) else 1)
