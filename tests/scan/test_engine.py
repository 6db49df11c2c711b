"""The engine: prefilter, cache and workers give the same findings as a plain run."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from neuron_migrate import api
from neuron_migrate.project.discover import may_hold_findings
from neuron_migrate.scan import engine

FIXTURES = Path(__file__).parents[2] / "fixtures"


def _key(report: api.ScanReport) -> list[tuple[str, int, int, str, str]]:
    return sorted((f.path, f.line, f.col, f.code, f.api) for f in report.findings)


def test_prefilter_never_skips_a_file_with_findings() -> None:
    for path in sorted(FIXTURES.rglob("*.py")):
        report = api.scan(path, jobs=1, use_cache=False)
        if report.findings:
            assert may_hold_findings(path.read_bytes()), path


def test_prefilter_keeps_a_module_that_only_imports_nxd(tmp_path: Path) -> None:
    """NxD library modules often import neither torch nor torch_xla: their NxD uses count."""
    (tmp_path / "layer.py").write_text(
        "from neuronx_distributed.utils.logger import get_logger\n\nlogger = get_logger()\n"
    )
    report = api.scan(tmp_path, jobs=1, use_cache=False)
    assert report.files_prefiltered == 0
    assert [f.code for f in report.findings] == ["NM805"]


def test_prefilter_skips_plain_python(tmp_path: Path) -> None:
    (tmp_path / "util.py").write_text("def add(a, b):\n    return sorted([a, b])\n")
    report = api.scan(tmp_path, jobs=1, use_cache=False)
    assert report.files_prefiltered == 1 and report.files_analyzed == 0


def test_cache_and_workers_agree_with_a_plain_run(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    shutil.copytree(FIXTURES / "analyze", tree)
    cache = tmp_path / "cache"
    plain = api.scan(tree, jobs=1, use_cache=False)
    cold = api.scan(tree, jobs=2, cache_dir=cache)
    warm = api.scan(tree, jobs=2, cache_dir=cache)
    assert _key(plain) == _key(cold) == _key(warm)
    assert cold.files_cached == 0
    assert warm.files_cached == warm.files_analyzed > 0


def test_changed_file_is_rescanned(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("import torch_xla.core.xla_model as xm\nxm.mark_step()\n")
    (tmp_path / "b.py").write_text("import torch_xla.core.xla_model as xm\nxm.mark_step()\n")
    cache = tmp_path / "cache"
    api.scan(tmp_path, jobs=1, cache_dir=cache)
    (tmp_path / "b.py").write_text("import torch_xla.core.xla_model as xm\nxm.xla_device()\n")
    again = api.scan(tmp_path, jobs=1, cache_dir=cache)
    assert again.files_cached == 1
    assert {f.api for f in again.findings if f.path == "b.py"} == {
        "torch_xla.core.xla_model.xla_device"
    }


def test_a_small_change_is_analysed_without_starting_workers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tree, cache = tmp_path / "tree", tmp_path / "cache"
    shutil.copytree(FIXTURES / "analyze", tree)
    cold = api.scan(tree, jobs=2, cache_dir=cache)
    (tree / "alias_plain.py").write_text("import torch_xla.core.xla_model as xm\nxm.mark_step()\n")

    def no_workers(*args: object) -> None:
        raise AssertionError("a worker pool was started for one changed file")

    monkeypatch.setattr(engine, "_pool", no_workers)
    again = api.scan(tree, jobs=2, cache_dir=cache)
    assert again.files_cached == cold.files_analyzed - 1
    assert {f.api for f in again.findings if f.path == "alias_plain.py"} == {
        "torch_xla.core.xla_model.mark_step"
    }


def test_analysis_leaves_no_reference_cycles() -> None:
    """The workers collect garbage rarely (`gc_tuning.collect_less`): that is only free while
    analysing a file leaves no cyclic garbage behind."""
    import gc

    from neuron_migrate.matrix import newest_version
    from neuron_migrate.scan.engine import ScanSettings, _analyze_bytes

    context = ScanSettings(newest_version()).context()
    sources = sorted(FIXTURES.rglob("*.py"))
    gc.collect()
    gc.disable()
    try:
        for path in sources:
            _analyze_bytes(path.read_bytes(), path.name, context)
        assert gc.collect() == 0
    finally:
        gc.enable()


def test_a_rescan_and_its_report_leave_no_cyclic_garbage_per_file(tmp_path: Path) -> None:
    """The scan command collects garbage rarely in its main process too: reading results from
    the cache and assembling the report must leave no cyclic garbage per file (json's indenting
    encoder leaves a few closures once per report, whatever its size)."""
    import gc

    from neuron_migrate.report.json_report import render_json

    def garbage_of_a_rescan(copies: int) -> int:
        tree, cache = tmp_path / f"tree{copies}", tmp_path / f"cache{copies}"
        for copy in range(copies):
            shutil.copytree(FIXTURES / "analyze", tree / f"copy{copy}")
        api.scan(tree, jobs=1, cache_dir=cache)
        gc.collect()
        gc.disable()
        try:
            warm = api.scan(tree, jobs=1, cache_dir=cache)
            assert warm.files_cached > 0
            render_json(warm)
            del warm
            return gc.collect()
        finally:
            gc.enable()

    assert garbage_of_a_rescan(1) == garbage_of_a_rescan(3)


def test_collecting_less_restores_the_collector_once_the_outermost_block_ends() -> None:
    import gc

    from neuron_migrate.gc_tuning import collecting_less

    before = gc.get_threshold()
    with collecting_less((50_000, 20, 30)):
        assert gc.get_threshold() == (50_000, 20, 30)
        with collecting_less((10,)):  # nested: nothing changes
            assert gc.get_threshold() == (50_000, 20, 30)
        assert gc.get_threshold() == (50_000, 20, 30)
        assert gc.get_freeze_count() > 0
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0


def test_a_cached_result_reads_back_equal_to_the_analysed_one(tmp_path: Path) -> None:
    """Every field of a result survives the cache: findings, suppressed and unused
    suppressions, unmapped APIs, errors and skips."""
    from neuron_migrate.incremental.cache import ResultCache
    from neuron_migrate.scan.engine import ScanSettings, _analyze_bytes

    suppressing = (
        "import torch_xla.core.xla_model as xm\n"
        "device = xm.xla_device()  # neuron-migrate: ignore[NM101] our launcher\n"
        "# neuron-migrate: fixme[NM999]\n"
        "print(1)\n"
    )
    sources = {"suppressing.py": suppressing.encode(), "bad.py": b"def (:\n"}
    for path in sorted((FIXTURES / "analyze").rglob("*.py"))[:20]:
        sources[path.name] = path.read_bytes()
    context = ScanSettings(target="2.14.3.0").context()
    results = {name: _analyze_bytes(data, name, context) for name, data in sources.items()}
    assert results["suppressing.py"].suppressed and results["suppressing.py"].unused_suppressions
    assert results["bad.py"].error is not None
    assert any(r.unmapped_apis for r in results.values())
    cache = ResultCache(tmp_path)
    for name, result in results.items():
        cache.put(name, result)
    cache.flush()
    back = cache.get_many(list(results))
    for name, result in results.items():
        assert back[name] == result, name
    cache.close()


def test_files_are_found_in_the_order_of_their_display_paths(tmp_path: Path) -> None:
    """The report's order: the cache then holds consecutive files' rows one after another."""
    from neuron_migrate.project.discover import discover

    for path in ("b.py", "b/c.py", "ba.py", "a.py", "b/a/z.py", "b.x/q.py", "B.py", "b-/d.py"):
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text("")
    found = [source.display for source in discover(tmp_path)]
    assert found == sorted(found) and len(found) == 8
    assert found.index("b.py") < found.index("b/c.py") < found.index("ba.py")
