"""`neuron-migrate report merge`: one report from the JSON reports of several shards."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from neuron_migrate.cli.commands import (
    add_command,
    add_group,
    add_repeatable,
    add_report_options,
    checked_format,
    split_values,
)
from neuron_migrate.report.formats import FORMATS

if TYPE_CHECKING:
    from neuron_migrate.cli.commands import Commands


def register(commands: Commands) -> None:
    group = add_group(commands, "report", "Work with saved JSON reports.")
    parser = add_command(group, "merge", merge)
    parser.add_argument(
        "reports", type=Path, nargs="+", help="JSON reports (`scan --format json`)."
    )
    add_report_options(parser, FORMATS)
    add_repeatable(
        parser,
        "--fail-on",
        help="Gate the merged report on these statuses (default: what the reports recorded).",
    )
    parser.add_argument("--show-native", action="store_true", help="List native op uses too.")


def merge(args: argparse.Namespace) -> int:
    """Combine shard reports into one, in any format, with the gate applied to the whole."""
    from neuron_migrate.cli.scan import emit_report
    from neuron_migrate.report.load import load_report, merge_reports

    checked_format(args.output_format, FORMATS)
    merged = merge_reports([load_report(p) for p in args.reports], split_values(args.fail_on))
    emit_report(merged, args.output_format, args.output, show_native=args.show_native)
    return 0 if merged.passed else 1
