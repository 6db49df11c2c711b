"""verify over the runtime fixtures: no contradiction, and a failed run is agreement only where
the report predicted the failure."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from neuron_migrate import api
from neuron_migrate.verify import runner
from neuron_migrate.verify.reconcile import gate_passed, reconcile

pytest.importorskip("torch")
pytestmark = [pytest.mark.torch, pytest.mark.slow]

FIXTURES = Path(__file__).parents[2] / "fixtures" / "runtime"


def _verify(tmp_path: Path, name: str):  # type: ignore[no-untyped-def]
    shutil.copy(FIXTURES / name, tmp_path / name)
    result = runner.run(["python", name], None, capture_output=True, cwd=tmp_path)
    scan = api.scan(tmp_path / name, fail_on=("none",), use_cache=False)
    return reconcile(scan, result.trace, cwd=tmp_path)


@pytest.mark.parametrize("name", ["train_small.py", "matrix_decisions.py"])
def test_no_contradiction_and_only_predicted_failures(tmp_path: Path, name: str) -> None:
    # train_small: F.cross_entropy with a class target was predicted a CPU fallback through
    # the 2-D-target pattern merged into every call; matrix_decisions stops on the unsupported
    # op the scan predicts.
    report = _verify(tmp_path, name)
    assert [i.reason for i in report.items if i.verdict == "contradicted"] == []
    assert report.agreement is not None and report.agreement >= 0.99
    assert report.run_failure is None and gate_passed(report, fail_on_contradiction=True)


def test_an_error_the_report_did_not_predict_fails_verify(tmp_path: Path) -> None:
    report = _verify(tmp_path, "raises.py")  # raises ValueError after using the device
    assert report.exit_code == 1 and report.run_failure is not None
    assert not gate_passed(report, fail_on_contradiction=False)


def test_a_compiled_adam_step_compiles_as_the_scan_predicts(tmp_path: Path) -> None:
    """The optimizer's `_foreach_*` ops and `torch.sort` have no eager kernel, and the graph
    lowers them (the matrix's `compile.graph_refuses` is `unsupported` only): the scan
    predicts no compile refusal and the run compiles every graph, the Adam step's included."""
    report = _verify(tmp_path, "compiled_adam_step.py")
    assert [f for f in report.scan.findings if f.code == "NM943"] == []
    assert report.scan.passed
    graphs = report.trace["compile"]["graphs"]
    assert graphs and all(graph["ok"] for graph in graphs)
    assert any("(step)" in graph["graph"] for graph in graphs)  # the optimizer's own graph
    assert report.run_failure is None and gate_passed(report, fail_on_contradiction=True)


TRAIN = """\
import torch

import steps

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
model = model.to("neuron")
criterion = torch.nn.MSELoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
inputs = torch.randn(32, 8).to("neuron")
targets = torch.randn(32, 1).to("neuron")
for _ in range(3):
    loss = steps.train_step(model, criterion, optimizer, inputs, targets)
print(f"loss {loss:.4f}")
"""
STEPS = """\
def train_step(model, criterion, optimizer, inputs, targets):
    optimizer.zero_grad()
    loss = criterion(model(inputs), targets)
    loss.backward()
    optimizer.step()
    return loss.item()
"""


def test_modules_used_by_a_helper_in_another_file_are_confirmed(tmp_path: Path) -> None:
    # train.py builds the loss and the optimizer; steps.py, which it calls, uses them: their
    # ops' innermost user frame is in steps.py, and train.py:13 called into it.
    (tmp_path / "train.py").write_text(TRAIN)
    (tmp_path / "steps.py").write_text(STEPS)
    result = runner.run(["python", "train.py"], None, capture_output=True, cwd=tmp_path)
    assert result.exit_code == 0
    scan = api.scan(tmp_path, fail_on=("none",), use_cache=False)
    report = reconcile(scan, result.trace, cwd=tmp_path)
    items = {(i.finding.path, i.finding.api): i for i in report.items}
    for api_name in ("torch.nn.MSELoss", "torch.optim.SGD"):
        item = items[("train.py", api_name)]
        assert item.verdict == "confirmed", (api_name, item.reason)
        assert "train.py:13" in item.reason
    assert report.count("contradicted") == 0
