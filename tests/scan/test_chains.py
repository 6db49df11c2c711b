"""Chains of values cost their length, not their number of paths: `self.a1 = self.a0 + self.a0;
self.a2 = self.a1 + self.a1; ...` once doubled the placement analysis's work with every link
(over 60 s at 24 links, a `timeout` error in the scan and minutes in the rewrite). Growth is
measured in bench/analysis_growth.py; here a 60-link chain of each kind must simply finish, with
the right answer, well inside a generous budget."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from neuron_migrate.scan.analyzer.sites import find_sites
from tests.cli import invoke

LINKS = 60
HEAD = "import torch\nimport torch_xla.core.xla_model as xm\n\n"


def self_attribute_chain(links: int) -> str:
    lines = ["class Trainer:", "    def __init__(self):", "        self.a0 = torch.randn(3)"]
    lines += [f"        self.a{i} = self.a{i - 1} + self.a{i - 1}" for i in range(1, links + 1)]
    lines += ["", "    def step(self):", f"        y = self.a{links}.sum()"]
    return HEAD + "\n".join([*lines, "        xm.mark_step()", "        return y", ""])


def branch_chain(links: int) -> str:
    """Every name bound twice from the one before: a value and a module alias."""
    lines = ["def f(c):", "    a0 = torch.randn(3)", "    m0 = xm"]
    for i in range(1, links + 1):
        lines += ["    if c:", f"        a{i} = a{i - 1} * a{i - 1}", f"        m{i} = m{i - 1}"]
        lines += ["    else:", f"        a{i} = a{i - 1} - a{i - 1}", f"        m{i} = m{i - 1}"]
    lines += [f"    y = a{links}.sum()", f"    m{links}.mark_step()", "    return y"]
    return HEAD + "\n".join([*lines, ""])


def many_readers(links: int) -> str:
    """Methods each reading the four attributes set before it."""
    lines = ["class M:", "    def __init__(self):", "        self.w0 = torch.randn(3)"]
    for i in range(1, links + 1):
        reads = " + ".join(f"self.w{j}" for j in range(max(0, i - 4), i))
        lines += [f"    def m{i}(self):", f"        self.w{i} = {reads}"]
    lines += ["    def step(self):", f"        y = self.w{links}.sum()", "        xm.mark_step()"]
    return HEAD + "\n".join([*lines, "        return y", ""])


CHAINS = [self_attribute_chain, branch_chain, many_readers]


@pytest.fixture
def budget(monkeypatch: pytest.MonkeyPatch) -> None:
    # Generous, and named: the old code took minutes on each of these files.
    monkeypatch.setenv("NEURON_MIGRATE_FILE_BUDGET_S", "60")


@pytest.mark.parametrize("chain", CHAINS, ids=lambda c: c.__name__)
def test_a_long_chain_is_placed(chain) -> None:
    sites = find_sites(chain(LINKS))
    (total,) = [s for s in sites if s.kind == "method" and s.detail == "sum"]
    assert total.placement == "host"  # torch.randn(3), through every link
    assert any(s.qualname == "torch_xla.core.xla_model.mark_step" for s in sites)


@pytest.mark.parametrize("chain", CHAINS, ids=lambda c: c.__name__)
def test_a_long_chain_is_scanned_and_rewritten_within_its_budget(
    chain, tmp_path: Path, budget: None
) -> None:
    (tmp_path / "train.py").write_text(chain(LINKS))
    scan = invoke(["scan", str(tmp_path), "--no-cache", "-j", "1", "-f", "json"])
    report = json.loads(scan.stdout)
    assert report["errors"] == []
    assert any(f["api"] == "torch_xla.core.xla_model.mark_step" for f in report["findings"])
    rewrite = invoke(["rewrite", str(tmp_path), "--no-cache", "-j", "1", "--format", "json"])
    assert rewrite.exit_code == 0, rewrite.stderr
    result = json.loads(rewrite.stdout)
    assert result["errors"] == []
    assert result["summary"]["files_changed"] == 1 and result["summary"]["rewritten"] >= 1
