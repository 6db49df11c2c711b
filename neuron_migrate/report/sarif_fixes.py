"""SARIF `fix` objects: the codemod's exact edits, attached to the results they resolve.

The file is migrated in memory by the same codemod `rewrite` runs; the difference between the old
and new text is split into hunks. A hunk that touches a fixable result's lines becomes that
result's fix; hunks that touch no result (the import clean-up at the top of the file) go with the
file's first fixable result, so that applying every fix of a file gives exactly what
`rewrite --apply` writes. Regions are character offsets, which leave no doubt about newlines.
"""

from __future__ import annotations

import bisect
import difflib
import io
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from neuron_migrate.scan.findings import Finding


@dataclass(frozen=True)
class Hunk:
    first_line: int  # 1-based first old line replaced (for an insertion: the line it goes before)
    last_line: int  # 1-based last old line replaced; first_line - 1 for a pure insertion
    char_offset: int
    char_length: int
    inserted: str


def source_lines(text: str) -> list[str]:
    """`text`'s lines as Python numbers them (a finding's line): ended by `\n`, `\r\n` or `\r`
    alone, not by the form feeds and other separators `str.splitlines` also cuts at."""
    return io.StringIO(text, newline="").readlines()


def hunks(old: str, new: str) -> list[Hunk]:
    """The line ranges in which `new` differs from `old`, each with its new text.

    A whole-file matcher that gives no line a junk heuristic (what keeps a change next to an
    unchanged blank line its own hunk) takes time quadratic in a file's repeated lines: 25 s
    over the benchmark monorepo's 1,954 changed files. So the changed regions are found as
    `rewrite`'s unified diff finds them (repeated lines cannot anchor a match), then each is
    matched again on its own without the heuristic: 1.4 s, the same hunks in 1,947 of those
    files, and finer ones in the other 7.
    """
    old_lines, new_lines = source_lines(old), source_lines(new)
    offsets = [0]
    for line in old_lines:
        offsets.append(offsets[-1] + len(line))
    out = []
    regions = difflib.SequenceMatcher(a=old_lines, b=new_lines).get_opcodes()
    for tag, i1, i2, j1, j2 in regions:
        if tag == "equal":
            continue
        region = difflib.SequenceMatcher(a=old_lines[i1:i2], b=new_lines[j1:j2], autojunk=False)
        for inner, a1, a2, b1, b2 in region.get_opcodes():
            if inner == "equal":
                continue
            first, last = i1 + a1, i1 + a2
            out.append(
                Hunk(
                    first_line=first + 1,
                    last_line=last,
                    char_offset=offsets[first],
                    char_length=offsets[last] - offsets[first],
                    inserted="".join(new_lines[j1 + b1 : j1 + b2]),
                )
            )
    return out


def fixes_for(
    findings: Iterable[Finding], base: str, cache_dir: str | None = None, jobs: int = 1
) -> dict[str, list[Hunk]]:
    """Fingerprint -> the hunks that make up its fix, for fixable findings in .py files. The
    files are migrated by `jobs` processes, their results looked up in, and stored to, the
    cache in `cache_dir` (the scan's)."""
    by_path: dict[str, list[Finding]] = defaultdict(list)
    for finding in findings:
        if finding.fixable and finding.cell is None and finding.path.endswith(".py"):
            by_path[finding.path].append(finding)
    if not by_path:
        return {}
    from neuron_migrate.rewrite.rewriter import rewrite_sources
    from neuron_migrate.rewrite.store import NoRewriteCache, RewriteStore

    paths = sorted(by_path)
    sources = [(str(Path(base) / path), path) for path in paths]
    cache: RewriteStore = NoRewriteCache()
    if cache_dir is not None:
        from neuron_migrate.incremental.rewrite_cache import RewriteCache

        cache = RewriteCache(Path(cache_dir))
    out: dict[str, list[Hunk]] = {}
    try:
        results = rewrite_sources(sources, jobs=jobs, cache=cache)
        for path, result in zip(paths, results, strict=True):
            if result.error is None and result.changed:
                out.update(_fixes_of(by_path[path], hunks(result.old, result.new)))
    finally:
        cache.close()
    return out


def _fixes_of(group: list[Finding], file_hunks: list[Hunk]) -> dict[str, list[Hunk]]:
    """Each hunk of a file's rewrite given to the findings it touches; the hunks no finding
    touches go to the first finding that has a fix (else the first)."""
    group.sort(key=lambda f: (f.line, f.col))
    claims = touched_hunks(group, file_hunks)
    out = {fingerprint: [file_hunks[i] for i in mine] for fingerprint, mine in claims.items()}
    claimed = {i for mine in claims.values() for i in mine}
    leftovers = [h for i, h in enumerate(file_hunks) if i not in claimed]
    if leftovers:
        owner = next((f for f in group if f.fingerprint in out), group[0])
        out[owner.fingerprint] = sorted(
            out.get(owner.fingerprint, []) + leftovers, key=lambda h: h.char_offset
        )
    return out


def touched_hunks(findings: list[Finding], file_hunks: list[Hunk]) -> dict[str, list[int]]:
    """Fingerprint -> the positions of the hunks the finding touches (their line ranges meet;
    an insertion's is the line it goes before) that no finding before it took. The hunks come
    in line order, apart from each other: those a finding touches are a run, found by
    bisection."""
    starts = [h.first_line for h in file_hunks]
    stops = [max(h.last_line, h.first_line) for h in file_hunks]
    claims: dict[str, list[int]] = {}
    claimed: set[int] = set()
    for finding in findings:
        lo = bisect.bisect_left(stops, finding.line)
        hi = bisect.bisect_right(starts, max(finding.end_line, finding.line))
        mine = [i for i in range(lo, hi) if i not in claimed]
        claimed.update(mine)
        if mine:
            claims[finding.fingerprint] = mine
    return claims


def sarif_fix(uri: str, parts: list[Hunk]) -> dict[str, Any]:
    return {
        "description": {"text": "neuron-migrate rewrite (the codemod's edit for this site)"},
        "artifactChanges": [
            {
                "artifactLocation": {"uri": uri},
                "replacements": [
                    {
                        "deletedRegion": {"charOffset": h.char_offset, "charLength": h.char_length},
                        "insertedContent": {"text": h.inserted},
                    }
                    for h in parts
                ],
            }
        ],
    }
