"""A torch_xla module object handed on as a value is a use the scan reports and the rewrite
leaves for a person, under the same rule; a test of whether it was imported is not."""

from __future__ import annotations

import textwrap
from pathlib import Path

from neuron_migrate import api
from neuron_migrate.rewrite.codemod.engine import rewrite_source
from neuron_migrate.rewrite.leftovers import IMPORT_MARKERS

SOURCE = textwrap.dedent(
    """\
    import torch_xla.core.xla_model as xm
    from torch_xla import runtime as xr

    _XM = None


    def lazy():
        global _XM
        if _XM is None:
            import torch_xla.core.xla_model as m
            _XM = m
        return _XM


    def run(fn):
        if xm is not None and xr:
            return fn(1, xm)
        return fn(1, xla=xr)
    """
)


def test_module_values_are_reported_and_marked_alike(tmp_path: Path) -> None:
    path = tmp_path / "helpers.py"
    path.write_text(SOURCE)
    report = api.scan(path, jobs=1, use_cache=False)
    scanned = {(f.line, f.code, f.api) for f in report.findings if f.status == "xla"}
    expected = {
        (11, "NM199", "torch_xla.core.xla_model"),
        (17, "NM199", "torch_xla.core.xla_model"),
        (18, "NM199", "torch_xla.runtime"),
    }
    assert scanned == expected
    result = rewrite_source(SOURCE)
    # the imports those uses keep are counted too (NM100), at their own lines
    sites = [o for o in result.outcomes if o.code not in IMPORT_MARKERS]
    assert {(o.line, o.code, o.api) for o in sites} == expected
    assert {o.status for o in result.outcomes} == {"marked"}
    # the tests of the import stay unmarked; each statement handing a module on is marked
    lines = result.new.splitlines()
    for statement in ("_XM = m", "return fn(1, xm)", "return fn(1, xla=xr)"):
        above = lines[lines.index(next(ln for ln in lines if ln.strip() == statement)) - 1]
        assert "TODO(neuron-migrate NM199)" in above
    test = lines.index("    if xm is not None and xr:")
    assert "TODO" not in lines[test - 1]
