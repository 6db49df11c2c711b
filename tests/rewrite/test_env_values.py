"""In Python code too, what a variable is set to changes what a rule says of it (`values:`):
`os.environ["XLA_USE_BF16"] = "0"` (or `del`, `.pop`) kept float32, so the finding and marker
say to drop it; `os.environ["NEURON_COMPILE_CACHE_URL"] = "s3://..."` is not renamed to the
directory variable even under --unsafe-fixes, and the scan says it is not fixable."""

from __future__ import annotations

from functools import cache

import pytest

from neuron_migrate.matrix.versions import newest_version
from neuron_migrate.rewrite.codemod.engine import rewrite_source
from neuron_migrate.scan.analysis import analyze_source
from neuron_migrate.scan.scan_data import Context, context_for


@cache
def _context() -> Context:
    return context_for(newest_version())


def _finding(source: str, code: str):
    [found] = [f for f in analyze_source(source, "x.py", _context()).findings if f.code == code]
    return found


@pytest.mark.parametrize(
    "statement",
    [
        'os.environ["XLA_USE_BF16"] = "0"',
        "os.environ['XLA_DOWNCAST_BF16'] = ''",
        'os.environ.setdefault("XLA_USE_BF16", "false")',
        'del os.environ["XLA_USE_BF16"]',
        'os.environ.pop("XLA_DOWNCAST_BF16", None)',
    ],
)
def test_nm702_with_the_switch_off_says_drop_it(statement: str) -> None:
    source = f"import os\n\n{statement}\n"
    finding = _finding(source, "NM702")
    assert "drop the variable" in finding.message, finding.message
    new = rewrite_source(source).new
    assert "# TODO(neuron-migrate NM702): set to 0/false or unset" in new, new
    assert "model.to(torch.bfloat16)" not in new


def test_nm702_with_the_switch_on_keeps_its_advice() -> None:
    source = 'import os\n\nos.environ["XLA_USE_BF16"] = "1"\n'
    assert "drop the variable" not in _finding(source, "NM702").message
    assert "model.to(torch.bfloat16)" in rewrite_source(source).new


def test_nm706_does_not_write_a_url_into_a_directory_variable() -> None:
    source = 'import os\n\nos.environ["NEURON_COMPILE_CACHE_URL"] = "s3://bucket/cache"\n'
    finding = _finding(source, "NM706")
    assert not finding.fixable and "URL" in finding.message, finding.message
    new = rewrite_source(source, unsafe=True).new
    assert '"TORCH_NEURONX_NEFF_CACHE_DIR"' not in new
    assert "# TODO(neuron-migrate NM706): NEURON_COMPILE_CACHE_URL holds a URL" in new, new


def test_nm706_still_renames_a_directory_under_unsafe_fixes() -> None:
    source = 'import os\n\nos.environ["NEURON_COMPILE_CACHE_URL"] = "/var/cache/neuron"\n'
    new = rewrite_source(source, unsafe=True).new
    assert 'os.environ["TORCH_NEURONX_NEFF_CACHE_DIR"] = "/var/cache/neuron"' in new
