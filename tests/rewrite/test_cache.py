"""The rewrite's result cache: a re-run over unchanged files migrates none of them and says
exactly what a run without the cache says."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from neuron_migrate.incremental.rewrite_cache import RewriteCache
from neuron_migrate.resources import rules_dir
from neuron_migrate.rewrite import rewriter
from neuron_migrate.rewrite.store import rewrite_key, settings_digest
from tests.cli import invoke
from tests.loaded_modules import loaded_modules
from tests.migrations import counted_migrations
from tests.report.test_notebooks import notebook_text
from tests.rewrite.projects import FIXTURES, fixture_project


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = fixture_project(tmp_path / "project")
    (root / "plain.py").write_text("print('nothing to migrate')\n")
    (root / "latin.py").write_bytes(
        b"# -*- coding: latin-1 -*-\nimport torch_xla.core.xla_model as xm\n"
        b"d = xm.xla_device()  # caf\xe9\n"
    )
    (root / "bom.py").write_bytes(b"\xef\xbb\xbfimport torch_xla\nd = torch_xla.device()\n")
    (root / "train.ipynb").write_text(notebook_text())
    return root


@pytest.fixture
def migrations(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    return counted_migrations(monkeypatch)


def _run(project: Path, cache: Path, *extra: str):
    return invoke(["rewrite", str(project), "-j", "1", "--cache-dir", str(cache), *extra])


def _without_cache_count(report: str) -> dict:
    document = json.loads(report)
    document["summary"].pop("from_cache")
    return document


def test_a_warm_run_migrates_nothing_and_says_the_same(project, tmp_path, migrations):
    cache = tmp_path / "cache"
    cold = _run(project, cache)
    migrated = len(migrations)
    assert migrated > 10
    warm = _run(project, cache)
    assert len(migrations) == migrated  # nothing migrated again
    uncached = invoke(["rewrite", str(project), "-j", "1", "--no-cache"])
    assert warm.exit_code == cold.exit_code == uncached.exit_code == 0
    assert warm.stdout == cold.stdout == uncached.stdout
    assert "+++ b/pkg/ddp_spawn.py" in warm.stdout
    assert "from the cache" not in cold.stderr
    files = len(list(project.rglob("*.py"))) + 1  # and the notebook
    note = f"{files - 1} files' results from the cache\n"  # all but plain.py
    assert note in warm.stderr
    assert warm.stderr.replace(note, "") == cold.stderr == uncached.stderr


def test_json_of_a_warm_run_differs_only_in_its_cache_count(project, tmp_path):
    cache = tmp_path / "cache"
    cold = _run(project, cache, "--format", "json")
    warm = _run(project, cache, "--format", "json")
    summary = json.loads(warm.stdout)["summary"]
    assert json.loads(cold.stdout)["summary"]["from_cache"] == 0
    assert summary["from_cache"] == summary["files"] - 1  # all but the prefiltered file
    assert _without_cache_count(warm.stdout) == _without_cache_count(cold.stdout)
    assert json.loads(warm.stdout)["errors"][0]["path"] == "py2.py"  # its syntax error kept


def test_a_bug_on_a_file_is_not_kept(project, tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    original = rewriter.rewrite_source

    def broken_on_ddp(source: str, *args, **kwargs):
        if "xmp.spawn" in source:
            raise RuntimeError("a transform bug")
        return original(source, *args, **kwargs)

    monkeypatch.setattr(rewriter, "rewrite_source", broken_on_ddp)
    assert _run(project, cache).exit_code == 2
    monkeypatch.setattr(rewriter, "rewrite_source", original)
    again = _run(project, cache, "--format", "json")
    assert again.exit_code == 0
    paths = [entry["path"] for entry in json.loads(again.stdout)["files"]]
    assert "pkg/ddp_spawn.py" in paths


def test_a_changed_file_alone_is_migrated_again(project, tmp_path, migrations):
    cache = tmp_path / "cache"
    _run(project, cache)
    target = project / "pkg" / "single_device.py"
    target.write_text(target.read_text() + "\nxm.mark_step()\n")
    migrations.clear()
    warm = _run(project, cache)
    assert migrations == [target.read_text()]  # py2.py's syntax error came from the cache
    assert warm.stdout == invoke(["rewrite", str(project), "-j", "1", "--no-cache"]).stdout


def test_apply_after_a_diff_writes_what_an_uncached_apply_writes(project, tmp_path, migrations):
    cache = tmp_path / "cache"
    copy = tmp_path / "copy"
    shutil.copytree(project, copy)
    _run(project, cache)
    migrated = len(migrations)
    assert _run(project, cache, "--apply").exit_code == 0
    assert len(migrations) == migrated
    invoke(["rewrite", str(copy), "-j", "1", "--apply", "--no-cache"])
    for path in sorted(copy.rglob("*")):
        if path.is_file():
            assert (project / path.relative_to(copy)).read_bytes() == path.read_bytes(), path
    assert (project / "latin.py").read_bytes().endswith(b"caf\xe9\n")  # its own encoding kept
    assert (project / "bom.py").read_bytes().startswith(b"\xef\xbb\xbf")


def test_unsafe_fixes_are_not_served_from_safe_results(project, tmp_path):
    cache = tmp_path / "cache"
    safe = _run(project, cache)
    unsafe = _run(project, cache, "--unsafe-fixes")
    expected = invoke(["rewrite", str(project), "-j", "1", "--no-cache", "--unsafe-fixes"])
    assert "from the cache" not in unsafe.stderr
    assert unsafe.stdout == expected.stdout
    assert unsafe.stdout != safe.stdout


def test_a_pool_mixing_cached_and_new_files_keeps_the_order(project, tmp_path):
    for n in range(20):
        shutil.copy(FIXTURES / "single_device.in.py", project / "pkg" / f"copy_{n:02}.py")
    cache = tmp_path / "cache"
    invoke(["rewrite", str(project), "-j", "2", "--cache-dir", str(cache)])
    for name in ("copy_03.py", "copy_11.py", "ddp_spawn.py"):
        path = project / "pkg" / name
        path.write_text(path.read_text().replace("xm.xla_device()", "xm.xla_device(n=None)", 1))
    args = ["rewrite", str(project), "--format", "json"]
    pooled = invoke([*args, "-j", "2", "--cache-dir", str(cache)])
    single = invoke([*args, "-j", "1", "--no-cache"])
    assert json.loads(pooled.stdout)["summary"]["from_cache"] > 20
    assert _without_cache_count(pooled.stdout) == _without_cache_count(single.stdout)
    diff_pooled = invoke(["rewrite", str(project), "-j", "2", "--cache-dir", str(cache)])
    assert diff_pooled.stdout == invoke(["rewrite", str(project), "-j", "1", "--no-cache"]).stdout


def test_an_unreadable_entry_is_migrated_again(project, tmp_path, migrations):
    cache = tmp_path / "cache"
    cold = _run(project, cache)
    with sqlite3.connect(next(cache.glob("rewrite-results-*.sqlite"))) as db:
        db.execute("UPDATE rewrites SET entry = ?", (b"not a pickle",))
    migrations.clear()
    warm = _run(project, cache)
    assert len(migrations) > 10
    assert warm.stdout == cold.stdout
    assert "from the cache" not in warm.stderr


def test_a_cache_folder_that_cannot_be_used_is_one_line_naming_it(project, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    result = _run(project, blocker)
    assert result.exit_code == 2
    assert "cannot open the cache in" in result.stderr and str(blocker) in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_the_key_covers_the_bytes_the_kind_of_file_and_the_rules(tmp_path):
    settings = settings_digest(unsafe=False)
    data = b"import torch_xla\n"
    assert rewrite_key(settings, data, notebook=False) != rewrite_key(settings, data, True)
    assert rewrite_key(settings, data, False) != rewrite_key(settings, data + b"\n", False)
    assert settings != settings_digest(unsafe=True)
    rules = tmp_path / "rules"
    shutil.copytree(rules_dir(), rules)
    assert settings_digest(False, rules) == settings
    some_rule = sorted(rules.rglob("*.yaml"))[0]
    some_rule.write_text(some_rule.read_text() + "\n# edited\n")
    assert settings_digest(False, rules) != settings


def test_a_run_the_cache_answers_loads_neither_libcst_nor_the_rules(project, tmp_path):
    args = ["rewrite", str(project), "-j", "2", "--cache-dir", str(tmp_path / "cache")]
    # The first run reads the rules (its workers migrate), the second neither.
    assert "yaml" in loaded_modules(("libcst", "yaml"), *args)
    assert loaded_modules(("libcst", "yaml"), *args) == []


def test_a_warm_pooled_run_reads_the_tree_a_stretch_at_a_time(project, tmp_path, monkeypatch):
    for n in range(40):
        (project / f"m{n:02}.py").write_text(f"import torch_xla\nd{n} = torch_xla.device()\n")
    cache = tmp_path / "cache"
    invoke(["rewrite", str(project), "-j", "2", "--cache-dir", str(cache)])
    monkeypatch.setattr(rewriter, "_LOOKUP", 4)
    pulled = []
    planned = rewriter._planned

    def counted(*args):
        for items in planned(*args):
            pulled.append(len(items))
            yield items

    monkeypatch.setattr(rewriter, "_planned", counted)
    results = rewriter.rewrite_tree(project, jobs=2, cache=RewriteCache(cache))
    first = next(results)
    assert first.from_cache
    assert len(pulled) <= 3  # not the whole tree before the first result
    assert all(result.from_cache for result in results if result.display.startswith("m"))
    assert len(pulled) > 10


def test_a_migrated_copy_from_the_cache_is_the_copy_made_without_it(project, tmp_path):
    cache = tmp_path / "cache"
    _run(project, cache)
    warm_copy, cold_copy = tmp_path / "warm-copy", tmp_path / "cold-copy"
    assert _run(project, cache, "--out-dir", str(warm_copy)).exit_code == 0
    invoke(["rewrite", str(project), "-j", "1", "--no-cache", "--out-dir", str(cold_copy)])
    copied = sorted(p.relative_to(cold_copy) for p in cold_copy.rglob("*") if p.is_file())
    assert copied == sorted(p.relative_to(warm_copy) for p in warm_copy.rglob("*") if p.is_file())
    for relative in copied:
        assert (warm_copy / relative).read_bytes() == (cold_copy / relative).read_bytes()
    assert (warm_copy / "pkg" / "single_device.py").read_bytes() != (
        project / "pkg" / "single_device.py"
    ).read_bytes()


def test_one_file_from_the_cache_is_said_so(tmp_path):
    target = tmp_path / "one.py"
    shutil.copy(FIXTURES / "single_device.in.py", target)
    cache = tmp_path / "cache"
    first = invoke(["rewrite", str(target), "--cache-dir", str(cache)])
    second = invoke(["rewrite", str(target), "--cache-dir", str(cache)])
    assert second.stdout == first.stdout and "+++ b/one.py" in second.stdout
    assert "1 file's result from the cache\n" in second.stderr
