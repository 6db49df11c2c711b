"""A notebook cell that truly does not parse is reported, and the cells that parse are still
scanned and rewritten: the file's result is an error and findings at once, in every format; the
rewrite leaves the bad cell exactly as it is."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from neuron_migrate.project.notebook import split_notebook
from tests.cli import invoke
from tests.report.test_notebooks import _cell, notebook_text

BAD = "for step in range(3)\n    xm.mark_step()\n"  # no colon: no Python reads it
CELLS = [
    _cell("markdown", "# notes"),
    _cell("code", "import torch\nimport torch_xla.core.xla_model as xm\n"),
    _cell("code", BAD),
    _cell("code", "device = xm.xla_device()\nxm.mark_step()\n"),
]


def _notebook(tmp_path: Path, cells: list[dict[str, Any]] = CELLS) -> Path:
    path = tmp_path / "train.ipynb"
    path.write_text(notebook_text(cells), encoding="utf-8")
    return path


def _scan(tmp_path: Path, *extra: str) -> tuple[int, str, str]:
    return invoke(["scan", str(tmp_path), "--no-cache", "--no-config", "-j", "1", *extra])


def _json(tmp_path: Path, *extra: str) -> dict[str, Any]:
    code, out, err = _scan(tmp_path, "-f", "json", "--fail-on", "none", *extra)
    assert code == 0, err
    report: dict[str, Any] = json.loads(out)
    return report


def test_split_leaves_the_bad_cell_out_and_names_it() -> None:
    split = split_notebook(notebook_text(CELLS))
    assert split.unparsed == ((3, 1, "expected ':'"),)
    assert "range(3)" not in split.source  # a stand-in, not the cell, is in the module
    assert split.locate(split.source.splitlines().index("device = xm.xla_device()") + 1) == (4, 1)


def test_the_cells_that_parse_are_scanned_and_the_bad_one_is_an_error(tmp_path: Path) -> None:
    _notebook(tmp_path)
    report = _json(tmp_path)
    found = {(f["api"], f["cell"], f["line"]) for f in report["findings"]}
    assert ("torch_xla.core.xla_model.xla_device", 4, 1) in found
    assert ("torch_xla.core.xla_model.mark_step", 4, 2) in found
    assert not any(cell == 3 for _, cell, _ in found)
    assert report["errors"] == [
        {
            "path": "train.ipynb",
            "reason": "syntax error in cell 3, line 1: expected ':'",
            "kind": "syntax",
            "cell": 3,
            "partial": True,
        }
    ]
    files = report["summary"]["files"]
    assert (files["analyzed"], files["errors"], files["with_findings"]) == (1, 1, 1)


def test_every_bad_cell_is_named(tmp_path: Path) -> None:
    _notebook(tmp_path, [*CELLS, _cell("code", "x = (\n")])
    (error,) = _json(tmp_path)["errors"]
    assert error["cell"] == 3 and error["partial"] is True
    assert error["reason"] == (
        "syntax error in cell 3, line 1: expected ':'; in cell 5, line 1: '(' was never closed"
    )


def test_a_notebook_no_cell_of_which_parses_is_not_scanned(tmp_path: Path) -> None:
    _notebook(tmp_path, [_cell("code", "import torch_xla\n" + BAD)])
    report = _json(tmp_path)
    assert report["findings"] == []
    assert [(e["cell"], e["partial"]) for e in report["errors"]] == [(1, False)]


def test_a_writefile_cell_that_does_not_parse_is_an_error_too(tmp_path: Path) -> None:
    writefile = _cell("code", "%%writefile train.py\nimport torch_xla\n" + BAD)
    _notebook(tmp_path, [*CELLS[:2], CELLS[3], writefile])
    report = _json(tmp_path)
    assert {f["cell"] for f in report["findings"]} == {3}
    assert [(e["reason"], e["cell"], e["partial"]) for e in report["errors"]] == [
        ("syntax error in cell 4, line 3: expected ':'", 4, True)
    ]


@pytest.mark.parametrize("cache", ["--no-cache", "cold", "warm"])
def test_the_gate_fails_on_the_bad_cell_with_fail_on_error(tmp_path: Path, cache: str) -> None:
    _notebook(tmp_path)
    store = ["--cache-dir", str(tmp_path / ".cache")] if cache != "--no-cache" else [cache]
    args = ["scan", str(tmp_path / "train.ipynb"), "--no-config", "-j", "1", *store]
    if cache == "warm":
        assert invoke([*args, "--fail-on", "error"]).exit_code == 1
    code, out, err = invoke([*args, "--fail-on", "error"])
    assert code == 1, err
    out = " ".join(out.split())  # as wrapped to any width
    assert "Files partly scanned" in out
    assert "train.ipynb: syntax error in cell 3, line 1: expected ':'" in out
    assert "train.ipynb (partly scanned)" in out
    assert "mark_step" in out  # the findings of the cells that parse, beside the error
    assert invoke([*args, "--fail-on", "unsupported"]).exit_code == 0
    assert invoke([*args, "--fail-on", "xla"]).exit_code == 1


def test_sarif_and_github_say_partly_scanned(tmp_path: Path) -> None:
    _notebook(tmp_path)
    code, out, err = _scan(tmp_path, "-f", "sarif", "--fail-on", "none")
    assert code == 0, err
    run = json.loads(out)["runs"][0]
    (note,) = run["invocations"][0]["toolExecutionNotifications"]
    assert note["message"]["text"] == (
        "partly scanned: syntax error in cell 3, line 1: expected ':'"
    )
    assert {r["ruleId"] for r in run["results"]} >= {"NM101", "NM104"}
    code, out, err = _scan(tmp_path, "-f", "github", "--fail-on", "none")
    assert "partly scanned: syntax error in cell 3" in out
    assert "title=neuron-migrate%3A file partly scanned" in out


@pytest.mark.parametrize("fmt", ["markdown", "html", "junit"])
def test_other_formats_show_the_error_and_the_findings(tmp_path: Path, fmt: str) -> None:
    _notebook(tmp_path)
    code, out, err = _scan(tmp_path, "-f", fmt, "--fail-on", "none")
    assert code == 0, err
    assert "syntax error in cell 3, line 1" in out
    assert "partly scanned" in out
    assert "mark_step" in out


def test_the_rewrite_rewrites_the_good_cells_and_leaves_the_bad_one(tmp_path: Path) -> None:
    path = _notebook(tmp_path)
    result = invoke(["rewrite", str(tmp_path), "--apply", "--no-cache", "-f", "json"])
    assert result.exit_code == 0, result.stderr
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    assert "".join(cells[2]["source"]) == BAD  # byte for byte
    good = "".join(cells[3]["source"])
    assert "xla_device" not in good and "mark_step" not in good  # migrated
    report = json.loads(result.stdout)
    assert [f["path"] for f in report["files"]] == ["train.ipynb"]
    assert report["errors"] == [
        {
            "path": "train.ipynb",
            "reason": "syntax error in cell 3, line 1: expected ':'",
            "kind": "syntax",
            "cell": 3,
            "partial": True,
        }
    ]
    assert "train.ipynb: syntax error in cell 3" in result.stderr
    assert "read in part" in result.stderr
    # The bad cell still uses xm: the import that binds it stays.
    assert "xla_model" in "".join(cells[1]["source"])


def test_the_rewrite_puts_an_added_import_into_the_first_cell_that_parses(tmp_path: Path) -> None:
    cells = [_cell("code", BAD), _cell("code", "import torch_xla.core.xla_model as xm\n"
                                             "device = xm.xla_device()\n")]  # fmt: skip
    path = _notebook(tmp_path, cells)
    result = invoke(["rewrite", str(tmp_path), "--apply", "--no-cache"])
    assert result.exit_code == 0, result.stderr
    out = json.loads(path.read_text(encoding="utf-8"))["cells"]
    assert "".join(out[0]["source"]) == BAD
    assert "xla_device" not in "".join(out[1]["source"])


def test_the_rewrite_cache_keeps_the_bad_cell_error(tmp_path: Path) -> None:
    _notebook(tmp_path)
    args = ["rewrite", str(tmp_path / "train.ipynb"), "-f", "json"]
    args += ["--cache-dir", str(tmp_path / ".cache")]
    cold, warm = invoke(args), invoke(args)
    assert cold.exit_code == warm.exit_code == 0, warm.stderr
    first, second = json.loads(cold.stdout), json.loads(warm.stdout)
    assert second["summary"]["from_cache"] == 1
    assert second["errors"] == first["errors"] and first["errors"][0]["partial"] is True
    assert second["files"] == first["files"]


def test_report_merge_keeps_a_partial_error(tmp_path: Path) -> None:
    _notebook(tmp_path)
    code, out, err = _scan(tmp_path, "-f", "json", "--fail-on", "none")
    (tmp_path / "shard.json").write_text(out, encoding="utf-8")
    code, merged, err = invoke(
        ["report", "merge", str(tmp_path / "shard.json"), "-f", "json", "--fail-on", "error"]
    )
    assert code == 1, err
    assert json.loads(merged)["errors"] == json.loads(out)["errors"]


def test_a_writefile_cell_over_its_time_budget_is_not_cached(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cell's timeout is a slower moment's verdict, as a file's is: never kept."""
    from neuron_migrate.scan import notebook_scan
    from neuron_migrate.scan.findings import FileError, FileResult

    real = notebook_scan.analyze_source
    written = "import torch_xla\nx = 1\n"

    def slow_written_file(text: str, display: str, *args: Any) -> FileResult:
        if text == written:
            return FileResult(display, error=FileError(display, "took too long", "timeout"))
        return real(text, display, *args)

    monkeypatch.setattr(notebook_scan, "analyze_source", slow_written_file)
    writefile = _cell("code", "%%writefile train.py\n" + written)
    _notebook(tmp_path, [*CELLS[:2], CELLS[3], writefile])
    cache = ["--cache-dir", str(tmp_path / ".cache")]
    for _ in range(2):  # cold, then what the cache would answer
        done = invoke(["scan", str(tmp_path), "--no-config", "-j", "1", "-f", "json", *cache])
        assert done.exit_code == 0, done.stderr
        report = json.loads(done.stdout)
        assert [(e["kind"], e["cell"], e["partial"]) for e in report["errors"]] == [
            ("timeout", 4, True)
        ]
        assert report["summary"]["files"]["from_cache"] == 0
