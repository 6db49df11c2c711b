"""`neuron-migrate verify`: the scan confirmed by a run on the simulated device."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from neuron_migrate.cli.options import (
    REPEATABLE,
    OutputOption,
    ShowNativeOption,
    argument,
    checked_format,
    checked_jobs,
    format_option,
    matrix_option,
    option,
    repeatable,
    target_or_matrix,
)
from neuron_migrate.errors import UsageError

if TYPE_CHECKING:
    from neuron_migrate.verify.reconcile import VerifyReport

FORMATS = ("terminal", "json", "markdown")


def register(app: typer.Typer) -> None:
    app.command("verify", options_metavar="PATH [OPTIONS] -- CMD ...")(verify_command)


def verify_command(
    ctx: typer.Context,
    path: Annotated[Path, argument("PATH", "The (migrated) code to scan.")],
    target: Annotated[
        str | None, option("-t", "--target", metavar="VERSION", help="torch-neuronx version.")
    ] = None,
    matrix: Annotated[Path | None, matrix_option()] = None,
    output_format: Annotated[str, format_option(FORMATS)] = FORMATS[0],
    output: OutputOption = None,
    fail_on: Annotated[
        list[str] | None, repeatable("--fail-on", "As in scan, plus `contradiction`. " + REPEATABLE)
    ] = None,
    jobs: Annotated[
        int | None, option("-j", "--jobs", metavar="N", help="Scan worker processes.")
    ] = None,
    show_native: ShowNativeOption = False,
) -> int:
    """Scan PATH, run `-- CMD ...` on the simulated device, and reconcile the two.

    Each op, dtype and namespace finding is confirmed, contradicted (with the reason) or not
    exercised by the run; ops that ran but that no finding predicted are listed with their source
    line. This executes CMD.
    """
    from rich.console import Console

    from neuron_migrate.report.output import write_output
    from neuron_migrate.report.verify_report import (
        render_verify_json,
        render_verify_markdown,
        render_verify_terminal,
    )
    from neuron_migrate.verify.reconcile import gate_passed, parse_verify_fail_on, verify

    checked_format(output_format, FORMATS)
    checked_jobs(jobs)
    command = (ctx.obj or {}).get("command", [])  # cut off at `--` before parsing
    if not command:
        raise UsageError("verify: give the command to run after `--`, e.g. `-- python train.py`")
    scan_fail_on, on_contradiction = parse_verify_fail_on(fail_on or [])
    target = target_or_matrix(target, matrix)
    report = verify(path, list(command), target=target, fail_on=scan_fail_on, jobs=jobs)
    if output_format == "json":
        write_output(render_verify_json(report), output)
    elif output_format == "markdown":
        write_output(render_verify_markdown(report), output)
    elif output is not None:  # written as the other formats are: atomically, or one line
        import io

        text = io.StringIO()
        render_verify_terminal(report, Console(file=text, width=100), show_native=show_native)
        write_output(text.getvalue(), output)
    else:
        render_verify_terminal(report, Console(), show_native=show_native)
    if gate_passed(report, on_contradiction):
        return 0
    # The exit code is explained whatever the format: an agreement of 100% may still exit 1.
    print(
        f"neuron-migrate: verify exits 1: {_why_failed(report, on_contradiction)}", file=sys.stderr
    )
    return 1


def _why_failed(report: VerifyReport, on_contradiction: bool) -> str:
    from neuron_migrate.report.summary import failed_gate_text, summarize

    if report.run_failure is not None:
        return "the run failed where the report did not foresee it (run_failure)"
    contradicted = report.count("contradicted")
    if on_contradiction and contradicted:
        return f"{contradicted} findings contradicted by the run (--fail-on contradiction)"
    gate = summarize(report.scan)["gate"]
    return (
        f"gate failed (--fail-on {','.join(gate['fail_on'])}): "
        f"{failed_gate_text(report.scan, gate)}"
    )
