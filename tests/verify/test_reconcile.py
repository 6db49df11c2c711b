"""verify's reconciliation on hand-made traces: each verdict, its reason, and what was missed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from neuron_migrate import api
from neuron_migrate.verify.reconcile import gate_passed, reconcile, runs_later

SOURCE = """import torch

x = torch.ones(4, 4, device="neuron")
values, order = torch.sort(x)
y = x.double()
n = torch.distributions.Normal(x, x)
z = torch.add(x, x)
w = torch.abs(x)
criterion = torch.nn.MSELoss()
q = x @ x
"""


def _trace(ops: list[dict[str, Any]], exit_code: int = 0, **extra: Any) -> dict[str, Any]:
    return {"exit_code": exit_code, "command": ["python", "m.py"], "ops": ops, "downcasts": [],
            "refusals": [], **extra}  # fmt: skip


def _op(op: str, status: str, *lines: int, count: int = 1) -> dict[str, Any]:
    return {"op": op, "status": status, "count": count,
            "locations": {f"m.py:{line}": count for line in lines}}  # fmt: skip


def _called(op: str, status: str, location: str, caller: str) -> dict[str, Any]:
    """An op called once at `location`, inside user code that `caller` called."""
    return {"op": op, "status": status, "count": 1, "locations": {location: 1},
            "callers": {caller: 1}}  # fmt: skip


def _verdicts(tmp_path: Path, trace: dict[str, Any]) -> dict[str, tuple[str, str]]:
    (tmp_path / "m.py").write_text(SOURCE)
    scan = api.scan(tmp_path, jobs=1, use_cache=False, fail_on=("none",))
    report = reconcile(scan, trace, cwd=tmp_path)
    return {f"{i.finding.api}:{i.finding.status}": (i.verdict, i.reason) for i in report.items}


def test_confirmed_contradicted_and_not_exercised(tmp_path: Path) -> None:
    trace = _trace(
        [
            _op("aten::sort.stable", "cpu_fallback", 4),  # another overload of the same op
            _op("aten::add.Tensor", "native", 7),
            _op("aten::abs", "cpu_fallback", 8),  # the run disagrees with the prediction
        ],
        downcasts=[{"dtype": "float64", "runs_as": "float32", "locations": {"m.py:5": 1}}],
        refusals=[{"op": "torch.distributions.Normal", "location": "m.py:6", "message": "no"}],
    )
    verdicts = _verdicts(tmp_path, trace)
    assert verdicts["torch.sort:cpu_fallback"][0] == "confirmed"
    assert verdicts["Tensor.double:float64"][0] == "confirmed"
    assert verdicts["torch.distributions.Normal:unsupported"][0] == "confirmed"
    assert verdicts["torch.add:native"][0] == "confirmed"
    verdict, reason = verdicts["torch.abs:native"]
    assert verdict == "contradicted" and "aten::abs (cpu_fallback)" in reason
    assert verdicts["torch.ones:native"][0] == "not_exercised"


def test_agreement_and_unpredicted_ops(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text(SOURCE)
    scan = api.scan(tmp_path, jobs=1, use_cache=False, fail_on=("none",))
    trace = _trace(
        [
            _op("aten::sort", "cpu_fallback", 4),
            _op("aten::abs", "cpu_fallback", 8),
            _op("aten::argmax", "cpu_fallback", 10),  # a line with no finding
        ]
    )
    report = reconcile(scan, trace, cwd=tmp_path)
    assert report.count("confirmed") == 1 and report.count("contradicted") == 1
    assert report.agreement == 0.5
    assert [(u.op, u.location) for u in report.unpredicted] == [("aten::argmax", "m.py:10")]


def test_ops_an_api_decomposes_into_are_not_reported_as_missed(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text(SOURCE)
    scan = api.scan(tmp_path, jobs=1, use_cache=False, fail_on=("none",))
    # torch.ones (line 3) reaches the device as a fill; line 10 has no finding at all.
    trace = _trace(
        [_op("aten::fill_.Scalar", "native", 3), _op("aten::argmax", "cpu_fallback", 10)]
    )
    report = reconcile(scan, trace, cwd=tmp_path)
    ones = next(i for i in report.items if i.finding.api == "torch.ones")
    assert ones.verdict == "confirmed" and "aten::fill_.Scalar" in ones.reason
    assert [(u.op, u.location) for u in report.unpredicted] == [("aten::argmax", "m.py:10")]


def test_a_module_needs_its_own_fallback_ops_to_be_confirmed(tmp_path: Path) -> None:
    assert runs_later("torch.optim.Adam") and not runs_later("torch.add")
    # MSELoss reaches aten::mse_loss, a CPU fallback: other ops prove nothing about it.
    unrelated = _trace([_op("aten::sub.Tensor", "native", 10)])
    verdict, _ = _verdicts(tmp_path, unrelated)["torch.nn.MSELoss:cpu_fallback"]
    assert verdict == "not_exercised"
    # criterion(out, y) runs its fallback op on another line: that confirms the finding.
    called = _trace([_op("aten::mse_loss", "cpu_fallback", 10)])
    verdict, reason = _verdicts(tmp_path, called)["torch.nn.MSELoss:cpu_fallback"]
    assert verdict == "confirmed" and "aten::mse_loss" in reason


def test_nothing_ran_means_no_agreement_figure(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text(SOURCE)
    scan = api.scan(tmp_path, jobs=1, use_cache=False, fail_on=("none",))
    report = reconcile(scan, _trace([]), cwd=tmp_path)
    assert report.agreement is None
    assert report.count("not_exercised") == len(report.items) > 0


def test_a_run_that_died_before_the_code_started_is_no_agreement(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text(SOURCE)
    scan = api.scan(tmp_path, jobs=1, use_cache=False, fail_on=("none",))
    # `import torch_xla` left in the file: the run exits 1 at import, before any op.
    report = reconcile(scan, _trace([], exit_code=1), cwd=tmp_path)
    assert report.run_failure is not None
    assert "exited 1" in report.run_failure and "before any op ran" in report.run_failure
    assert not gate_passed(report, fail_on_contradiction=False)


def test_a_run_that_fails_where_the_scan_said_it_would_is_agreement(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text(SOURCE)
    scan = api.scan(tmp_path, jobs=1, use_cache=False, fail_on=("none",))
    refused = [{"op": "torch.distributions.Normal", "location": "m.py:6", "message": "no"}]
    trace = _trace([_op("aten::sort", "cpu_fallback", 4)], exit_code=1, refusals=refused)
    report = reconcile(scan, trace, cwd=tmp_path)
    assert report.run_failure is None
    assert gate_passed(report, fail_on_contradiction=False)
    # the same exit without the predicted refusal: a failure nothing foresaw
    other = reconcile(
        scan, _trace([_op("aten::sort", "cpu_fallback", 4)], exit_code=1), cwd=tmp_path
    )
    assert other.run_failure is not None and "did not predict" in other.run_failure
    assert not gate_passed(other, fail_on_contradiction=False)


def test_a_module_in_a_file_that_never_ran_is_not_confirmed(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text(SOURCE)
    (tmp_path / "unused.py").write_text("import torch\n\ncriterion = torch.nn.MSELoss()\n")
    scan = api.scan(tmp_path, jobs=1, use_cache=False, fail_on=("none",))
    # m.py's own MSELoss ran its fallback op; unused.py was never imported.
    report = reconcile(scan, _trace([_op("aten::mse_loss", "cpu_fallback", 10)]), cwd=tmp_path)
    verdicts = {(i.finding.path, i.finding.api): i for i in report.items}
    assert verdicts[("m.py", "torch.nn.MSELoss")].verdict == "confirmed"
    unused = verdicts[("unused.py", "torch.nn.MSELoss")]
    assert unused.verdict == "not_exercised" and "only from others" in unused.reason


def test_a_call_that_depends_on_the_input_agrees_with_any_pattern_it_named(tmp_path: Path) -> None:
    source = 'import torch\n\na = torch.ones(3, device="neuron")\nm = torch.max(a, a)\n'
    (tmp_path / "m.py").write_text(source)
    scan = api.scan(tmp_path, jobs=1, use_cache=False, fail_on=("none",))
    found = next(f for f in scan.findings if f.api == "torch.max")
    assert "depends on the input" in found.message and "aten::maximum" in found.aten
    report = reconcile(scan, _trace([_op("aten::maximum", "cpu_fallback", 4)]), cwd=tmp_path)
    item = next(i for i in report.items if i.finding.api == "torch.max")
    assert item.verdict == "confirmed" and item.observed == "cpu_fallback"


TRAIN = """import torch
import steps

model = torch.nn.Linear(4, 1).to("neuron")
criterion = torch.nn.MSELoss()
x = torch.ones(8, 4, device="neuron")
loss = steps.loss_of(model, criterion, x)
scaled = torch.abs(steps.shifted(x))
"""
STEPS = """def loss_of(model, criterion, x):
    out = model(x)
    return criterion(out, out.detach())


def shifted(x):
    return (x - 1).abs()
"""


def test_a_module_is_confirmed_by_ops_a_helper_in_another_file_ran_for_it(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(TRAIN)
    (tmp_path / "steps.py").write_text(STEPS)
    scan = api.scan(tmp_path, jobs=1, use_cache=False, fail_on=("none",))
    # train.py:7 calls steps.loss_of, whose line 3 runs MSELoss's fallback op; train.py:8 calls
    # steps.shifted, whose line 7 runs abs.
    trace = _trace(
        [
            _called("aten::mse_loss", "cpu_fallback", "steps.py:3", "train.py:7"),
            _called("aten::abs", "native", "steps.py:7", "train.py:8"),
        ]
    )
    report = reconcile(scan, trace, cwd=tmp_path)
    items = {(i.finding.path, i.finding.api): i for i in report.items}
    criterion = items[("train.py", "torch.nn.MSELoss")]
    assert criterion.verdict == "confirmed", criterion.reason
    assert "train.py:7" in criterion.reason  # the frame through which its ops ran
    # A frame that called other user code is not the call of its own line: torch.abs on
    # train.py:8 never ran there (the abs ran in steps.py), and that line misses nothing.
    assert items[("train.py", "torch.abs")].verdict == "not_exercised"
    assert all(not u.location.startswith("train.py") for u in report.unpredicted)


def test_a_compile_failure_is_reconciled_from_its_record_whatever_its_message(
    tmp_path: Path,
) -> None:
    source = (
        "import torch\n\n\n"
        '@torch.compile(backend="neuron", dynamic=False)\n'
        "def squash(x):\n"
        "    return torch.quantize_per_tensor(x, 0.1, 0, torch.quint8)\n\n\n"
        'codes = squash(torch.ones(4, device="neuron"))\n'
    )
    (tmp_path / "m.py").write_text(source)
    scan = api.scan(tmp_path, jobs=1, use_cache=False, fail_on=("none",))
    refused = {"op": "aten::quantize_per_tensor", "status": "unsupported",
               "kind": "no_lowering", "graph": "forward", "location": "m.py:6",
               "frames": ["m.py:6", "m.py:9"]}  # fmt: skip
    graph = {"ok": False, "error": "the compiler gave up (any wording)", "refused": [refused]}
    report = reconcile(scan, _trace([], exit_code=1, compile={"graphs": [graph]}), cwd=tmp_path)
    item = next(i for i in report.items if i.finding.line == 6)
    assert item.finding.category == "compile"
    assert item.verdict == "confirmed" and "aten::quantize_per_tensor" in item.reason
    assert report.run_failure is None  # it failed where the report said it would


def test_a_line_that_called_into_other_code_confirms_only_the_objects_it_names(
    tmp_path: Path,
) -> None:
    # train.py's main code is a caller of every op of the run: a module or optimizer built
    # there is confirmed through a calling line only when that line hands it over.
    (tmp_path / "train.py").write_text(
        "import torch\nimport steps\n\n"
        'model = torch.nn.Linear(4, 1).to("neuron")\n'
        "criterion = torch.nn.MSELoss()\n"
        "optimizer = torch.optim.Adam(model.parameters())\n"
        'x = torch.ones(8, 4, device="neuron")\n'
        "penalty = steps.prior(model)\n"  # line 8: the optimizer is not handed over
        "loss = steps.loss_of(model,\n"  # line 9: a call over two lines
        "                     criterion, x)\n"
    )
    (tmp_path / "steps.py").write_text(
        "import torch\n\n\ndef prior(model):\n"
        "    return sum(torch.zeros_like(p).sum() for p in model.parameters())\n\n\n"
        "def loss_of(model, criterion, x):\n    return criterion(model(x), x[:, :1])\n"
    )
    scan = api.scan(tmp_path, jobs=1, use_cache=False, fail_on=("none",))
    adam = next(f for f in scan.findings if f.api == "torch.optim.Adam")
    assert "aten::zeros_like" in adam.aten  # a common op: its state is made with it
    trace = _trace(
        [
            _called("aten::zeros_like", "native", "steps.py:5", "train.py:8"),
            _called("aten::mse_loss", "cpu_fallback", "steps.py:9", "train.py:9"),
        ]
    )
    report = reconcile(scan, trace, cwd=tmp_path)
    items = {(i.finding.path, i.finding.api): i for i in report.items}
    assert items[("train.py", "torch.optim.Adam")].verdict == "not_exercised"
    criterion = items[("train.py", "torch.nn.MSELoss")]
    assert criterion.verdict == "confirmed" and "train.py:9" in criterion.reason


def test_every_format_says_agreement_is_consistency_not_truth(tmp_path: Path) -> None:
    import io
    import json

    from rich.console import Console

    from neuron_migrate.report.verify_report import (
        render_verify_json,
        render_verify_markdown,
        render_verify_terminal,
    )

    (tmp_path / "m.py").write_text(SOURCE)
    scan = api.scan(tmp_path, jobs=1, use_cache=False, fail_on=("none",))
    report = reconcile(scan, _trace([_op("aten::sort", "cpu_fallback", 4)]), cwd=tmp_path)
    measures = json.loads(render_verify_json(report))["measures"]
    assert "consistency, not truth" in measures and "matrix probe" in measures
    assert "matrix import" in measures and "--matrix" in measures
    assert measures in " ".join(render_verify_markdown(report).split())
    out = io.StringIO()
    render_verify_terminal(report, Console(file=out, width=200), show_native=False)
    assert "consistency, not truth" in out.getvalue()
