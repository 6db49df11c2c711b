"""The benchmark runs end to end on a tiny corpus and prints its table (no timing asserted)."""

from __future__ import annotations

import ast
import json
import shutil
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
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
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


def _can_build_extensions() -> bool:
    try:
        from torch.utils.cpp_extension import is_ninja_available
    except ImportError:
        return False
    return is_ninja_available() and any(shutil.which(cc) for cc in ("c++", "g++", "clang++"))


@pytest.fixture(scope="module")
def floor_build(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One build folder for the floor extension, shared by the scripts that load it."""
    return tmp_path_factory.mktemp("privateuse1")


needs_extensions = pytest.mark.skipif(
    not _can_build_extensions(), reason="needs torch, ninja and a C++ compiler"
)


@pytest.mark.torch
@pytest.mark.slow
@needs_extensions
def test_privateuse1_floor_builds_trains_and_prints(floor_build: Path) -> None:
    done = _bench(
        "privateuse1_floor.py",
        *("--runs", "1", "--steps", "1", "--repeats", "1", "--build-dir", str(floor_build)),
        timeout=900,
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    rows = [line.strip() for line in out.splitlines() if line.startswith("  ")]
    compiled = ("C++ device compiled (aot_eager)", "C++ device compiled (graph_runner)")
    for label in ("cpu eager", "C++ device eager", *compiled):
        found = [row for row in rows if row.startswith(label + "  ")]
        assert len(found) == 2, label  # one row per workload
        assert all(row.split()[len(label.split())].replace(".", "").isdigit() for row in found)
    # The device's training steps compute what plain CPU computes.
    for line in (line for line in out.splitlines() if "loss after 5 steps" in line):
        cpu, device = (float(word.rstrip(",")) for word in line.split()[-4::3])
        assert abs(cpu - device) <= 1e-5 * max(abs(cpu), 1.0), line


@pytest.mark.torch
@pytest.mark.slow
@needs_extensions
def test_privateuse1_features_says_what_works_and_what_fails(floor_build: Path) -> None:
    done = _bench("privateuse1_features.py", "--build-dir", str(floor_build), timeout=900)
    assert done.returncode == 0, done.stderr
    verdicts = {
        line[:50].strip(): line[50:].strip().split(":")[0] for line in done.stdout.splitlines()
    }
    assert len(verdicts) == 13 and set(verdicts.values()) <= {"works", "fails"}
    assert verdicts["factories, .item()"] == "works"
    assert verdicts["a CPU tensor mixed in (to fail)"] == "fails"  # as a real device refuses it


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
