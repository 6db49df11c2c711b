"""`neuron-migrate matrix list | show NAME | diff V1 V2 | stats`: read the compatibility matrices.

Output goes to stdout (rich text, or JSON with ``--format json``). An unknown version or name
raises a `UsageError`, which the app turns into one red line and exit code 2.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from neuron_migrate.cli.commands import add_command, add_group
from neuron_migrate.errors import UsageError

# The matrix package and rich load when a matrix command runs, not with the CLI.
if TYPE_CHECKING:
    from rich.console import Console

    from neuron_migrate.cli.commands import Commands
    from neuron_migrate.matrix import Matrix
    from neuron_migrate.matrix.api_map import ApiMap
    from neuron_migrate.matrix.query import NameReport

FORMATS = ("text", "json")


def register(commands: Commands) -> None:
    """Add the `matrix` commands."""
    group = add_group(
        commands,
        "matrix",
        "Show the TorchNeuron compatibility matrices: versions, op/API status, differences.",
    )
    _add_format(add_command(group, "list", matrix_list))
    show = add_command(group, "show", matrix_show)
    show.add_argument(
        "name",
        help="An aten op (aten::sort, aten.add.Tensor) or a Python API (torch.sort, Tensor.sort).",
    )
    _add_targets(show)
    _add_format(show)
    diff = add_command(group, "diff", matrix_diff)
    diff.add_argument("v1", help="Older torch-neuronx version, e.g. 2.13.3.0.")
    diff.add_argument("v2", help="Newer torch-neuronx version, e.g. 2.14.3.0.")
    _add_format(diff)
    stats = add_command(group, "stats", matrix_stats)
    _add_targets(stats)
    _add_format(stats)
    imp = add_command(group, "import", matrix_import)
    imp.add_argument(
        "file", help="The official per-API table (markdown) or a `matrix probe` file (JSON)."
    )
    imp.add_argument(
        "--base", metavar="VERSION", help="Matrix the file is laid over; default: the newest."
    )
    imp.add_argument(
        "--version",
        dest="new_version",
        metavar="VERSION",
        help="torch-neuronx version of the new matrix; default: the one the file names.",
    )
    imp.add_argument("--torch", metavar="VERSION", help="torch it pairs with; default: the file's.")
    imp.add_argument(
        "-o",
        "--out",
        metavar="FILE",
        help="Where to write it; default: compat_matrix/VERSION.yaml beside the bundled ones.",
    )
    imp.add_argument("--force", action="store_true", help="Overwrite an existing matrix file.")
    probe = add_command(group, "probe", matrix_probe)
    probe.add_argument("-o", "--out", default="neuron-probe.json", help="JSON file to write.")
    probe.add_argument(
        "--script", action="store_true", help="Print the probe as one file that needs only torch."
    )
    probe.add_argument(
        "command",
        nargs=argparse.REMAINDER,
        metavar="-- python SCRIPT ...",
        help="Your command: a Python script or -m module, run in the probe's process.",
    )


def _add_targets(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-t",
        "--target",
        metavar="VERSION",
        action="append",
        default=[],
        help="Only these versions (repeatable); default: all.",
    )


def _add_format(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-f",
        "--format",
        dest="fmt",
        metavar="FORMAT",
        default="text",
        help="text (rich, the default) or json.",
    )


def _console() -> Console:
    from rich.console import Console

    return Console(highlight=False, soft_wrap=False)


def _check_format(fmt: str) -> str:
    if fmt not in FORMATS:
        raise UsageError(f"unknown --format {fmt}: choose {', '.join(FORMATS)}")
    return fmt


def _emit_json(data: Any) -> None:
    print(json.dumps(data, indent=2, sort_keys=False))


def _styled(status: str) -> str:
    from neuron_migrate.matrix.text import styled

    return styled(status)


# --- list -------------------------------------------------------------------------------------


def matrix_list(args: argparse.Namespace) -> int:
    """List the bundled matrix versions, their torch pairing and evidence."""
    from rich.table import Table

    from neuron_migrate.matrix import available_versions, load_matrix

    fmt = _check_format(args.fmt)
    rows: list[dict[str, Any]] = []
    for version in available_versions():
        m = load_matrix(version)
        rows.append(
            {
                "version": m.version,
                "torch": m.torch_version,
                "listed_ops": m.status_counts(),
                "default": m.default.status,
                "evidence": sorted(m.evidence),
                "summary": m.summary,
            }
        )
    if fmt == "json":
        _emit_json({"versions": rows})
        return 0
    table = Table(title="TorchNeuron compatibility matrices", title_justify="left")
    table.add_column("torch-neuronx")
    table.add_column("torch")
    table.add_column("native", justify="right")
    table.add_column("fallback", justify="right")
    table.add_column("unsupp.", justify="right")
    table.add_column("default")
    for row in rows:
        counts = row["listed_ops"]
        table.add_row(
            row["version"],
            row["torch"],
            str(counts["native"]),
            str(counts["cpu_fallback"]),
            str(counts["unsupported"]),
            row["default"],
        )
    console = _console()
    console.print(table)
    for row in rows:
        console.print(f"[bold]{row['version']}[/]: {row['summary']}")
        console.print(f"  evidence: {', '.join(row['evidence'])}")
    return 0


# --- show -------------------------------------------------------------------------------------


def matrix_show(args: argparse.Namespace) -> int:
    """Status of an aten op or a Python API in each matrix version, with its source."""
    from neuron_migrate.matrix import available_versions, load_matrix, resolve_version
    from neuron_migrate.matrix.query import describe_name

    name, fmt = args.name, _check_format(args.fmt)
    versions = [resolve_version(v) for v in args.target] or available_versions()
    reports = [describe_name(name, load_matrix(v), _api_map_for(load_matrix(v))) for v in versions]
    if all(r.kind == "unknown" for r in reports):
        raise UsageError(
            f"unknown name {name!r}: not an op (aten::..., c10d::...) and not an API in the "
            "API map; try a qualified name such as torch.sort or Tensor.sort"
        )
    if fmt == "json":
        _emit_json({"name": name, "versions": [asdict(r) for r in reports]})
        return 0
    console = _console()
    for report in reports:
        _print_report(console, report)
    return 0


def _api_map_for(m: Matrix) -> ApiMap | None:
    from neuron_migrate.matrix.api_map import available_api_maps, load_api_map

    minor = ".".join(m.torch_version.split(".")[:2])
    minors = available_api_maps()
    if minor in minors:
        return load_api_map(minor)
    return load_api_map(minors[-1]) if minors else None


def _print_report(console: Console, r: NameReport) -> None:
    from rich.markup import escape

    head = f"[bold]{r.version}[/] (torch {r.torch_version}): [bold]{r.name}[/]"
    console.print(f"{head} -> {_styled(r.status)}")
    if r.kind == "api" and r.api_map:
        console.print(f"  {r.kind_note} (API map {r.api_map})")
    elif r.kind_note:
        console.print(f"  {r.kind_note}")
    from neuron_migrate.matrix.text import print_evidence

    used: dict[str, dict[str, Any]] = {}

    def entry(label: str, body: dict[str, Any]) -> None:
        evidence = body["evidence"]
        used.setdefault(evidence["key"], evidence)
        why = escape("[" + evidence["key"] + ", " + evidence["kind"] + "]")
        console.print(f"  {label}: {_styled(body['status'])} {why}")
        if body.get("note"):
            console.print(f"    {escape(body['note'])}", style="dim")

    if r.table_row is not None:
        kind = f" ({r.table_row['kind']})" if r.table_row["kind"] else ""
        entry(f"official table{kind}", r.table_row)
    if r.namespace is not None:
        entry(f"namespace {r.namespace['namespace']}", r.namespace)
    for op in r.ops:
        entry(op["op"], op)
    for evidence in used.values():
        print_evidence(console, evidence, "  ")
    console.print()


# --- diff -------------------------------------------------------------------------------------


def matrix_diff(args: argparse.Namespace) -> int:
    """What differs between two matrix versions: op statuses, listings and rules."""
    from rich.table import Table

    from neuron_migrate.matrix import diff_matrices, load_matrix, resolve_version

    fmt = _check_format(args.fmt)
    a, b = load_matrix(resolve_version(args.v1)), load_matrix(resolve_version(args.v2))
    diff = diff_matrices(a, b)
    if fmt == "json":
        _emit_json(diff.to_dict())
        return 0
    console = _console()
    console.print(f"[bold]matrix diff {a.version} -> {b.version}[/]")
    if diff.is_empty:
        console.print("No differences.")
        return 0
    if diff.rules:
        table = Table(title="Rules", title_justify="left")
        for col in ("section", "key", a.version, b.version):
            table.add_column(col)
        for rc in diff.rules:
            table.add_row(rc.section, rc.key, rc.a, rc.b)
        console.print(table)
    for title, changes in (
        ("Ops whose status changed", diff.changed),
        (f"Ops listed only in {b.version}", diff.added),
        (f"Ops listed only in {a.version}", diff.removed),
    ):
        if not changes:
            continue
        table = Table(title=f"{title} ({len(changes)})", title_justify="left")
        for col in ("op", a.version, b.version):
            table.add_column(col)
        for c in changes:
            table.add_row(c.op, _styled(c.a_status), _styled(c.b_status))
        console.print(table)
    if not (diff.changed or diff.added or diff.removed):
        console.print("No op status differences.")
    return 0


# --- stats ------------------------------------------------------------------------------------


def matrix_stats(args: argparse.Namespace) -> int:
    """Entries of each matrix version by status and by the kind of evidence behind them."""
    from neuron_migrate.matrix import available_versions, load_matrix, resolve_version
    from neuron_migrate.matrix.stats import matrix_stats as compute
    from neuron_migrate.matrix.text import print_stats

    fmt = _check_format(args.fmt)
    versions = [resolve_version(v) for v in args.target] or available_versions()
    stats = [compute(load_matrix(v)) for v in versions]
    if fmt == "json":
        _emit_json({"versions": stats})
        return 0
    console = _console()
    for one in stats:
        print_stats(console, one)
        console.print()
    return 0


# --- import -----------------------------------------------------------------------------------


def matrix_import(args: argparse.Namespace) -> int:
    """Make a new matrix version from the official per-API table or a probe file."""
    from pathlib import Path

    from neuron_migrate.matrix import clear_cache, load_matrix, resolve_version
    from neuron_migrate.matrix.import_evidence import default_output, import_file
    from neuron_migrate.matrix.stats import matrix_stats as compute

    base = load_matrix(resolve_version(args.base))
    version, text = import_file(
        Path(args.file),
        base=_matrix_file(base.version),
        version=args.new_version,
        torch=args.torch,
    )
    out = Path(args.out) if args.out else default_output(version)
    if out.exists() and not args.force:
        raise UsageError(f"{out} exists; pass --force to overwrite it or -o for another file")
    out.write_text(text, encoding="utf-8")
    clear_cache()
    stats = compute(load_matrix(path=out))  # it must load, as any matrix
    counts = ", ".join(f"{n} {s}" for s, n in stats["by_status"].items())
    kinds = ", ".join(f"{n} {k}" for k, n in stats["by_kind"].items() if n)
    print(f"wrote {out}: torch-neuronx {version} over {base.version}; {counts}; evidence: {kinds}")
    return 0


def _matrix_file(version: str) -> Any:
    from neuron_migrate import resources

    return resources.matrix_dir() / f"{version}.yaml"


# --- probe ------------------------------------------------------------------------------------


def matrix_probe(args: argparse.Namespace) -> int:
    """Record what the installed torch-neuronx registers and what your command falls back on."""
    from neuron_migrate.matrix.probe import main

    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    return main(["--script"] if args.script else ["-o", args.out, "--", *command])
