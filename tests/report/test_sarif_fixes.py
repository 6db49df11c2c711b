"""SARIF fixes are the codemod's exact edits: applying every fix of a file gives what
`rewrite --apply` writes, and the log still validates against the SARIF 2.1.0 schema."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import jsonschema

from neuron_migrate import api
from neuron_migrate.report.sarif import sarif_log
from neuron_migrate.report.sarif_fixes import Hunk, hunks, touched_hunks
from neuron_migrate.rewrite.rewriter import rewrite_file
from neuron_migrate.ruleset import load_ruleset
from neuron_migrate.scan.findings import Finding
from tests.migrations import counted_migrations

FIXTURES = Path(__file__).parents[2] / "fixtures"
SCHEMA = json.loads((Path(__file__).parent / "sarif-schema-2.1.0.json").read_text())


def _apply(text: str, replacements: list[dict]) -> str:
    for r in sorted(replacements, key=lambda r: -r["deletedRegion"]["charOffset"]):
        start = r["deletedRegion"]["charOffset"]
        end = start + r["deletedRegion"]["charLength"]
        text = text[:start] + r["insertedContent"]["text"] + text[end:]
    return text


def test_fixes_rebuild_the_rewritten_file(tmp_path: Path) -> None:
    tree = tmp_path / "proj"
    shutil.copytree(FIXTURES / "projects" / "mlp_single", tree)
    log = sarif_log(api.scan(tree, use_cache=False, fail_on=("none",)))
    jsonschema.validate(log, SCHEMA)
    per_file: dict[str, list[dict]] = {}
    for result in log["runs"][0]["results"]:
        for fix in result.get("fixes", []):
            for change in fix["artifactChanges"]:
                uri = change["artifactLocation"]["uri"]
                per_file.setdefault(uri, []).extend(change["replacements"])
    assert per_file, "fixable findings carry fixes"
    for uri, replacements in per_file.items():
        path = Path(uri)  # the scanned folder was given as an absolute path
        expected = rewrite_file(str(path), path.name, load_ruleset(), unsafe=False).new
        assert _apply(path.read_text(), replacements) == expected


def test_a_warm_scan_takes_its_fixes_from_the_rewrite_cache(tmp_path: Path, monkeypatch) -> None:
    tree = tmp_path / "proj"
    shutil.copytree(FIXTURES / "projects" / "mlp_single", tree)
    cache = tmp_path / "cache"
    migrated = counted_migrations(monkeypatch)

    def log() -> dict:
        report = api.scan(tree, cache_dir=cache, fail_on=("none",), jobs=1)
        return sarif_log(report)["runs"][0]["results"]

    cold = log()
    assert migrated and any("fixes" in result for result in cold)
    migrated.clear()
    assert log() == cold
    assert migrated == []  # every fix from the cache
    uncached = sarif_log(api.scan(tree, use_cache=False, fail_on=("none",)))
    assert uncached["runs"][0]["results"] == cold


def _touches(hunk: Hunk, finding: Finding) -> bool:
    """A hunk touches a finding when their line ranges meet (an insertion: the line it goes
    before)."""
    last = max(hunk.last_line, hunk.first_line)
    return hunk.first_line <= max(finding.end_line, finding.line) and finding.line <= last


def _touched_by_scanning(findings: list[Finding], file_hunks: list[Hunk]) -> dict[str, list[int]]:
    claims: dict[str, list[int]] = {}
    claimed: set[int] = set()
    for finding in findings:
        mine = [i for i, h in enumerate(file_hunks) if i not in claimed and _touches(h, finding)]
        claimed.update(mine)
        if mine:
            claims[finding.fingerprint] = mine
    return claims


def test_hunks_rebuild_the_new_text_and_findings_get_the_hunks_they_touch(tmp_path: Path) -> None:
    tree = tmp_path / "proj"
    shutil.copytree(FIXTURES / "projects", tree)
    for path in (FIXTURES / "rewrite").glob("*.in.py"):
        shutil.copy(path, tree / path.name.replace(".in.py", ".py"))
    report = api.scan(tree, use_cache=False, fail_on=("none",))
    by_path: dict[str, list[Finding]] = {}
    for finding in report.findings:
        if finding.fixable and finding.cell is None:
            by_path.setdefault(finding.path, []).append(finding)
    assert len(by_path) > 10
    for path, group in by_path.items():
        result = rewrite_file(str(tree / path), path, load_ruleset(), unsafe=False)
        file_hunks = hunks(result.old, result.new)
        rebuilt = result.old
        for h in sorted(file_hunks, key=lambda h: -h.char_offset):
            rebuilt = (
                rebuilt[: h.char_offset] + h.inserted + rebuilt[h.char_offset + h.char_length :]
            )
        assert rebuilt == result.new, path
        group.sort(key=lambda f: (f.line, f.col))
        claims = touched_hunks(group, file_hunks)
        assert claims == _touched_by_scanning(group, file_hunks), path
        assert claims  # the fixtures' sites lie in the hunks of their own fixes


def test_hunk_lines_are_numbered_as_python_numbers_them() -> None:
    # A form feed in a comment and a lone carriage return: the tokenizer ends a line at the
    # `\r` only, so the changed line is the third.
    old = "# page\x0cbreak\nx = 1\rdevice = 'xla'\n"
    new = "# page\x0cbreak\nx = 1\rdevice = 'neuron'\n"
    assert [(h.first_line, h.last_line) for h in hunks(old, new)] == [(3, 3)]
