"""Device-string idioms in the shapes real code writes them, found by scan and rewritten alike."""

from __future__ import annotations

import textwrap
from pathlib import Path

from neuron_migrate import api
from neuron_migrate.codemod.engine import rewrite_source


def _scan(tmp_path: Path, source: str) -> set[tuple[int, str, str]]:
    path = tmp_path / "device_checks.py"
    path.write_text(source)
    report = api.scan(path, jobs=1, use_cache=False)
    return {(f.line, f.code, f.api) for f in report.findings if f.status != "native"}


def test_a_device_prefix_test_is_a_device_type_test(tmp_path: Path) -> None:
    source = textwrap.dedent(
        """\
        import torch


        def on_xla(t, device):
            if str(device).startswith("xla"):
                return True
            device_str = str(t.device)
            return device_str.startswith('xla'), "xla_model".startswith("xla")
        """
    )
    assert _scan(tmp_path, source) == {
        (5, "NM103", "xla-device-type-compare:xla"),
        (8, "NM103", "xla-device-type-compare:xla"),
    }
    new = rewrite_source(source).new
    assert 'if str(device).startswith("neuron"):' in new
    # the string that is not a device keeps its test
    assert 'return device_str.startswith(\'neuron\'), "xla_model".startswith("xla")' in new
