"""`neuron-migrate scan`."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

from neuron_migrate.cli.options import (
    REPEATABLE,
    CacheDirOption,
    NoCacheOption,
    OutputOption,
    ShowNativeOption,
    argument,
    checked_format,
    checked_jobs,
    format_option,
    matrix_option,
    option,
    repeatable,
    split_values,
    stderr_console,
    target_or_matrix,
)
from neuron_migrate.cli.progress import progress_bar
from neuron_migrate.errors import UsageError
from neuron_migrate.report.formats import FORMATS

if TYPE_CHECKING:
    import typer

    from neuron_migrate.api import ScanReport


def register(app: typer.Typer) -> None:
    app.command("scan")(scan)


TargetOption = Annotated[
    str | None,
    option(
        "-t",
        "--target",
        metavar="VERSION",
        help="torch-neuronx version to check against (default: newest).",
    ),
]


def scan(
    path: Annotated[Path, argument("PATH", "A file or folder to scan. Nothing is executed.")],
    target: TargetOption = None,
    matrix: Annotated[Path | None, matrix_option()] = None,
    output_format: Annotated[str, format_option(FORMATS)] = FORMATS[0],
    output: OutputOption = None,
    fail_on: Annotated[
        list[str] | None,
        repeatable(
            "--fail-on",
            "Fail (exit 1) on: unsupported (default), fallback, float64, xla, error, any, "
            "none. " + REPEATABLE,
        ),
    ] = None,
    strict: Annotated[
        bool,
        option(
            "--strict",
            help="With --fail-on fallback: fail on fallbacks whose evidence is only inferred or "
            "unknown too (an op no source names). Same as the fail-on value strict.",
        ),
    ] = False,
    select: Annotated[
        list[str] | None,
        repeatable(
            "--select", "Report only these rule codes or prefixes (NM1, NM902). " + REPEATABLE
        ),
    ] = None,
    ignore: Annotated[
        list[str] | None,
        repeatable("--ignore", "Never report these rule codes or prefixes. " + REPEATABLE),
    ] = None,
    baseline: Annotated[
        Path | None,
        option(
            "--baseline",
            metavar="FILE",
            help="Fail only on findings not recorded in this baseline file.",
        ),
    ] = None,
    write_baseline: Annotated[
        Path | None,
        option(
            "--write-baseline",
            metavar="FILE",
            help="Record today's findings in this baseline file.",
        ),
    ] = None,
    changed_since: Annotated[
        str | None,
        option(
            "--changed-since", metavar="REF", help="Scan only files changed since this git ref."
        ),
    ] = None,
    shard: Annotated[
        str | None,
        option(
            "--shard",
            metavar="I/N",
            help="Scan shard I of N (e.g. 2/4); merge with `report merge`.",
        ),
    ] = None,
    config: Annotated[
        Path | None,
        option(
            "--config", metavar="FILE", help="Read [tool.neuron-migrate] from this pyproject.toml."
        ),
    ] = None,
    no_config: Annotated[bool, option("--no-config", help="Ignore pyproject.toml.")] = False,
    jobs: Annotated[
        int | None,
        option("-j", "--jobs", metavar="N", help="Worker processes (default: all cores)."),
    ] = None,
    no_cache: NoCacheOption = False,
    cache_dir: CacheDirOption = None,
    exclude: Annotated[
        list[str] | None,
        option(
            "--exclude",
            metavar="GLOB",
            help="Glob of paths to skip, relative to PATH (repeatable; adds to the config's).",
        ),
    ] = None,
    max_file_size: Annotated[
        float,
        option(
            "--max-file-size",
            metavar="MB",
            help="Skip files larger than this many MB (default: 2).",
        ),
    ] = 2.0,
    show_native: ShowNativeOption = False,
    progress: Annotated[
        bool | None,
        option(
            "--progress/--no-progress", help="Progress bar on stderr (default: when a terminal)."
        ),
    ] = None,
) -> int:
    """Find every torch_xla use and classify every torch op against the compatibility matrix."""
    from neuron_migrate.gc_tuning import FEW_CYCLES, collecting_less

    # Loading the engine and assembling the report make no reference cycles either: the
    # collector runs as rarely as it does while files are scanned (`gc_tuning.FEW_CYCLES`).
    with collecting_less(FEW_CYCLES):
        return _scan(
            path,
            target=target_or_matrix(target, matrix),
            output_format=checked_format(output_format, FORMATS),
            output=output,
            fail_on=split_values(fail_on, "--fail-on"),
            strict=strict,
            select=split_values(select),
            ignore=split_values(ignore),
            baseline=baseline,
            write_baseline=write_baseline,
            changed_since=changed_since,
            shard=shard,
            config=config,
            no_config=no_config,
            jobs=checked_jobs(jobs),
            no_cache=no_cache,
            cache_dir=cache_dir,
            exclude=tuple(exclude or ()),
            max_file_size=max_file_size,
            show_native=show_native,
            progress=progress,
        )


def _scan(
    path: Path,
    *,
    target: str | None,
    output_format: str,
    output: Path | None,
    fail_on: tuple[str, ...],
    strict: bool,
    select: tuple[str, ...],
    ignore: tuple[str, ...],
    baseline: Path | None,
    write_baseline: Path | None,
    changed_since: str | None,
    shard: str | None,
    config: Path | None,
    no_config: bool,
    jobs: int | None,
    no_cache: bool,
    cache_dir: Path | None,
    exclude: tuple[str, ...],
    max_file_size: float,
    show_native: bool,
    progress: bool | None,
) -> int:
    from neuron_migrate.project.config import resolve_config, with_baseline_path
    from neuron_migrate.scan.baseline import load_baseline
    from neuron_migrate.scan.baseline import write_baseline as save_baseline

    shard_spec = None
    if shard is not None:
        from neuron_migrate.scan.shard import parse_shard

        shard_spec = parse_shard(shard)
    if not path.exists() and not path.is_symlink():
        raise UsageError(f"no such file or directory: {path}")
    settings = with_baseline_path(resolve_config(path, config, isolated=no_config))
    baseline_path = baseline or (Path(settings.baseline) if settings.baseline else None)
    known = load_baseline(baseline_path) if baseline_path and not write_baseline else None
    if strict:
        from neuron_migrate.scan.gate import DEFAULT_FAIL_ON

        fail_on = (*(fail_on or settings.fail_on or DEFAULT_FAIL_ON), "strict")

    from neuron_migrate import api  # the engine loads only when a scan runs

    # `--progress` draws the bar even when stderr is not a terminal (a CI log, a pipe).
    show_progress = sys.stderr.isatty() if progress is None else progress
    plan = api.plan_scan(
        path,
        target=target,
        fail_on=fail_on,
        exclude=exclude,
        max_bytes=int(max_file_size * 1024 * 1024),
        config=settings,
        select=select,
        ignore=ignore,
    )
    # A JSON report of the whole tree, kept in the cache, can be spliced on the next scan.
    spliceable = (
        output_format == "json"
        and not no_cache
        and known is None
        and write_baseline is None
        and shard_spec is None
        and changed_since is None
    )
    with progress_bar(show_progress, "scanning") as on_progress:
        if spliceable:
            from neuron_migrate.incremental.report_snapshot import scan_json

            report = scan_json(
                plan,
                output=output,
                jobs=jobs,
                cache_dir=cache_dir,
                on_progress=on_progress,
            )
        else:
            report = api.scan_planned(
                plan,
                jobs=jobs,
                use_cache=not no_cache,
                cache_dir=cache_dir,
                on_progress=on_progress,
                baseline=known,
                changed_since=changed_since,
                shard=shard_spec,
            )
    if spliceable:
        _report_written(output)
        return 0 if report.passed else 1
    if write_baseline is not None:
        report.baseline = save_baseline(write_baseline, report.findings, report.target)
        stderr_console().print(
            f"baseline written to {write_baseline}: {len(report.findings)} findings"
        )
    emit_report(report, output_format, output, show_native=show_native)
    return 0 if report.passed else 1


def emit_report(
    report: ScanReport, output_format: str, output: Path | None, *, show_native: bool = False
) -> None:
    """Render `report` to stdout or to `output` (atomically); shared with `report merge`."""
    if output_format == "terminal":
        from rich.console import Console

        from neuron_migrate.report.terminal import render_terminal

        if output is not None:  # written as the other formats are: atomically
            import io

            from neuron_migrate.report.output import write_output

            text = io.StringIO()
            render_terminal(
                report, Console(file=text, width=100, no_color=True), show_native=show_native
            )
            write_output(text.getvalue(), output)
        else:
            render_terminal(report, Console(), show_native=show_native)
    else:
        from neuron_migrate.report.formats import render_chunks
        from neuron_migrate.report.output import write_output

        write_output(render_chunks(report, output_format), output)
    _report_written(output)


def _report_written(output: Path | None) -> None:
    if output is not None:
        stderr_console().print(f"report written to {output}")
    sys.stdout.flush()
