"""Every text report format, by its `--format` name. Each renderer is a pure function of a
`ScanReport` (the terminal report, which draws on a console, lives in `terminal`)."""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module

from neuron_migrate.api import ScanReport

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
