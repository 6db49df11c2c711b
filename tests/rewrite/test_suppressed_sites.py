"""A site under an inline suppression (`# neuron-migrate: ignore[NM101]`, `fixme[...]`) is left
as it is by the rewrite, as the scan leaves it out of its findings: the line stays, and so does
the import it needs. The other sites of the file are migrated as usual."""

from __future__ import annotations

import ast
from pathlib import Path

from neuron_migrate.rewrite.codemod.engine import rewrite_source
from tests.cli import invoke

HEAD = "import torch\nimport torch_xla.core.xla_model as xm\n\n"


def _rewritten(body: str) -> str:
    new = rewrite_source(HEAD + body).new
    ast.parse(new)
    return new


def test_a_trailing_ignore_leaves_its_line_and_the_import_it_needs() -> None:
    line = "device = xm.xla_device()  # neuron-migrate: ignore[NM101] the launcher wraps this\n"
    new = _rewritten(line + "x = torch.ones(2, device=device)\nxm.mark_step()\n")
    assert line in new
    assert "import torch_xla.core.xla_model as xm\n" in new
    assert "xm.mark_step()" not in new  # not suppressed: migrated


def test_a_comment_on_its_own_line_covers_the_next_statement() -> None:
    body = (
        "# neuron-migrate: fixme[NM101] until the launcher is migrated\n"
        "device = xm.xla_device()\n"
        "other = xm.xla_device()\n"
    )
    new = _rewritten(body)
    assert "fixme[NM101] until the launcher is migrated\ndevice = xm.xla_device()\n" in new
    assert "other = torch.device(" in new
    assert "import torch_xla.core.xla_model as xm\n" in new


def test_a_suppression_of_another_code_does_not_cover_the_site() -> None:
    new = _rewritten("device = xm.xla_device()  # neuron-migrate: ignore[NM104]\n")
    assert "xm.xla_device()" not in new and "torch_xla" not in new


def test_a_call_spanning_lines_is_covered_where_the_scan_covers_it() -> None:
    body = "xm.optimizer_step(  # neuron-migrate: ignore[NM501]\n    opt,\n)\n"
    new = _rewritten("opt = None\n" + body)
    assert body in new and "import torch_xla.core.xla_model as xm\n" in new


def test_apply_leaves_the_suppressed_line(tmp_path: Path) -> None:
    line = "device = xm.xla_device()  # neuron-migrate: ignore[NM101] the launcher wraps this\n"
    (tmp_path / "train.py").write_text(HEAD + line + "xm.mark_step()\n")
    scan = invoke(["scan", "--no-cache", "--format", "json", str(tmp_path)])
    assert '"suppressed"' in scan.stdout and "NM101" in scan.stdout
    result = invoke(["rewrite", "--apply", "--no-cache", "-j", "1", str(tmp_path)])
    assert result.exit_code == 0, result.stderr
    text = (tmp_path / "train.py").read_text()
    assert line in text and "import torch_xla.core.xla_model as xm\n" in text
    assert "mark_step" not in text
