"""The JSON report's snapshot: a re-scan that finds few files changed splices them into the last
report, and writes exactly what a full scan writes (but for the time it took)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

from neuron_migrate import api
from neuron_migrate.api import ScanPlan, ScanReport
from neuron_migrate.incremental import report_prefix, report_snapshot, stat_index
from neuron_migrate.project.discover import SourcePath
from tests.cli import invoke
from tests.report.test_notebooks import notebook_text

FIXTURES = Path(__file__).parents[2] / "fixtures"
XLA = "import torch_xla.core.xla_model as xm\nxm.mark_step()\n"
# Per-path overrides, a selection and a gate that differs by path: every kind of policy.
CONFIG = """\
[tool.neuron-migrate]
ignore = ["NM902"]
fail-on = ["unsupported", "fallback"]

[[tool.neuron-migrate.overrides]]
paths = ["analyze/op_*.py"]
fail-on = ["float64"]

[[tool.neuron-migrate.overrides]]
paths = ["projects/mixed_status/*"]
ignore = ["NM1"]
"""


@pytest.fixture
def full_scans(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The trees scanned in full. Every file counts as settled once written (the real rule,
    3 s, has a test of its own)."""
    monkeypatch.setattr(stat_index, "SETTLED_NS", -(10**12))
    scanned: list[str] = []
    real = report_snapshot.scan_planned

    def counting(plan: ScanPlan, **kwargs: object) -> ScanReport:
        scanned.append(str(plan.root))
        return real(plan, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(report_snapshot, "scan_planned", counting)
    return scanned


def _tree(root: Path) -> Path:
    """Fixture projects and analyser cases, a config, an unparsable file, an empty file, a
    suppressed finding, an unused suppression and a notebook."""
    tree = root / "tree"
    shutil.copytree(FIXTURES / "analyze", tree / "analyze", ignore=shutil.ignore_patterns("*.yaml"))
    for project in ("mixed_status", "mlp_single"):
        shutil.copytree(FIXTURES / "projects" / project, tree / "projects" / project)
    (tree / "pyproject.toml").write_text(CONFIG)
    (tree / "broken.py").write_text("import torch\ndef f(:\n")
    (tree / "empty.py").write_text("")
    (tree / "quiet.py").write_text(
        "import torch\nx = torch.zeros(2, dtype=torch.float64)  # neuron-migrate: ignore[NM910]\n"
        "y = 1  # neuron-migrate: ignore[NM104]\n"
    )
    (tree / "train.ipynb").write_text(notebook_text())
    return tree


def _scanned(tree: Path) -> list[Path]:
    """The files a scan of the tree reads: Python, the notebook, and the project files
    (pyproject.toml, the sample projects' run.sh and requirements.txt)."""
    names = ("*.py", "*.ipynb", "pyproject.toml", "run.sh", "requirements.txt")
    return [p for name in names for p in tree.rglob(name)]


def _scan(tree: Path, cache: Path, *extra: str) -> tuple[int, str]:
    result = invoke(["scan", "--format", "json", "--cache-dir", str(cache), *extra, str(tree)])
    return result.exit_code, result.stdout


def _full(tree: Path, *extra: str) -> tuple[int, str]:
    result = invoke(["scan", "--format", "json", "--no-cache", *extra, str(tree)])
    return result.exit_code, result.stdout


def _without_timing(report: str) -> str:
    """The report but for the lines that differ from run to run and cache to cache."""
    return "".join(
        line
        for line in report.splitlines(keepends=True)
        if '"elapsed_s":' not in line and '"from_cache":' not in line
    )


def _agrees(tree: Path, cache: Path, *extra: str) -> dict:
    """Scan with the snapshot; check that the report and the exit code are a full scan's."""
    code, report = _scan(tree, cache, *extra)
    full_code, full = _full(tree, *extra)
    assert code == full_code
    assert _without_timing(report) == _without_timing(full)
    data: dict = json.loads(report)
    return data


EDITS: list[tuple[str, Callable[[Path], object]]] = [
    ("nothing", lambda tree: None),
    ("a new finding", lambda tree: _append(tree / "analyze/alias_as.py", XLA)),
    ("a new file", lambda tree: (tree / "new.py").write_text(XLA)),
    ("a file deleted", lambda tree: (tree / "analyze/idioms.py").unlink()),
    ("a file that stops parsing", lambda tree: _append(tree / "analyze/new_api.py", "def (\n")),
    ("the broken file mended", lambda tree: (tree / "broken.py").write_text(XLA)),
    ("an empty file given code", lambda tree: (tree / "empty.py").write_text(XLA)),
    ("a file emptied", lambda tree: (tree / "analyze/ambiguous.py").write_text("")),
    ("a suppression made unused", lambda tree: (tree / "quiet.py").write_text("import torch\n")),
    ("a notebook edited", lambda tree: _append(tree / "train.ipynb", "\n")),
    # A notebook with a cell that does not parse: an error and findings at once.
    ("a notebook cell stops parsing", lambda tree: _bad_cell(tree / "train.ipynb", "def (\n")),
    ("a file edited beside it", lambda tree: _append(tree / "analyze/alias_as.py", XLA)),
    ("the notebook cell mended", lambda tree: _bad_cell(tree / "train.ipynb", "x = 1\n")),
    ("a gated override's file", lambda tree: _append(tree / "analyze/op_statuses.py", XLA)),
    ("a file's findings removed", lambda tree: (tree / "new.py").write_text("x = 1\n")),
    # The unmapped APIs are counted again only when a changed file's own changed: an API that
    # is new, then used in an earlier file too (the report lists ties in the order of first
    # use), then no more there.
    ("an unmapped API's file added", lambda tree: (tree / "a_first.py").write_text("x = 1\n")),
    ("an unmapped API added", lambda tree: _append(tree / "analyze/alias_as.py", UNMAPPED)),
    ("an unmapped API used earlier", lambda tree: _append(tree / "a_first.py", UNMAPPED)),
    ("an unmapped API's first use removed", lambda tree: (tree / "a_first.py").write_text("")),
]
UNMAPPED = "import torch\nx = torch.nm_unknown_api(1)\n"


def _append(path: Path, text: str) -> None:
    path.write_text(path.read_text() + text)


def _bad_cell(path: Path, source: str) -> None:
    """The notebook's last cell given `source`."""
    notebook = json.loads(path.read_text())
    notebook["cells"][-1]["source"] = [source]
    path.write_text(json.dumps(notebook))


def test_each_kind_of_edit_is_spliced_into_the_report_a_full_scan_writes(
    tmp_path: Path, full_scans: list[str]
) -> None:
    tree, cache = _tree(tmp_path), tmp_path / "cache"
    first = _agrees(tree, cache)
    assert len(full_scans) == 1
    summary = first["summary"]
    assert summary["findings"] and summary["unmapped_apis"] and summary["suppressed"]["ignore"]
    assert first["errors"] and first["skipped"] and first["unused_suppressions"]
    for what, edit in EDITS:
        edit(tree)
        data = _agrees(tree, cache)
        assert len(full_scans) == 1, f"{what}: scanned in full"
        files = data["summary"]["files"]
        assert files["total"] == len(_scanned(tree)), what
    assert data["errors"] and data["skipped"] and not data["unused_suppressions"]


def test_files_from_the_snapshot_count_as_from_the_cache(
    tmp_path: Path, full_scans: list[str]
) -> None:
    tree, cache = _tree(tmp_path), tmp_path / "cache"
    _scan(tree, cache)
    warm = json.loads(_scan(tree, cache)[1])["summary"]["files"]
    assert warm["from_cache"] == warm["analyzed"]
    (tree / "new.py").write_text(XLA + "# a file the cache has never seen\n")
    one = json.loads(_scan(tree, cache)[1])["summary"]["files"]
    assert one["from_cache"] == one["analyzed"] - 1
    assert len(full_scans) == 1


def test_other_settings_scan_in_full_and_replace_the_snapshot(
    tmp_path: Path, full_scans: list[str]
) -> None:
    tree, cache = _tree(tmp_path), tmp_path / "cache"
    _agrees(tree, cache)
    _agrees(tree, cache, "--select", "NM1")
    _agrees(tree, cache, "--select", "NM1")
    (tree / "pyproject.toml").write_text(CONFIG.replace('"NM902"', '"NM104"'))
    _agrees(tree, cache, "--select", "NM1")
    assert len(full_scans) == 3
    assert len(list((cache / "report-snapshots").glob("*.pickle"))) == 1


def test_many_changed_files_scan_in_full(
    tmp_path: Path, full_scans: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(report_snapshot, "MAX_SPLICED_FILES", 2)
    tree, cache = _tree(tmp_path), tmp_path / "cache"
    _agrees(tree, cache)
    for name in ("a", "b"):
        (tree / f"{name}.py").write_text(XLA)
    _agrees(tree, cache)
    assert len(full_scans) == 1
    for name in ("c", "d", "e"):
        (tree / f"{name}.py").write_text(XLA)
    _agrees(tree, cache)
    assert len(full_scans) == 2


def test_a_scan_lists_the_tree_once_and_stats_each_file_once(
    tmp_path: Path, full_scans: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The snapshot's recorder and the stat index share each file's signature; a splice that
    # gives up hands the full scan its listing and the signatures it took.
    monkeypatch.setattr(report_snapshot, "MAX_SPLICED_FILES", 2)
    listings: list[Path] = []
    stats: Counter[str] = Counter()
    real_select, real_signature = api.select_files, stat_index.signature

    def select_files(plan: ScanPlan, *args: object, **kwargs: object) -> list[SourcePath]:
        listings.append(plan.root)
        return real_select(plan, *args, **kwargs)  # type: ignore[arg-type]

    def signature(path: str) -> stat_index.Signature | None:
        stats[path] += 1
        return real_signature(path)

    for module in (api, report_snapshot):
        monkeypatch.setattr(module, "select_files", select_files)
    monkeypatch.setattr(stat_index, "signature", signature)
    tree, cache = _tree(tmp_path), tmp_path / "cache"
    _scan(tree, cache)
    assert len(listings) == 1
    assert len(stats) == len(_scanned(tree))
    assert set(stats.values()) == {1}
    listings.clear()
    stats.clear()
    for name in ("c", "d", "e"):  # more than the splice takes, in a folder that changes
        (tree / f"{name}.py").write_text(XLA)
    _scan(tree, cache)
    assert len(full_scans) == 2
    assert len(listings) == 1
    assert stats and set(stats.values()) == {1}


def test_rows_spread_over_many_row_files_are_gathered_into_one(
    tmp_path: Path, full_scans: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(report_snapshot, "MAX_ROW_FILES", 2)
    tree, cache = _tree(tmp_path), tmp_path / "cache"
    _agrees(tree, cache)
    for name in ("alias_as", "alias_plain", "conditional", "from_import_as"):
        _append(tree / "analyze" / f"{name}.py", XLA)
        _agrees(tree, cache)
        assert len(list((cache / "report-snapshots").glob("*.rows"))) <= 2
    assert len(full_scans) == 1


def test_an_unreadable_snapshot_or_a_lost_row_file_means_a_full_scan(
    tmp_path: Path, full_scans: list[str]
) -> None:
    tree, cache = _tree(tmp_path), tmp_path / "cache"
    _agrees(tree, cache)
    folder = cache / "report-snapshots"
    for rows in folder.glob("*.rows"):
        rows.unlink()
    _agrees(tree, cache)
    for rows in folder.glob("*.rows"):  # cut short
        rows.write_bytes(rows.read_bytes()[:100])
    _agrees(tree, cache)
    (pickled,) = folder.glob("*.pickle")
    pickled.write_bytes(b"not a pickle")
    _agrees(tree, cache)
    assert len(full_scans) == 4
    _agrees(tree, cache)
    assert len(full_scans) == 4


def test_a_report_written_to_a_file_is_spliced_too(tmp_path: Path, full_scans: list[str]) -> None:
    tree, cache, out = _tree(tmp_path), tmp_path / "cache", tmp_path / "report.json"
    _scan(tree, cache)
    _append(tree / "analyze/alias_as.py", XLA)
    code, stdout = _scan(tree, cache, "-o", str(out))
    full_code, full = _full(tree)
    assert stdout == "" and len(full_scans) == 1
    assert code == full_code and _without_timing(out.read_text()) == _without_timing(full)


def _snapshot_in(path: Path) -> report_snapshot.Snapshot:
    kept = report_snapshot._read_snapshot(str(path))
    assert kept is not None
    return kept[0]


def test_files_not_settled_when_read_are_never_trusted(tmp_path: Path) -> None:
    tree, cache = _tree(tmp_path), tmp_path / "cache"  # written just now: not settled
    _scan(tree, cache)
    (pickled,) = (cache / "report-snapshots").glob("*.pickle")
    snapshot = _snapshot_in(pickled)
    assert snapshot.displays and all(sig is None for sig in snapshot.signatures)
    assert snapshot.folders and all(sig is None for sig in snapshot.folder_signatures)


def test_a_baseline_or_another_format_never_uses_the_snapshot(
    tmp_path: Path, full_scans: list[str]
) -> None:
    tree, cache = _tree(tmp_path), tmp_path / "cache"
    baseline = tmp_path / "baseline.json"
    invoke(["scan", "--cache-dir", str(cache), "--write-baseline", str(baseline), str(tree)])
    _scan(tree, cache, "--baseline", str(baseline))
    invoke(["scan", "--format", "sarif", "--cache-dir", str(cache), str(tree)])
    assert full_scans == []
    assert not (cache / "report-snapshots").exists()


def test_row_files_no_snapshot_names_are_deleted(tmp_path: Path, full_scans: list[str]) -> None:
    tree, cache = _tree(tmp_path), tmp_path / "cache"
    _agrees(tree, cache)
    for edit in range(3):
        _append(tree / "analyze/alias_as.py", f"{XLA}# edit {edit}\n")
        _agrees(tree, cache)
    # The full scan's rows, and the last edit's: the earlier edits' are gone.
    assert len(list((cache / "report-snapshots").glob("*.rows"))) == 2
    assert len(full_scans) == 1


def test_folders_are_listed_again_only_once_one_has_changed(
    tmp_path: Path, full_scans: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    tree, cache = _tree(tmp_path), tmp_path / "cache"
    _agrees(tree, cache)
    listed: list[str] = []
    real = report_snapshot.select_files

    def counting(plan: ScanPlan, *args: object, **kwargs: object) -> list[SourcePath]:
        listed.append(str(plan.root))
        return real(plan, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(report_snapshot, "select_files", counting)
    _append(tree / "analyze/alias_as.py", XLA)  # in place: its folder is unchanged
    _agrees(tree, cache)
    assert listed == []
    (tree / "projects/mlp_single/extra").mkdir()
    (tree / "projects/mlp_single/extra/step.py").write_text(XLA)
    data = _agrees(tree, cache)
    assert len(listed) == 1
    assert any(f["path"] == "projects/mlp_single/extra/step.py" for f in data["findings"])
    _agrees(tree, cache)  # the new folders' signatures were kept
    assert len(listed) == 1 and len(full_scans) == 1


def test_the_gate_follows_the_spliced_files(tmp_path: Path, full_scans: list[str]) -> None:
    tree, cache = tmp_path / "tree", tmp_path / "cache"
    tree.mkdir()
    (tree / "fine.py").write_text(XLA)
    failing = "import torch\nn = torch.distributions.Normal(0.0, 1.0)\n"
    (tree / "model.py").write_text(failing)
    assert _scan(tree, cache, "--no-config")[0] == 1
    (tree / "model.py").write_text("import torch\n")
    code, report = _scan(tree, cache, "--no-config")
    assert code == 0 and json.loads(report)["summary"]["gate"]["passed"]
    assert _without_timing(report) == _without_timing(_full(tree, "--no-config")[1])
    (tree / "model.py").write_text(failing)
    assert _scan(tree, cache, "--no-config")[0] == 1
    assert len(full_scans) == 1


def test_concurrent_spliced_scans_sharing_a_cache_each_write_a_full_report(
    tmp_path: Path,
) -> None:
    tree, cache = _tree(tmp_path), tmp_path / "cache"
    time.sleep(stat_index.SETTLED_NS / 1e9 + 0.1)  # the real rule: let the tree settle
    command = [sys.executable, "-m", "neuron_migrate", "scan", "--format", "json", "-j", "1"]
    with_cache = [*command, "--cache-dir", str(cache), str(tree)]
    subprocess.run(with_cache, capture_output=True, check=False)
    (pickled,) = (cache / "report-snapshots").glob("*.pickle")
    assert None not in _snapshot_in(pickled).signatures  # so the scans splice
    _append(tree / "analyze/alias_as.py", XLA)  # not settled: every scan below splices it in
    scans = [subprocess.Popen(with_cache, stdout=subprocess.PIPE) for _ in range(4)]
    reports = [scan.communicate()[0].decode() for scan in scans]
    full = subprocess.run([*command, "--no-cache", str(tree)], capture_output=True, text=True)
    for report in [*reports, subprocess.run(with_cache, capture_output=True, text=True).stdout]:
        assert _without_timing(report) == _without_timing(full.stdout)


@pytest.fixture
def written_ahead(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The bytes each spliced scan wrote ahead, before its changed files were scanned."""
    counts: list[int] = []
    real = report_prefix.PrefixWriter.stop

    def stop(writer: report_prefix.PrefixWriter) -> int:
        counts.append(real(writer))
        return counts[-1]

    monkeypatch.setattr(report_prefix.PrefixWriter, "stop", stop)
    return counts


def _in_report_order(tree: Path) -> list[str]:
    return sorted(str(p.relative_to(tree)) for p in _scanned(tree))


def test_the_report_is_written_ahead_up_to_the_first_changed_file(
    tmp_path: Path, full_scans: list[str], written_ahead: list[int]
) -> None:
    tree, cache = _tree(tmp_path), tmp_path / "cache"
    report = _agrees(tree, cache)
    text = _scan(tree, cache)[1].encode()  # nothing changed: every finding ahead
    assert written_ahead[-1] == text.index(b'\n  ],\n  "suppressed"')
    order = _in_report_order(tree)
    with_rows = sorted({f["path"] for f in report["findings"]})
    # A changed file that names `compile` writes nothing ahead (a compile of what an earlier
    # file defines changes that file's rows): the files edited to see rows ahead do not.
    plain = [p for p in with_rows if b"compile" not in (tree / p).read_bytes()]
    compiling = next(p for p in with_rows[1:] if p not in plain)
    first, middle, last = plain[0], plain[len(plain) // 2], plain[-1]
    for edited in (first, middle, last, "empty.py", compiling):
        _append(tree / edited, XLA)
        full = _full(tree)[1]
        _agrees(tree, cache)
        # Ahead: the opening, and each file's rows up to the first changed one.
        before = [p for p in with_rows if order.index(p) < order.index(edited)]
        if not before or edited == compiling:
            assert written_ahead[-1] == 0, edited
            continue
        ahead = full.encode()[: written_ahead[-1]].decode()
        assert ahead.endswith("}"), edited  # a whole row
        assert f'"path": "{before[-1]}"' in ahead.splitlines()[-1], edited
    assert len(full_scans) == 1


def test_a_splice_that_gives_up_after_writing_ahead_writes_the_rest_of_a_full_scan(
    tmp_path: Path,
    full_scans: list[str],
    written_ahead: list[int],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(report_snapshot, "MAX_SPLICED_FILES", 1)
    tree, cache, out = _tree(tmp_path), tmp_path / "cache", tmp_path / "report.json"
    _agrees(tree, cache)
    for name in ("projects/mlp_single/train.py", "quiet.py"):  # in place: no folder changes
        _append(tree / name, XLA)
    _agrees(tree, cache)
    # Told how far the files are unchanged only once every file is statted: a splice that
    # gives up for too many changes has written nothing ahead (an edit it never saw may
    # compile what an earlier file defines, which changes that file's rows).
    assert len(full_scans) == 2 and written_ahead[-1] == 0
    _append(tree / "quiet.py", "\n")
    _append(tree / "projects/mlp_single/train.py", "\n")
    code, stdout = _scan(tree, cache, "-o", str(out))
    assert stdout == "" and len(full_scans) == 3 and written_ahead[-1] == 0
    assert (code, _without_timing(out.read_text())) == _full_without_timing(tree)


def _full_without_timing(tree: Path) -> tuple[int, str]:
    code, report = _full(tree)
    return code, _without_timing(report)


def test_a_snapshot_read_ahead_is_taken_while_its_file_is_unchanged(
    tmp_path: Path, full_scans: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    tree, cache = _tree(tmp_path), tmp_path / "cache"
    report_snapshot.used.clear()
    _agrees(tree, cache)
    # The snapshot file this scan looked for, as it wrote it, and the folder it looked from.
    ((path, cwd),) = report_snapshot.used
    assert Path(path).is_absolute() and Path(path).exists() and cwd == os.getcwd()
    report_snapshot.read_ahead([(path, cwd), (str(tmp_path / "none.pickle"), cwd)])
    loads: list[object] = []
    real_read = report_snapshot._read_snapshot

    def counted_read(path: str) -> object:
        loads.append(path)
        return real_read(path)

    monkeypatch.setattr(report_snapshot, "_read_snapshot", counted_read)
    _append(tree / "analyze/alias_as.py", XLA)
    _agrees(tree, cache)  # spliced into the snapshot read ahead, not read again
    assert loads == [] and len(full_scans) == 1
    report_snapshot.read_ahead([(path, cwd)])  # the file was replaced: read again
    assert len(loads) == 1
    Path(path).write_bytes(Path(path).read_bytes())  # changed after it was read ahead
    _append(tree / "analyze/alias_as.py", "\n")
    _agrees(tree, cache)
    assert len(loads) == 2 and len(full_scans) == 1


def test_a_watched_tree_stats_only_the_files_it_saw_change(
    tmp_path: Path, full_scans: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    if not sys.platform.startswith("linux"):
        pytest.skip("inotify is Linux's")
    from neuron_migrate.incremental import tree_watch

    if tree_watch.filesystem_type(str(tmp_path)) not in tree_watch.LOCAL_FILESYSTEMS:
        pytest.skip("the temporary folder is not on a filesystem the watch trusts")
    tree, cache = _tree(tmp_path), tmp_path / "cache"
    report_snapshot.used.clear()
    _agrees(tree, cache)
    stats: Counter[str] = Counter()
    real_signature = stat_index.signature

    def signature(path: str) -> stat_index.Signature | None:
        stats[path] += 1
        return real_signature(path)

    monkeypatch.setattr(stat_index, "signature", signature)
    for edited in ("analyze/alias_as.py", "empty.py", "projects/mlp_single/train.py"):
        report_snapshot.read_ahead(list(report_snapshot.used), watch=True)
        _append(tree / edited, XLA)
        stats.clear()
        report_snapshot.used.clear()
        _agrees(tree, cache)
        assert stats == {str(tree / edited): 1}, edited  # no other file, nor any folder
    assert len(full_scans) == 1
    # A file added: the watch cannot vouch for the listing, and the folders are listed again.
    report_snapshot.read_ahead(list(report_snapshot.used), watch=True)
    (tree / "projects/added.py").write_text(XLA)
    stats.clear()
    _agrees(tree, cache)
    assert len(stats) > 10 and len(full_scans) == 1


def test_a_read_ahead_that_gives_up_watching_leaves_the_snapshot_for_next_time(
    tmp_path: Path, full_scans: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    if not sys.platform.startswith("linux"):
        pytest.skip("inotify is Linux's")
    from neuron_migrate.incremental import tree_watch

    monkeypatch.setattr(tree_watch, "_ASK_EVERY", 1)  # asked at once, as on a large tree
    tree, cache = _tree(tmp_path), tmp_path / "cache"
    report_snapshot.used.clear()
    _agrees(tree, cache)
    listed = list(report_snapshot.used)
    # A command waits (the spare's `stop`): no watch, and the snapshot is read again next time.
    assert report_snapshot.read_ahead(listed, watch=True, stop=lambda: True) is False
    assert report_snapshot._read_ahead == {}
    assert report_snapshot.read_ahead(listed, watch=True, stop=lambda: False) is True
    assert list(report_snapshot._read_ahead) == [listed[0][0]]
    report_snapshot.read_ahead([])  # forgets it, and closes its watch


COMPILED_MODEL = (
    "import torch\n\n\n"
    "def squash(x):\n    return torch.quantize_per_tensor(x, 0.1, 0, torch.quint8)\n"
)
COMPILING = (
    "import torch\nfrom pkg.model import squash\n\nfast = torch.compile(squash, dynamic=False)\n"
)


def test_a_compile_added_or_removed_in_another_file_is_spliced_as_a_full_scan_writes(
    tmp_path: Path, full_scans: list[str]
) -> None:
    """The compiled file (pkg/model.py) comes before the compiling one (train.py) in the
    report: its rows may not be written ahead, nor taken from the snapshot, once a compile of
    it is added, changed or removed."""
    tree = tmp_path / "tree"
    (tree / "pkg").mkdir(parents=True)
    (tree / "pkg" / "model.py").write_text(COMPILED_MODEL)
    (tree / "train.py").write_text("import torch\nfrom pkg.model import squash\n")
    cache = tmp_path / "cache"
    _agrees(tree, cache)
    for train in (COMPILING, COMPILING.replace("squash,", "squash, backend='neuron',"), ""):
        (tree / "train.py").write_text(train or "import torch\nfrom pkg.model import squash\n")
        data = _agrees(tree, cache)
        codes = {f["code"] for f in data["findings"] if f["path"].endswith("model.py")}
        assert ("NM943" in codes) == bool(train), train
