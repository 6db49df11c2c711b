"""Findings and suppressions for one project file (shell, Dockerfile, dependencies, YAML/JSON)."""

from collections import Counter

from neuron_migrate.project_files.hits import Positions
from neuron_migrate.project_files.readers import PartlyUnreadable, UnreadableFile
from neuron_migrate.project_files.resolve import Target, resolve
from neuron_migrate.ruleset.model import Rule
from neuron_migrate.scan.findings import (
    FileError,
    FileResult,
    Finding,
    Fingerprints,
    bounded_snippet,
)
from neuron_migrate.scan.scan_data import Context


def project_file_result(text: str, display: str, kind: str, context: Context) -> FileResult:
    """`scan_project_file` with the rules and target pair of a scan's data."""
    matrix = context.matrix
    return scan_project_file(
        text, display, kind, context.rules.rules, Target(matrix.version, matrix.torch_version)
    )


def scan_project_file(
    text: str, display: str, kind: str, rules: tuple[Rule, ...], target: Target
) -> FileResult:
    """The findings of one decoded project file. Never raises for bad input."""
    unread: FileError | None = None  # statements that do not parse, beside the others' findings
    try:
        resolved = resolve(text, kind, rules, target)
    except PartlyUnreadable as exc:
        resolved = exc.resolved
        unread = FileError(display, str(exc), "syntax", partial=True)
    except UnreadableFile as exc:
        return FileResult(display, error=FileError(display, str(exc), "syntax"))
    except RecursionError:
        return FileResult(display, error=FileError(display, "too deeply nested", "internal"))
    except Exception as exc:  # a bug of ours: report it for this file, keep going
        reason = f"internal error: {type(exc).__name__}: {exc}".splitlines()[0]
        return FileResult(display, error=FileError(display, reason, "internal"))
    positions = Positions(text)
    lines = text.splitlines()
    seen: Counter[tuple[str, str, str]] = Counter()
    normalised_lines: dict[int, str] = {}  # each line once: a minified JSON line is one line
    fingerprints = Fingerprints(display)
    findings = []
    for item in sorted(resolved, key=lambda r: (r.hit.start, r.rule.code)):
        hit, rule = item.hit, item.rule
        assert rule.files is not None
        line, col = positions.of(hit.start)
        end_line, end_col = positions.of(max(hit.end, hit.start))
        normalised = normalised_lines.get(line)
        if normalised is None:
            raw = lines[line - 1] if line - 1 < len(lines) else ""
            normalised = normalised_lines[line] = " ".join(raw.split())
        key = (rule.code, item.api, normalised)
        occurrence = seen[key]
        seen[key] = occurrence + 1
        status = rule.files.status
        findings.append(
            Finding(
                code=rule.code,
                category="xla_idiom",
                status=status,
                severity="error" if status == "unsupported" else rule.severity,
                path=display,
                line=line,
                col=col,
                end_line=end_line,
                end_col=end_col,
                api=item.api,
                message=item.message,
                replacement=rule.replacement,
                fixable=_fixable(item.hit, item.fix or rule.files.fix),
                snippet=bounded_snippet(lines, line, col),
                fingerprint=fingerprints.of(rule.code, item.api, normalised, occurrence),
            )
        )
    return FileResult(display, findings=tuple(findings), error=unread)


def _fixable(hit: object, fix: str) -> bool:
    if fix == "drop":
        return getattr(hit, "drop", None) is not None
    if fix == "rename":
        return getattr(hit, "name", None) is not None
    return False
