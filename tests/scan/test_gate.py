"""--fail-on: exit 0 when the gate passes, 1 when it fails, 2 on a bad value."""

from __future__ import annotations

from pathlib import Path

import pytest

from neuron_migrate.errors import UsageError
from neuron_migrate.scan.gate import FAIL_ON, parse_fail_on
from tests.scan.cli_helpers import run_cli

XLA_ONLY = "import torch_xla.core.xla_model as xm\nxm.mark_step()\n"
# torch.sort's fallback is inferred (its generic kernel calls aten::sort.stable); linalg.inv's
# is the dev snapshot's explicit registration: only the second is stated by a source.
FALLBACK = "import torch\nv, i = torch.sort(torch.ones(3, device='neuron'))\n"
STATED_FALLBACK = "import torch\nv = torch.linalg.inv(torch.ones(3, 3, device='neuron'))\n"
FLOAT64 = "import torch\nx = torch.ones(3, dtype=torch.float64)\n"
UNSUPPORTED = "import torch\nn = torch.distributions.Normal(0.0, 1.0)\n"
# Max pooling is assumed to fall back (no source names aten::max_pool2d_with_indices); an LSTM
# calls, on the device, a fused cell with no CPU kernel.
POOLING = (
    "import torch\nimport torch.nn.functional as F\n"
    "y = F.max_pool2d(torch.ones(1, 1, 4, 4, device='neuron'), 2)\n"
)
RECURRENT = "import torch.nn as nn\nlstm = nn.LSTM(4, 8)\n"


@pytest.mark.parametrize(
    ("source", "fail_on", "code"),
    [
        (XLA_ONLY, "unsupported", 0),
        (XLA_ONLY, "xla", 1),
        (XLA_ONLY, "any", 1),
        (FALLBACK, "unsupported", 0),
        (FALLBACK, "fallback", 0),
        (FALLBACK, "fallback,strict", 1),
        (STATED_FALLBACK, "fallback", 1),
        (FLOAT64, "fallback", 0),
        (FLOAT64, "float64", 1),
        (UNSUPPORTED, "unsupported", 1),
        (UNSUPPORTED, "none", 0),
        (POOLING, "unsupported", 0),
        (POOLING, "fallback", 0),
        (POOLING, "fallback,strict", 1),
        (POOLING, "any", 1),
        (RECURRENT, "unsupported", 1),
    ],
)
def test_gate_exit_codes(tmp_path: Path, source: str, fail_on: str, code: int) -> None:
    (tmp_path / "m.py").write_text(source)
    exit_code, _, err = run_cli(["scan", str(tmp_path), "--fail-on", fail_on, "--format", "json"])
    assert exit_code == code, err


def test_default_gate_is_unsupported(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text(UNSUPPORTED)
    assert run_cli(["scan", str(tmp_path), "--format", "json"])[0] == 1


def test_bad_fail_on_value_exits_2(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text(XLA_ONLY)
    code, _, err = run_cli(["scan", str(tmp_path), "--fail-on", "bogus"])
    assert code == 2 and "bogus" in err


def test_fail_on_values_combine() -> None:
    assert parse_fail_on(["xla,float64"]) == FAIL_ON["xla"] | FAIL_ON["float64"]
    assert parse_fail_on([]) == FAIL_ON["unsupported"]
    with pytest.raises(UsageError):
        parse_fail_on(["none", "xla"])
