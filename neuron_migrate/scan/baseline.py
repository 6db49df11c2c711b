"""Baselines: record today's findings, then fail only on findings that are new.

A baseline is a JSON file of finding fingerprints (path, rule, API, the stripped source line and
which occurrence of that line it is -- never a line number), so findings survive code moving and
unrelated edits. It lists no line numbers either, so the file itself does not churn.
"""

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any, NamedTuple

from neuron_migrate import __version__
from neuron_migrate.errors import DataFileError
from neuron_migrate.report.output import write_output
from neuron_migrate.scan.findings import Finding

KIND = "neuron-migrate-baseline"
SCHEMA_VERSION = "1"


class Baseline(NamedTuple):
    path: str
    fingerprints: frozenset[str]
    entries: int


def baseline_text(findings: Iterable[Finding], target: str) -> str:
    entries = sorted(
        (
            {
                "fingerprint": f.fingerprint,
                "path": f.path,
                "code": f.code,
                "api": f.api,
                "snippet": f.snippet,
            }
            for f in findings
        ),
        key=lambda e: (e["path"], e["code"], e["api"], e["fingerprint"]),
    )
    doc = {
        "kind": KIND,
        "schema_version": SCHEMA_VERSION,
        "tool_version": __version__,
        "target": target,
        "findings": entries,
    }
    return json.dumps(doc, indent=2) + "\n"


def write_baseline(path: Path, findings: Iterable[Finding], target: str) -> Baseline:
    findings = list(findings)
    write_output(baseline_text(findings, target), path)
    prints = frozenset(f.fingerprint for f in findings)
    return Baseline(str(path), prints, len(findings))


def load_baseline(path: Path) -> Baseline:
    shown = str(path)
    try:
        data: Any = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise DataFileError(
            shown, "(file)", "baseline not found (write one with --write-baseline)"
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise DataFileError(shown, "(file)", f"cannot read: {exc}") from None
    except json.JSONDecodeError as exc:
        raise DataFileError(shown, "(file)", f"invalid JSON at line {exc.lineno}") from None
    if not isinstance(data, dict) or data.get("kind") != KIND:
        raise DataFileError(shown, "kind", f"not a neuron-migrate baseline (expected {KIND!r})")
    entries = data.get("findings")
    if not isinstance(entries, list):
        raise DataFileError(shown, "findings", "must be a list")
    prints = set()
    for i, entry in enumerate(entries):
        fingerprint = entry.get("fingerprint") if isinstance(entry, dict) else None
        if not isinstance(fingerprint, str) or not fingerprint:
            raise DataFileError(shown, f"findings[{i}].fingerprint", "missing")
        prints.add(fingerprint)
    return Baseline(shown, frozenset(prints), len(entries))
