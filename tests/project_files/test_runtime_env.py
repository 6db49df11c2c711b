"""Neuron Runtime variables (NEURON_RT_*, NEURON_LOGICAL_NC_CONFIG) set by launch scripts,
containers and job configs are reported as in Python (NM711), as advice, with what the released
docs do say: they name none of these variables, and run one torchrun process per logical
NeuronCore. The file is left as it is."""

from __future__ import annotations

import pytest

from tests.project_files.helpers import findings, rewritten

CASES = [
    ("shell", "export NEURON_RT_VISIBLE_CORES=0-31\n", "NEURON_RT_VISIBLE_CORES", 1, 7),
    ("shell", "NEURON_RT_NUM_CORES=32 torchrun train.py\n", "NEURON_RT_NUM_CORES", 1, 0),
    (
        "dockerfile",
        "FROM ubuntu:26.04\nENV NEURON_LOGICAL_NC_CONFIG=1\n",
        "NEURON_LOGICAL_NC_CONFIG",
        2,
        4,
    ),
    ("yaml", "env:\n  NEURON_RT_LOG_LEVEL: INFO\n", "NEURON_RT_LOG_LEVEL", 2, 2),
    ("json", '{"env": {"NEURON_RT_VISIBLE_CORES": "0"}}\n', "NEURON_RT_VISIBLE_CORES", 1, 9),
]


@pytest.mark.parametrize(("kind", "text", "variable", "line", "col"), CASES)
def test_a_runtime_variable_is_reported_as_advice_and_kept(
    kind: str, text: str, variable: str, line: int, col: int
) -> None:
    found = [f for f in findings(text, kind) if f.code == "NM711"]
    assert [(f.api, f.status, f.line, f.col) for f in found] == [
        (f"xla-env-var:{variable}", "advice", line, col)
    ]
    message = found[0].message
    assert "the Neuron Runtime environment-variable reference lists the supported ones" in message
    assert "one torchrun process per logical NeuronCore" in message
    assert rewritten(text, kind) == text


def test_a_variable_of_no_neuron_runtime_is_not_nm711() -> None:
    codes = [f.code for f in findings("export NEURON_RTX=1\nexport OMP_NUM_THREADS=1\n", "shell")]
    assert "NM711" not in codes
