"""Inline suppressions: `# neuron-migrate: ignore[NM123]` and `# neuron-migrate: fixme[NM123]`.

Two words with two meanings (Fixit's `lint-ignore` / `lint-fixme`): `ignore` says the finding is
a false positive or accepted; `fixme` says it is known and will be fixed. Both take one or more
codes (`ignore[NM902, NM910]`) and an optional reason after the bracket, which every report
shows. A comment that shares its line with code covers that line; a comment on a line of its own
covers the next line of code (comment lines in between are skipped, so directives can stack).
A suppression that matches no finding is reported, so stale ones do not pile up.
"""

import re
from collections.abc import Iterable
from typing import Any, Literal, NamedTuple

from neuron_migrate.scan.findings import Finding

Kind = Literal["ignore", "fixme"]
KINDS: tuple[str, ...] = ("ignore", "fixme")

MARKER = b"neuron-migrate:"  # a file without these bytes has no suppression: skip tokenizing
_DIRECTIVE = re.compile(
    r"neuron-migrate:\s*(?P<kind>ignore|fixme)\s*\[(?P<codes>[^\]]*)\]\s*(?P<reason>.*)$"
)
_CODE = re.compile(r"^NM\d{3}$")


def directive(
    comment: str, line: int, target: int, path: str, cell: int | None = None
) -> "Suppression | None":
    """The suppression a comment holds (its text from the `#` on); None when it holds no
    directive, or one that names no valid code."""
    match = _DIRECTIVE.search(comment)
    if match is None:
        return None
    codes = tuple(c.strip().upper() for c in match["codes"].split(",") if c.strip())
    codes = tuple(c for c in codes if _CODE.match(c))
    if not codes:
        return None
    return Suppression(path, line, target, match["kind"], codes, match["reason"].strip(), cell)


class Suppression(NamedTuple):
    """One directive in the source."""

    path: str
    line: int  # the line the comment is on (notebooks: the line in its cell)
    target_line: int  # the line of code it covers
    kind: str  # ignore | fixme
    codes: tuple[str, ...]
    reason: str = ""
    cell: int | None = None

    def covers(self, finding: Finding) -> bool:
        return (
            finding.code in self.codes
            and finding.cell == self.cell
            and finding.line <= self.target_line <= max(finding.line, finding.end_line)
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "line": self.line,
            "cell": self.cell,
            "kind": self.kind,
            "codes": list(self.codes),
            "reason": self.reason,
        }


class SuppressedFinding(NamedTuple):
    finding: Finding
    kind: str  # ignore | fixme
    reason: str = ""

    def to_json(self) -> dict[str, Any]:
        return {**self.finding.to_json(), "suppression": self.kind, "reason": self.reason}


class Applied(NamedTuple):
    kept: list[Finding]
    suppressed: list[SuppressedFinding]
    unused: list[Suppression]


def parse_suppressions(text: str, path: str, cell: int | None = None) -> list[Suppression]:
    """Every directive in `text` (Python source). Comments only: never text inside strings."""
    import io
    import tokenize  # here: most files hold no directive, and most scans never tokenize

    comments: list[tuple[int, str, bool]] = []  # (line, text, alone on its line)
    code_lines: set[int] = set()
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.COMMENT:
                comments.append((tok.start[0], tok.string, not tok.line[: tok.start[1]].strip()))
            elif tok.type not in (
                tokenize.NL,
                tokenize.NEWLINE,
                tokenize.INDENT,
                tokenize.DEDENT,
                tokenize.ENDMARKER,
            ):
                code_lines.update(range(tok.start[0], tok.end[0] + 1))
    except (tokenize.TokenError, SyntaxError):
        pass  # keep what was read; the analyzer reports the syntax error itself
    last_line = max(code_lines, default=0)
    found = []
    for line, comment, alone in comments:
        target = line
        if alone:
            target = line + 1
            while target <= last_line and target not in code_lines:
                target += 1
        suppression = directive(comment, line, target, path, cell)
        if suppression is not None:
            found.append(suppression)
    return found


def apply_suppressions(findings: Iterable[Finding], suppressions: list[Suppression]) -> Applied:
    """Split findings into kept and suppressed; directives (or codes) that matched nothing are
    returned as unused, one entry per unused code."""
    out = Applied([], [], [])
    used: set[tuple[Suppression, str]] = set()
    for finding in findings:
        hit = next((s for s in suppressions if s.covers(finding)), None)
        if hit is None:
            out.kept.append(finding)
            continue
        used.add((hit, finding.code))
        out.suppressed.append(SuppressedFinding(finding, hit.kind, hit.reason))
    for suppression in suppressions:
        unused_codes = tuple(c for c in suppression.codes if (suppression, c) not in used)
        if unused_codes:
            out.unused.append(
                Suppression(
                    suppression.path,
                    suppression.line,
                    suppression.target_line,
                    suppression.kind,
                    unused_codes,
                    suppression.reason,
                    suppression.cell,
                )
            )
    return out
