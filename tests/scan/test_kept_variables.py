"""A Neuron Runtime variable in Python code (NM711) stays as it is: the scan gives advice about
it, as it does in launch scripts, and a `--fail-on xla` gate does not fail on migrated code."""

from __future__ import annotations

from pathlib import Path

from neuron_migrate import api

SOURCE = """\
import os

os.environ["NEURON_RT_VISIBLE_CORES"] = "0-1"
os.environ["XLA_USE_BF16"] = "1"
"""


def test_a_runtime_variable_is_advice_and_not_fixable(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(SOURCE)
    report = api.scan(tmp_path, jobs=1, use_cache=False, fail_on=("xla",))
    found = {f.line: (f.code, f.status, f.fixable) for f in report.findings}
    assert found[3] == ("NM711", "advice", False)
    assert found[4][1] == "xla"  # an XLA variable is still a use to migrate
    assert not report.passed


def test_a_gate_on_xla_passes_once_only_runtime_variables_are_left(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(SOURCE.replace('os.environ["XLA_USE_BF16"] = "1"\n', ""))
    report = api.scan(tmp_path, jobs=1, use_cache=False, fail_on=("xla",))
    assert [f.code for f in report.findings] == ["NM711"]
    assert report.passed
