"""A project of the rewrite fixtures, for tests that run `rewrite` over a tree."""

from __future__ import annotations

import shutil
from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "rewrite"


def fixture_project(root: Path) -> Path:
    """`root/pkg/` holds every rewrite fixture's input; `root/py2.py` does not parse."""
    (root / "pkg").mkdir(parents=True)
    for path in sorted(FIXTURES.glob("*.in.py")):
        shutil.copy(path, root / "pkg" / path.name.replace(".in.py", ".py"))
    (root / "py2.py").write_text("import torch_xla\nprint 'hello'\n")
    return root
