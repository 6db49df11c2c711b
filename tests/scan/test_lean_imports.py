"""What a re-scan loads: the modules a cache-answered scan does not need stay unimported (each
costs milliseconds of start-up on every CI run)."""

from __future__ import annotations

import ast
import time
from pathlib import Path

from neuron_migrate.incremental.stat_index import SETTLED_NS
from tests.loaded_modules import imported_by, loaded_modules

HEAVY = (
    "yaml",
    "libcst",
    "rich",
    "tomllib",
    "multiprocessing",
    "neuron_migrate.scan.analysis",
    "dataclasses",
    "inspect",
)


def _loaded(*args: str, watched: tuple[str, ...] = HEAVY) -> list[str]:
    """The modules of `watched` that the command loads beyond what the CLI's framework (typer)
    loads by itself: that part is the start-up the move to typer accepted (bench/README.md)."""
    framework = imported_by("typer", watched)
    assert not {"rich", "yaml", "hashlib", "sqlite3"} & set(framework)
    return [m for m in loaded_modules(watched, *args) if m not in framework]


def test_a_warm_rescan_loads_no_analysis_and_an_edit_no_yaml(tmp_path: Path) -> None:
    tree, cache = tmp_path / "tree", tmp_path / "cache"
    tree.mkdir()
    for n in range(3):
        (tree / f"m{n}.py").write_text("import torch_xla.core.xla_model as xm\nxm.mark_step()\n")
    scan = ["scan", str(tree), "-f", "json", "--cache-dir", str(cache), "-j", "2"]
    assert "yaml" in _loaded(*scan)  # the first scan reads the rules and the matrix
    assert _loaded(*scan) == []
    (tree / "m0.py").write_text("import torch_xla.core.xla_model as xm\nxm.xla_device()\n")
    # One file to analyse: in this process, from the data snapshot; no YAML, no pool, and no
    # dataclass defined on the way (`neuron_migrate.scan.records`).
    assert _loaded(*scan) == ["neuron_migrate.scan.analysis"]


def test_rescans_of_a_settled_tree_load_neither_openssl_nor_sqlite_for_nothing(
    tmp_path: Path,
) -> None:
    tree, cache = tmp_path / "tree", tmp_path / "cache"
    tree.mkdir()
    for n in range(3):
        (tree / f"m{n}.py").write_text("import torch_xla.core.xla_model as xm\nxm.mark_step()\n")
    scan = ["scan", str(tree), "-f", "json", "--cache-dir", str(cache), "-j", "2"]
    watched = ("hashlib", "sqlite3", "tokenize")
    assert "sqlite3" in _loaded(*scan, watched=watched)  # the first scan fills the cache
    # Files younger than SETTLED_NS when scanned are read again by the next scan.
    time.sleep(SETTLED_NS / 1e9 + 0.1)
    _loaded(*scan, watched=watched)
    # Unchanged: the report snapshot answers, and the result cache is not opened.
    assert _loaded(*scan, watched=watched) == []
    # One file edited: it is looked up in the result cache, keyed by a digest that does not
    # load OpenSSL, and decoded as UTF-8 (it names no encoding) without the tokenizer.
    (tree / "m0.py").write_text("import torch_xla.core.xla_model as xm\nxm.xla_device()\n")
    assert _loaded(*scan, watched=watched) == ["sqlite3"]


def test_modules_that_define_named_tuples_evaluate_their_annotations() -> None:
    # String annotations (PEP 563) make `typing.NamedTuple` compile one ForwardRef per field
    # (`neuron_migrate.scan.records`).
    package = Path(__file__).resolve().parents[2] / "neuron_migrate"
    postponed = []
    for path in sorted(package.rglob("*.py")):
        tree = ast.parse(path.read_text())
        defines = any(
            isinstance(node, ast.ClassDef)
            and any(ast.unparse(base).endswith("NamedTuple") for base in node.bases)
            for node in tree.body
        )
        future = any(
            isinstance(node, ast.ImportFrom)
            and node.module == "__future__"
            and any(alias.name == "annotations" for alias in node.names)
            for node in tree.body
        )
        if defines and future:
            postponed.append(str(path.relative_to(package)))
    assert postponed == []
