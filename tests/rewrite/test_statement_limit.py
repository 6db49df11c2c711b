"""A statement holding sites that stays longer than the rewrite parses at once, once its site-less
parts are cut out (`codemod.trim`, NEURON_MIGRATE_MAX_STATEMENT): the file is left as it was,
listed under `errors` as `too_large_statement`, not cached, and the run exits 2, as a timeout
does. libcst takes about 0.85 KB a character: a 2 MB line of calls took a 2 GB worker."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from neuron_migrate.rewrite.codemod import trim
from neuron_migrate.rewrite.codemod.engine import rewrite_source
from neuron_migrate.rewrite.codemod.results import StatementTooLarge
from tests.cli import invoke

HEADER = "import torch\nimport torch_xla.core.xla_model as xm\n"
# Every element a site: nothing can be cut out of it. 1,500 calls: about 25,000 characters.
DENSE = HEADER + "x = [" + ", ".join(["xm.xla_device()"] * 1500) + "]\n"
LIMIT = "20000"


def test_a_dense_statement_over_the_limit_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    assert len(DENSE) > trim.LARGE_STATEMENT
    monkeypatch.setenv("NEURON_MIGRATE_MAX_STATEMENT", LIMIT)
    with pytest.raises(StatementTooLarge, match=r"statement at line 3 .* over the 20,000"):
        rewrite_source(DENSE)


def test_no_limit_with_zero(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NEURON_MIGRATE_MAX_STATEMENT", "0")
    result = rewrite_source(DENSE)
    assert result.count("rewritten") == 1500
    assert result.new.count('torch.device("neuron")') == 1500


def test_the_default_limit_spares_a_large_statement_with_few_sites() -> None:
    """Trimmed, a table far over the limit is parsed in a few rows (see test_outline)."""
    rows = [f"    ({i}, 'row {i}', [{i}, {i + 1}, {i + 2}], {{'k': {i}}})," for i in range(3000)]
    rows.insert(1500, "    xm.xla_device(),")
    source = HEADER + "table = [\n" + "\n".join(rows) + "\n]\n"
    assert len(source) > trim.DEFAULT_LARGEST_PARSED
    result = rewrite_source(source)
    assert result.count("rewritten") == 1


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "tree"
    root.mkdir()
    (root / "dense.py").write_text(DENSE)
    (root / "plain.py").write_text(HEADER + "\nxm.mark_step()\n")
    return root


def _rewrite(tree: Path, cache: Path):
    return invoke(["rewrite", str(tree), "--cache-dir", str(cache), "--format", "json"])


def test_the_file_is_an_error_not_cached_and_the_run_exits_2(
    tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "cache"
    with monkeypatch.context() as limited:
        limited.setenv("NEURON_MIGRATE_MAX_STATEMENT", LIMIT)
        result = _rewrite(tree, cache)
    assert result.exit_code == 2
    report = json.loads(result.stdout)
    (error,) = report["errors"]
    assert error["path"] == "dense.py" and error["kind"] == "too_large_statement"
    assert "NEURON_MIGRATE_MAX_STATEMENT" in error["reason"]
    assert [f["path"] for f in report["files"]] == ["plain.py"]
    assert "skipped dense.py: not rewritten: the statement at line 3" in result.stderr
    assert (tree / "dense.py").read_text() == DENSE
    monkeypatch.setenv("NEURON_MIGRATE_MAX_STATEMENT", "0")
    again = _rewrite(tree, cache)
    assert again.exit_code == 0, again.stderr
    report = json.loads(again.stdout)
    assert report["errors"] == []
    assert report["summary"]["from_cache"] == 1  # plain.py only
    assert report["summary"]["rewritten"] == 1500 + 1


def test_a_notebook_is_refused_the_same_way(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from neuron_migrate.rewrite.rewriter import rewrite_file
    from neuron_migrate.ruleset import load_ruleset
    from tests.report.test_notebooks import notebook_text

    cell = {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": []}
    text = notebook_text([{**cell, "source": DENSE.splitlines(keepends=True)}])
    path = tmp_path / "dense.ipynb"
    path.write_text(text)
    monkeypatch.setenv("NEURON_MIGRATE_MAX_STATEMENT", LIMIT)
    result = rewrite_file(str(path), "dense.ipynb", load_ruleset(), unsafe=False)
    assert result.error is not None and result.error.kind == "too_large_statement"
    assert result.new == result.old == text
