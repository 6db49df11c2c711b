"""Analysing one decoded file: parse, find the sites, classify them."""

from __future__ import annotations

import ast
import warnings
from functools import partial

from neuron_migrate.project.source import syntax_error
from neuron_migrate.scan.analyzer.classify import (
    classify_sites,
    reference_verdicts,
    reported_method,
)
from neuron_migrate.scan.analyzer.sites import scan_sites
from neuron_migrate.scan.findings import FileError, FileResult
from neuron_migrate.scan.scan_data import Context
from neuron_migrate.scan.time_budget import OverBudget, budget_s, time_budget


def analyze_source(
    text: str, display: str, context: Context, compiled_from: dict[str, str] | None = None
) -> FileResult:
    """Findings for one decoded file, within the per-file time budget (`scan.time_budget`).
    `compiled_from`: its functions and classes that other modules compile, and where.
    Never raises for bad input."""
    limit = budget_s()
    try:
        with time_budget(limit):
            return _analyzed(text, display, context, compiled_from)
    except OverBudget:
        reason = f"took more than {limit:g} s to analyze (NEURON_MIGRATE_FILE_BUDGET_S)"
        return FileResult(display, error=FileError(display, reason, "timeout"))


def _analyzed(
    text: str, display: str, context: Context, compiled_from: dict[str, str] | None
) -> FileResult:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SyntaxWarning)  # invalid escapes in user code
            tree = ast.parse(text, filename=display)
    except SyntaxError as exc:
        return FileResult(display, error=syntax_error(exc, display))
    except (ValueError, RecursionError, MemoryError) as exc:
        return FileResult(display, error=FileError(display, f"cannot parse: {exc}", "syntax"))
    try:
        methods = partial(reported_method, context)
        references = reference_verdicts(context)
        found = scan_sites(text, tree, compiled_from, methods, references)
        torch = found.refers_to_torch or None
        classified = classify_sites(context, display, text, found.sites, torch, found.unmapped)
    except RecursionError:
        return FileResult(
            display, error=FileError(display, "too deeply nested to analyze", "internal")
        )
    except OverBudget:
        raise
    except Exception as exc:  # a bug of ours: report it for this file, keep going
        reason = f"internal error: {type(exc).__name__}: {exc}".splitlines()[0]
        return FileResult(display, error=FileError(display, reason, "internal"))
    return FileResult(
        display,
        findings=tuple(classified.findings),
        unmapped_apis=dict(classified.unmapped_apis),
        compiles=found.imported,
    )
