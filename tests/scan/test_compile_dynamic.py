"""`torch.compile`'s `dynamic=` argument, judged by the matrix's compile rules: the released
2.33 backend rejects `dynamic=True` and compiles with `dynamic` unset (each new shape
recompiles), so only a matrix that requires `dynamic=False` asks for it (NM941)."""

from __future__ import annotations

from neuron_migrate.matrix.versions import newest_version
from neuron_migrate.scan.analysis import analyze_source
from neuron_migrate.scan.scan_data import Context, context_for

SOURCE = """\
import torch

unset = torch.compile(torch.nn.Linear(2, 2), backend="neuron")
static = torch.compile(torch.nn.Linear(2, 2), backend="neuron", dynamic=False)
dynamic = torch.compile(torch.nn.Linear(2, 2), backend="neuron", dynamic=True)
"""


def _compile_codes(context: Context) -> dict[int, str]:
    findings = analyze_source(SOURCE, "x.py", context).findings
    return {f.line: f.code for f in findings if f.category == "compile"}


def test_released_matrices_ask_only_that_dynamic_is_not_true() -> None:
    context = context_for(newest_version())
    assert not context.matrix.compile.requires_dynamic_false
    assert _compile_codes(context) == {5: "NM940"}


def test_a_matrix_that_requires_dynamic_false_asks_for_it_where_it_is_unset() -> None:
    released = context_for(newest_version())
    strict = released.matrix._replace(
        compile=released.matrix.compile._replace(requires_dynamic_false=True)
    )
    assert _compile_codes(released._replace(matrix=strict)) == {3: "NM941", 5: "NM940"}
