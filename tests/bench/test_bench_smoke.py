"""The benchmark runs end to end on a tiny corpus and prints its table (no timing asserted)."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"


def _bench(script: str, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """`python bench/SCRIPT ARGS`, its output captured."""
    return subprocess.run(
        [sys.executable, str(BENCH / script), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_generator_is_deterministic_and_valid(tmp_path: Path) -> None:
    sys.path.insert(0, str(BENCH))
    try:
        import gen_monorepo
    finally:
        sys.path.remove(str(BENCH))
    first, second = tmp_path / "one", tmp_path / "two"
    counts = gen_monorepo.generate(first, 60, seed=3)
    gen_monorepo.generate(second, 60, seed=3)
    files = sorted(p.relative_to(first) for p in first.rglob("*.py"))
    assert len(files) >= 60 and counts["filler"] > 0
    assert files == sorted(p.relative_to(second) for p in second.rglob("*.py"))
    for rel in files:
        text = (first / rel).read_text(encoding="utf-8")
        assert text == (second / rel).read_text(encoding="utf-8")
        ast.parse(text)  # every generated file is valid Python
    assert any("torch_xla" in (first / rel).read_text() for rel in files)


def test_bench_prints_the_table(tmp_path: Path) -> None:
    done = _bench(
        "scan_bench.py",
        *("--corpora", "b", "--files", "24", "--runs", "1", "--rewrite-runs", "2"),
        *("--jobs", "2", "--skip", "torchfix,libcst", "--workdir", str(tmp_path)),
        *("--rescans", "2", "--json", str(tmp_path / "samples.json")),
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    # Each re-scan row takes --rescans samples in the run; the cold scan one.
    rows = json.loads((tmp_path / "samples.json").read_text())["corpora"]["b"]["rows"]
    assert {key: len(rows[key]["samples"]) for key in ("cold", "warm", "one", "one_server")} == {
        "cold": 1,
        "warm": 2,
        "one": 2,
        "one_server": 2,
    }
    # Both rewrite/libcst pairs ran in the one run, and their ratios are shown one by one.
    pair_line = next(line for line in out.splitlines() if "pair by pair" in line)
    assert len(pair_line.split()[3:]) == 2, pair_line
    assert "paired (median of pairs)" in out
    for label in (
        "ast.parse only",
        "scan cold (fresh cache)",
        "scan warm (unchanged)",
        "scan warm, 1 file changed",
        "scan 1 changed, server",
        "TorchFix 0.7",
        "rewrite (no --apply)",
        "rewrite warm (unchanged)",
        "rewrite warm / cold",
        "cold scan / ast.parse only",
        "warm / cold",
        "1 file changed, server / cold",
        "peak MB per worker",
    ):
        assert label in out, label
    assert "failed" not in out, out
    assert "scan JSON ok" in done.stderr, done.stderr


def test_in_process_rescans_print_both_ways(tmp_path: Path) -> None:
    done = _bench(
        "rescan_in_process.py",
        *("--files", "24", "--runs", "1", "--jobs", "2", "--workdir", str(tmp_path)),
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[1].startswith("cold scan (fresh cache, fresh process): ")
    for label in ("warm (unchanged)", "1 file changed"):
        (row,) = [line for line in lines if line.startswith(label)]
        assert row.count(" ms ") == 2 and row.count("%") == 2, row
    (floor,) = [line for line in lines if line.startswith("floor: stat, write report")]
    assert floor.count(" ms ") == 1 and floor.rstrip().endswith("-"), floor
    # The long-lived process wrote the whole JSON report, and the edited file is restored.
    report = json.loads((tmp_path / "out" / "in-process-b.json").read_text())
    assert report["summary"]["files"]["total"] >= 24
    sys.path.insert(0, str(BENCH))
    try:
        import gen_monorepo
    finally:
        sys.path.remove(str(BENCH))
    fresh = tmp_path / "fresh"
    gen_monorepo.generate(fresh, 24, seed=7)
    used = tmp_path / "monorepo-24"
    for path in fresh.rglob("*.py"):
        assert (used / path.relative_to(fresh)).read_bytes() == path.read_bytes(), path


@pytest.mark.torch
@pytest.mark.slow
def test_runtime_phases_prints_every_phase_and_difference() -> None:
    done = _bench("runtime_phases.py", "--runs", "1", "--steps", "1", "--repeats", "1")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    sys.path.insert(0, str(BENCH))
    try:
        import runtime_phases
    finally:
        sys.path.remove(str(BENCH))
    for label in runtime_phases.CONFIGS:
        row = next(line for line in lines if line.strip().startswith(label + "  "))
        cells = row.strip()[len(label) :].split()
        assert len(cells) == len(runtime_phases.PHASES) + 1, row  # a µs figure a phase, a ratio
        assert all(cell.isdigit() for cell in cells[:-1]) and cells[-1].endswith("x"), row
    for minuend, subtrahend in runtime_phases.DIFFERENCES:
        at = lines.index(f"  {minuend} - {subtrahend}")
        phases = [line.split()[0] for line in lines[at + 1 : at + 1 + len(runtime_phases.PHASES)]]
        assert phases == list(runtime_phases.PHASES)


def test_analysis_growth_prints_a_line_a_shape_and_analysis() -> None:
    done = _bench("analysis_growth.py", "--n", "4", "--repeats", "1")
    assert done.returncode == 0, done.stderr
    sys.path.insert(0, str(BENCH))
    try:
        import analysis_growth
    finally:
        sys.path.remove(str(BENCH))
    rows = [line.split() for line in done.stdout.splitlines()[1:-1]]
    assert [(r[0], r[1]) for r in rows] == [
        (shape, analysis) for shape in analysis_growth.SHAPES for analysis in ("scan", "rewrite")
    ]
    assert all(r[-1].endswith("x") for r in rows), done.stdout  # none stopped
    for make, _share in analysis_growth.SHAPES.values():
        compile(make(4), "shape.py", "exec")  # every generated file is Python


def test_suite_time_prints_a_row_a_part_and_the_total() -> None:
    done = _bench("suite_time.py", "tests/test_completion.py", "--", "-k", "bash_script")
    assert done.returncode == 0, done.stderr
    header, row, total = done.stdout.splitlines()
    assert header.split()[:3] == ["part", "wall", "s"]
    part, wall, cpu, *_load_and_outcome = row.split()
    assert part == "tests/test_completion.py" and float(wall) >= 0 and float(cpu) >= 0
    assert "1 passed" in row, row  # the pytest run's own last line
    assert total.split()[0] == "total"


def test_analysis_bound_prints_each_cost_and_the_skippable_shares(tmp_path: Path) -> None:
    (tmp_path / "uses.py").write_text("import torch\n\ndef f(x):\n    return torch.zeros(3)\n")
    # `g`'s body reads no imported name and calls no method the scan reports: skippable.
    (tmp_path / "inert.py").write_text(
        "import torch\n\nx = torch.ones(2)\n\ndef g(a, b):\n    c = a + b\n    return c\n"
    )
    done = _bench("analysis_bound.py", str(tmp_path), "--rounds", "1")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].endswith("2 .py files, 2 past the prefilter"), lines[0]
    costs = [line.split("  ")[0].strip() for line in lines[1:6]]
    assert costs == [
        "floor: ast.parse, every file",
        "parse, prefiltered",
        "+ bare walk",
        "+ name model",
        "analysis (analyze_source)",
    ]
    shares = {line.rsplit(None, 1)[0].strip(): line.rsplit(None, 1)[1] for line in lines[7:]}
    by_body = float(shares["function bodies with nothing to find"].rstrip("%"))
    by_statement = float(shares["simple statements with nothing to find"].rstrip("%"))
    assert 0 < by_body < 100 and 0 < by_statement < 100, done.stdout
