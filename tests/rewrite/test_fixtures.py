"""Whole-script fixture pairs: fixtures/rewrite/<case>.in.py -> <case>.out.py."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from neuron_migrate.rewrite.codemod.engine import rewrite_source
from neuron_migrate.rewrite.codemod.markers import TODO_PREFIX
from neuron_migrate.rewrite.leftovers import IMPORT_MARKERS
from neuron_migrate.ruleset import load_ruleset
from neuron_migrate.scan.analyzer.sites import find_sites

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "rewrite"
CASES = sorted(p.name.removesuffix(".in.py") for p in FIXTURES.glob("*.in.py"))


def _read(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


def test_there_are_at_least_six_cases():
    assert len(CASES) >= 6


@pytest.mark.parametrize("case", CASES)
def test_rewrite_matches_expected(case):
    assert rewrite_source(_read(f"{case}.in.py")).new == _read(f"{case}.out.py")


@pytest.mark.parametrize("case", CASES)
def test_second_run_changes_nothing(case):
    expected = _read(f"{case}.out.py")
    assert rewrite_source(expected).new == expected


@pytest.mark.parametrize("case", CASES)
def test_output_compiles(case):
    compile(_read(f"{case}.out.py"), f"{case}.out.py", "exec")


@pytest.mark.parametrize("case", CASES)
def test_scan_sites_and_rewrite_sites_agree(case):
    """Every torch_xla use the scan's site finder reports (with a rule) is exactly one rewrite
    outcome, at the same line, and the rewrite acts on nothing else."""
    source = _read(f"{case}.in.py")
    ruleset = load_ruleset()
    expected = set()
    for site in find_sites(source):
        if site.kind == "import":
            continue
        if site.kind == "idiom":
            rule = ruleset.for_idiom(site.idiom or "", site.detail)
        else:
            rule = ruleset.for_reference(site.qualname or "")
        if rule is None or rule.match.analyzer is not None:
            continue
        expected.add((site.line, site.qualname or site.idiom))
    result = rewrite_source(source).outcomes
    outcomes = {(o.line, o.api) for o in result if o.code not in IMPORT_MARKERS}
    assert outcomes == expected
    # a marked import is counted at its statement's line
    import_lines = {
        s.call_span[0] for s in find_sites(source) if s.kind == "import" and s.call_span
    }
    assert {o.line for o in result if o.code in IMPORT_MARKERS} <= import_lines


@pytest.mark.parametrize("case", CASES)
def test_no_torch_xla_import_left_without_a_marker(case):
    lines = _read(f"{case}.out.py").splitlines()
    tree = ast.parse("\n".join(lines))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            names = (
                [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else [a.name for a in node.names]
            )
            if any(n == "torch_xla" or n.startswith("torch_xla.") for n in names):
                above = lines[node.lineno - 2].strip()
                if above == "try:":  # binding a stand-in where torch_xla is missing
                    above = lines[node.lineno - 3].strip()
                assert above.startswith(TODO_PREFIX), (
                    f"line {node.lineno}: {lines[node.lineno - 1]}"
                )


@pytest.mark.parametrize("case", CASES)
def test_crlf_file_rewrites_as_its_lf_twin(case):
    """A file whose lines end with "\\r\\n" rewrites as the same file with "\\n" does, every
    line of the output ending with "\\r\\n" (the helpers' docstrings included)."""
    source = _read(f"{case}.in.py").replace("\n", "\r\n")
    new = rewrite_source(source).new
    assert new == _read(f"{case}.out.py").replace("\n", "\r\n")
