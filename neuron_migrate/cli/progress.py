"""The progress bar that `scan` and `rewrite` draw on stderr."""

from __future__ import annotations

from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator


@contextmanager
def progress_bar(show: bool, doing: str) -> Iterator[Callable[[int, int], None] | None]:
    """A progress bar on stderr while the block runs, `doing` (scanning, rewriting) at its
    left; rich loads only when one is drawn. Shared by `scan` and `rewrite`.

    What the block prints to stdout meanwhile (rewrite's diffs) goes to stdout as it is: rich
    would otherwise print it above the bar, on the bar's stream (stderr)."""
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
    columns = (TextColumn(doing), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console, transient=True, redirect_stdout=False) as bar:
        task = bar.add_task("scan", total=None)
        yield lambda done, total: bar.update(task, completed=done, total=total)
