"""SARIF fixes are the codemod's exact edits: applying every fix of a file gives what
`rewrite --apply` writes, and the log still validates against the SARIF 2.1.0 schema."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import jsonschema

from neuron_migrate import api
from neuron_migrate.report.sarif import sarif_log
from neuron_migrate.rewriter import rewrite_file
from neuron_migrate.ruleset import load_ruleset
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
