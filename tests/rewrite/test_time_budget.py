"""The rewrite runs under the scan's per-file time budget (NEURON_MIGRATE_FILE_BUDGET_S): a file
that takes longer is reported under `errors` as `timeout`, left as it was, not cached, and the
run goes on over the other files, then exits 2 (a file that may need a change was not done)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from neuron_migrate.rewrite import rewriter
from tests.cli import invoke

SOURCE = "import torch_xla.core.xla_model as xm\n\nxm.mark_step()\n"


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "tree"
    root.mkdir()
    (root / "slow.py").write_text(SOURCE + "# slow\n")
    (root / "quick.py").write_text(SOURCE)
    return root


def _slow_on_marked_files(monkeypatch: pytest.MonkeyPatch) -> None:
    import neuron_migrate.rewrite.codemod.engine  # noqa: F401  (loaded: no file pays for it)

    original = rewriter.rewrite_source

    def slow(source: str, *args, **kwargs):
        if "# slow" in source:
            time.sleep(30)  # the budget's alarm interrupts it
        return original(source, *args, **kwargs)

    monkeypatch.setattr(rewriter, "rewrite_source", slow)


def _rewrite(tree: Path, cache: Path, jobs: int = 1):
    args = ["rewrite", str(tree), "-j", str(jobs), "--cache-dir", str(cache), "--format", "json"]
    return invoke(args)


@pytest.mark.parametrize("jobs", [1, 2])  # in this process, and in forked workers
def test_a_file_over_its_budget_is_a_timeout_error_and_the_run_goes_on(
    tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, jobs: int
) -> None:
    _slow_on_marked_files(monkeypatch)
    monkeypatch.setenv("NEURON_MIGRATE_FILE_BUDGET_S", "2")
    started = time.monotonic()
    result = _rewrite(tree, tmp_path / "cache", jobs)
    assert time.monotonic() - started < 20
    assert result.exit_code == 2
    report = json.loads(result.stdout)
    (error,) = report["errors"]
    assert error["path"] == "slow.py" and error["kind"] == "timeout"
    assert "NEURON_MIGRATE_FILE_BUDGET_S" in error["reason"]
    assert [f["path"] for f in report["files"]] == ["quick.py"]
    assert "skipped slow.py: took more than 2 s to rewrite" in result.stderr


def test_a_timeout_is_not_cached(
    tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "cache"
    with monkeypatch.context() as slowed:
        _slow_on_marked_files(slowed)
        slowed.setenv("NEURON_MIGRATE_FILE_BUDGET_S", "2")
        assert _rewrite(tree, cache).exit_code == 2
    again = _rewrite(tree, cache)
    assert again.exit_code == 0, again.stderr
    report = json.loads(again.stdout)
    assert report["errors"] == []
    assert sorted(f["path"] for f in report["files"]) == ["quick.py", "slow.py"]
    assert report["summary"]["from_cache"] == 1  # quick.py only


def test_no_budget_with_zero(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NEURON_MIGRATE_FILE_BUDGET_S", "0")
    result = rewriter.rewrite_file(
        str(tree / "quick.py"), "quick.py", rewriter.load_ruleset(), unsafe=False
    )
    assert result.error is None and result.changed
