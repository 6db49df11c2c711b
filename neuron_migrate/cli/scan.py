"""`neuron-migrate scan`."""

from __future__ import annotations

import argparse
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from neuron_migrate.cli.commands import (
    REPEATABLE,
    add_command,
    add_repeatable,
    add_report_options,
    checked_format,
    split_values,
)
from neuron_migrate.errors import UsageError
from neuron_migrate.report.formats import FORMATS

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from rich.console import Console

    from neuron_migrate.api import ScanReport
    from neuron_migrate.cli.commands import Commands


def register(commands: Commands) -> None:
    parser = add_command(commands, "scan", scan)
    parser.add_argument("path", type=Path, help="A file or folder to scan. Nothing is executed.")
    parser.add_argument(
        "-t",
        "--target",
        metavar="VERSION",
        help="torch-neuronx version to check against (default: newest).",
    )
    add_report_options(parser, FORMATS)
    add_repeatable(
        parser,
        "--fail-on",
        help="Fail (exit 1) on: unsupported (default), fallback, float64, xla, any, none. "
        + REPEATABLE,
    )
    add_repeatable(
        parser,
        "--select",
        help="Report only these rule codes or prefixes (NM1, NM902). " + REPEATABLE,
    )
    add_repeatable(
        parser, "--ignore", help="Never report these rule codes or prefixes. " + REPEATABLE
    )
    parser.add_argument(
        "--baseline",
        metavar="FILE",
        type=Path,
        help="Fail only on findings not recorded in this baseline file.",
    )
    parser.add_argument(
        "--write-baseline",
        metavar="FILE",
        type=Path,
        help="Record today's findings in this baseline file.",
    )
    parser.add_argument(
        "--changed-since", metavar="REF", help="Scan only files changed since this git ref."
    )
    parser.add_argument(
        "--shard", metavar="I/N", help="Scan shard I of N (e.g. 2/4); merge with `report merge`."
    )
    parser.add_argument(
        "--config",
        metavar="FILE",
        type=Path,
        help="Read [tool.neuron-migrate] from this pyproject.toml.",
    )
    parser.add_argument("--no-config", action="store_true", help="Ignore pyproject.toml.")
    parser.add_argument(
        "-j", "--jobs", metavar="N", type=int, help="Worker processes (default: all cores)."
    )
    parser.add_argument(
        "--no-cache", action="store_true", help="Do not read or write the result cache."
    )
    parser.add_argument(
        "--cache-dir", metavar="DIR", type=Path, help="Where the result cache lives."
    )
    parser.add_argument(
        "--exclude",
        action="append",
        default=[],
        metavar="GLOB",
        help="Glob of paths to skip, relative to PATH (repeatable; adds to the config's).",
    )
    parser.add_argument(
        "--max-file-size",
        type=float,
        default=2.0,
        metavar="MB",
        help="Skip files larger than this many MB (default: 2).",
    )
    parser.add_argument("--show-native", action="store_true", help="List native op uses too.")
    parser.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        help="Progress bar on stderr (default: when a terminal).",
    )


def scan(args: argparse.Namespace) -> int:
    """Find every torch_xla use and classify every torch op against the compatibility matrix."""
    from neuron_migrate.gc_tuning import FEW_CYCLES, collecting_less

    # Loading the engine and assembling the report make no reference cycles either: the
    # collector runs as rarely as it does while files are scanned (`gc_tuning.FEW_CYCLES`).
    with collecting_less(FEW_CYCLES):
        return _scan(args)


def _scan(args: argparse.Namespace) -> int:
    from neuron_migrate.project.config import resolve_config, with_baseline_path
    from neuron_migrate.scan.baseline import load_baseline
    from neuron_migrate.scan.baseline import write_baseline as save_baseline

    path: Path = args.path
    checked_format(args.output_format, FORMATS)
    if args.jobs is not None and args.jobs < 1:
        raise UsageError("--jobs must be at least 1")
    shard_spec = None
    if args.shard is not None:
        from neuron_migrate.scan.shard import parse_shard

        shard_spec = parse_shard(args.shard)
    if not path.exists() and not path.is_symlink():
        raise UsageError(f"no such file or directory: {path}")
    settings = with_baseline_path(resolve_config(path, args.config, isolated=args.no_config))
    baseline_path = args.baseline or (Path(settings.baseline) if settings.baseline else None)
    write_baseline = args.write_baseline
    known = load_baseline(baseline_path) if baseline_path and not write_baseline else None

    from neuron_migrate import api  # the engine loads only when a scan runs

    # `--progress` draws the bar even when stderr is not a terminal (a CI log, a pipe).
    show_progress = sys.stderr.isatty() if args.progress is None else args.progress
    plan = api.plan_scan(
        path,
        target=args.target,
        fail_on=split_values(args.fail_on),
        exclude=tuple(args.exclude),
        max_bytes=int(args.max_file_size * 1024 * 1024),
        config=settings,
        select=split_values(args.select),
        ignore=split_values(args.ignore),
    )
    # A JSON report of the whole tree, kept in the cache, can be spliced on the next scan.
    spliceable = (
        args.output_format == "json"
        and not args.no_cache
        and known is None
        and write_baseline is None
        and shard_spec is None
        and args.changed_since is None
    )
    with _progress_bar(show_progress) as on_progress:
        if spliceable:
            from neuron_migrate.incremental.report_snapshot import scan_json

            report = scan_json(
                plan,
                output=args.output,
                jobs=args.jobs,
                cache_dir=args.cache_dir,
                on_progress=on_progress,
            )
        else:
            report = api.scan_planned(
                plan,
                jobs=args.jobs,
                use_cache=not args.no_cache,
                cache_dir=args.cache_dir,
                on_progress=on_progress,
                baseline=known,
                changed_since=args.changed_since,
                shard=shard_spec,
            )
    if spliceable:
        _report_written(args.output)
        return 0 if report.passed else 1
    if write_baseline is not None:
        report.baseline = save_baseline(write_baseline, report.findings, report.target)
        _stderr().print(f"baseline written to {write_baseline}: {len(report.findings)} findings")
    emit_report(report, args.output_format, args.output, show_native=args.show_native)
    return 0 if report.passed else 1


@contextmanager
def _progress_bar(show: bool) -> Iterator[Callable[[int, int], None] | None]:
    """A progress bar on stderr while the block runs; rich loads only when one is drawn."""
    if not show:
        yield None
        return
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )

    console = Console(stderr=True, force_terminal=True)
    columns = (TextColumn("scanning"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console, transient=True) as bar:
        task = bar.add_task("scan", total=None)
        yield lambda done, total: bar.update(task, completed=done, total=total)


def _stderr() -> Console:
    from rich.console import Console

    return Console(stderr=True)


def emit_report(
    report: ScanReport, output_format: str, output: Path | None, *, show_native: bool = False
) -> None:
    """Render `report` to stdout or to `output` (atomically); shared with `report merge`."""
    if output_format == "terminal":
        from rich.console import Console

        from neuron_migrate.report.terminal import render_terminal

        if output is not None:
            with output.open("w", encoding="utf-8") as handle:
                render_terminal(
                    report, Console(file=handle, width=100, no_color=True), show_native=show_native
                )
        else:
            render_terminal(report, Console(), show_native=show_native)
    else:
        from neuron_migrate.report.formats import render_chunks
        from neuron_migrate.report.output import write_output

        write_output(render_chunks(report, output_format), output)
    _report_written(output)


def _report_written(output: Path | None) -> None:
    if output is not None:
        _stderr().print(f"report written to {output}")
    sys.stdout.flush()
