"""Every text report format, by its `--format` name. Each renderer is a pure function of a
`ScanReport` (the terminal report, which draws on a console, lives in `terminal`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from importlib import import_module
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the CLI reads FORMATS at start-up, before any scan is loaded
    from neuron_migrate.api import ScanReport
    from neuron_migrate.pieces import Piece

# name -> (module, function); imported on use, so a run pays only for its own format.
_RENDERERS: dict[str, tuple[str, str]] = {
    "json": ("json_report", "render_json"),
    "sarif": ("sarif", "render_sarif"),
    "junit": ("junit", "render_junit"),
    "github": ("github", "render_github"),
    "markdown": ("markdown", "render_markdown"),
    "csv": ("csv_report", "render_csv"),
    "html": ("html_report", "render_html"),
}
FORMATS: tuple[str, ...] = ("terminal", *_RENDERERS)


def renderer(name: str) -> Callable[[ScanReport], str]:
    module, function = _RENDERERS[name]
    found: Callable[[ScanReport], str] = getattr(
        import_module(f"neuron_migrate.report.{module}"), function
    )
    return found


def render(report: ScanReport, name: str) -> str:
    return renderer(name)(report)


def render_chunks(report: ScanReport, name: str) -> Iterable[str | Piece]:
    """The report as pieces to write one after another: the JSON report of a large tree is
    tens of MB, and is never joined into one string on its way out."""
    if name == "json":
        from neuron_migrate.report.json_report import json_chunks

        return json_chunks(report)
    return (render(report, name),)
