"""`neuron-migrate rewrite PATH`: migrate torch_xla code to the native `neuron` device.

A diff by default; `--apply` writes in place, `--out-dir` writes a migrated copy of the tree,
`--check` exits 1 when anything would change. The summary goes to stderr, the diff or JSON to
stdout. Files are rewritten in a process pool (`--jobs`); the output keeps the input order.
Results are cached by file content, in the scan's cache folder (`--cache-dir`, `--no-cache`).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

from neuron_migrate.cli.options import (
    CacheDirOption,
    NoCacheOption,
    argument,
    checked_choice,
    checked_jobs,
    matrix_option,
    option,
    target_option,
    target_or_matrix,
)
from neuron_migrate.cli.progress import progress_bar
from neuron_migrate.errors import UsageError

if TYPE_CHECKING:
    from collections.abc import Iterable

    import typer

    from neuron_migrate.rewrite.rewriter import FileRewrite, RewriteSummary


FORMATS = ("diff", "json")


def _colour_diff(text: str) -> str:
    from neuron_migrate.rewrite.unified_diff import lines  # difflib: only when a diff is printed

    colours = {"+": "\x1b[32m", "-": "\x1b[31m", "@": "\x1b[36m"}
    out = []
    for line in lines(text):  # a diff's lines end at newlines only
        colour = colours.get(line[:1])
        if line.startswith(("+++", "---")):
            colour = "\x1b[1m"
        out.append(f"{colour}{line.rstrip(chr(10))}\x1b[0m\n" if colour else line)
    return "".join(out)


def _use_colour() -> bool:
    return sys.stdout.isatty() and "NO_COLOR" not in os.environ


def _print_summary(summary: RewriteSummary, verb: str) -> None:
    from rich.console import Console  # loads after the rewrite, off the start-up path

    err = Console(stderr=True)
    for error in summary.errors:
        what = "read in part" if error.partial else "skipped"
        err.print(f"[yellow]{what}[/] {error.path}: {error.reason}", highlight=False)
    for line in summary.lines(verb):
        err.print(line, highlight=False, markup=False)
    if summary.from_cache:
        whose = "file's result" if summary.from_cache == 1 else "files' results"
        err.print(f"{summary.from_cache} {whose} from the cache", highlight=False)
    for code, statuses in summary.rules_json().items():
        parts = ", ".join(f"{n} {status}" for status, n in statuses.items())
        err.print(f"  {code}: {parts}", highlight=False)


def register(app: typer.Typer) -> None:
    app.command("rewrite")(rewrite)


class _Where:
    """Where the rewritten files go: in place, into a copy, or (neither) shown."""

    def __init__(
        self,
        root: Path,
        apply: bool,
        out_dir: Path | None,
        output_format: str,
        write_read_only: bool,
    ) -> None:
        self.root, self.apply, self.out_dir = root, apply, out_dir
        self.output_format, self.write_read_only = output_format, write_read_only


def rewrite(
    path: Annotated[Path, argument("PATH", "a file or a folder of Python code")],
    apply: Annotated[
        bool, option("--apply", help="write the changes in place (atomically)")
    ] = False,
    out_dir: Annotated[
        Path | None,
        option("--out-dir", metavar="DIR", help="write a migrated copy of the whole tree to DIR"),
    ] = None,
    check: Annotated[bool, option("--check", help="exit 1 if any file would change")] = False,
    write_read_only: Annotated[
        bool,
        option(
            "--write-read-only",
            help="with --apply, also write read-only files (refused by default)",
        ),
    ] = False,
    unsafe_fixes: Annotated[
        bool,
        option("--unsafe-fixes", help="also apply rewrites marked unsafe (see `rules list`)"),
    ] = False,
    target: Annotated[
        str | None,
        target_option(
            "torch-neuronx version to migrate to: the torch / torch-neuronx pins and the "
            "unsupported-op markers follow it (default: the project's, else the newest)."
        ),
    ] = None,
    matrix: Annotated[Path | None, matrix_option()] = None,
    output_format: Annotated[
        str, option("-f", "--format", metavar="{diff,json}", help="diff (default) or json")
    ] = "diff",
    exclude: Annotated[
        list[str] | None,
        option("--exclude", metavar="GLOB", help="glob of paths to skip (repeatable)"),
    ] = None,
    jobs: Annotated[
        int | None,
        option(
            "-j", "--jobs", metavar="N", help="worker processes (default: all cores; 1: no pool)"
        ),
    ] = None,
    no_cache: NoCacheOption = False,
    cache_dir: CacheDirOption = None,
    progress: Annotated[
        bool | None,
        option(
            "--progress/--no-progress",
            help="Progress bar on stderr (default: when a terminal, and the diff is not "
            "printed on the same terminal).",
        ),
    ] = None,
) -> int:
    """Rewrite torch_xla code for the native neuron device (shows a diff unless --apply)."""
    checked_choice(output_format, FORMATS)
    if apply and out_dir is not None:
        raise UsageError("--apply and --out-dir are exclusive: in place, or a copy")
    if check and (apply or out_dir is not None):
        raise UsageError("--check only reports; drop --apply / --out-dir")
    checked_jobs(jobs)
    if target is not None and not target.strip():
        raise UsageError("--target: empty value; give a torch-neuronx version such as 2.14")
    target = target_or_matrix(target, matrix)
    root = path
    inside = out_dir is not None and (
        out_dir.resolve() == root.resolve() or root.resolve() in out_dir.resolve().parents
    )
    if inside and root.is_dir():
        raise UsageError(f"--out-dir must be outside {root}")
    # libcst loads only when a rewrite runs: other commands start faster.
    from neuron_migrate.project.config import resolve_config
    from neuron_migrate.rewrite.rewriter import RewriteSummary, copy_tree, report_json, rewrite_tree
    from neuron_migrate.rewrite.store import NoRewriteCache, RewriteStore
    from neuron_migrate.scan.engine import default_jobs

    config = resolve_config(root)  # a malformed one is an error that names the field
    from neuron_migrate.matrix import resolve_version

    version = resolve_version(target if target is not None else config.chosen_target)

    summary = RewriteSummary()
    colour = _use_colour()
    if out_dir is not None:
        copy_tree(root, out_dir)
    workers = jobs if jobs is not None else default_jobs()
    # Printing a diff: each one is made in the worker that rewrote the file.
    diffs = not apply and out_dir is None and output_format == "diff"
    cache: RewriteStore = NoRewriteCache()
    if not no_cache:  # the speed machinery loads here, and only for a rewrite that uses a cache
        from neuron_migrate.incremental.cache import default_cache_dir
        from neuron_migrate.incremental.rewrite_cache import RewriteCache

        cache = RewriteCache(cache_dir or default_cache_dir())
    # A diff printed on the terminal is itself the progress; a bar would be drawn through it.
    if progress is None:
        progress = sys.stderr.isatty() and not (diffs and sys.stdout.isatty())
    try:
        with progress_bar(progress, "rewriting") as on_progress:
            files = rewrite_tree(
                root,
                unsafe=unsafe_fixes,
                exclude=tuple(exclude or ()),
                jobs=workers,
                diffs=diffs,
                cache=cache,
                config=config,
                on_progress=on_progress,
                target=version,
            )
            where = _Where(root, apply, out_dir, output_format, write_read_only)
            results = _written(files, summary, where, colour)
    finally:
        cache.close()
    if output_format == "json":
        print(json.dumps(report_json(results, summary, version), indent=2))
    verb = "changed" if apply or out_dir is not None else "would change"
    _print_summary(summary, verb)
    if summary.failed or summary.not_written or summary.refused:
        return 2
    return 1 if check and summary.changed else 0


def _written(
    files: Iterable[FileRewrite],
    summary: RewriteSummary,
    where: _Where,
    colour: bool,
) -> list[FileRewrite]:
    """Each result counted, then written in place, into the copy, or shown as a diff; the
    results the JSON report lists."""
    from neuron_migrate.rewrite.in_place import write_in_place
    from neuron_migrate.rewrite.rewriter import write_atomically

    listed = []
    for result in files:
        summary.add(result)
        if result.outcomes or result.changed or result.error:
            listed.append(result)
        if not result.changed:
            continue
        if where.apply:
            why = write_in_place(
                result.path,
                result.encoded(),
                where.root,
                read_only_too=where.write_read_only,
                read=result.read,
            )
            if why is not None:
                summary.not_written.append((result.display, why))
                print(f"neuron-migrate: {result.display}: {why}", file=sys.stderr)
        elif where.out_dir is not None:
            root = where.root
            target = where.out_dir / result.display if root.is_dir() else where.out_dir / root.name
            write_atomically(str(target), result.encoded())
        elif where.output_format == "diff":
            diff = result.diff()
            sys.stdout.write(_colour_diff(diff) if colour else diff)
    return listed
