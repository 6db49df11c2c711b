"""`neuron-migrate matrix list | show NAME | diff V1 V2 | stats`: read the compatibility matrices.

Output goes to stdout (rich text, or JSON with ``--format json``). An unknown version or name
raises a `UsageError`, which the app turns into one red line and exit code 2.

A new matrix command is one function here, decorated with `@group.command("NAME")`; its
docstring is its help, its annotated parameters its arguments and options (`FormatOption`
gives it `-f/--format text|json`, `TargetsOption` a repeatable `-t/--target`).
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

from neuron_migrate.cli.app import new_group
from neuron_migrate.cli.options import argument, data_console, matrix_option, option
from neuron_migrate.errors import UsageError

# The matrix package and rich load when a matrix command runs, not with the CLI.
if TYPE_CHECKING:
    import typer
    from rich.console import Console

    from neuron_migrate.matrix import Matrix
    from neuron_migrate.matrix.api_map import ApiMap
    from neuron_migrate.matrix.query import NameReport

FORMATS = ("text", "json")


group = new_group("matrix")


def register(app: typer.Typer) -> None:
    """Add the `matrix` commands."""
    app.add_typer(group)


FormatOption = Annotated[
    str, option("-f", "--format", metavar="FORMAT", help="text (rich, the default) or json.")
]
MatrixOption = Annotated[Path | None, matrix_option()]
TargetsOption = Annotated[
    list[str] | None,
    option(
        "-t",
        "--target",
        metavar="VERSION",
        help="Only these versions (repeatable); default: all.",
    ),
]


def _console() -> Console:

    return data_console(highlight=False, soft_wrap=False)


def _check_format(fmt: str) -> str:
    if fmt not in FORMATS:
        raise UsageError(f"unknown --format {fmt}: choose {', '.join(FORMATS)}")
    return fmt


def _emit_json(data: Any) -> None:
    print(json.dumps(data, indent=2, sort_keys=False))


def _styled(status: str) -> str:
    from neuron_migrate.matrix.text import styled

    return styled(status)


def _chosen(target: list[str] | None, matrix: Path | None) -> list[str]:
    """The matrices a command reads: `-t` versions and `--matrix FILE`, else every bundled one."""
    from neuron_migrate.matrix import available_versions, resolve_version
    from neuron_migrate.matrix.loader import matrix_file_target

    chosen = [resolve_version(v) for v in target or ()]
    if matrix is not None:
        chosen.append(matrix_file_target(matrix))
    return chosen or available_versions()


# --- list -------------------------------------------------------------------------------------


@group.command("list")
def matrix_list(fmt: FormatOption = "text") -> int:
    """List the bundled matrix versions, their torch pairing and evidence."""
    from rich.table import Table

    from neuron_migrate.matrix import available_versions, load_matrix

    fmt = _check_format(fmt)
    rows: list[dict[str, Any]] = []
    for version in available_versions():
        m = load_matrix(version)
        rows.append(
            {
                "version": m.version,
                "torch": m.torch_version,
                "listed_ops": m.status_counts(),
                "default": m.default.status,
                "default_confidence": m.confidence(m.default.source),
                "is_default_target": version == available_versions()[-1],
                "evidence": {
                    key: {"kind": e.kind, "confidence": e.confidence}
                    for key, e in sorted(m.evidence.items())
                },
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
        mark = " (the default target)" if row["is_default_target"] else ""
        console.print(f"[bold]{row['version']}[/]{mark}: {row['summary']}")
        keys = (f"{k} ({e['kind']}, {e['confidence']})" for k, e in row["evidence"].items())
        console.print(f"  evidence: {', '.join(keys)}")
        console.print(f"  unlisted ops: {row['default']}, confidence {row['default_confidence']}")
    return 0


# --- show -------------------------------------------------------------------------------------


@group.command("show")
def matrix_show(
    name: Annotated[
        str,
        argument(
            "NAME",
            "An aten op (aten::sort, aten.add.Tensor) or a Python API (torch.sort, Tensor.sort).",
        ),
    ],
    target: TargetsOption = None,
    matrix: MatrixOption = None,
    fmt: FormatOption = "text",
) -> int:
    """Status of an aten op or a Python API in each matrix version, with its source."""
    from neuron_migrate.matrix import load_matrix
    from neuron_migrate.matrix.query import describe_name

    fmt = _check_format(fmt)
    versions = _chosen(target, matrix)
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
        why = escape(
            f"[{evidence['key']}, {evidence['kind']}, confidence {evidence['confidence']}]"
        )
        console.print(f"  {label}: {_styled(body['status'])} {why}")
        if body.get("note"):
            console.print(f"    {escape(body['note'])}", style="dim")

    if r.table_row is not None:
        kind = f" ({r.table_row['kind']})" if r.table_row["kind"] else ""
        official = r.table_row["evidence"].get("kind") == "official-table"
        entry(f"{'official table' if official else 'API row'}{kind}", r.table_row)
    if r.namespace is not None:
        entry(f"namespace {r.namespace['namespace']}", r.namespace)
    for op in r.ops:
        entry(op["op"], op)
    for evidence in used.values():
        print_evidence(console, evidence, "  ")
    console.print()


# --- diff -------------------------------------------------------------------------------------


@group.command("diff")
def matrix_diff(
    v1: Annotated[str, argument("V1", "Older torch-neuronx version (2.13.3.0), or a matrix file.")],
    v2: Annotated[
        str | None,
        argument("V2", "Newer version, or a matrix file (what `matrix import -o` wrote)."),
    ] = None,
    matrix: Annotated[
        Path | None,
        option("--matrix", metavar="FILE", help="A matrix file to compare V1 with (as V2)."),
    ] = None,
    fmt: FormatOption = "text",
) -> int:
    """What differs between two matrices: op statuses, listings, evidence and rules."""
    from collections import Counter

    from rich.table import Table

    from neuron_migrate.matrix import diff_matrices
    from neuron_migrate.matrix.loader import load_matrix, load_named, matrix_file_target

    fmt = _check_format(fmt)
    if (v2 is None) == (matrix is None):
        raise UsageError("matrix diff: give V2 or --matrix FILE (one of them)")
    a = load_named(v1, given_as="version")
    b = load_named(v2, given_as="version") if v2 is not None else None
    if matrix is not None:
        b = load_matrix(matrix_file_target(matrix))
    assert b is not None
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
    if diff.evidence_changed:
        moved = Counter(c.b_source for c in diff.evidence_changed)
        console.print(
            f"Ops with the same status on other evidence ({len(diff.evidence_changed)}): "
            + ", ".join(f"{n} now {key}" for key, n in sorted(moved.items()))
        )
    return 0


# --- stats ------------------------------------------------------------------------------------


@group.command("stats")
def matrix_stats(
    target: TargetsOption = None, matrix: MatrixOption = None, fmt: FormatOption = "text"
) -> int:
    """Entries of each matrix version by status and by the kind of evidence behind them."""
    from neuron_migrate.matrix import load_matrix
    from neuron_migrate.matrix.stats import matrix_stats as compute
    from neuron_migrate.matrix.text import print_stats

    fmt = _check_format(fmt)
    versions = _chosen(target, matrix)
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


@group.command("import")
def matrix_import(
    file: Annotated[
        Path,
        argument("FILE", "The official per-API table (markdown) or a `matrix probe` file (JSON)."),
    ],
    base: Annotated[
        str | None,
        option(
            "--base", metavar="VERSION", help="Matrix the file is laid over; default: the newest."
        ),
    ] = None,
    new_version: Annotated[
        str | None,
        option(
            "--version",
            metavar="VERSION",
            help="torch-neuronx version of the new matrix; default: the one the file names.",
        ),
    ] = None,
    torch: Annotated[
        str | None,
        option("--torch", metavar="VERSION", help="torch it pairs with; default: the file's."),
    ] = None,
    out: Annotated[
        Path | None,
        option(
            "-o",
            "--out",
            metavar="FILE",
            help="Where to write it; default: compat_matrix/VERSION.yaml beside the bundled ones.",
        ),
    ] = None,
    force: Annotated[bool, option("--force", help="Overwrite an existing matrix file.")] = False,
) -> int:
    """Make a new matrix version from the official per-API table or a probe file."""
    from neuron_migrate.matrix import clear_cache, load_matrix, resolve_version
    from neuron_migrate.matrix.import_evidence import default_output, import_file
    from neuron_migrate.matrix.stats import matrix_stats as compute

    base_matrix = load_matrix(resolve_version(base, given_as="--base"))
    version, text = import_file(
        file,
        base=_matrix_file(base_matrix.version),
        version=new_version,
        torch=torch,
    )
    out = out or default_output(version)
    if out.exists() and not force:
        raise UsageError(f"{out} exists; pass --force to overwrite it or -o for another file")
    out.write_text(text, encoding="utf-8")
    clear_cache()
    stats = compute(load_matrix(path=out))  # it must load, as any matrix
    counts = ", ".join(f"{n} {s}" for s, n in stats["by_status"].items())
    kinds = ", ".join(f"{n} {k}" for k, n in stats["by_kind"].items() if n)
    over = base_matrix.version
    print(f"wrote {out}: torch-neuronx {version} over {over}; {counts}; evidence: {kinds}")
    return 0


def _matrix_file(version: str) -> Any:
    from neuron_migrate import resources

    return resources.matrix_dir() / f"{version}.yaml"


# --- probe ------------------------------------------------------------------------------------


@group.command(
    "probe",
    context_settings={"allow_interspersed_args": False, "ignore_unknown_options": True},
    options_metavar="[OPTIONS] -- python SCRIPT ...",
)
def matrix_probe(
    command: Annotated[
        list[str] | None,
        argument("CMD", "Your command: a Python script or -m module, run in the probe's process."),
    ] = None,
    out: Annotated[
        str, option("-o", "--out", metavar="OUT", help="JSON file to write.")
    ] = "neuron-probe.json",
    script: Annotated[
        bool, option("--script", help="Print the probe as one file that needs only torch.")
    ] = False,
) -> int:
    """Record what the installed torch-neuronx registers and what your command falls back on."""
    from neuron_migrate.matrix.probe import main

    words = list(command or ())  # click has taken a leading `--`
    return main(["--script"] if script else ["-o", out, "--", *words])
